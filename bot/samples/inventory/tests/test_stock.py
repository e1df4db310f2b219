import pytest

from inventory import Item, OutOfStock, Stock


def make_stock(quantity: int) -> Stock:
    stock = Stock()
    stock.add_item(Item(sku="BOLT", name="Hex bolt", unit_price_cents=25), quantity)
    return stock


def test_reserve_less_than_available():
    stock = make_stock(10)
    stock.reserve("o1", "BOLT", 4)
    assert stock.available("BOLT") == 6


def test_reserve_exactly_what_is_available():
    stock = make_stock(5)
    stock.reserve("o1", "BOLT", 5)
    assert stock.available("BOLT") == 0


def test_reserve_more_than_available_fails():
    stock = make_stock(3)
    with pytest.raises(OutOfStock):
        stock.reserve("o1", "BOLT", 4)


def test_release_makes_units_available_again():
    stock = make_stock(5)
    stock.reserve("o1", "BOLT", 2)
    stock.release("o1")
    assert stock.available("BOLT") == 5


def test_receive_adds_units():
    stock = make_stock(1)
    assert stock.receive("BOLT", 4) == 5
