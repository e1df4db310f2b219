import unittest

from stock.report import restock_report


class ReportTest(unittest.TestCase):
    def test_nothing_low(self):
        self.assertEqual(restock_report({"a": 9}), "nothing to reorder")
