"""The store on SQLite and on the real PostgreSQL server (127.0.0.1:5432, trust auth).

PostgreSQL tests use a throwaway database per test session (dropped afterwards) and are skipped,
with the reason, only when the server cannot be reached.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import multiprocessing
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from bot.errors import ConfigError
from bot.settings import Settings
from bot.store import open_store
from bot.store.models import Base
from bot.store.store import Store, StoreUnavailable, create_store_engine, head_revision, normalize_url
from tests.conftest import CreateDb

TABLES = {"deliveries", "attempts", "pull_requests", "events"}
SHA = "0" * 64


@pytest.fixture(scope="session")
def pg_url(pg_create_db: CreateDb) -> str:
    """The session's PostgreSQL database (migrated by the first store that opens it)."""
    return pg_create_db()


BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """A factory of empty databases of the test's backend."""
    backend = request.param
    counter = iter(range(1000))

    def make() -> str:
        if backend == "sqlite":
            return f"sqlite:///{tmp_path / f'db{next(counter)}' / 'arcs.db'}"
        create: CreateDb = request.getfixturevalue("pg_create_db")
        return create()

    return make


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated, empty database of each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'arcs.db'}"
    url: str = request.getfixturevalue("pg_url")
    with Store.open(url) as store, store.engine.begin() as conn:
        conn.execute(text("TRUNCATE deliveries, attempts, pull_requests, events RESTART IDENTITY CASCADE"))
    return url


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    with Store.open(db_url) as opened:
        yield opened


def _delivery(store: Store, delivery_id: str, status: str = "queued") -> bool:
    return store.record_delivery(delivery_id, "workflow_run", "completed", 7, "octo/app", SHA, status, None)


# --- migrations ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fresh_url", BACKENDS, indirect=True)
def test_migrations_upgrade_an_empty_database_once_under_concurrency(fresh_url: Callable[[], str]) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    url = fresh_url()
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def open_one() -> None:
        # One web process and three workers starting together on an empty database.
        barrier.wait()
        try:
            Store.open(url).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []

    with Store.open(url) as store:  # already at head: nothing to do, nothing breaks
        assert set(inspect(store.engine).get_table_names()) >= TABLES | {"alembic_version"}
        with store.engine.connect() as conn:
            assert (
                conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
                == head_revision()
                == "0006"
            )
            # The ORM models and the migrations describe the same schema.
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []


def test_open_store_defaults_to_sqlite_under_home(settings: Settings) -> None:
    with open_store(settings) as store:
        assert store.engine.dialect.name == "sqlite"
        store.ping()
    assert (settings.home / "arcs.db").is_file()


def test_urls_are_normalized_and_checked() -> None:
    assert normalize_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_url("postgresql+psycopg2://u@h/db") == "postgresql+psycopg2://u@h/db"
    assert normalize_url("sqlite:///x.db") == "sqlite:///x.db"
    with pytest.raises(ConfigError, match="unsupported database 'mysql'"):
        create_store_engine("mysql://u@h/db")
    with pytest.raises(ConfigError, match="not a database URL"):
        create_store_engine("not a url")


def test_in_memory_sqlite_is_shared_between_threads() -> None:
    with Store.open("sqlite://") as store:
        assert _delivery(store, "d1")
        seen: list[bool] = []
        worker = threading.Thread(target=lambda: seen.append(_delivery(store, "d1")))
        worker.start()
        worker.join()
        assert seen == [False]


# --- deliveries ----------------------------------------------------------------------------------


def test_satisfies_the_web_delivery_store_port(store: Store) -> None:
    from bot.web.ports import DeliveryStore

    assert isinstance(store, DeliveryStore)


def test_a_delivery_is_recorded_once(store: Store) -> None:
    assert _delivery(store, "d-1") is True
    assert _delivery(store, "d-1") is False
    row = store.get_delivery("d-1")
    assert row is not None
    assert (row.event, row.action, row.installation_id, row.repo, row.status) == (
        "workflow_run",
        "completed",
        7,
        "octo/app",
        "queued",
    )
    assert row.received_at.tzinfo is not None


def test_a_failed_delivery_can_be_claimed_again(store: Store) -> None:
    assert _delivery(store, "d-2")
    store.mark_delivery("d-2", "failed", "broker down")
    failed = store.get_delivery("d-2")
    assert failed is not None and (failed.status, failed.reason) == ("failed", "broker down")
    assert store.record_delivery("d-2", "push", None, 7, "octo/app", SHA, "ignored", "nothing to do")
    again = store.get_delivery("d-2")
    assert again is not None and (again.event, again.status, again.reason) == (
        "push",
        "ignored",
        "nothing to do",
    )
    assert _delivery(store, "d-2") is False


def test_mark_delivery_of_an_unknown_id_raises(store: Store) -> None:
    with pytest.raises(KeyError):
        store.mark_delivery("nope", "failed", None)
    with pytest.raises(ValueError, match="delivery status"):
        store.record_delivery("d", "push", None, None, None, SHA, "bogus", None)


def test_concurrent_deliveries_have_one_winner(store: Store) -> None:
    barrier = threading.Barrier(8)

    def record(_: int) -> bool:
        barrier.wait()
        return _delivery(store, "same")

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(record, range(8)))
    assert sorted(results) == [False] * 7 + [True]


# --- attempts ------------------------------------------------------------------------------------


def test_claim_attempt_creates_once_and_returns_the_winner(store: Store) -> None:
    first, created = store.claim_attempt(
        "ci:octo/app:workflow_run:1", repo="octo/app", trigger="ci", head_sha="abc", installation_id=7
    )
    assert created is True
    assert (first.status, first.owner, first.trigger, first.head_sha) == ("queued", "octo", "ci", "abc")
    again, created_again = store.claim_attempt("ci:octo/app:workflow_run:1", repo="octo/app", trigger="ci")
    assert created_again is False
    assert again.id == first.id and again.head_sha == "abc"
    assert store.get_attempt_by_key("ci:octo/app:workflow_run:1") is not None


def test_claim_attempt_rejects_unknown_fields_and_values(store: Store) -> None:
    with pytest.raises(TypeError, match="colour"):
        store.claim_attempt("k", repo="o/r", trigger="ci", colour="red")
    with pytest.raises(ValueError, match="attempt status"):
        store.claim_attempt("k", repo="o/r", trigger="ci", status="pending")
    with pytest.raises(ValueError, match="attempt trigger"):
        store.claim_attempt("k", repo="o/r", trigger="cron")


def test_concurrent_claims_from_threads_have_one_winner(store: Store) -> None:
    barrier = threading.Barrier(8)

    def claim(_: int) -> tuple[int, bool]:
        barrier.wait()
        attempt, created = store.claim_attempt("race", repo="o/r", trigger="ci")
        return attempt.id, created

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(claim, range(8)))
    assert sum(created for _, created in results) == 1
    assert len({attempt_id for attempt_id, _ in results}) == 1


def _claim_in_process(url: str) -> tuple[int, bool]:
    with Store.open(url, upgrade=False) as store:
        attempt, created = store.claim_attempt("process-race", repo="o/r", trigger="issue")
        return attempt.id, created


@pytest.mark.slow
def test_concurrent_claims_from_processes_have_one_winner(store: Store, db_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(3, mp_context=context) as pool:
        results = list(pool.map(_claim_in_process, [db_url] * 6))
    assert sum(created for _, created in results) == 1
    assert len({attempt_id for attempt_id, _ in results}) == 1


def test_update_attempt_sets_the_dashboard_fields(store: Store) -> None:
    attempt, _ = store.claim_attempt("k", repo="octo/app", trigger="ci")
    now = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
    updated = store.update_attempt(
        attempt.id,
        status="fixed",
        verdict="fixed",
        tier="small",
        rounds=2,
        tokens=1500,
        cost_usd=0.12,
        started_at=now,
        finished_at=now + dt.timedelta(minutes=3),
        files={"a.py": "x = 2\n", "gone.py": None},
        trace={"rounds": [1, 2]},
    )
    assert (updated.status, updated.tier, updated.rounds, updated.tokens) == ("fixed", "small", 2, 1500)
    assert updated.finished_at == now + dt.timedelta(minutes=3)
    assert updated.files == {"a.py": "x = 2\n", "gone.py": None}
    with pytest.raises(KeyError):
        store.update_attempt(999_999, status="error")
    with pytest.raises(ValueError, match="naive"):
        store.update_attempt(attempt.id, started_at=dt.datetime(2026, 1, 1))


def test_attempts_are_listed_newest_first_with_filters(store: Store) -> None:
    a, _ = store.claim_attempt("a", repo="o/r", trigger="ci", head_branch="main")
    b, _ = store.claim_attempt("b", repo="o/r", trigger="issue", issue_number=4)
    store.claim_attempt("c", repo="o/other", trigger="ci")
    store.update_attempt(b.id, status="running")
    assert [x.id for x in store.attempts(repo="o/r")] == [b.id, a.id]
    assert [x.id for x in store.attempts(repo="o/r", head_branch="main")] == [a.id]
    assert [x.id for x in store.attempts(issue_number=4, statuses=("running",))] == [b.id]
    assert store.attempts(repo="o/r", statuses=("fixed",)) == []


def test_begin_publish_is_exclusive_until_stale_or_failed(db_url: str) -> None:
    clock = [dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)]
    with Store.open(db_url, clock=lambda: clock[0]) as store:
        attempt, _ = store.claim_attempt("pub", repo="o/r", trigger="ci")
        stale = dt.timedelta(minutes=15)
        assert store.begin_publish(attempt.id, stale_after=stale) is True
        assert store.begin_publish(attempt.id, stale_after=stale) is False
        clock[0] += dt.timedelta(minutes=16)  # the first publisher died
        assert store.begin_publish(attempt.id, stale_after=stale) is True
        store.update_attempt(attempt.id, publish_state="failed")
        assert store.begin_publish(attempt.id, stale_after=stale) is True
        store.update_attempt(attempt.id, publish_state="published")
        assert store.begin_publish(attempt.id, stale_after=stale) is False


# --- pull requests and events --------------------------------------------------------------------


def test_record_pr_links_the_attempt_and_set_pr_state_follows_it(store: Store) -> None:
    attempt, _ = store.claim_attempt("k", repo="octo/app", trigger="ci")
    pr = store.record_pr(
        repo="octo/app", number=12, url="https://x/12", branch="arcs/fix/main", attempt_id=attempt.id
    )
    assert (pr.number, pr.state, pr.attempt_id) == (12, "open", attempt.id)
    again = store.record_pr(
        repo="octo/app", number=12, url="https://x/12", branch="arcs/fix/main", head_sha="b" * 40
    )
    assert again.id == pr.id and again.head_sha == "b" * 40 and again.attempt_id == attempt.id
    linked = store.get_attempt(attempt.id)
    assert linked is not None and (linked.pr_number, linked.pr_url, linked.pr_state) == (
        12,
        "https://x/12",
        "open",
    )

    merged_at = dt.datetime(2026, 11, 2, 9, 30, tzinfo=dt.UTC)
    assert store.set_pr_state("octo/app", 12, "merged", at=merged_at) is True
    row = store.get_pr("octo/app", 12)
    assert row is not None and row.state == "merged" and row.merged_at == merged_at
    after = store.get_attempt(attempt.id)
    assert after is not None and after.pr_state == "merged"
    assert store.set_pr_state("octo/app", 999, "closed") is False


def test_events_are_recorded_and_filtered(store: Store) -> None:
    attempt, _ = store.claim_attempt("k", repo="octo/app", trigger="comment")
    store.record_event(
        "refusal", "no write permission", attempt_id=attempt.id, repo="octo/app", data={"user": "eve"}
    )
    store.record_event("error", "boom", repo="octo/app")
    store.record_event("notice", "elsewhere", repo="octo/other")
    refusals = store.events(attempt_id=attempt.id)
    assert [(e.kind, e.message, e.data) for e in refusals] == [
        ("refusal", "no write permission", {"user": "eve"})
    ]
    assert [e.kind for e in store.events(repo="octo/app")] == ["refusal", "error"]
    assert [e.message for e in store.events(kind="notice")] == ["elsewhere"]
    assert refusals[0].created_at.tzinfo is not None
    with pytest.raises(ValueError, match="event kind"):
        store.record_event("gossip", "x")


# --- availability --------------------------------------------------------------------------------


def test_an_unreachable_database_raises_store_unavailable() -> None:
    url = "postgresql://postgres@127.0.0.1:1/nothing?connect_timeout=2"
    with pytest.raises(StoreUnavailable, match="database unavailable"):
        Store.open(url)
    store = Store(create_store_engine(url))
    with pytest.raises(StoreUnavailable):
        store.ping()
    store.close()
