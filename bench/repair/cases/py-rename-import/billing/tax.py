"""VAT rules per country."""

RATES = {"DE": 0.19, "FR": 0.20, "NL": 0.21}


def vat_for(country: str, net: float) -> float:
    """VAT owed on a net amount, rounded to cents."""
    rate = RATES.get(country, 0.0)
    return round(net * rate, 2)
