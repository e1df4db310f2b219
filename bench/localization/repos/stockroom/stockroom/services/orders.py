"""Order lifecycle: place, cancel, ship; totals and shipping."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from stockroom.config import Settings
from stockroom.db import Repository
from stockroom.models import Order, OrderLine, OrderStatus
from stockroom.money import Money
from stockroom.services.inventory import consume_stock, pick_warehouse, release_stock, reserve_stock
from stockroom.services.pricing import apply_coupon, bulk_price, tax_for
from stockroom.utils.dates import add_business_days

DELIVERY_DAYS = {"domestic": 3, "eu": 7, "uk": 6}


class OrderStateError(Exception):
    pass


@dataclass(frozen=True)
class OrderTotals:
    subtotal: Money
    discount: Money
    shipping: Money
    tax: Money
    total: Money


def place_order(
    repo: Repository,
    settings: Settings,
    customer_id: str,
    items: list[tuple[str, int]],
    region: str = "domestic",
    coupon: str | None = None,
) -> Order:
    """Create an order and reserve stock for every line, atomically."""
    with repo.transaction():
        lines: list[OrderLine] = []
        for sku, quantity in items:
            product = repo.get_product(sku)
            warehouse = pick_warehouse(repo, sku, quantity, region)
            reserve_stock(repo, sku, warehouse, quantity)
            lines.append(OrderLine(sku, quantity, bulk_price(product, quantity, settings), warehouse))
        order = Order(repo.next_order_id(), customer_id, lines, coupon=coupon, shipping_region=region)
        order.status = OrderStatus.RESERVED
        repo.save_order(order)
    return order


def cancel_order(repo: Repository, order_id: str) -> Order:
    """Cancel an order that has not fully shipped and release its reservations."""
    order = repo.get_order(order_id)
    if order.status in (OrderStatus.CANCELLED, OrderStatus.SHIPPED):
        raise OrderStateError(f"cannot cancel order in state {order.status.value}")
    for line in order.lines:
        release_stock(repo, line.sku, line.warehouse, line.quantity)
    order.status = OrderStatus.CANCELLED
    return order


def ship_line(repo: Repository, order_id: str, sku: str) -> Order:
    """Ship one line of an order; the order is shipped when all lines are."""
    order = repo.get_order(order_id)
    if order.status != OrderStatus.RESERVED:
        raise OrderStateError(f"cannot ship order in state {order.status.value}")
    for line in order.lines:
        if line.sku == sku and not line.shipped:
            consume_stock(repo, line.sku, line.warehouse, line.quantity)
            line.shipped = True
    if all(line.shipped for line in order.lines):
        order.status = OrderStatus.SHIPPED
    return order


def estimated_delivery(order: Order) -> date:
    """Business-day delivery estimate shown on the order confirmation."""
    days = DELIVERY_DAYS.get(order.shipping_region, 10)
    return add_business_days(order.created_at.date(), days)


def order_weight(repo: Repository, order: Order) -> int:
    return sum(repo.get_product(line.sku).weight_grams * line.quantity for line in order.lines)


def shipping_cost(repo: Repository, order: Order, subtotal: Money, settings: Settings) -> Money:
    """Flat fee plus per-kg rate; free above the threshold for domestic orders."""
    domestic = order.shipping_region == "domestic"
    if domestic and subtotal.amount >= settings.free_shipping_over:
        return Money.zero(subtotal.currency)
    flat = settings.shipping_flat if domestic else settings.intl_shipping_flat
    per_kg = settings.shipping_per_kg if domestic else settings.intl_shipping_per_kg
    kg = Decimal(order_weight(repo, order)) / 1000
    if domestic:
        return Money(flat + per_kg * kg, subtotal.currency).rounded()
    fee = Money.zero(subtotal.currency)
    for line in order.lines:
        fee = fee + Money(flat + per_kg * kg, subtotal.currency) * line.quantity
    return fee.rounded()


def order_total(repo: Repository, order: Order, settings: Settings) -> OrderTotals:
    """Subtotal, coupon discount, shipping and tax for an order (docs/pricing.md)."""
    subtotal = sum(line.subtotal for line in order.lines)
    discount = apply_coupon(order, subtotal, settings)
    shipping = shipping_cost(repo, order, subtotal, settings)
    taxable = subtotal - discount + shipping
    tax = tax_for(order.shipping_region, taxable, settings)
    return OrderTotals(subtotal, discount, shipping, tax, (taxable + tax).rounded())
