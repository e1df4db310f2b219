"""``jobs.locks.repo_lock``: one holder per repository across processes, on SQLite (a lock file
beside the index manifest) and on the real PostgreSQL (an advisory lock); a clear error after the
timeout."""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections.abc import Iterator
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from bot.settings import Settings, load_settings
from bot.store.store import create_store_engine
from jobs.locks import LockTimeout, LockUnavailable, advisory_key, lock_path, repo_lock
from tests.conftest import CreateDb, MakeRepo

REPO = "octo/app"
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture(scope="module")
def pg_lock_url(pg_create_db: CreateDb) -> str:
    """An empty database of the local server (advisory locks need no schema)."""
    return pg_create_db()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Settings whose store is SQLite (the default) or the real PostgreSQL."""
    values = {"ARCS_HOME": str(tmp_path / "arcs-home"), "ARCS_EMBEDDER": "hash"}
    if request.param == "postgresql":
        values["ARCS_DATABASE_URL"] = request.getfixturevalue("pg_lock_url")
    return load_settings(values)


# --- helpers that run in spawned processes (module level: spawn imports them by name) -----------


def _wait_for_lock(settings: Settings, repo: str, marker: str, trying: Event, results: Any) -> None:
    from jobs.locks import lock_path, repo_lock

    lock_path(settings.index_dir, repo)  # imports done before saying "trying"
    trying.set()
    try:
        with repo_lock(settings, repo, timeout_s=60):
            results.put(("acquired", Path(marker).exists()))
    except Exception as exc:
        results.put(("error", f"{type(exc).__name__}: {exc}"))


def _hold_lock(settings: Settings, repo: str, held: Event) -> None:
    from jobs.locks import repo_lock

    with repo_lock(settings, repo, timeout_s=60):
        held.set()
        time.sleep(600)  # until killed


def _advisory_waiters(url: str) -> int:
    engine = create_store_engine(url)
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
                ).scalar_one()
            )
    finally:
        engine.dispose()


@pytest.fixture
def reap() -> Iterator[list[multiprocessing.process.BaseProcess]]:
    """Processes to kill (if still alive) after the test."""
    started: list[multiprocessing.process.BaseProcess] = []
    yield started
    for process in started:
        if process.is_alive():
            process.kill()
        process.join(30)


# ------------------------------------------------------------------------------------- both


@pytest.mark.slow  # spawns Python processes
def test_a_second_process_waits_for_the_first(
    backend: Settings, tmp_path: Path, reap: list[multiprocessing.process.BaseProcess]
) -> None:
    marker = tmp_path / "released"
    trying = SPAWN.Event()
    results = SPAWN.Queue()
    child = SPAWN.Process(target=_wait_for_lock, args=(backend, REPO, str(marker), trying, results))
    with repo_lock(backend, REPO, timeout_s=5):
        child.start()
        reap.append(child)
        assert trying.wait(60), "the child never started"
        if backend.database_url:
            # PostgreSQL shows the waiter: wait until the child is really blocked on our lock.
            deadline = time.monotonic() + 30
            while _advisory_waiters(backend.sqlalchemy_url) == 0:
                assert time.monotonic() < deadline, "the child never waited for the lock"
                time.sleep(0.05)
        # While we hold the lock the child gets nothing (it would report at once otherwise).
        with pytest.raises(queue.Empty):
            results.get(timeout=0.5)
        marker.write_text("released before the unlock\n")
    assert results.get(timeout=60) == ("acquired", True)  # it ran after us, never alongside
    child.join(30)
    assert child.exitcode == 0


def test_waiting_longer_than_the_timeout_is_a_clear_error(backend: Settings) -> None:
    with repo_lock(backend, REPO, timeout_s=5):
        started = time.monotonic()
        with pytest.raises(LockTimeout) as caught, repo_lock(backend, REPO, timeout_s=0.2):
            pytest.fail("two holders at once")
        assert time.monotonic() - started < 60  # it gave up instead of hanging
    message = caught.value.message
    assert message == str(caught.value)  # one line
    assert "octo/app" in message and "0.2 s" in message and caught.value.exit_code == 1
    with repo_lock(backend, REPO, timeout_s=0):  # free again
        pass


def test_other_repositories_are_not_blocked(backend: Settings) -> None:
    with repo_lock(backend, REPO, timeout_s=5), repo_lock(backend, "octo/other", timeout_s=0):
        pass


def test_the_lock_is_released_when_the_body_fails(backend: Settings) -> None:
    with pytest.raises(RuntimeError, match="boom"), repo_lock(backend, REPO, timeout_s=5):
        raise RuntimeError("boom")
    with repo_lock(backend, REPO, timeout_s=0):
        pass


@pytest.mark.slow  # spawns Python processes
def test_a_killed_holder_releases_the_lock(
    backend: Settings, reap: list[multiprocessing.process.BaseProcess]
) -> None:
    held = SPAWN.Event()
    holder = SPAWN.Process(target=_hold_lock, args=(backend, REPO, held))
    holder.start()
    reap.append(holder)
    assert held.wait(60), "the holder never got the lock"
    with pytest.raises(LockTimeout), repo_lock(backend, REPO, timeout_s=0.2):
        pass
    holder.kill()  # no unlock runs: the kernel (file) or the server (session) drops the lock
    holder.join(30)
    with repo_lock(backend, REPO, timeout_s=30):
        pass


def test_a_negative_timeout_is_refused(settings: Settings) -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        repo_lock(settings, REPO, timeout_s=-1)


# ----------------------------------------------------------------------------------- SQLite


def test_sqlite_locks_a_file_beside_the_index_manifest(settings: Settings, make_repo: MakeRepo) -> None:
    from indexing.index import RepoIndex

    path = lock_path(settings.index_dir, REPO)
    with RepoIndex.open(settings, make_repo({"a.py": "x = 1\n"}), repo_id=REPO) as index:
        assert path == index.manifest_path.with_suffix(".lock")
    with repo_lock(settings, REPO, timeout_s=5):
        assert path.is_file()


def test_a_sqlite_engine_needs_a_lock_folder(settings: Settings, tmp_path: Path) -> None:
    engine = create_store_engine(f"sqlite:///{tmp_path / 'arcs.db'}")
    try:
        with pytest.raises(ValueError, match="lock_dir"):
            repo_lock(engine, REPO)
        with (
            repo_lock(engine, REPO, lock_dir=settings.index_dir, timeout_s=5),
            pytest.raises(LockTimeout),
            repo_lock(settings, REPO, timeout_s=0.1),  # the same file as the settings' lock
        ):
            pass
    finally:
        engine.dispose()


def test_an_unwritable_lock_folder_is_a_clear_error(settings: Settings, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with (
        pytest.raises(LockUnavailable, match="cannot open the lock file"),
        repo_lock(settings, REPO, lock_dir=blocker / "index"),
    ):
        pass


# ------------------------------------------------------------------------------- PostgreSQL


@pytest.mark.postgres
def test_postgres_engine_and_settings_share_one_advisory_lock(pg_lock_url: str, tmp_path: Path) -> None:
    settings = load_settings({"ARCS_HOME": str(tmp_path), "ARCS_DATABASE_URL": pg_lock_url})
    engine = create_store_engine(pg_lock_url)
    query = text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = :lo")
    low = advisory_key(REPO) & 0xFFFFFFFF  # pg_locks splits the 64-bit key into classid/objid
    try:
        with repo_lock(engine, REPO, timeout_s=5):
            with engine.connect() as conn:
                assert conn.execute(query, {"lo": low}).scalar_one() == 1
            with pytest.raises(LockTimeout), repo_lock(settings, REPO, timeout_s=0.2):
                pass
        with engine.connect() as conn:
            assert conn.execute(query, {"lo": low}).scalar_one() == 0
        # The lock's connection went back to the pool without its lock_timeout.
        with engine.connect() as conn:
            assert conn.execute(text("SHOW lock_timeout")).scalar_one() == "0"
    finally:
        engine.dispose()
    assert not (tmp_path / "index").exists()  # no lock file with PostgreSQL


def test_an_unreachable_database_is_a_clear_error(tmp_path: Path) -> None:
    settings = load_settings(
        {"ARCS_HOME": str(tmp_path), "ARCS_DATABASE_URL": "postgresql://postgres@127.0.0.1:1/arcs"}
    )
    with (
        pytest.raises(LockUnavailable, match="database is unreachable") as caught,
        repo_lock(settings, REPO, timeout_s=1),
    ):
        pass
    assert "octo/app" in caught.value.message


def test_the_edge_injects_how_the_lock_connects(tmp_path: Path) -> None:
    # jobs does not import the store: the edge may hand repo_lock the store's engine factory.
    url = "postgresql://postgres@127.0.0.1:1/arcs"
    settings = load_settings({"ARCS_HOME": str(tmp_path), "ARCS_DATABASE_URL": url})
    asked: list[str] = []

    def connect(wanted: str) -> Any:
        asked.append(wanted)
        return create_store_engine(wanted)

    with (
        pytest.raises(LockUnavailable, match="database is unreachable"),
        repo_lock(settings, REPO, timeout_s=1, connect=connect),
    ):
        pass
    assert asked == [url]
