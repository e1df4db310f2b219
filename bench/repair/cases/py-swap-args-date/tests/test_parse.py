import unittest
from datetime import date

from dates.parse import parse_iso


class ParseTest(unittest.TestCase):
    def test_same_day_and_month(self):
        self.assertEqual(parse_iso("2024-05-05"), date(2024, 5, 5))

    def test_mid_month(self):
        self.assertEqual(parse_iso("2024-03-15"), date(2024, 3, 15))
