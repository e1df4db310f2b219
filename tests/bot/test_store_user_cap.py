"""The store's per-user daily cap (``ARCS_USER_DAILY_USD``) at admission: what counts against a
user, the limit reached exactly or just passed, and the 24-hour window rolling on a fake clock.

Every test runs on SQLite and on the real PostgreSQL server (skipped with the reason only when the
server cannot be reached), as the other budget tests of the store.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.store.models import Attempt
from bot.store.store import Admission, Store, UserCap

NOW = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.UTC)
MONTH = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
DAY = dt.timedelta(hours=24)
REPO = "octo/app"

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@dataclass
class Clock:
    now: dt.datetime = NOW

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


def spent(store: Store, key: str, user: str | None, usd: float, at: dt.datetime, repo: str = REPO) -> None:
    store.claim_attempt(
        key, repo=repo, trigger="comment", requested_by=user, status="no_fix", cost_usd=usd, created_at=at
    )


def row(store: Store, attempt_id: int) -> Attempt:
    found = store.get_attempt(attempt_id)
    assert found is not None
    return found


def admit(
    store: Store, clock: Clock, key: str, user: str, want: float, limit: float = 1.0
) -> tuple[int, Admission]:
    """Admit a new attempt of ``user`` asking for ``want`` USD under a ``limit`` a day."""
    claimed, _ = store.claim_attempt(key, repo=REPO, trigger="comment", requested_by=user, status="running")
    admission = store.admit_repair(
        claimed.id,
        "octo",
        REPO,
        want_usd=want,
        caps={},
        since=MONTH,
        user_cap=UserCap(user, limit, clock.now - DAY),
    )
    return claimed.id, admission


def test_reaching_the_cap_exactly_is_admitted_and_reserved(store: Store, clock: Clock) -> None:
    spent(store, "a", "ana", 0.3, NOW - dt.timedelta(hours=2))
    spent(store, "b", "ana", 0.2, NOW - dt.timedelta(hours=1), repo="octo/lib")  # the owner's other repo
    attempt_id, admission = admit(store, clock, "c", "ana", 0.5)
    assert admission.refused is None and admission.granted_usd == 0.5
    assert row(store, attempt_id).reserved_usd == 0.5


def test_just_over_the_cap_is_refused_with_the_numbers_and_nothing_reserved(
    store: Store, clock: Clock
) -> None:
    oldest = NOW - dt.timedelta(hours=20)
    spent(store, "a", "ana", 0.3, oldest)
    spent(store, "b", "ana", 0.2, NOW - dt.timedelta(hours=1))
    attempt_id, admission = admit(store, clock, "c", "ana", 0.51)
    assert admission.refused == "user_daily_usd"
    assert admission.user_committed == pytest.approx(0.5)
    assert admission.user_oldest == oldest
    assert admission.user_wanted == 0.51
    refused = row(store, attempt_id)
    assert refused.reserved_usd is None and refused.admitted_at is None


def test_a_running_reservation_of_the_same_user_counts(store: Store, clock: Clock) -> None:
    first, admission = admit(store, clock, "first", "ana", 0.75)
    assert admission.refused is None
    store.update_attempt(first, started_at=NOW)
    _, second = admit(store, clock, "second", "ana", 0.5)
    assert second.refused == "user_daily_usd"
    assert second.user_committed == pytest.approx(0.75)


def test_other_users_ci_and_other_owners_do_not_count(store: Store, clock: Clock) -> None:
    spent(store, "bob", "bob", 5.0, NOW - dt.timedelta(hours=1))
    spent(store, "ci", None, 5.0, NOW - dt.timedelta(hours=1))
    spent(store, "elsewhere", "ana", 5.0, NOW - dt.timedelta(hours=1), repo="acme/app")
    _, admission = admit(store, clock, "c", "ana", 1.0)
    assert admission.refused is None and admission.user_committed == 0.0


def test_the_window_rolls_24_hours_after_the_spend(store: Store, clock: Clock) -> None:
    spent(store, "a", "ana", 0.9, NOW)
    clock.now = NOW + DAY - dt.timedelta(seconds=1)
    _, before = admit(store, clock, "b", "ana", 0.5)
    assert before.refused == "user_daily_usd"
    clock.now = NOW + DAY
    _, still = admit(store, clock, "c", "ana", 0.5)  # created_at >= since: the boundary still counts
    assert still.refused == "user_daily_usd"
    clock.now = NOW + DAY + dt.timedelta(seconds=1)
    _, after = admit(store, clock, "d", "ana", 0.5)
    assert after.refused is None and after.granted_usd == 0.5
