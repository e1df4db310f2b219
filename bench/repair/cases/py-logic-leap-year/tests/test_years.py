from calendar_utils.months import days_in_month
from calendar_utils.years import days_in_year, is_leap


def test_ordinary_years():
    assert is_leap(2024)
    assert not is_leap(2023)


def test_centuries():
    assert not is_leap(1900)
    assert is_leap(2000)


def test_february():
    assert days_in_month(2024, 2) == 29
    assert days_in_month(2023, 2) == 28
    assert days_in_year(2023) == 365
