"""Tolerant readers of JSON values (pure): the primitives of :mod:`jobs.repair.trace_read`.

Each one takes any value (from disk, the database, an older or newer ARCS) and answers a value of
one type or its default; none raises. Texts are cut to a bound with a note of the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_TEXT = 60_000
"""Characters kept of one diff, prompt or log."""
MAX_ITEMS = 200
"""Items kept of one list (evidence, hits, candidates, failing tests)."""


def text(value: object, limit: int = MAX_TEXT) -> str:
    """``value`` as a string ('' for None), cut to ``limit`` characters with a note of the rest."""
    if value is None:
        return ""
    s = value if isinstance(value, str) else str(value)
    return s if len(s) <= limit else s[:limit] + f"\n… ({len(s) - limit} more characters)"


def integer(value: object) -> int | None:
    """An int (bools as 0/1, whole floats), else None."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def number(value: object) -> float | None:
    """A float of an int or float (not a bool), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def mapping(value: object) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def items(value: object, limit: int = MAX_ITEMS) -> list[Any]:
    """The first ``limit`` items of a list or tuple, else none."""
    if isinstance(value, list | tuple):
        return list(value[:limit])
    return []


def maps(value: object) -> list[Mapping[str, Any]]:
    """The mappings among :func:`items` of ``value``."""
    return [v for v in items(value) if isinstance(v, Mapping)]


def texts(value: object, limit: int = 2_000) -> tuple[str, ...]:
    """The non-None :func:`items` of ``value`` as bounded strings."""
    return tuple(text(v, limit) for v in items(value) if v is not None)


__all__ = ["MAX_ITEMS", "MAX_TEXT", "integer", "items", "mapping", "maps", "number", "text", "texts"]
