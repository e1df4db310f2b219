"""Plain records for items and reservations."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    """A stock-keeping unit."""

    sku: str
    name: str
    unit_price_cents: int
    reorder_level: int = 5


@dataclass(frozen=True)
class Reservation:
    """Units of one item held for an order."""

    order_id: str
    sku: str
    quantity: int
