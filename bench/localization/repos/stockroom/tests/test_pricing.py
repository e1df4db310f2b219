from __future__ import annotations

from decimal import Decimal

import pytest

from stockroom.models import Order, OrderLine
from stockroom.money import Money
from stockroom.services.pricing import apply_coupon, apply_discount, bulk_price, line_price, tax_for


def test_apply_discount_rounds_half_up():
    assert apply_discount(Money("19.99"), 15) == Money("16.99")


def test_apply_discount_rejects_out_of_range():
    with pytest.raises(ValueError):
        apply_discount(Money("10.00"), 120)


def test_bulk_price_below_first_tier(repo, settings):
    assert bulk_price(repo.get_product("TSH-001"), 9, settings) == Money("12.00")


def test_bulk_price_at_tier_boundary(repo, settings):
    tee = repo.get_product("TSH-001")
    assert bulk_price(tee, 10, settings) == Money("11.40")
    assert bulk_price(tee, 50, settings) == Money("10.80")


def test_line_price(repo, settings):
    assert line_price(repo.get_product("MUG-010"), 20, settings) == Money("161.50")


def test_coupon_is_case_insensitive(settings):
    order = Order("o1", "c1", [OrderLine("TSH-001", 1, Money("50.00"))], coupon="save10")
    assert apply_coupon(order, Money("50.00"), settings) == Money("5.00")


def test_tax_for_unknown_region_is_zero(settings):
    assert tax_for("mars", Money("10.00"), settings) == Money("0.00")


def test_tax_for_eu(settings):
    assert tax_for("eu", Money("10.00"), settings) == Money("2.00")


def test_money_convert_eur_to_usd():
    rates = {("EUR", "USD"): Decimal("1.08")}
    assert Money("100.00", "EUR").convert("USD", rates) == Money("108.00", "USD")


def test_allocate_refund_keeps_every_cent():
    parts = Money("-10.00").allocate([1, 1, 1])
    assert sum((p.amount for p in parts), Decimal(0)) == Decimal("-10.00")
