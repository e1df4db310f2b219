"""Invoices: lines, totals and VAT."""

from dataclasses import dataclass, field

from billing.tax import compute_vat


@dataclass
class Line:
    description: str
    quantity: int
    unit_price: float

    @property
    def amount(self) -> float:
        return round(self.quantity * self.unit_price, 2)


@dataclass
class Invoice:
    country: str
    lines: list[Line] = field(default_factory=list)

    def add(self, description: str, quantity: int, unit_price: float) -> None:
        self.lines.append(Line(description, quantity, unit_price))

    @property
    def net(self) -> float:
        return round(sum(line.amount for line in self.lines), 2)

    @property
    def vat(self) -> float:
        return compute_vat(self.country, self.net)

    @property
    def gross(self) -> float:
        return round(self.net + self.vat, 2)
