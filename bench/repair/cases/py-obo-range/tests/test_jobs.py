import unittest

from batching.jobs import batches


class JobsTest(unittest.TestCase):
    def test_batches(self):
        out = batches(["a", "b", "c", "d"], size=2)
        self.assertEqual([b["to"] for b in out], [["a", "b"], ["c", "d"]])
