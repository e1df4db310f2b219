from booking.intervals import merge
from booking.rooms import busy_hours


def test_sorted_input():
    assert merge([(1, 3), (2, 5), (7, 8)]) == [(1, 5), (7, 8)]


def test_touching():
    assert merge([(1, 2), (2, 3)]) == [(1, 3)]


def test_unsorted_input():
    assert merge([(7, 8), (2, 5), (1, 3)]) == [(1, 5), (7, 8)]


def test_busy_hours():
    assert busy_hours([(9, 11), (10, 12)]) == 3
