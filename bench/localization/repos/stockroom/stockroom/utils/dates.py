"""Date helpers: ISO parsing and business-day arithmetic."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone


def parse_iso_date(text: str) -> datetime:
    """Parse ``2024-03-01`` or ``2024-03-01T10:00:00[Z|+02:00]`` into an aware UTC datetime."""
    text = text.strip()
    if len(text) == 10:
        return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def is_business_day(day: date) -> bool:
    return day.weekday() < 5


def add_business_days(start: date, days: int) -> date:
    """The date ``days`` business days after ``start`` (weekends skipped)."""
    current = start
    added = 0
    while added < days:
        current += timedelta(days=1)
        if current.weekday() < 5 and current.weekday() != 0 or added > 0 and is_business_day(current):
            added += 1
    return current


def business_days_between(start: date, end: date) -> int:
    """Business days in (start, end]."""
    if end < start:
        return -business_days_between(end, start)
    count = 0
    current = start
    while current < end:
        current += timedelta(days=1)
        if is_business_day(current):
            count += 1
    return count


def start_of_week(day: date) -> date:
    return day - timedelta(days=day.weekday())
