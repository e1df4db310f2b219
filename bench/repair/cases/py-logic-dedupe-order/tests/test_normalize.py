from tags.normalize import clean_tags, unique


def test_unique_keeps_first_seen_order():
    assert unique(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]


def test_clean_tags():
    assert clean_tags(" Python, web ,python,,API ") == ["python", "web", "api"]


def test_empty():
    assert unique([]) == []
