from __future__ import annotations

from decimal import Decimal

import pytest

from stockroom.api.app import create_app
from stockroom.api.auth import sign_token
from stockroom.config import Settings
from stockroom.db import Repository
from stockroom.models import Product, Warehouse
from stockroom.money import Money


@pytest.fixture
def settings() -> Settings:
    return Settings(
        secret="test-secret",
        bulk_tiers=[(10, Decimal(5)), (50, Decimal(10)), (100, Decimal(15))],
        tax_rates={"domestic": Decimal("8.25"), "eu": Decimal(20)},
        coupons={"SAVE10": Decimal(10)},
    )


@pytest.fixture
def repo() -> Repository:
    repo = Repository()
    repo.add_warehouse(Warehouse("W-EAST", "Newark", "domestic"))
    repo.add_warehouse(Warehouse("W-WEST", "Reno", "domestic"))
    repo.add_warehouse(Warehouse("W-EU", "Rotterdam", "eu"))
    repo.add_product(Product("TSH-001", "Basic tee", Money("12.00"), "apparel", 180, ["cotton"]))
    repo.add_product(Product("MUG-010", "Camp mug", Money("8.50"), "kitchen", 350, ["outdoor", "enamel"]))
    repo.add_product(Product("BOOT-200", "Trail boots", Money("89.00"), "footwear", 1200, ["outdoor"]))
    repo.add_product(Product("LAMP-030", "Desk lamp", Money("34.00"), "home", 900, [], discontinued=True))
    for sku, wh, qty in [
        ("TSH-001", "W-EAST", 40),
        ("TSH-001", "W-WEST", 5),
        ("MUG-010", "W-EAST", 12),
        ("MUG-010", "W-EU", 30),
        ("BOOT-200", "W-WEST", 8),
        ("LAMP-030", "W-EAST", 2),
    ]:
        repo.get_stock(sku, wh).on_hand = qty
    return repo


@pytest.fixture
def app(repo: Repository, settings: Settings):
    router, ctx = create_app(repo)
    ctx.settings = settings
    return router, ctx


def token(settings: Settings, *scopes: str, ttl: int = 3600) -> dict[str, str]:
    return {"Authorization": "Bearer " + sign_token(settings.secret, "cust-1", list(scopes), ttl)}
