from bank.payroll import run_payroll


def test_payroll_pays_employees():
    acc = {"acme": 1000.0, "ann": 0.0, "bob": 5.0}
    run_payroll(acc, {"ann": 300.0, "bob": 200.0})
    assert acc == {"acme": 500.0, "ann": 300.0, "bob": 205.0}
