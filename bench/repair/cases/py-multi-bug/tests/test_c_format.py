import unittest

from shop.pricing import format_price


class FormatTest(unittest.TestCase):
    def test_two_decimals(self):
        self.assertEqual(format_price(3.5), "3.50 EUR")
