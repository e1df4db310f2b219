import unittest

from ledger.account import Account
from ledger.report import summary_line, total_holdings


class ReportTest(unittest.TestCase):
    def test_summary_line(self):
        acct = Account("ann", 10)
        acct.deposit(2.5)
        self.assertEqual(summary_line(acct), "ann: 12.50")

    def test_total_holdings(self):
        self.assertEqual(total_holdings([Account("a", 1), Account("b", 2)]), 3)
