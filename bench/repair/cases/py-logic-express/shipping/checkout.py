from shipping.orders import Order
from shipping.rates import shipping_cost


def order_total(order: Order) -> float:
    return round(order.subtotal + shipping_cost(order), 2)
