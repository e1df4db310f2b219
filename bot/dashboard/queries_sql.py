"""SQL helpers shared by the dashboard queries: the ISO-week bucket, repository scoping, sessions.

Part of :mod:`bot.dashboard.queries` (which re-exports :func:`week_start` and :func:`monday`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import Any

from sqlalchemy import ColumnElement, func, literal_column
from sqlalchemy.orm import Session

from bot.store.store import Store

# --- SQL helpers -------------------------------------------------------------------------------


def week_start(column: Any, dialect: str) -> ColumnElement[str]:
    """SQL for the Monday (UTC) starting the ISO week of timestamp ``column``, as ``YYYY-MM-DD``.

    Constants are inlined (not bound), so the same expression in SELECT and GROUP BY is one
    expression to PostgreSQL.
    """
    if dialect == "postgresql":
        utc = func.timezone(literal_column("'UTC'"), column)
        return func.to_char(func.date_trunc(literal_column("'week'"), utc), literal_column("'YYYY-MM-DD'"))
    if dialect == "sqlite":
        # Stored as text 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC. Only the date part: SQLite keeps
        # milliseconds and would round 23:59:59.9995 into the next day (and week). Then step back
        # 6 days and forward to a Monday.
        day = func.substr(column, literal_column("1"), literal_column("10"))
        return func.date(day, literal_column("'-6 days'"), literal_column("'weekday 1'"))
    raise ValueError(f"week_start: unsupported database {dialect!r}")


def monday(when: dt.datetime | dt.date) -> dt.date:
    """The Monday starting ``when``'s ISO week (a datetime is taken in UTC)."""
    day = when.astimezone(dt.UTC).date() if isinstance(when, dt.datetime) else when
    return day - dt.timedelta(days=day.weekday())


def _in_repos(column: Any, repos: Collection[str]) -> ColumnElement[bool]:
    return func.lower(column).in_(sorted({r.lower() for r in repos}))


def _as_date(value: object) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _session(store: Store) -> Session:
    return Session(store.engine)
