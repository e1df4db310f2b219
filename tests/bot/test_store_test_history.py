"""The test history (``test_runs``, issue #26) on SQLite and on the real PostgreSQL server: rows
recorded once per (repository, run, test), read back oldest first, and classified as flaky."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.store.models import TEST_ID_MAX
from bot.store.store import Store
from jobs.repair.flaky import SANDBOX_ENV, TestRun, classify

NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)
REPO = "octo/app"
SHA = "a1b2c3d4e5" * 4
T = "tests/test_io.py::test_read"
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'arcs.db'}"
    else:
        create: Callable[[], str] = request.getfixturevalue("pg_create_db")
        url = create()
    with Store.open(url, clock=clock) as opened:
        yield opened


def ci_failure(run_id: int, test: str = T) -> TestRun:
    return TestRun(test, SHA, "ci:CI", "ci", True, run_key=f"ci:{run_id}:1")


def test_outcomes_are_recorded_once_and_read_back_oldest_first(store: Store, clock: Clock) -> None:
    assert store.record_test_runs(REPO, [ci_failure(1), ci_failure(1, "t::other")]) == 2
    assert store.record_test_runs(REPO, [ci_failure(1)]) == 0  # the redelivered run
    clock.now = NOW + dt.timedelta(minutes=5)
    attempt, _ = store.claim_attempt("ci:octo/app:x", repo=REPO, trigger="ci")
    sandbox = [
        TestRun(T, SHA, SANDBOX_ENV, "reproduction", n == 0, run_key=f"attempt:{attempt.id}:reproduction:{n}")
        for n in range(3)
    ]
    assert store.record_test_runs(REPO, sandbox, attempt_id=attempt.id) == 3
    assert store.record_test_runs(REPO, sandbox, attempt_id=attempt.id) == 0  # a retried job
    assert store.record_test_runs("other/repo", [ci_failure(1)]) == 1  # another repository's history
    rows = store.test_runs(REPO, [T])
    assert [(r.source, r.failed) for r in rows] == [
        ("ci", True),
        ("reproduction", True),
        ("reproduction", False),
        ("reproduction", False),
    ]
    assert rows[0].at == NOW and rows[-1].at == NOW + dt.timedelta(minutes=5)
    verdict = classify(T, rows)
    assert verdict.flaky and verdict.sentence == (
        f"`{T}` failed 2 of 4 runs at a1b2c3d, passed here 2 of 3 in ARCS' sandbox, first seen failing 2026-11-20"
    )
    assert [r.test_id for r in store.test_runs(REPO, ["t::other", "nope"])] == ["t::other"]
    assert store.test_runs(REPO, []) == [] and store.record_test_runs(REPO, []) == 0


def test_the_newest_rows_per_test_are_kept_within_the_limit(store: Store, clock: Clock) -> None:
    for n in range(6):
        clock.now = NOW + dt.timedelta(minutes=n)
        store.record_test_runs(REPO, [ci_failure(n)])
    rows = store.test_runs(REPO, [T], limit=4)
    assert [r.run_key for r in rows] == [f"ci:{n}:1" for n in range(2, 6)]


def test_long_test_ids_are_clipped_alike_when_recorded_and_read(store: Store) -> None:
    long_id = "tests/test_p.py::test_param[" + "x" * 2000 + "]"
    assert store.record_test_runs(REPO, [ci_failure(9, long_id)]) == 1
    (row,) = store.test_runs(REPO, [long_id])
    assert row.test_id == long_id[:TEST_ID_MAX]


def test_failing_tests_lists_recent_failures_newest_first(store: Store, clock: Clock) -> None:
    old, newer, passing = "tests/t.py::test_old", "tests/t.py::test_newer", "tests/t.py::test_passes"
    store.record_test_runs(REPO, [ci_failure(1, old)])
    clock.now = NOW + dt.timedelta(days=2)
    store.record_test_runs(
        REPO, [ci_failure(2, newer), TestRun(passing, SHA, SANDBOX_ENV, "ci", False, run_key="x")]
    )
    store.record_test_runs("octo/other", [ci_failure(3, "tests/t.py::elsewhere")])
    assert store.failing_tests(REPO, since=NOW) == [newer, old]
    assert store.failing_tests(REPO, since=NOW + dt.timedelta(days=1)) == [newer]
    assert store.failing_tests(REPO, since=NOW, limit=1) == [newer]
    clock.now = NOW + dt.timedelta(days=3)
    store.record_test_runs(REPO, [ci_failure(4, old)])  # failing again: most recent now
    assert store.failing_tests(REPO, since=NOW) == [old, newer]
