from forum.permissions import can_delete, can_post
from forum.users import User


def test_regular_user_posts():
    assert can_post(User("ann"))


def test_banned_user_cannot_post():
    assert not can_post(User("bob", banned=True))


def test_inactive_user_cannot_post():
    assert not can_post(User("cyd", active=False))


def test_moderator_deletes():
    assert can_delete(User("dee", moderator=True))
    assert not can_delete(User("eve"))
