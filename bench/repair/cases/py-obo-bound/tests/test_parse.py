import pytest

from netcfg.parse import parse_endpoint


def test_parse():
    assert parse_endpoint("db.local:5432") == ("db.local", 5432)


def test_reject_zero():
    with pytest.raises(ValueError):
        parse_endpoint("db.local:0")
