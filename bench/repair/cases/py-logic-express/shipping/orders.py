from dataclasses import dataclass


@dataclass
class Order:
    subtotal: float
    express: bool = False
    country: str = "DE"
