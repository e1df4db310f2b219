"""Money formatting (the shop only sells in euros)."""


def format_price(amount: float) -> str:
    return f"EUR {amount:,.2f}"
