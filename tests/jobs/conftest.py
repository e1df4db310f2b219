"""Shared fixtures of the job tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from bot.store.store import Store


@pytest.fixture(autouse=True)
def _fresh_log_context() -> Iterator[None]:
    # The worker's middleware clears the context per message; direct calls share the thread.
    structlog.contextvars.clear_contextvars()
    yield
    structlog.contextvars.clear_contextvars()


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied per test (migrating each time is the slow part)."""
    path = tmp_path_factory.mktemp("template") / "arcs.db"
    Store.open(f"sqlite:///{path}").close()
    return path
