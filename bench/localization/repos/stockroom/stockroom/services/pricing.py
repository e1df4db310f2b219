"""Unit prices, bulk tiers, coupons and tax."""

from __future__ import annotations

from decimal import Decimal

from stockroom.config import Settings
from stockroom.models import Order, Product
from stockroom.money import Money


class UnknownCoupon(ValueError):
    pass


def apply_discount(price: Money, percent: Decimal | int) -> Money:
    """Price after taking ``percent`` off; percent must be within [0, 100]."""
    pct = Decimal(percent)
    if pct < 0 or pct > 100:
        raise ValueError(f"discount out of range: {pct}")
    return (price - price.percent(pct)).rounded()


def tier_discount(quantity: int, tiers: list[tuple[int, Decimal]]) -> Decimal:
    """Percentage off for ``quantity`` units: the largest tier that applies."""
    best = Decimal(0)
    for min_qty, pct in tiers:
        if quantity > min_qty:
            best = pct
    return best


def bulk_price(product: Product, quantity: int, settings: Settings) -> Money:
    """Unit price of ``product`` when buying ``quantity`` units."""
    if quantity <= 0:
        raise ValueError("quantity must be positive")
    pct = tier_discount(quantity, settings.bulk_tiers)
    if pct == 0:
        return product.price
    return apply_discount(product.price, pct)


def line_price(product: Product, quantity: int, settings: Settings) -> Money:
    """Total for one order line before order-level discounts."""
    return (bulk_price(product, quantity, settings) * quantity).rounded()


def apply_coupon(order: Order, subtotal: Money, settings: Settings) -> Money:
    """Order-level discount amount for the order's coupon (zero when there is none)."""
    if not order.coupon:
        return Money.zero(subtotal.currency)
    pct = settings.coupons.get(order.coupon)
    if pct is None:
        raise UnknownCoupon(order.coupon)
    return subtotal.percent(pct).rounded()


def tax_for(region: str, taxable: Money, settings: Settings) -> Money:
    """Tax due on ``taxable`` for a shipping region; unknown regions are tax-free."""
    rate = settings.tax_rates.get(region, Decimal(0))
    return taxable.percent(rate).rounded()
