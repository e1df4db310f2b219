from blog.text import truncate_words


def test_truncate_words():
    assert truncate_words("a b c d", 2) == "a b ..."
    assert truncate_words("a b", 2) == "a b"
