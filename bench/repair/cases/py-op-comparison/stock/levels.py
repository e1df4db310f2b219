"""Reorder rules."""


def reorder_needed(level: int, threshold: int) -> bool:
    return level > threshold


def restock(levels: dict[str, int], threshold: int) -> list[str]:
    return sorted(sku for sku, level in levels.items() if reorder_needed(level, threshold))
