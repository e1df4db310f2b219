"""JSON <-> domain objects."""

from __future__ import annotations

from typing import Any

from stockroom.models import Order, OrderLine, Product
from stockroom.money import Money, parse_money
from stockroom.utils.validation import ValidationError, validate_quantity, validate_sku


def money_to_str(money: Money) -> str:
    return f"{money.rounded().amount} {money.currency}"


def product_to_dict(product: Product) -> dict[str, Any]:
    return {
        "sku": product.sku,
        "name": product.name,
        "price": money_to_str(product.price),
        "category": product.category,
        "tags": list(product.tags),
        "discontinued": product.discontinued,
    }


def product_from_dict(data: dict[str, Any]) -> Product:
    return Product(
        sku=validate_sku(data["sku"]),
        name=str(data["name"]),
        price=parse_money(str(data["price"])),
        category=str(data.get("category", "general")),
        weight_grams=int(data.get("weight_grams", 0)),
        tags=[str(t) for t in data.get("tags", [])],
    )


def order_line_to_dict(line: OrderLine) -> dict[str, Any]:
    return {
        "sku": line.sku,
        "quantity": line.quantity,
        "unit_price": money_to_str(line.unit_price),
        "warehouse": line.warehouse,
        "shipped": line.shipped,
    }


def order_to_dict(order: Order) -> dict[str, Any]:
    return {
        "id": order.id,
        "customer_id": order.customer_id,
        "status": order.status.value,
        "created_at": order.created_at.isoformat(),
        "coupon": order.coupon,
        "region": order.shipping_region,
        "lines": [order_line_to_dict(line) for line in order.lines],
    }


def order_items_from_dict(data: dict[str, Any]) -> list[tuple[str, int]]:
    """``{"items": [{"sku": ..., "quantity": ...}]}`` -> [(sku, quantity)]."""
    items = data.get("items")
    if not isinstance(items, list) or not items:
        raise ValidationError("items", "at least one item is required")
    result: list[tuple[str, int]] = []
    for raw in items:
        sku = validate_sku(str(raw["sku"]))
        quantity = validate_quantity(raw.get("quantity", 1))
        result.append((sku, quantity))
    return result
