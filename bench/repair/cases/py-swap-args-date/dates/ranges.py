from datetime import date

from dates.parse import parse_iso


def days_between(a: str, b: str) -> int:
    return (parse_iso(b) - parse_iso(a)).days


def is_weekend(text: str) -> bool:
    day: date = parse_iso(text)
    return day.weekday() >= 5
