"""Input validation shared by the API and the services."""

from __future__ import annotations

import re

_SKU = re.compile(r"^[A-Z]{2,4}-\d{3,6}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$")


class ValidationError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def validate_sku(sku: str) -> str:
    sku = sku.strip().upper()
    if not _SKU.match(sku):
        raise ValidationError("sku", f"invalid SKU {sku!r}")
    return sku


def validate_quantity(quantity: int, maximum: int = 10_000) -> int:
    if not isinstance(quantity, int) or isinstance(quantity, bool):
        raise ValidationError("quantity", f"must be an integer, got {type(quantity).__name__}")
    if quantity <= 0:
        raise ValidationError("quantity", f"must be positive, got {quantity}")
    if quantity > maximum:
        raise ValidationError("quantity", f"must be at most {maximum}, got {quantity}")
    return quantity


def validate_email(email: str) -> str:
    email = email.strip()
    if not _EMAIL.match(email):
        raise ValidationError("email", f"invalid address {email!r}")
    return email.lower()


def validate_region(region: str, known: set[str]) -> str:
    if region not in known:
        raise ValidationError("region", f"unknown region {region!r}; expected one of {sorted(known)}")
    return region
