import unittest

from inventory.catalog import Catalog


class CatalogTest(unittest.TestCase):
    def test_lookup_is_normalized(self):
        c = Catalog()
        c.add("xyz_1000", "bolt")
        self.assertEqual(c.name_of("XYZ-1000"), "bolt")
