import unittest

from stock.levels import restock


class RestockTest(unittest.TestCase):
    def test_low_items_are_restocked(self):
        self.assertEqual(restock({"a": 1, "b": 10, "c": 5}, 5), ["a"])

    def test_empty(self):
        self.assertEqual(restock({}, 5), [])
