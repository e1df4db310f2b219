import unittest

from shop.money import format_price


class MoneyTest(unittest.TestCase):
    def test_thousands(self):
        self.assertEqual(format_price(1234.5), "EUR 1,234.50")
