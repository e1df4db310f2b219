import unittest

from dates.ranges import days_between


class RangesTest(unittest.TestCase):
    def test_days_between(self):
        self.assertEqual(days_between("2024-01-30", "2024-02-02"), 3)
