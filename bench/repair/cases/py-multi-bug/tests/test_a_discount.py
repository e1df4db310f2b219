import unittest

from shop.pricing import discounted


class DiscountTest(unittest.TestCase):
    def test_quarter_off(self):
        self.assertEqual(discounted(100.0, 0.25), 75.0)

    def test_no_discount(self):
        self.assertEqual(discounted(80.0, 0.0), 80.0)
