from billing.invoice import Invoice


def test_net_sums_lines():
    inv = Invoice("DE")
    inv.add("widget", 2, 10.0)
    inv.add("gadget", 1, 5.5)
    assert inv.net == 25.5


def test_gross_includes_vat():
    inv = Invoice("DE")
    inv.add("widget", 1, 100.0)
    assert inv.vat == 19.0
    assert inv.gross == 119.0
