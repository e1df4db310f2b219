"""The delivery outbox and the web process's bounded, lazily opened store, on SQLite and on the
real PostgreSQL server (127.0.0.1:5432)."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from bot.store.models import DELIVERY_ID_MAX
from bot.store.store import Store, StoreUnavailable, normalize_url
from bot.web.pg_intake import AsyncPgRecorder
from bot.web.ports import DeliveryRow
from tests.bot.intake_support import TcpPlug
from tests.conftest import CreateDb

SHA = "0" * 64
JOB = {
    "actor": "repair_issue",
    "args": {"repo": "o/r"},
    "context": {"delivery_id": "x"},
    "idempotency_key": "k",
}
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


class Clock:
    def __init__(self) -> None:
        self.now = dt.datetime(2026, 11, 24, 12, 0, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'arcs.db'}"
    create: CreateDb = request.getfixturevalue("pg_create_db")
    return create()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(url: str, clock: Clock) -> Iterator[Store]:
    with Store.open(url, clock=clock, timeout_s=2.0, relay_grace=dt.timedelta(seconds=30)) as opened:
        yield opened


def received(store: Store, delivery_id: str) -> bool:
    return store.record_delivery(
        delivery_id, "issues", "labeled", 1, "o/r", SHA, "received", None, jobs=[JOB]
    )


def test_the_delivery_and_its_jobs_are_one_write(store: Store) -> None:
    assert received(store, "d1")
    row = store.get_delivery("d1")
    assert row is not None and row.status == "received" and row.jobs == [JOB]
    assert store.record_delivery("i1", "ping", None, None, None, SHA, "ignored", "ping", latency_ms=3.5)
    ignored = store.get_delivery("i1")
    assert ignored is not None and ignored.jobs is None and ignored.latency_ms == 3.5


def test_a_received_row_is_reclaimable_only_after_the_grace(store: Store, clock: Clock) -> None:
    assert received(store, "d1")
    assert not received(store, "d1")  # the recording request may still be enqueueing
    clock.now += dt.timedelta(seconds=31)
    assert received(store, "d1")  # GitHub's redelivery takes it over
    assert not received(store, "d1")  # ... and renewed the grace
    assert store.mark_enqueued([("d1", 12.5)]) == 1
    clock.now += dt.timedelta(hours=1)
    assert not received(store, "d1")  # enqueued: a duplicate for ever
    row = store.get_delivery("d1")
    assert row is not None and row.status == "enqueued" and row.latency_ms == 12.5


def test_mark_enqueued_keeps_the_provisional_latency_when_none_is_given(store: Store) -> None:
    store.record_delivery(
        "d1", "issues", "labeled", 1, "o/r", SHA, "received", None, jobs=[JOB], latency_ms=4.0
    )
    store.record_delivery("d2", "issues", "labeled", 1, "o/r", SHA, "received", None, jobs=[JOB])
    assert store.mark_enqueued([("d1", None), ("d2", 9.0), ("unknown", 1.0)]) == 2
    assert store.mark_enqueued([("d1", 99.0)]) == 0  # only received rows move
    first, second = store.get_delivery("d1"), store.get_delivery("d2")
    assert first is not None and first.latency_ms == 4.0 and first.status == "enqueued"
    assert second is not None and second.latency_ms == 9.0


def test_claim_stuck_deliveries_takes_each_row_once(store: Store, clock: Clock) -> None:
    for n in range(5):
        assert received(store, f"d{n}")
    store.mark_enqueued([("d4", None)])
    assert store.claim_stuck_deliveries() == []  # within the grace
    clock.now += dt.timedelta(seconds=31)
    claims: list[list[tuple[str, list[dict[str, object]]]]] = []
    barrier = threading.Barrier(4)

    def claim() -> None:
        barrier.wait()
        claims.append(store.claim_stuck_deliveries(limit=10))

    threads = [threading.Thread(target=claim) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    taken = sorted(d for batch in claims for d, _ in batch)
    assert taken == ["d0", "d1", "d2", "d3"]  # each once, the enqueued one never
    assert all(jobs == [JOB] for batch in claims for _, jobs in batch)
    assert store.claim_stuck_deliveries() == []  # the claim renewed the grace
    assert not received(store, "d0")  # and a redelivery respects it too


def test_record_deliveries_is_one_statement_with_one_winner_per_id(store: Store) -> None:
    rows = [
        DeliveryRow(d, "issues", "labeled", 1, "o/r", SHA, "received", None, [JOB])
        for d in ("a", "b", "a", "c")
    ]
    assert received(store, "c")
    assert store.record_deliveries(rows) == {"a", "b"}
    assert store.record_deliveries(rows) == set()


def test_long_fields_are_clipped_and_the_longest_id_fits(store: Store) -> None:
    longest = "x" * DELIVERY_ID_MAX
    assert store.record_delivery(longest, "e" * 64, "a" * 500, 1, "r" * 900, SHA, "ignored", None)
    row = store.get_delivery(longest)
    assert row is not None and len(row.action or "") == 64 and len(row.repo or "") == 255


def test_ping_refuses_a_schema_behind_this_code(store: Store) -> None:
    store.ping()
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0003'"))
    with pytest.raises(StoreUnavailable, match="schema is at 0003"):
        store.ping()


# --- the web process's store: lazy, bounded --------------------------------------------------


@pytest.mark.postgres
def test_a_lazy_store_opens_while_the_database_is_down_and_recovers(pg_create_db: CreateDb) -> None:
    url = pg_create_db()
    plug = TcpPlug(("127.0.0.1", 5432), "refuse")
    try:
        proxied = url.replace("127.0.0.1:5432", f"127.0.0.1:{plug.port}")
        store = Store.open(proxied, lazy=True, timeout_s=1.0)  # no connection yet: cannot fail
        with pytest.raises(StoreUnavailable):
            store.ping()
        began = time.monotonic()
        with pytest.raises(StoreUnavailable):
            received(store, "d1")  # within the retry pause: refused at once, no new attempt
        assert time.monotonic() - began < 0.5
        plug.set("forward")
        time.sleep(1.1)
        store.ping()  # migrated now
        assert received(store, "d1")
        store.close()
    finally:
        plug.close()


@pytest.mark.postgres
def test_a_hanging_database_fails_within_the_timeout(pg_create_db: CreateDb) -> None:
    url = pg_create_db()
    Store.open(url).close()  # migrated
    plug = TcpPlug(("127.0.0.1", 5432), "hang")
    try:
        store = Store.open(
            url.replace("127.0.0.1:5432", f"127.0.0.1:{plug.port}"), upgrade=False, timeout_s=1.0
        )
        began = time.monotonic()
        with pytest.raises(OperationalError):
            received(store, "d1")
        assert time.monotonic() - began < 3.0  # connect_timeout, not the OS's minutes
        store.close()
    finally:
        plug.close()


@pytest.mark.postgres
def test_a_lock_wait_is_bounded_on_postgresql(pg_create_db: CreateDb) -> None:
    url = pg_create_db()
    with Store.open(url, timeout_s=1.0) as store:
        engine = create_engine(normalize_url(url))
        try:
            with engine.connect() as holder:
                holder.execute(text("LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE"))
                began = time.monotonic()
                with pytest.raises(OperationalError, match="lock timeout"):
                    received(store, "d1")
                assert time.monotonic() - began < 3.0
                holder.rollback()
        finally:
            engine.dispose()
        assert received(store, "d1")


def test_a_lock_wait_is_bounded_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'arcs.db'}"
    with Store.open(url, timeout_s=0.5) as store:
        engine = create_engine(url, connect_args={"timeout": 0})
        try:
            with engine.connect() as holder:
                holder.exec_driver_sql("BEGIN EXCLUSIVE")
                began = time.monotonic()
                with pytest.raises(OperationalError, match="locked"):
                    received(store, "d1")
                assert time.monotonic() - began < 2.5  # not the workers' 30 s
                holder.exec_driver_sql("ROLLBACK")
        finally:
            engine.dispose()
        assert received(store, "d1")


# --- the web process's async writer on PostgreSQL (bot.web.pg_intake) -------------------------


def test_the_async_recorder_is_for_postgresql_only(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'arcs.db'}") as store:
        assert AsyncPgRecorder.for_store(store, timeout_s=1.0, size=2) is None  # SQLite: in a thread


@pytest.mark.postgres
def test_the_async_recorder_writes_what_the_store_writes(pg_create_db: CreateDb, clock: Clock) -> None:
    url = pg_create_db()
    with Store.open(url, clock=clock, timeout_s=2.0, relay_grace=dt.timedelta(seconds=30)) as store:
        recorder = AsyncPgRecorder.for_store(store, timeout_s=2.0, size=2)
        assert recorder is not None
        rows = [
            DeliveryRow(d, "issues", "labeled", 1, "o/r", SHA, "received", None, [JOB], 4.5)
            for d in ("a", "b", "a")
        ]
        longest = "x" * DELIVERY_ID_MAX
        ignored = DeliveryRow(longest, "e" * 64, "a" * 500, None, "r" * 900, SHA, "ignored", "why")

        async def scenario() -> None:
            try:
                assert await recorder.record(rows) == {"a", "b"}  # one winner per id
                assert await recorder.record(rows) == set()  # duplicates
                assert await recorder.record([ignored]) == {longest}
                assert received(store, "s")  # the sync path sees the same table
                assert await recorder.record([replace(rows[0], delivery_id="s")]) == set()
                clock.now += dt.timedelta(seconds=31)
                assert await recorder.record(rows[:1]) == {"a"}  # re-claimable after the grace
                # A connection the server dropped is replaced and the statement retried once.
                (conn,) = recorder._idle
                with store.engine.connect() as admin:
                    admin.execute(text("SELECT pg_terminate_backend(:p)"), {"p": conn.info.backend_pid})
                assert await recorder.record([replace(rows[0], delivery_id="after-drop")]) == {"after-drop"}
            finally:
                await recorder.aclose()

        asyncio.run(scenario())
        a = store.get_delivery("a")
        assert a is not None and a.status == "received" and a.jobs == [JOB] and a.latency_ms == 4.5
        assert a.received_at == a.updated_at == clock.now  # rewritten by the re-claim
        i = store.get_delivery(longest)
        assert i is not None and i.jobs is None and i.reason == "why" and i.installation_id is None
        assert len(i.action or "") == 64 and len(i.repo or "") == 255
        assert store.mark_enqueued([("after-drop", 7.0)]) == 1
