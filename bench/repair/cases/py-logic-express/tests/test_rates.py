from shipping.orders import Order
from shipping.rates import shipping_cost


def test_flat_rate():
    assert shipping_cost(Order(20.0)) == 4.99


def test_free_over_threshold():
    assert shipping_cost(Order(50.0)) == 0.0


def test_express_adds_surcharge():
    assert shipping_cost(Order(20.0, express=True)) == 14.98
    assert shipping_cost(Order(80.0, express=True)) == 9.99
