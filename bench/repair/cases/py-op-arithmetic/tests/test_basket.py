from pricing.basket import basket_total


def test_guest_pays_full_price():
    assert basket_total([10.0, 5.0]) == 15.0
