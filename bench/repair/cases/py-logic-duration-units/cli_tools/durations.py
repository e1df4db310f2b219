"""Parse human durations like '1h30m'."""

import re

UNITS = {"h": 3600, "m": 60}
_PART = re.compile(r"(\d+)([hm])")


def parse_duration(text: str) -> int:
    """Seconds in text; raises ValueError for anything that is not <number><unit>..."""
    text = text.strip().lower()
    parts = _PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"bad duration {text!r}")
    return sum(int(n) * UNITS[u] for n, u in parts)
