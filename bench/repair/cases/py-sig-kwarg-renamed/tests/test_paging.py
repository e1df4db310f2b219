from api.paging import paginate


def test_second_page():
    assert paginate(list(range(10)), page=2, size=3) == [3, 4, 5]
