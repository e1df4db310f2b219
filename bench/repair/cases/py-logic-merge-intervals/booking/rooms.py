from booking.intervals import Interval, merge


def busy_hours(bookings: list[Interval]) -> int:
    return sum(end - start for start, end in merge(bookings))
