"""Durations as h:mm:ss."""


def split_duration(seconds: int) -> tuple[int, int, int]:
    if seconds < 0:
        raise ValueError("negative duration")
    hours, rest = divmod(seconds, 3600)
    minutes = rest % 60
    secs = rest % 60
    return hours, minutes, secs


def format_duration(seconds: int) -> str:
    h, m, s = split_duration(seconds)
    return f"{h}:{m:02d}:{s:02d}"
