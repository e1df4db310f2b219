from __future__ import annotations

import pytest

from stockroom.services.inventory import (
    InsufficientStock,
    pick_warehouse,
    release_stock,
    reserve_stock,
    restock,
    transfer_stock,
)


def test_reserve_reduces_available(repo):
    level = reserve_stock(repo, "TSH-001", "W-EAST", 10)
    assert level.available == 30


def test_reserve_exact_available(repo):
    level = reserve_stock(repo, "BOOT-200", "W-WEST", 8)
    assert level.available == 0


def test_reserve_more_than_available_fails(repo):
    with pytest.raises(InsufficientStock):
        reserve_stock(repo, "BOOT-200", "W-WEST", 9)


def test_release_after_reserve(repo):
    reserve_stock(repo, "TSH-001", "W-EAST", 4)
    level = release_stock(repo, "TSH-001", "W-EAST", 4)
    assert level.reserved == 0


def test_restock_adds_on_hand(repo):
    assert restock(repo, "MUG-010", "W-EAST", 5).on_hand == 17


def test_transfer_moves_units(repo):
    transfer_stock(repo, "TSH-001", "W-EAST", "W-WEST", 10)
    assert repo.get_stock("TSH-001", "W-EAST").on_hand == 30
    assert repo.get_stock("TSH-001", "W-WEST").on_hand == 15


def test_transfer_everything(repo):
    transfer_stock(repo, "BOOT-200", "W-WEST", "W-EAST", 8)
    assert repo.get_stock("BOOT-200", "W-EAST").on_hand == 8


def test_pick_warehouse_prefers_most_available(repo):
    repo.get_stock("TSH-001", "W-WEST").on_hand = 60
    assert pick_warehouse(repo, "TSH-001", 5, "domestic") == "W-WEST"


def test_pick_warehouse_prefers_region(repo):
    assert pick_warehouse(repo, "MUG-010", 5, "eu") == "W-EU"
