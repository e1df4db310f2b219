"""Human-readable summaries of accounts."""

from ledger.account import Account


def summary_line(account: Account) -> str:
    return f"{account.owner}: {account.current_balance():.2f}"


def total_holdings(accounts: list[Account]) -> float:
    return round(sum(a.balance() for a in accounts), 2)
