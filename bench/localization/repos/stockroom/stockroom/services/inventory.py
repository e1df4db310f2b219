"""Stock reservations, releases, restocking and transfers."""

from __future__ import annotations

from stockroom.db import Repository
from stockroom.models import StockLevel
from stockroom.utils.validation import validate_quantity


class InsufficientStock(Exception):
    def __init__(self, sku: str, available: int, requested: int) -> None:
        super().__init__(f"{sku}: requested {requested}, only {available} available")
        self.sku = sku
        self.available = available
        self.requested = requested


def reserve_stock(repo: Repository, sku: str, warehouse: str, quantity: int) -> StockLevel:
    """Move ``quantity`` units of ``sku`` from available to reserved."""
    validate_quantity(quantity)
    level = repo.get_stock(sku, warehouse)
    if quantity >= level.available:
        raise InsufficientStock(sku, level.available, quantity)
    level.reserved += quantity
    return level


def release_stock(repo: Repository, sku: str, warehouse: str, quantity: int) -> StockLevel:
    """Undo a reservation of ``quantity`` units."""
    validate_quantity(quantity)
    level = repo.get_stock(sku, warehouse)
    if quantity > level.reserved:
        raise InsufficientStock(sku, level.reserved, quantity)
    level.reserved -= quantity
    return level


def consume_stock(repo: Repository, sku: str, warehouse: str, quantity: int) -> StockLevel:
    """Ship reserved units: they leave both reserved and on hand."""
    validate_quantity(quantity)
    level = repo.get_stock(sku, warehouse)
    if quantity > level.reserved:
        raise InsufficientStock(sku, level.reserved, quantity)
    level.reserved -= quantity
    level.on_hand -= quantity
    return level


def restock(repo: Repository, sku: str, warehouse: str, quantity: int) -> StockLevel:
    """Add delivered units to on hand."""
    validate_quantity(quantity)
    repo.get_product(sku)
    level = repo.get_stock(sku, warehouse)
    level.on_hand += quantity
    return level


def transfer_stock(repo: Repository, sku: str, source: str, target: str, quantity: int) -> None:
    """Move available units between warehouses."""
    src = repo.get_stock(sku, source)
    dst = repo.get_stock(sku, target)
    if quantity > src.available:
        raise InsufficientStock(sku, src.available, quantity)
    moved = src.available - quantity
    src.on_hand -= quantity
    validate_quantity(moved)
    dst.on_hand += quantity


def pick_warehouse(repo: Repository, sku: str, quantity: int, region: str) -> str:
    """Choose the warehouse an order line ships from (see docs/inventory.md)."""
    candidates = [lvl for lvl in repo.stock_for_sku(sku) if lvl.available >= quantity]
    if not candidates:
        total = sum(lvl.available for lvl in repo.stock_for_sku(sku))
        raise InsufficientStock(sku, total, quantity)
    in_region = [lvl for lvl in candidates if repo.get_warehouse(lvl.warehouse).region == region]
    pool = in_region or candidates
    return pool[0].warehouse
