"""Stock keeping unit codes: AAA-1234."""

import re

_SKU = re.compile(r"^[A-Z]{3}-\d{4}$")


def normalize_sku(raw: str) -> str:
    """Trim, upper-case, and use dashes: ' abc_0042 ' -> 'ABC-0042'."""
    return raw.strip().upper().replace("_", "-")


def is_valid(raw: str) -> bool:
    return bool(_SKU.match(normalize(raw)))
