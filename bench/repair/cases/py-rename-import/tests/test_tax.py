from billing.tax import vat_for


def test_unknown_country_has_no_vat():
    assert vat_for("XX", 100.0) == 0.0


def test_french_rate():
    assert vat_for("FR", 50.0) == 10.0
