"""Catalog listing pages."""

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def page_count(total: int, size: int) -> int:
    return (total + size - 1) // size


def page_of(items: Sequence[T], page: int, size: int) -> list[T]:
    """Items of 1-based page ``page``."""
    start = (page - 1) * size
    return list(items[start : start + size - 1])
