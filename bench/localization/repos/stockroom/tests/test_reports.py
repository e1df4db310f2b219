from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal

from stockroom.services.orders import place_order, ship_line
from stockroom.services.reports import inventory_valuation, low_stock_report, turnover_ratio


def test_low_stock_report_skips_discontinued(repo):
    rows = low_stock_report(repo)
    assert [r.sku for r in rows] == ["BOOT-200", "TSH-001"]


def test_valuation_per_warehouse(repo):
    values = inventory_valuation(repo)
    assert str(values["W-EU"]) == "255.00 USD"


def test_turnover_for_sold_out_sku(repo, settings):
    order = place_order(repo, settings, "c1", [("BOOT-200", 8)])
    ship_line(repo, order.id, "BOOT-200")
    ratio = turnover_ratio(repo, "BOOT-200", datetime(2020, 1, 1, tzinfo=timezone.utc))
    assert ratio == Decimal(0)
