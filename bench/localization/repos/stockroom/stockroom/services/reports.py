"""Read-only reports over stock and orders."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from stockroom.db import Repository
from stockroom.models import OrderStatus
from stockroom.money import Money


@dataclass(frozen=True)
class LowStockRow:
    sku: str
    name: str
    available: int
    reorder_point: int


def low_stock_report(repo: Repository) -> list[LowStockRow]:
    """Active products whose total available stock is at or below their reorder point."""
    rows: list[LowStockRow] = []
    for product in repo.list_products():
        levels = repo.stock_for_sku(product.sku)
        available = sum(lvl.available for lvl in levels)
        reorder_point = max((lvl.reorder_point for lvl in levels), default=0)
        if available <= reorder_point:
            rows.append(LowStockRow(product.sku, product.name, available, reorder_point))
    return sorted(rows, key=lambda r: (r.available - r.reorder_point, r.sku))


def inventory_valuation(repo: Repository, currency: str = "USD") -> dict[str, Money]:
    """Value of on-hand stock per warehouse at catalog prices."""
    totals: dict[str, Money] = {}
    for (sku, warehouse), level in sorted(repo.stock.items()):
        product = repo.get_product(sku)
        value = product.price * level.on_hand
        totals[warehouse] = totals.get(warehouse, Money.zero(currency)) + value
    return {code: money.rounded() for code, money in totals.items()}


def sales_by_category(repo: Repository, since: datetime) -> dict[str, Money]:
    """Revenue of shipped orders since ``since``, grouped by product category."""
    revenue: dict[str, Money] = defaultdict(Money.zero)
    for order in repo.orders.values():
        if order.status != OrderStatus.SHIPPED or order.created_at < since:
            continue
        for line in order.lines:
            category = repo.get_product(line.sku).category
            revenue[category] = revenue[category] + line.subtotal
    return dict(revenue)


def turnover_ratio(repo: Repository, sku: str, since: datetime) -> Decimal:
    """Units shipped since ``since`` divided by current on-hand units."""
    shipped = 0
    for order in repo.orders.values():
        if order.status == OrderStatus.SHIPPED and order.created_at >= since:
            shipped += sum(line.quantity for line in order.lines if line.sku == sku)
    on_hand = sum(lvl.on_hand for lvl in repo.stock_for_sku(sku))
    return Decimal(shipped) / Decimal(on_hand)
