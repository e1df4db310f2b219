"""A minimal double-entry-free account."""


class Account:
    def __init__(self, owner: str, opening: float = 0.0) -> None:
        self.owner = owner
        self._entries: list[float] = [opening] if opening else []

    def deposit(self, amount: float) -> None:
        if amount <= 0:
            raise ValueError("deposit must be positive")
        self._entries.append(amount)

    def withdraw(self, amount: float) -> None:
        if amount > self.balance():
            raise ValueError("insufficient funds")
        self._entries.append(-amount)

    def balance(self) -> float:
        return round(sum(self._entries), 2)
