"""Shipping rates: free over 50 EUR, else a flat rate; express always costs a surcharge."""

from shipping.orders import Order

FREE_SHIPPING_OVER = 50.0
FLAT_RATE = 4.99
EXPRESS_SURCHARGE = 9.99


def shipping_cost(order: Order) -> float:
    if order.subtotal >= FREE_SHIPPING_OVER:
        return 0.0
    return FLAT_RATE
