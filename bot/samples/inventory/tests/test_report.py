from inventory import Item, Stock
from inventory.report import format_report, low_stock


def test_low_stock_lists_items_at_reorder_level():
    stock = Stock()
    stock.add_item(Item(sku="A", name="Alpha", unit_price_cents=1, reorder_level=5), 5)
    stock.add_item(Item(sku="B", name="Beta", unit_price_cents=1, reorder_level=5), 50)
    assert low_stock(stock) == ["A"]


def test_format_report_has_a_row_per_item():
    stock = Stock()
    stock.add_item(Item(sku="A", name="Alpha", unit_price_cents=1), 3)
    assert format_report(stock).splitlines()[1].split() == ["A", "Alpha", "3"]
