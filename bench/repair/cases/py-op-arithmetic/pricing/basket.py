from pricing.discount import apply_discount

MEMBER_RATE = 0.1


def basket_total(prices: list[float], member: bool = False) -> float:
    total = round(sum(prices), 2)
    return apply_discount(total, MEMBER_RATE) if member else total
