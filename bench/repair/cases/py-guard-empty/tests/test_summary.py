import unittest

from stats.summary import mean, summarize


class SummaryTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1.0, 2.0, 3.0]), 2.0)

    def test_summary(self):
        self.assertEqual(summarize([2.0, 4.0])["mean"], 3.0)

    def test_empty_series(self):
        self.assertEqual(summarize([]), {"count": 0.0, "mean": 0.0, "max": 0.0})
