"""In-memory repository. Swappable for a SQL one; services only use this interface."""

from __future__ import annotations

import copy
from contextlib import contextmanager
from typing import Iterator

from stockroom.models import Order, Product, StockLevel, Warehouse


class NotFound(LookupError):
    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"{kind} {key!r} not found")
        self.kind = kind
        self.key = key


class Repository:
    def __init__(self) -> None:
        self.products: dict[str, Product] = {}
        self.warehouses: dict[str, Warehouse] = {}
        self.stock: dict[tuple[str, str], StockLevel] = {}
        self.orders: dict[str, Order] = {}
        self._seq = 0

    # -- products -------------------------------------------------------
    def add_product(self, product: Product) -> None:
        self.products[product.sku] = product

    def get_product(self, sku: str) -> Product:
        try:
            return self.products[sku]
        except KeyError:
            raise NotFound("product", sku) from None

    def list_products(self, include_discontinued: bool = True) -> list[Product]:
        items = sorted(self.products.values(), key=lambda p: p.sku)
        if not include_discontinued:
            items = [p for p in items if not p.discontinued]
        return items

    # -- warehouses and stock --------------------------------------------
    def add_warehouse(self, warehouse: Warehouse) -> None:
        self.warehouses[warehouse.code] = warehouse

    def get_warehouse(self, code: str) -> Warehouse:
        try:
            return self.warehouses[code]
        except KeyError:
            raise NotFound("warehouse", code) from None

    def get_stock(self, sku: str, warehouse: str) -> StockLevel:
        level = self.stock.get((sku, warehouse))
        if level is None:
            level = StockLevel(sku=sku, warehouse=warehouse)
            self.stock[(sku, warehouse)] = level
        return level

    def stock_for_sku(self, sku: str) -> list[StockLevel]:
        return [lvl for (s, _), lvl in sorted(self.stock.items()) if s == sku]

    # -- orders ----------------------------------------------------------
    def next_order_id(self) -> str:
        self._seq += 1
        return f"ord-{self._seq:06d}"

    def save_order(self, order: Order) -> None:
        self.orders[order.id] = order

    def get_order(self, order_id: str) -> Order:
        try:
            return self.orders[order_id]
        except KeyError:
            raise NotFound("order", order_id) from None

    @contextmanager
    def transaction(self) -> Iterator[Repository]:
        """All-or-nothing: on an exception, restore stock and orders as they were."""
        orders_before = copy.deepcopy(self.orders)
        stock_before = self.stock
        try:
            yield self
        except Exception:
            self.orders = orders_before
            self.stock = stock_before
            raise
