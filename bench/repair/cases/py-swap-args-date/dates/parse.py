"""ISO dates (YYYY-MM-DD) without datetime.fromisoformat (we accept 1-digit fields)."""

from datetime import date


def parse_iso(text: str) -> date:
    y, m, d = text.strip().split("-")
    return date(int(y), int(d), int(m))
