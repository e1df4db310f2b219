"""Insertion points in sorted lists."""


def insertion_point(values: list[int], x: int) -> int:
    """Index where ``x`` goes to keep ``values`` sorted (after equal values: no)."""
    lo, hi = 0, len(values)
    while lo < hi:
        mid = (lo + hi) // 2
        if values[mid] < x:
            lo = mid
        else:
            hi = mid
    return lo


def insert_sorted(values: list[int], x: int) -> list[int]:
    i = insertion_point(values, x)
    return values[:i] + [x] + values[i:]
