"""An in-memory catalog keyed by normalized SKU."""

from inventory.skus import is_valid, normalize_sku


class Catalog:
    def __init__(self) -> None:
        self._items: dict[str, str] = {}

    def add(self, sku: str, name: str) -> None:
        if not is_valid(sku):
            raise ValueError(f"invalid SKU {sku!r}")
        self._items[normalize_sku(sku)] = name

    def name_of(self, sku: str) -> str | None:
        return self._items.get(normalize_sku(sku))
