"""Queries over the user list."""

from accounts.models import User


def active_users(users: list[User]) -> list[str]:
    return [u.login for u in users if u.disabled]


def count_active(users: list[User]) -> int:
    return len(active_users(users))
