"""The store's budget section: committed USD, atomic reservations, pull-request slots, deferrals.

Every test runs on SQLite and on the real PostgreSQL server (127.0.0.1:5432, trust auth; a fresh
database per test, skipped with the reason only when the server cannot be reached).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.store.store import RESERVATION_TTL, PrLimits, Store

NOW = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.UTC)
MONTH = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
REPO = "octo/app"

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'arcs.db'}"
    else:
        create: Callable[[], str] = request.getfixturevalue("pg_create_db")
        url = create()
    with Store.open(url, clock=lambda: NOW) as opened:
        yield opened


def attempt(store: Store, key: str, *, repo: str = REPO, **fields: object) -> int:
    fields.setdefault("created_at", NOW - dt.timedelta(hours=1))
    row, _ = store.claim_attempt(key, repo=repo, trigger="ci", **fields)
    return row.id


def running(store: Store, key: str, *, repo: str = REPO, reserved: float | None = None) -> int:
    return attempt(
        store,
        key,
        repo=repo,
        status="running",
        started_at=NOW - dt.timedelta(minutes=5),
        reserved_usd=reserved,
    )


def test_committed_is_this_months_cost_plus_running_reservations(store: Store) -> None:
    attempt(store, "a", cost_usd=1.25, status="no_fix")
    attempt(store, "b", repo="octo/lib", cost_usd=0.5, status="fixed")
    attempt(store, "last-month", cost_usd=9.0, status="fixed", created_at=MONTH - dt.timedelta(seconds=1))
    attempt(store, "other-owner", repo="acme/app", cost_usd=7.0, status="fixed")
    running(store, "r1", reserved=2.0)
    stale = NOW - RESERVATION_TTL - dt.timedelta(minutes=1)
    attempt(store, "dead-worker", status="running", started_at=stale, reserved_usd=4.0)
    attempt(store, "finished", status="no_fix", reserved_usd=3.0, cost_usd=0.25)  # reservation is over
    assert store.usd_committed("octo", MONTH) == pytest.approx(1.25 + 0.5 + 2.0 + 0.25)
    assert store.usd_committed("octo", MONTH, repo="octo/lib") == pytest.approx(0.5)
    assert store.usd_committed("octo", MONTH, repo=REPO) == pytest.approx(1.25 + 2.0 + 0.25)
    assert store.usd_committed("nobody", MONTH) == 0.0


def test_a_reservation_grants_what_every_cap_still_allows(store: Store) -> None:
    attempt(store, "spent", cost_usd=3.0, status="no_fix")
    attempt(store, "lib", repo="octo/lib", cost_usd=1.0, status="no_fix")
    mine = running(store, "mine")
    # Owner cap 10 (4 used), repo cap 4 (3 used): the repo cap binds.
    grant = store.reserve_usd(mine, "octo", REPO, 2.0, {None: 10.0, REPO: 4.0}, MONTH)
    assert grant == pytest.approx(1.0)
    row = store.get_attempt(mine)
    assert row is not None and row.reserved_usd == pytest.approx(1.0)
    assert store.usd_committed("octo", MONTH) == pytest.approx(5.0)
    # Reserving again replaces the attempt's own reservation (a resumed attempt).
    assert store.reserve_usd(mine, "octo", REPO, 2.0, {REPO: 4.0}, MONTH) == pytest.approx(1.0)
    # No cap: the whole want; nothing left: 0 and nothing written.
    assert store.reserve_usd(running(store, "free"), "octo", REPO, 2.0, {}, MONTH) == 2.0
    broke = running(store, "broke")
    assert store.reserve_usd(broke, "octo", REPO, 2.0, {REPO: 4.0}, MONTH) == 0.0
    row = store.get_attempt(broke)
    assert row is not None and row.reserved_usd is None


def test_release_records_the_cost_and_frees_the_reservation(store: Store) -> None:
    mine = running(store, "mine", reserved=2.0)
    store.release_usd(mine, cost_usd=0.4)
    row = store.get_attempt(mine)
    assert row is not None and row.reserved_usd is None and row.cost_usd == pytest.approx(0.4)
    assert store.usd_committed("octo", MONTH) == pytest.approx(0.4)


def test_concurrent_reservations_never_exceed_the_cap(store: Store) -> None:
    attempt(store, "spent", cost_usd=0.5, status="no_fix")
    ids = [running(store, f"racer-{i}") for i in range(8)]
    barrier = threading.Barrier(len(ids))
    grants: dict[int, float] = {}
    errors: list[BaseException] = []

    def race(attempt_id: int) -> None:
        try:
            barrier.wait(timeout=30)
            grants[attempt_id] = store.reserve_usd(attempt_id, "octo", REPO, 1.0, {None: 3.0}, MONTH)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=race, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == [] and len(grants) == len(ids)
    assert sum(grants.values()) == pytest.approx(2.5)  # exactly what the cap left, never more
    assert sorted(grants.values(), reverse=True)[:3] == pytest.approx([1.0, 1.0, 0.5])
    assert store.usd_committed("octo", MONTH) == pytest.approx(3.0)


def test_concurrent_admissions_never_overshoot_the_pull_request_limit(store: Store) -> None:
    done = attempt(store, "opened", status="fixed")
    store.record_pr(repo=REPO, number=1, url="u", branch="arcs/fix/a", attempt_id=done)
    ids = [running(store, f"racer-{i}") for i in range(6)]
    barrier = threading.Barrier(len(ids))
    refused: dict[int, str | None] = {}
    limits = PrLimits(since=NOW - dt.timedelta(hours=24), per_day=3, open=10)

    def race(attempt_id: int) -> None:
        barrier.wait(timeout=30)
        admission = store.admit_repair(
            attempt_id, "octo", REPO, want_usd=1.0, caps={}, since=MONTH, pr_limits=limits
        )
        refused[attempt_id] = admission.refused

    threads = [threading.Thread(target=race, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(refused) == len(ids)
    # 1 opened + 2 admitted (which may still open theirs) = the limit of 3.
    assert sorted(refused.values(), key=str) == [None, None] + ["max_prs_per_day"] * 4
    tally = store.admit_repair(
        running(store, "late"), "octo", REPO, want_usd=1.0, caps={}, since=MONTH, pr_limits=limits
    ).prs
    assert tally is not None and (tally.opened_since, tally.pending) == (1, 2)


def test_fixed_attempts_hold_their_slot_until_published(store: Store) -> None:
    attempt(store, "fixed-unpublished", status="fixed", finished_at=NOW - dt.timedelta(minutes=1))
    limits = PrLimits(since=NOW - dt.timedelta(hours=24), per_day=1)
    admission = store.admit_repair(
        running(store, "next"), "octo", REPO, want_usd=1.0, caps={}, since=MONTH, pr_limits=limits
    )
    assert admission.refused == "max_prs_per_day" and admission.granted_usd == 0.0


def test_count_prs_counts_pull_requests(store: Store) -> None:
    a = attempt(store, "a", status="fixed")
    store.record_pr(repo=REPO, number=1, url="u", branch="arcs/a", attempt_id=a)
    store.record_pr(repo=REPO, number=1, url="u", branch="arcs/a", attempt_id=a)  # updated, same PR
    store.record_pr(repo=REPO, number=2, url="u", branch="arcs/b")
    store.set_pr_state(REPO, 2, "merged")
    store.record_pr(repo="octo/lib", number=3, url="u", branch="arcs/c")
    tally = store.count_prs(REPO, NOW - dt.timedelta(hours=24))
    assert (tally.opened_since, tally.open_now, tally.pending) == (2, 1, 0)
    assert store.count_prs(REPO, NOW + dt.timedelta(seconds=1)).opened_since == 0


def test_exactly_one_delayed_message_takes_a_deferred_attempt(store: Store) -> None:
    waiting = running(store, "waiting", reserved=1.0)
    deferred = store.defer_attempt(waiting)
    assert (deferred.status, deferred.message_id, deferred.reserved_usd) == ("queued", "deferred", None)
    assert store.take_deferred(waiting, "m-2") is True
    assert store.take_deferred(waiting, "m-3") is False
    row = store.get_attempt(waiting)
    assert row is not None and row.message_id == "m-2"
    assert store.take_deferred(running(store, "never-deferred"), "m-4") is False


def test_policy_rows_match_names_case_insensitively(store: Store) -> None:
    store.set_policy("Octo", paused=True, updated_by="admin")
    store.set_policy("octo", "Octo/App", monthly_usd=5.0, updated_by="admin")
    store.set_policy("octo", "octo/lib", monthly_usd=1.0, updated_by="admin")
    owner, repo = store.policy_rows("octo", "octo/app")
    assert owner is not None and owner.paused is True and owner.repo == ""
    assert repo is not None and repo.monthly_usd == 5.0
    assert store.policy_rows("acme", "acme/app") == (None, None)
