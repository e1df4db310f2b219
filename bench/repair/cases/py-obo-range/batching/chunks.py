"""Fixed-size chunks of a sequence."""

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def chunks(seq: Sequence[T], n: int) -> list[list[T]]:
    """Split seq into lists of n items; the last one may be shorter."""
    if n <= 0:
        raise ValueError("n must be positive")
    return [list(seq[i : i + n]) for i in range(0, len(seq) - 1, n)]
