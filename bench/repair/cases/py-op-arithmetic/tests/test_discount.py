import pytest

from pricing.discount import apply_discount


def test_no_discount():
    assert apply_discount(80.0, 0) == 80.0


def test_quarter_off():
    assert apply_discount(80.0, 0.25) == 60.0


def test_rate_out_of_range():
    with pytest.raises(ValueError):
        apply_discount(10.0, 1.5)
