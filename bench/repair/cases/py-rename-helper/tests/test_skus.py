import unittest

from inventory.skus import is_valid, normalize_sku


class SkuTest(unittest.TestCase):
    def test_normalize(self):
        self.assertEqual(normalize_sku(" abc_0042 "), "ABC-0042")

    def test_valid(self):
        self.assertTrue(is_valid("abc-0042"))
        self.assertFalse(is_valid("abc-42"))
