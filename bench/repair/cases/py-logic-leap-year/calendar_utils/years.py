"""Gregorian calendar helpers."""


def is_leap(year: int) -> bool:
    return year % 4 == 0


def days_in_year(year: int) -> int:
    return 366 if is_leap(year) else 365
