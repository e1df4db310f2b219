import pytest

from bank.ledger import transfer


def test_transfer():
    acc = {"a": 10.0, "b": 0.0}
    transfer(acc, "a", "b", 4.0)
    assert acc == {"a": 6.0, "b": 4.0}


def test_insufficient():
    with pytest.raises(ValueError):
        transfer({"a": 1.0, "b": 0.0}, "a", "b", 2.0)
