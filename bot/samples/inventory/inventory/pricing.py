"""Prices: unit prices, bulk discounts and order totals (in cents)."""

from inventory.models import Item

BULK_THRESHOLD = 10
BULK_DISCOUNT_PERCENT = 5


def line_total(item: Item, quantity: int) -> int:
    """Price of ``quantity`` units, with the bulk discount from BULK_THRESHOLD units on."""
    total = item.unit_price_cents * quantity
    if quantity >= BULK_THRESHOLD:
        total -= total * BULK_DISCOUNT_PERCENT // 100
    return total


def order_total(lines: list[tuple[Item, int]]) -> int:
    """Sum of the line totals of an order."""
    return sum(line_total(item, quantity) for item, quantity in lines)
