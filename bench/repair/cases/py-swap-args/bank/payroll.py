from bank.ledger import transfer

COMPANY = "acme"


def run_payroll(accounts: dict[str, float], salaries: dict[str, float]) -> None:
    for employee, salary in salaries.items():
        transfer(accounts, employee, COMPANY, salary)
