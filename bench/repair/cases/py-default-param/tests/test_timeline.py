import unittest

from feed.timeline import timeline


class TimelineTest(unittest.TestCase):
    def test_newest_first(self):
        self.assertEqual(timeline(["a", "b", "c"])[0], "c")
