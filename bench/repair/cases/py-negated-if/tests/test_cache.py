from memo.cache import Memo


def test_computes_once():
    m = Memo(lambda s: s.upper())
    assert m("a") == "A"
    assert m("a") == "A"
    assert m.misses == 1


def test_clear_forgets():
    m = Memo(len)
    m.clear()
    assert m.misses == 0
