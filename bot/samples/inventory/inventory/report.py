"""Reports over the stock."""

from inventory.stock import Stock


def low_stock(stock: Stock) -> list[str]:
    """SKUs whose available quantity is at or below their reorder level."""
    return [item.sku for item in stock.items() if stock.available(item.sku) <= item.reorder_level]


def format_report(stock: Stock) -> str:
    """A human-readable table of SKUs, names and available quantities."""
    rows = [f"{item.sku:<8} {item.name:<20} {stock.available(item.sku):>5}" for item in stock.items()]
    return "\n".join(["SKU      NAME                 AVAIL", *rows])
