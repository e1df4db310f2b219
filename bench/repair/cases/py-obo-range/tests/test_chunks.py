import unittest

from batching.chunks import chunks


class ChunksTest(unittest.TestCase):
    def test_even(self):
        self.assertEqual(chunks([1, 2, 3, 4], 2), [[1, 2], [3, 4]])

    def test_remainder_is_kept(self):
        self.assertEqual(chunks([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]])

    def test_bad_size(self):
        with self.assertRaises(ValueError):
            chunks([1], 0)
