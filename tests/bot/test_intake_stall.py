"""A database stall never gets a delivery enqueued twice (issue #22, "Smaller holes").

The database stalls while a delivery is being recorded: a lock held by another connection (SQLite:
``BEGIN IMMEDIATE``; PostgreSQL: ``LOCK TABLE deliveries``) that the record statement waits on. The
webhook answers 503 at its deadline; the stall lasts past the relay grace, then ends and the
statement lands late. The relay's confirmations are not written in between (its thread is stopped:
under a stall its flush fails too), so the row is still ``received`` when the relay sweeps and when
GitHub redelivers. Exactly one job must reach the broker.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from starlette.testclient import TestClient

from bot.settings import Settings
from bot.store.store import Store, normalize_url
from bot.web import app as web_app
from bot.web import webhooks
from bot.web.app import create_app
from bot.web.fakes import ListEnqueuer
from tests.bot.webhook_support import encode, headers, load, with_secret
from tests.conftest import CreateDb

GRACE_S = 2.0
STALL_S = 3.0
"""Longer than the grace: the late row is already old enough for the relay to claim."""
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def stalled_db(
    request: pytest.FixtureRequest, tmp_path: Path
) -> tuple[str, Callable[[], AbstractContextManager[None]]]:
    """A migrated database and a context manager that stalls writes to ``deliveries`` while open."""
    if request.param == "sqlite":
        path = tmp_path / "arcs.db"
        url = f"sqlite:///{path}"
        Store.open(url).close()

        @contextmanager
        def stall_sqlite() -> Iterator[None]:
            holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            holder.execute("BEGIN IMMEDIATE")  # the database's write lock
            try:
                yield
            finally:
                holder.execute("ROLLBACK")
                holder.close()

        return url, stall_sqlite
    create: CreateDb = request.getfixturevalue("pg_create_db")
    url = create()
    Store.open(url).close()

    @contextmanager
    def stall_pg() -> Iterator[None]:
        engine = create_engine(normalize_url(url))
        try:
            with engine.connect() as holder:
                holder.execute(text("LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE"))
                try:
                    yield
                finally:
                    holder.rollback()
        finally:
            engine.dispose()

    return url, stall_pg


def _post(client: TestClient, delivery: str) -> Any:
    body = encode(load("issues.labeled"))
    return client.post("/webhooks/github", content=body, headers=headers("issues", body, delivery=delivery))


def _wait(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_delivery_answered_503_and_recorded_late_is_enqueued_once(
    stalled_db: tuple[str, Callable[[], AbstractContextManager[None]]],
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import datetime as dt

    url, stall = stalled_db
    monkeypatch.setattr(webhooks, "ANSWER_DEADLINE_S", 0.5)
    configured = with_secret(settings).model_copy(
        update={"relay_grace_s": GRACE_S, "relay_interval_s": 3600.0, "database_timeout_s": 30.0}
    )
    # The store waits out the stall (its statement, lock and busy timeouts are 30 s).
    store = Store.open(url, lazy=True, timeout_s=30.0, relay_grace=dt.timedelta(seconds=GRACE_S))
    queue = ListEnqueuer()
    app = create_app(configured, store=store, enqueuer=queue, dashboard=False)

    def jobs_of(delivery: str) -> int:
        return len([j for j in queue.jobs if j.context.get("delivery_id") == delivery])

    with TestClient(app) as client:
        assert _post(client, "warm-up").status_code == 202  # connections open, schema ready
        relay = app.state.relay
        relay.stop()  # under a stall the relay's writes fail too: none of them lands in between

        with stall():
            reply = _post(client, "stalled-1")
            assert reply.status_code == 503, reply.text
            time.sleep(STALL_S)
        # The stall is over: the statement that was already sent lands now (and its writer goes
        # on with whatever it does next).
        _wait(lambda: store.get_delivery("stalled-1") is not None, "the late record")
        time.sleep(0.5)

        relay.sweep()  # the relay finds the row unconfirmed past the grace
        relay.flush()
        again = _post(client, "stalled-1")  # GitHub's redelivery of the 503
        assert again.status_code in (200, 202), again.text
        relay.sweep()
        relay.flush()
        assert jobs_of("stalled-1") == 1, [j.context for j in queue.jobs]
        final = store.get_delivery("stalled-1")
        assert final is not None and final.status == "enqueued"
    store.close()


def test_a_delivery_whose_request_gave_up_before_its_batch_is_not_recorded_by_it(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests waiting for a busy writer that answer 503 meanwhile are not written afterwards:
    their 503 ("nothing recorded") stays true, and the redelivery is fresh."""
    monkeypatch.setattr(webhooks, "ANSWER_DEADLINE_S", 0.5)
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}", timeout_s=30.0)
    release = threading.Event()
    calls: list[list[str]] = []
    original = store.record_deliveries

    def slow_record(rows: Any) -> set[str]:
        calls.append([r.delivery_id for r in rows])
        release.wait(10)
        return original(rows)

    monkeypatch.setattr(store, "record_deliveries", slow_record)
    monkeypatch.setattr(web_app, "WRITERS", 1)  # one writer: the second request waits for it
    queue = ListEnqueuer()
    app = create_app(with_secret(settings), store=store, enqueuer=queue, dashboard=False)
    with TestClient(app) as client:
        replies: dict[str, int] = {}

        def send(delivery: str) -> None:
            replies[delivery] = _post(client, delivery).status_code

        first = threading.Thread(target=send, args=("busy-1",))
        first.start()
        _wait(lambda: bool(calls), "the first batch to be sent")
        send("waiting-1")  # queued behind the stalled batch; answers 503 at its deadline
        release.set()
        first.join(10)
        _wait(lambda: store.get_delivery("busy-1") is not None, "the late record")
        time.sleep(0.5)  # the writer goes on with the waiting request, if it would
        assert replies == {"busy-1": 503, "waiting-1": 503}
        assert calls == [["busy-1"]]  # "waiting-1" was never written
        assert store.get_delivery("waiting-1") is None
        assert queue.jobs == []  # "busy-1" landed after its 503: left to the relay
        again = _post(client, "waiting-1")
        assert again.status_code == 202 and again.json()["status"] == "queued", again.text
    store.close()


def test_a_delivery_recorded_slower_than_the_writers_claim_is_left_to_the_relay(settings: Settings) -> None:
    """The request still waits, but the row's claim is half gone when the statement returns: the
    writer answers ``recorded`` and leaves the job to the relay, which enqueues it once."""
    from bot.web.fakes import MemoryDeliveryStore

    class SlowStore(MemoryDeliveryStore):
        def record_deliveries(self, rows: Any) -> set[str]:
            time.sleep(0.6)  # longer than half the grace, well within the answer's deadline
            return super().record_deliveries(rows)

    store, queue = SlowStore(grace_s=1.0), ListEnqueuer()
    configured = with_secret(settings).model_copy(update={"relay_grace_s": 1.0, "relay_interval_s": 3600.0})
    app = create_app(configured, store=store, enqueuer=queue, dashboard=False)
    with TestClient(app) as client:
        reply = _post(client, "slow-1")
        assert reply.status_code == 202 and reply.json()["status"] == "recorded", reply.text
        assert queue.jobs == [] and store.records["slow-1"].status == "received"
        relay = app.state.relay
        _wait(lambda: relay.sweep() == 1, "the relay to take the row over")
        assert relay.sweep() == 0
    assert [j.context.get("delivery_id") for j in queue.jobs] == ["slow-1"]
