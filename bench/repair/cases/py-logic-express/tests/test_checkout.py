from shipping.checkout import order_total
from shipping.orders import Order


def test_order_total():
    assert order_total(Order(10.0)) == 14.99
