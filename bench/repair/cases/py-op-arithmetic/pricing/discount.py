"""Percentage discounts."""


def apply_discount(price: float, rate: float) -> float:
    if not 0 <= rate <= 1:
        raise ValueError("rate must be within [0, 1]")
    return round(price + price * rate, 2)
