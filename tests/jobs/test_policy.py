"""jobs.policy: merging owner/repo rows and .arcs.yml, quiet hours, monthly windows, decisions."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from jobs.policy import (
    Allow,
    Defer,
    Refuse,
    UsdCap,
    binding_cap,
    budget_stop_reason,
    decide,
    in_quiet_hours,
    merge,
    monthly_window,
    usd_available,
    user_cap_exceeded,
    user_cap_reason,
    user_cap_resets,
)

PARIS = ZoneInfo("Europe/Paris")


@dataclass
class Row:
    paused: bool | None = None
    monthly_usd: float | None = None
    max_prs_per_day: int | None = None
    quiet_start: int | None = None
    quiet_end: int | None = None
    timezone: str | None = None


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> dt.datetime:
    return dt.datetime(year, month, day, hour, minute, tzinfo=dt.UTC)


# --- merge ------------------------------------------------------------------------------------


def test_the_repository_row_overrides_the_owner_row_field_by_field() -> None:
    owner = Row(paused=True, max_prs_per_day=5, quiet_start=22, quiet_end=6, timezone="Europe/Paris")
    repo = Row(paused=False, quiet_start=20)
    policy = merge("octo", "octo/app", owner, repo)
    assert policy.paused is False and policy.paused_scope is None
    assert (policy.quiet_start, policy.quiet_end, policy.timezone) == (20, 6, "Europe/Paris")
    assert (policy.max_prs_per_day, policy.max_prs_source) == (5, "policy")


def test_unset_fields_fall_back_to_the_owner_and_then_to_nothing() -> None:
    paused = merge("octo", "octo/app", Row(paused=True), Row())
    assert paused.paused and paused.paused_scope == "owner"
    by_repo = merge("octo", "octo/app", None, Row(paused=True))
    assert by_repo.paused and by_repo.paused_scope == "repo"
    nothing = merge("octo", "octo/app", None, None)
    assert not nothing.paused and nothing.caps == () and nothing.max_prs_per_day is None
    assert not nothing.has_quiet_hours and nothing.tz_name == "UTC"


def test_monthly_budgets_of_owner_and_repository_both_apply() -> None:
    policy = merge("octo", "octo/app", Row(monthly_usd=50.0), Row(monthly_usd=5.0))
    assert policy.caps == (UsdCap("owner", "octo", 50.0), UsdCap("repo", "octo/app", 5.0))
    assert [c.repo for c in policy.caps] == [None, "octo/app"]


@pytest.mark.parametrize(
    ("policy_prs", "config_prs", "expected"),
    [(3, 5, (3, "policy")), (10, 5, (5, ".arcs.yml")), (None, 5, (5, ".arcs.yml")), (2, None, (2, "policy"))],
)
def test_max_prs_per_day_the_stricter_of_policy_and_arcs_yml_wins(
    policy_prs: int | None, config_prs: int | None, expected: tuple[int, str]
) -> None:
    policy = merge(
        "octo", "octo/app", Row(max_prs_per_day=policy_prs), None, config_max_prs_per_day=config_prs
    )
    assert (policy.max_prs_per_day, policy.max_prs_source) == expected


# --- quiet hours ------------------------------------------------------------------------------


def test_quiet_hours_in_a_same_day_window() -> None:
    policy = merge("octo", "octo/app", Row(quiet_start=9, quiet_end=17), None)
    assert in_quiet_hours(policy, utc(2026, 3, 2, 8, 59)) is None
    assert in_quiet_hours(policy, utc(2026, 3, 2, 9, 0)) == utc(2026, 3, 2, 17, 0)
    assert in_quiet_hours(policy, utc(2026, 3, 2, 16, 59)) == utc(2026, 3, 2, 17, 0)
    assert in_quiet_hours(policy, utc(2026, 3, 2, 17, 0)) is None


def test_quiet_hours_that_wrap_midnight_end_the_next_morning() -> None:
    policy = merge("octo", "octo/app", Row(quiet_start=22, quiet_end=6), None)
    assert in_quiet_hours(policy, utc(2026, 3, 2, 21, 30)) is None
    assert in_quiet_hours(policy, utc(2026, 3, 2, 23, 15)) == utc(2026, 3, 3, 6, 0)
    assert in_quiet_hours(policy, utc(2026, 3, 3, 2, 0)) == utc(2026, 3, 3, 6, 0)
    assert in_quiet_hours(policy, utc(2026, 3, 3, 6, 0)) is None


def test_quiet_hours_are_read_in_the_policy_time_zone() -> None:
    policy = merge("octo", "octo/app", Row(quiet_start=22, quiet_end=7, timezone="Europe/Paris"), None)
    # 21:30 UTC is 22:30 in Paris (winter, UTC+1): quiet until 07:00 Paris = 06:00 UTC.
    until = in_quiet_hours(policy, utc(2026, 1, 15, 21, 30))
    assert until == dt.datetime(2026, 1, 16, 7, 0, tzinfo=PARIS) == utc(2026, 1, 16, 6, 0)
    assert until is not None and until.tzinfo is not None and until.utcoffset() == dt.timedelta(hours=1)
    # 06:30 UTC is 07:30 in Paris: the window is over (but it would still be quiet in UTC).
    assert in_quiet_hours(policy, utc(2026, 1, 16, 6, 30)) is None
    # Summer (UTC+2): 05:30 UTC is 07:30 in Paris, already past the window.
    assert in_quiet_hours(policy, utc(2026, 7, 1, 5, 30)) is None
    assert in_quiet_hours(policy, utc(2026, 7, 1, 4, 30)) == utc(2026, 7, 1, 5, 0)


def test_quiet_hours_across_a_daylight_saving_change() -> None:
    # The night Paris moves to summer time (29 March 2026, 02:00 -> 03:00): 7:00 is UTC+2.
    policy = merge("octo", "octo/app", Row(quiet_start=22, quiet_end=7, timezone="Europe/Paris"), None)
    assert in_quiet_hours(policy, utc(2026, 3, 28, 23, 0)) == utc(2026, 3, 29, 5, 0)


def test_empty_or_unknown_quiet_settings() -> None:
    assert (
        in_quiet_hours(merge("o", "o/r", Row(quiet_start=5, quiet_end=5), None), utc(2026, 1, 1, 5)) is None
    )
    assert in_quiet_hours(merge("o", "o/r", Row(quiet_start=5), None), utc(2026, 1, 1, 5)) is None
    unknown = merge("o", "o/r", Row(quiet_start=0, quiet_end=6, timezone="Mars/Olympus"), None)
    assert unknown.tz_name == "UTC" and in_quiet_hours(unknown, utc(2026, 1, 1, 3)) == utc(2026, 1, 1, 6)
    with pytest.raises(ValueError, match="aware"):
        in_quiet_hours(unknown, dt.datetime(2026, 1, 1, 3))


# --- months and money -------------------------------------------------------------------------


def test_the_monthly_window_is_the_calendar_month_of_the_policy_time_zone() -> None:
    assert monthly_window(utc(2026, 2, 14, 12)) == (utc(2026, 2, 1), utc(2026, 3, 1))
    assert monthly_window(utc(2026, 12, 31, 23)) == (utc(2026, 12, 1), utc(2027, 1, 1))
    # 23:30 UTC on 31 January is already February in Paris.
    start, end = monthly_window(utc(2026, 1, 31, 23, 30), "Europe/Paris")
    assert start == dt.datetime(2026, 2, 1, tzinfo=PARIS) == utc(2026, 1, 31, 23)
    assert end == dt.datetime(2026, 3, 1, tzinfo=PARIS)


def test_usd_available() -> None:
    assert usd_available(5.0, 4.2) == pytest.approx(0.8)
    assert usd_available(5.0, 7.0) == 0.0
    assert usd_available(None, 100.0) == math.inf


# --- the decision -----------------------------------------------------------------------------


def test_decide_paused_then_budget_then_quiet_hours() -> None:
    night = utc(2026, 3, 2, 23)
    quiet: dict[str, Any] = {"quiet_start": 22, "quiet_end": 6}
    paused = decide(merge("octo", "octo/app", Row(paused=True, monthly_usd=5), None), night, {"octo": 9.0})
    assert isinstance(paused, Refuse) and paused.policy == "paused"
    assert paused.reason == "ARCS is paused for octo by an org admin"
    repo_paused = decide(merge("octo", "octo/app", None, Row(paused=True)), night, {})
    assert (
        isinstance(repo_paused, Refuse)
        and repo_paused.reason == "ARCS is paused for octo/app by an org admin"
    )

    used = decide(merge("octo", "octo/app", Row(monthly_usd=5.0, **quiet), None), night, {"octo": 5.0})
    assert isinstance(used, Refuse) and used.policy == "monthly_usd"
    assert used.reason == "octo's monthly repair budget is used: $5.00 of $5.00"
    assert used.data == {"scope": "owner", "limit": 5.0, "committed": 5.0}

    deferred = decide(merge("octo", "octo/app", Row(monthly_usd=5.0, **quiet), None), night, {"octo": 4.8})
    assert isinstance(deferred, Defer) and deferred.until == utc(2026, 3, 3, 6)
    assert deferred.reason == "quiet hours for octo: 22:00-06:00 UTC"

    day = decide(merge("octo", "octo/app", Row(monthly_usd=5.0, **quiet), None), utc(2026, 3, 3, 9), {})
    assert isinstance(day, Allow)


def test_a_repository_budget_refuses_even_when_the_owner_has_money_left() -> None:
    policy = merge("octo", "octo/app", Row(monthly_usd=100.0), Row(monthly_usd=2.0))
    refused = decide(policy, utc(2026, 3, 3, 9), {"octo": 10.0, "octo/app": 2.5})
    assert isinstance(refused, Refuse)
    assert refused.reason == "octo/app's monthly repair budget is used: $2.50 of $2.00"
    bound = binding_cap(policy.caps, {"octo": 10.0, "octo/app": 1.5})
    assert bound == (UsdCap("repo", "octo/app", 2.0), 1.5)


def test_the_budget_stop_sentence() -> None:
    assert budget_stop_reason(UsdCap("owner", "octo", 5.0), 0.2, 0.19) == (
        "stopped at octo's monthly budget: this attempt could use $0.20 of what is left of the "
        "$5.00 a month, and spent $0.19"
    )


# --- the per-user daily cap (ARCS_USER_DAILY_USD) ------------------------------------------------


@pytest.mark.parametrize(
    ("committed", "want", "exceeded"),
    [
        (0.0, 1.0, False),  # the whole cap in one repair
        (0.6, 0.4, False),  # exactly at the cap
        (0.1 + 0.2, 0.7, False),  # float noise (0.30000000000000004) is not "over"
        (0.6, 0.41, True),  # just over
        (1.0, 0.01, True),  # used up
        (1.5, 0.0, True),  # already past it (a repair spent more than reserved)
    ],
)
def test_user_cap_exceeded(committed: float, want: float, exceeded: bool) -> None:
    assert user_cap_exceeded(1.0, committed, want) is exceeded


def test_user_cap_resets_24_hours_after_the_oldest_counted_spend() -> None:
    now = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.UTC)
    oldest = now - dt.timedelta(hours=20)
    assert user_cap_resets(now, oldest) == now + dt.timedelta(hours=4)
    assert user_cap_resets(now, None) == now  # only running reservations: frees as they end
    assert user_cap_resets(now, now - dt.timedelta(hours=25)) == now


def test_user_cap_reason_names_the_cap_the_numbers_and_the_reset() -> None:
    resets = dt.datetime(2026, 3, 10, 16, 5, tzinfo=PARIS)
    assert user_cap_reason("ana", 1.0, 0.6, 0.5, resets) == (
        "@ana's daily repair budget (ARCS_USER_DAILY_USD, $1.00 in 24 h) would be exceeded: $0.60 "
        "used, this repair reserves $0.50; it frees up from 2026-03-10 15:05 UTC"
    )
