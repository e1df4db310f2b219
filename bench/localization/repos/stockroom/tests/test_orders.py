from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from stockroom.models import OrderStatus
from stockroom.money import Money
from stockroom.services.inventory import InsufficientStock
from stockroom.services.orders import cancel_order, estimated_delivery, order_total, place_order, ship_line


def test_place_order_reserves(repo, settings):
    order = place_order(repo, settings, "c1", [("TSH-001", 2)])
    assert order.status is OrderStatus.RESERVED
    assert repo.get_stock("TSH-001", order.lines[0].warehouse).reserved == 2


def test_failed_order_rolls_back_reservations(repo, settings):
    with pytest.raises(InsufficientStock):
        place_order(repo, settings, "c1", [("TSH-001", 2), ("BOOT-200", 50)])
    assert all(level.reserved == 0 for level in repo.stock.values())


def test_cancel_partially_shipped_order(repo, settings):
    order = place_order(repo, settings, "c1", [("TSH-001", 2), ("MUG-010", 1)])
    ship_line(repo, order.id, "TSH-001")
    cancelled = cancel_order(repo, order.id)
    assert cancelled.status is OrderStatus.CANCELLED


def test_order_total_domestic(repo, settings):
    order = place_order(repo, settings, "c1", [("TSH-001", 2), ("MUG-010", 1)])
    totals = order_total(repo, order, settings)
    assert totals.subtotal == Money("32.50")
    assert totals.total == Money("41.23")


def test_order_total_international_shipping(repo, settings):
    order = place_order(repo, settings, "c1", [("MUG-010", 3)], region="eu")
    totals = order_total(repo, order, settings)
    assert totals.shipping == Money("17.51")


def test_estimated_delivery_from_friday(repo, settings):
    order = place_order(repo, settings, "c1", [("TSH-001", 1)])
    order.created_at = datetime(2024, 3, 1, 15, 0, tzinfo=timezone.utc)  # a Friday
    assert estimated_delivery(order) == date(2024, 3, 6)
