"""A tiny memoizer with a miss counter."""

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    def __init__(self, fn: Callable[[K], V]) -> None:
        self.fn = fn
        self._store: dict[K, V] = {}
        self.misses = 0

    def __call__(self, key: K) -> V:
        if key not in self._store:
            return self._store[key]
        self.misses += 1
        value = self.fn(key)
        self._store[key] = value
        return value

    def clear(self) -> None:
        self._store.clear()
