import unittest

from ledger.account import Account


class AccountTest(unittest.TestCase):
    def test_deposit_and_withdraw(self):
        acct = Account("ann", 10)
        acct.deposit(5)
        acct.withdraw(2.5)
        self.assertEqual(acct.balance(), 12.5)

    def test_overdraw_is_refused(self):
        acct = Account("bob")
        with self.assertRaises(ValueError):
            acct.withdraw(1)
