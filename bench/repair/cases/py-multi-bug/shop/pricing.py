"""Order arithmetic."""


def discounted(total: float, rate: float) -> float:
    """``total`` after a discount of ``rate`` (0.25 = 25 %)."""
    return total + total * rate


def free_shipping(total: float, threshold: float = 50.0) -> bool:
    """Orders above ``threshold`` ship for free."""
    return total < threshold


def format_price(value: float) -> str:
    return f"{value:.2f} EUR"
