"""Who may do what on the forum."""

from forum.users import User


def can_post(user: User) -> bool:
    return user.active or not user.banned


def can_delete(user: User) -> bool:
    return can_post(user) and user.moderator
