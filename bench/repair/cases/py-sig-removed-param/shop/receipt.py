"""Plain-text receipts."""

from shop.money import format_price


def receipt(lines: list[tuple[str, int, float]]) -> str:
    out = []
    total = 0.0
    for name, qty, price in lines:
        amount = qty * price
        total += amount
        out.append(f"{qty} x {name}: {format_price(amount)}")
    out.append(f"TOTAL: {format_price(total, 'EUR')}")
    return "\n".join(out)
