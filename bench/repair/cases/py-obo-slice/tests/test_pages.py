from catalog.pages import page_count, page_of


def test_page_count():
    assert page_count(10, 3) == 4
    assert page_count(9, 3) == 3


def test_first_page():
    assert page_of(list(range(10)), 1, 3) == [0, 1, 2]


def test_last_page_is_partial():
    assert page_of(list(range(10)), 4, 3) == [9]
