from sortedlist.search import insert_sorted, insertion_point


def test_empty():
    assert insertion_point([], 5) == 0


def test_before_everything():
    assert insertion_point([1, 3, 5], 0) == 0


def test_middle():
    assert insertion_point([1, 3, 5], 4) == 2


def test_insert_sorted():
    assert insert_sorted([10, 20, 30, 40], 25) == [10, 20, 25, 30, 40]
