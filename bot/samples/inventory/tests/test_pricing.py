from inventory.models import Item
from inventory.pricing import line_total, order_total

NUT = Item(sku="NUT", name="Hex nut", unit_price_cents=10)


def test_line_total_without_discount():
    assert line_total(NUT, 9) == 90


def test_line_total_with_bulk_discount():
    assert line_total(NUT, 10) == 95


def test_order_total():
    assert order_total([(NUT, 2), (NUT, 10)]) == 20 + 95
