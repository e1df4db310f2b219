"""Money: an exact amount in a currency. Never use floats for prices."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Mapping

MINOR_UNITS = {"USD": 2, "EUR": 2, "GBP": 2, "JPY": 0, "CHF": 2}


class CurrencyMismatch(ValueError):
    """Raised when two amounts in different currencies are combined."""


def _quantum(currency: str) -> Decimal:
    digits = MINOR_UNITS.get(currency, 2)
    return Decimal(1).scaleb(-digits)


@dataclass(frozen=True)
class Money:
    amount: Decimal
    currency: str = "USD"

    def __init__(self, amount: Decimal | str | int, currency: str = "USD") -> None:
        object.__setattr__(self, "amount", Decimal(str(amount)))
        object.__setattr__(self, "currency", currency.upper())

    @classmethod
    def zero(cls, currency: str = "USD") -> Money:
        return cls(0, currency)

    def _check(self, other: Money) -> None:
        if not isinstance(other, Money):
            raise TypeError(f"cannot combine Money and {type(other).__name__}")
        if other.currency != self.currency:
            raise CurrencyMismatch(f"{self.currency} != {other.currency}")

    def __add__(self, other: Money) -> Money:
        self._check(other)
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other: Money) -> Money:
        self._check(other)
        return Money(self.amount - other.amount, self.currency)

    def __mul__(self, factor: int | Decimal) -> Money:
        if isinstance(factor, float):
            raise TypeError("multiply Money by int or Decimal, not float")
        return Money(self.amount * Decimal(factor), self.currency)

    __rmul__ = __mul__

    def __lt__(self, other: Money) -> bool:
        self._check(other)
        return self.amount < other.amount

    def __le__(self, other: Money) -> bool:
        self._check(other)
        return self.amount <= other.amount

    def rounded(self) -> Money:
        """Round half-up to the currency's minor unit."""
        return Money(self.amount.quantize(_quantum(self.currency), rounding=ROUND_HALF_UP), self.currency)

    def percent(self, pct: Decimal | int) -> Money:
        """``pct`` percent of this amount, unrounded."""
        return Money(self.amount * Decimal(pct) / Decimal(100), self.currency)

    def allocate(self, ratios: list[int]) -> list[Money]:
        """Split into parts proportional to ``ratios`` without losing a cent."""
        total = sum(ratios)
        if total <= 0:
            raise ValueError("ratios must sum to a positive number")
        q = _quantum(self.currency)
        parts = [
            Money((self.amount * r / total).quantize(q, rounding="ROUND_DOWN"), self.currency) for r in ratios
        ]
        remainder = self.amount - sum((p.amount for p in parts), Decimal(0))
        i = 0
        while remainder > 0:
            parts[i] = Money(parts[i].amount + q, self.currency)
            remainder -= q
            i = (i + 1) % len(parts)
        return parts

    def convert(self, target: str, rates: Mapping[tuple[str, str], Decimal]) -> Money:
        """Convert using ``rates[(source, target)]`` = units of target per unit of source."""
        target = target.upper()
        if target == self.currency:
            return self
        rate = rates.get((self.currency, target))
        if rate is None:
            raise KeyError(f"no rate for {self.currency}->{target}")
        return Money(self.amount / Decimal(rate), target).rounded()

    def format(self) -> str:
        digits = MINOR_UNITS.get(self.currency, 2)
        return f"{self.rounded().amount:,.{digits}f} {self.currency}"

    def __str__(self) -> str:
        return self.format()


def parse_money(text: str, default_currency: str = "USD") -> Money:
    """Parse ``"12.50"`` or ``"12.50 EUR"``."""
    parts = text.strip().split()
    if len(parts) == 1:
        return Money(parts[0], default_currency)
    if len(parts) == 2:
        return Money(parts[0], parts[1])
    raise ValueError(f"not an amount: {text!r}")
