import unittest

from accounts.models import User
from accounts.queries import active_users


class QueriesTest(unittest.TestCase):
    def test_disabled_users_are_skipped(self):
        users = [User("ann"), User("bob", disabled=True), User("cyd")]
        self.assertEqual(active_users(users), ["ann", "cyd"])

    def test_no_users(self):
        self.assertEqual(active_users([]), [])
