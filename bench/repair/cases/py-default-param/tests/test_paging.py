import unittest

from feed.paging import paginate


class PagingTest(unittest.TestCase):
    def test_explicit_page_size(self):
        self.assertEqual(paginate([str(i) for i in range(10)], 2, 4), ["4", "5", "6", "7"])

    def test_default_page_size_is_20(self):
        self.assertEqual(len(paginate([str(i) for i in range(100)])), 20)
