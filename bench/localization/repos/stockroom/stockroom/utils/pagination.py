"""Opaque cursor pagination for list endpoints."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Callable, Generic, Sequence, TypeVar

T = TypeVar("T")


class BadCursor(ValueError):
    pass


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


def encode_cursor(last_key: str) -> str:
    raw = json.dumps({"k": last_key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    """Inverse of :func:`encode_cursor` (padding was stripped when encoding)."""
    try:
        raw = base64.urlsafe_b64decode(cursor)
    except ValueError:
        raise BadCursor("malformed cursor") from None
    return str(json.loads(raw)["k"])


def paginate(items: Sequence[T], key: Callable[[T], str], limit: int, cursor: str | None = None) -> Page[T]:
    """Items after ``cursor`` (by ``key``, ascending), at most ``limit`` of them."""
    ordered = sorted(items, key=key)
    if cursor:
        after = decode_cursor(cursor)
        ordered = [item for item in ordered if key(item) > after]
    page = ordered[:limit]
    next_cursor = encode_cursor(key(page[-1])) if len(ordered) > limit else None
    return Page(page, next_cursor)
