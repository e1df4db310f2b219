"""Moving money between accounts."""


def transfer(accounts: dict[str, float], src: str, dst: str, amount: float) -> None:
    if amount <= 0:
        raise ValueError("amount must be positive")
    if accounts[src] < amount:
        raise ValueError(f"{src} has insufficient funds")
    accounts[src] -= amount
    accounts[dst] += amount
