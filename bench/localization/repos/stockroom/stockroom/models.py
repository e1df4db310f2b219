"""Domain models."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum

from stockroom.money import Money


class OrderStatus(str, Enum):
    PENDING = "pending"
    RESERVED = "reserved"
    SHIPPED = "shipped"
    CANCELLED = "cancelled"


@dataclass
class Product:
    sku: str
    name: str
    price: Money
    category: str = "general"
    weight_grams: int = 0
    tags: list[str] = field(default_factory=list)
    discontinued: bool = False


@dataclass
class Warehouse:
    code: str
    name: str
    region: str


@dataclass
class StockLevel:
    sku: str
    warehouse: str
    on_hand: int = 0
    reserved: int = 0
    reorder_point: int = 10

    @property
    def available(self) -> int:
        return self.on_hand - self.reserved


@dataclass
class OrderLine:
    sku: str
    quantity: int
    unit_price: Money
    warehouse: str = ""
    shipped: bool = False

    @property
    def subtotal(self) -> Money:
        return self.unit_price * self.quantity


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class Order:
    id: str
    customer_id: str
    lines: list[OrderLine]
    status: OrderStatus = OrderStatus.PENDING
    created_at: datetime = field(default_factory=_now)
    coupon: str | None = None
    shipping_region: str = "domestic"
    currency: str = "USD"

    @property
    def weight_grams(self) -> int:
        raise NotImplementedError("use orders.order_weight(repo, order)")
