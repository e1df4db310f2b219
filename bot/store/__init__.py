"""Persistence: webhook deliveries, repair attempts, pull requests and events.

``open_store(settings)`` is the entry point; see :mod:`bot.store.store` for the API and
:mod:`bot.store.models` for the schema (created and upgraded by the Alembic migrations in
``bot/store/migrations`` when the store opens).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.settings import Settings
    from bot.store.store import Store

__all__ = ["open_store"]


def open_store(
    settings: Settings, *, upgrade: bool = True, lazy: bool = False, timeout_s: float | None = None
) -> Store:
    """Open the store at ``settings.sqlalchemy_url`` (SQLite under ``home`` by default) and upgrade
    its schema to head (idempotent, serialized between processes).

    ``lazy`` and ``timeout_s``: see :meth:`bot.store.store.Store.open` (the web process uses both).
    """
    import datetime as dt

    from bot.store.store import Store

    return Store.open(
        settings.sqlalchemy_url,
        upgrade=upgrade,
        lazy=lazy,
        timeout_s=timeout_s,
        relay_grace=dt.timedelta(seconds=settings.relay_grace_s),
    )
