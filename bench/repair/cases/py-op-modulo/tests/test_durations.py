import unittest

from timefmt.durations import format_duration, split_duration


class DurationTest(unittest.TestCase):
    def test_seconds_only(self):
        self.assertEqual(split_duration(42), (0, 0, 42))

    def test_hours_minutes_seconds(self):
        self.assertEqual(split_duration(3725), (1, 2, 5))

    def test_format(self):
        self.assertEqual(format_duration(3600), "1:00:00")
