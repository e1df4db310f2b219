import unittest

from shop.pricing import free_shipping


class ShippingTest(unittest.TestCase):
    def test_large_order_ships_free(self):
        self.assertTrue(free_shipping(120.0))

    def test_small_order_pays(self):
        self.assertFalse(free_shipping(10.0))
