"""Settings, read once from the environment at start-up."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Mapping


def _parse_tiers(text: str) -> list[tuple[int, Decimal]]:
    """``"10:5,50:10"`` -> [(10, 5), (50, 10)] sorted by minimum quantity."""
    tiers: list[tuple[int, Decimal]] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        qty, _, pct = part.partition(":")
        tiers.append((int(qty), Decimal(pct)))
    return sorted(tiers)


def _parse_rates(text: str) -> dict[str, Decimal]:
    rates: dict[str, Decimal] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        region, _, rate = part.partition("=")
        rates[region.strip()] = Decimal(rate)
    return rates


@dataclass(frozen=True)
class Settings:
    secret: str = "dev-secret"
    page_size: int = 25
    max_page_size: int = 100
    bulk_tiers: list[tuple[int, Decimal]] = field(default_factory=list)
    tax_rates: dict[str, Decimal] = field(default_factory=dict)
    shipping_flat: Decimal = Decimal("4.99")
    shipping_per_kg: Decimal = Decimal("0.80")
    intl_shipping_flat: Decimal = Decimal("14.99")
    intl_shipping_per_kg: Decimal = Decimal("2.40")
    free_shipping_over: Decimal = Decimal("75")
    token_ttl_seconds: int = 3600
    coupons: dict[str, Decimal] = field(default_factory=dict)


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    return Settings(
        secret=env.get("STOCKROOM_SECRET", "dev-secret"),
        page_size=int(env.get("STOCKROOM_PAGE_SIZE", "25")),
        bulk_tiers=_parse_tiers(env.get("STOCKROOM_BULK_TIERS", "10:5,50:10,100:15")),
        tax_rates=_parse_rates(env.get("STOCKROOM_TAX_RATES", "domestic=8.25,eu=20,uk=20")),
        token_ttl_seconds=int(env.get("STOCKROOM_TOKEN_TTL", "3600")),
        coupons={k.upper(): v for k, v in _parse_rates(env.get("STOCKROOM_COUPONS", "SAVE10=10")).items()},
    )
