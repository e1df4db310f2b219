"""The webhook intake's record statement on PostgreSQL, from the event loop (psycopg 3 async).

The SQL store (:class:`bot.store.store.Store`) runs the same statement through SQLAlchemy in a
thread; on the webhook's hot path that cost more than the statement itself: a hand-off to a
thread and back per batch, each waiting for the interpreter lock, and SQLAlchemy's execute path.
Here the batch is one ``INSERT … SELECT … FROM unnest(<one array per column>) ON CONFLICT …
RETURNING`` sent from the event loop on an autocommit connection (one round trip, one commit):
the same text whatever the batch size, so it is server-side prepared after a few uses.

Same rows and rules as :meth:`Store.record_deliveries` (the values come from
:meth:`Store.delivery_params`; the statement is the store's, written out), and the same bounds:
the connections get :func:`bot.store.store.postgres_timeouts` (connect, statement, lock and TCP
timeouts). A connection the server dropped is replaced and the statement retried once, as the
store does. At most ``size`` connections (one per concurrent batch of :class:`~bot.web.intake.Intake`);
no pool library: the intake never runs more batches at once than that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.types.json import Json

from bot.store.store import postgres_timeouts
from bot.web.ports import DeliveryRow

if TYPE_CHECKING:
    from bot.store.store import Store

# Per-row columns and their array types; received_at = updated_at is one value for the batch.
_ARRAYS = (
    ("delivery_id", "text"),
    ("event", "text"),
    ("action", "text"),
    ("installation_id", "int8"),
    ("repo", "text"),
    ("payload_sha256", "text"),
    ("status", "text"),
    ("reason", "text"),
    ("latency_ms", "float8"),
    ("jobs", "json"),
)
_COLUMNS = [name for name, _ in _ARRAYS]
_UPDATED = ", ".join(
    f"{c} = EXCLUDED.{c}" for c in [*_COLUMNS, "received_at", "updated_at"] if c != "delivery_id"
)

RECORD_SQL = (
    f"INSERT INTO deliveries ({', '.join(_COLUMNS)}, received_at, updated_at)"
    f" SELECT *, %(now)s, %(now)s FROM unnest({', '.join(f'%({n})b::{t}[]' for n, t in _ARRAYS)})"
    f" ON CONFLICT (delivery_id) DO UPDATE SET {_UPDATED}"
    # Re-claimable: an old "failed" row, or one the broker never confirmed in time.
    " WHERE deliveries.status = 'failed'"
    " OR (deliveries.status = 'received' AND deliveries.updated_at < %(stale_before)s)"
    " RETURNING delivery_id"
)
"""The record statement for any number of rows (one array per column): one text, so psycopg
converts it once and the server prepares it once."""


class AsyncPgRecorder:
    """Records delivery batches on PostgreSQL from the event loop (see the module docstring)."""

    def __init__(self, store: Store, conninfo: str, *, timeout_s: float, size: int) -> None:
        self.store = store
        self.conninfo = conninfo
        self.timeout_s = timeout_s
        self.size = size
        self._idle: list[psycopg.AsyncConnection[Any]] = []

    @classmethod
    def for_store(cls, store: object, *, timeout_s: float, size: int) -> AsyncPgRecorder | None:
        """A recorder for ``store`` when it is the SQL store on PostgreSQL, else ``None`` (the
        intake then runs the store's own method in a thread: SQLite, the tests' fakes)."""
        from bot.store.store import Store

        if not isinstance(store, Store) or store.engine.dialect.name != "postgresql":
            return None
        url = store.engine.url.set(drivername="postgresql")
        return cls(store, url.render_as_string(hide_password=False), timeout_s=timeout_s, size=size)

    async def record(self, rows: Sequence[DeliveryRow]) -> set[str]:
        """:meth:`Store.record_deliveries`, awaited: the ids that were fresh; raises on failure
        (then none of them is recorded)."""
        if not self.store.schema_ready:
            # Once per process (or until the database first answers): migrations stay sync.
            await asyncio.to_thread(self.store.ensure_schema)
        if not rows:
            return set()
        for attempt in (1, 2):
            conn = await self._acquire()
            try:
                # Dated once the connection is in hand (a retry too): the row's time starts its
                # writer's claim (bot.web.intake).
                cursor = await conn.execute(RECORD_SQL, self._values(rows))
                fresh = {str(r[0]) for r in await cursor.fetchall()}
            except psycopg.OperationalError:
                if not conn.broken:  # a timeout or a lock: the connection is fine, the batch failed
                    self._idle.append(conn)
                    raise
                await _close(conn)
                # Dropped by the server (restart, failover): retry once on a fresh connection.
                # Safe: if the first try did commit, the retry sees duplicates and the rows stay
                # "received", which the relay enqueues after the grace.
                if attempt == 2:
                    raise
                continue
            except BaseException:
                await _close(conn)  # unknown state (cancelled mid-statement): do not reuse
                raise
            self._idle.append(conn)
            return fresh
        raise AssertionError("unreachable")

    def _values(self, rows: Sequence[DeliveryRow]) -> dict[str, Any]:
        """The statement's arrays for ``rows`` (:meth:`Store.delivery_params`, dated now)."""
        params = self.store.delivery_params(rows)
        values: dict[str, Any] = {name: [p[name] for p in params] for name in _COLUMNS if name != "jobs"}
        values["jobs"] = [Json(p["jobs"]) if p["jobs"] is not None else None for p in params]
        values["now"] = params[0]["received_at"]
        values["stale_before"] = params[0]["stale_before"]
        return values

    async def _acquire(self) -> psycopg.AsyncConnection[Any]:
        if self._idle:
            return self._idle.pop()
        conn: psycopg.AsyncConnection[Any] = await psycopg.AsyncConnection.connect(
            self.conninfo, autocommit=True, **postgres_timeouts(self.timeout_s)
        )
        return conn

    async def aclose(self) -> None:
        """Close the idle connections."""
        idle, self._idle = self._idle, []
        for conn in idle:
            await _close(conn)


async def _close(conn: psycopg.AsyncConnection[Any]) -> None:
    try:
        await conn.close()
    except Exception:  # closing a broken connection: nothing left to release
        pass
