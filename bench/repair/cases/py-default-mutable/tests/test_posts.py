from cms.posts import Post
from cms.search import tagged


def test_tag_once():
    p = Post("a", ["x"])
    p.tag("x")
    assert p.tags == ["x"]


def test_posts_do_not_share_tags():
    first = Post("first")
    first.tag("news")
    second = Post("second")
    assert second.tags == []
    assert tagged([first, second], "news") == ["first"]
