"""What an owner's admins decided, as pure values: merge, quiet hours, monthly budgets, a decision.

Org admins edit ``policies`` rows on the dashboard (:class:`bot.store.models.Policy`): one row per
owner (``repo = ''``) and optionally one per repository. This module turns those rows (and the
repository's ``.arcs.yml``) into an :class:`EffectivePolicy` and answers, before a repair starts,
:func:`decide`: allow, defer until the quiet hours end, or refuse with a sentence a maintainer
understands. It does no I/O: rows, spend and the time are passed in (the pipeline reads them
from the store; :mod:`jobs.policy_interrupt` asks the same questions while a repair runs).

Merge rules:

* ``paused``, ``max_prs_per_day``, the quiet hours and ``timezone``: the repository row overrides
  the owner row field by field (``None`` = not set at that level).
* ``max_prs_per_day`` is then merged with ``.arcs.yml``'s: the stricter (smaller) one wins.
* Monthly budgets do not override each other: the owner row's ``monthly_usd`` caps what all of the
  owner's repositories spend together in a calendar month, a repository row's caps what that
  repository spends; both apply, and what a repair may spend is the least either still allows.
* Quiet hours are whole hours ``[quiet_start, quiet_end)`` in ``timezone`` (IANA name; unset or
  unknown: UTC); a window may wrap midnight (22 → 6); ``start == end`` means none.
* The monthly window is the calendar month in the same timezone.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

Scope = Literal["owner", "repo"]


class PolicyRow(Protocol):
    """The policy columns (:class:`bot.store.models.Policy` has them)."""

    @property
    def paused(self) -> bool | None:
        """The kill switch (None: not set at this level)."""
        ...

    @property
    def monthly_usd(self) -> float | None:
        """USD a calendar month (None: no cap at this level)."""
        ...

    @property
    def max_prs_per_day(self) -> int | None:
        """Pull requests a day per repository (None: not set at this level)."""
        ...

    @property
    def quiet_start(self) -> int | None:
        """First quiet hour (0-23)."""
        ...

    @property
    def quiet_end(self) -> int | None:
        """First hour after the quiet window (0-23)."""
        ...

    @property
    def timezone(self) -> str | None:
        """IANA time zone of the quiet hours and the month (None: UTC)."""
        ...


@dataclass(frozen=True, slots=True)
class UsdCap:
    """One monthly budget that applies to a repository."""

    scope: Scope
    name: str
    """Who it belongs to: the owner (``octo``) or the repository (``octo/app``)."""
    limit_usd: float

    @property
    def repo(self) -> str | None:
        """The repository the spend is summed over (None: every repository of the owner)."""
        return self.name if self.scope == "repo" else None


@dataclass(frozen=True, slots=True)
class EffectivePolicy:
    """The policy that applies to one repository (see the module docstring for the merge)."""

    owner: str
    repo: str
    """``owner/name``."""
    paused: bool = False
    paused_scope: Scope | None = None
    """Which row paused it (for the message)."""
    caps: tuple[UsdCap, ...] = ()
    max_prs_per_day: int | None = None
    """The stricter of the policy's and ``.arcs.yml``'s (None: no limit)."""
    max_prs_source: Literal["policy", ".arcs.yml"] | None = None
    quiet_start: int | None = None
    quiet_end: int | None = None
    timezone: str | None = None

    @property
    def tz(self) -> dt.tzinfo:
        """The policy's time zone (UTC when unset or unknown)."""
        return zone(self.timezone)

    @property
    def tz_name(self) -> str:
        """The time zone's name as shown to people."""
        return self.timezone if self.timezone and self.tz is not dt.UTC else "UTC"

    @property
    def has_quiet_hours(self) -> bool:
        """A non-empty quiet window is set."""
        return (
            self.quiet_start is not None and self.quiet_end is not None and self.quiet_start != self.quiet_end
        )


def zone(name: str | None) -> dt.tzinfo:
    """``ZoneInfo(name)``; UTC for None, '' or a name this system does not know."""
    if not name or name.upper() == "UTC":
        return dt.UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return dt.UTC


def _pick(repo_value: object, owner_value: object) -> object:
    return repo_value if repo_value is not None else owner_value


def merge(
    owner: str,
    repo: str,
    owner_row: PolicyRow | None,
    repo_row: PolicyRow | None,
    *,
    config_max_prs_per_day: int | None = None,
) -> EffectivePolicy:
    """The effective policy of ``repo`` from its owner's row, its own row and ``.arcs.yml``."""

    def get(row: PolicyRow | None, name: str) -> object:
        return getattr(row, name, None) if row is not None else None

    repo_paused, owner_paused = get(repo_row, "paused"), get(owner_row, "paused")
    paused = bool(_pick(repo_paused, owner_paused))
    paused_scope: Scope | None = None
    if paused:
        paused_scope = "repo" if repo_paused is not None else "owner"
    caps: list[UsdCap] = []
    for scope, name, row in (("owner", owner, owner_row), ("repo", repo, repo_row)):
        limit = get(row, "monthly_usd")
        if isinstance(limit, int | float) and math.isfinite(limit):
            caps.append(UsdCap(scope, name, max(0.0, float(limit))))  # type: ignore[arg-type]
    policy_prs = _pick(get(repo_row, "max_prs_per_day"), get(owner_row, "max_prs_per_day"))
    max_prs: int | None = None
    source: Literal["policy", ".arcs.yml"] | None = None
    if isinstance(policy_prs, int):
        max_prs, source = policy_prs, "policy"
    if config_max_prs_per_day is not None and (max_prs is None or config_max_prs_per_day < max_prs):
        max_prs, source = config_max_prs_per_day, ".arcs.yml"
    start = _pick(get(repo_row, "quiet_start"), get(owner_row, "quiet_start"))
    end = _pick(get(repo_row, "quiet_end"), get(owner_row, "quiet_end"))
    timezone = _pick(get(repo_row, "timezone"), get(owner_row, "timezone"))
    return EffectivePolicy(
        owner=owner,
        repo=repo,
        paused=paused,
        paused_scope=paused_scope,
        caps=tuple(caps),
        max_prs_per_day=max_prs,
        max_prs_source=source,
        quiet_start=int(start) % 24 if isinstance(start, int) else None,
        quiet_end=int(end) % 24 if isinstance(end, int) else None,
        timezone=str(timezone) if timezone else None,
    )


# --- time -----------------------------------------------------------------------------------------


def _at_hour(day: dt.date, hour: int, tz: dt.tzinfo) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(hour), tzinfo=tz)


def in_quiet_hours(policy: EffectivePolicy, now: dt.datetime) -> dt.datetime | None:
    """When the quiet window ``now`` falls in ends (aware, in the policy's time zone), else None.

    ``now`` must be aware. Windows that wrap midnight (22 → 6) end on the next morning when
    ``now`` is before midnight, on the same morning after it.
    """
    if not policy.has_quiet_hours:
        return None
    assert policy.quiet_start is not None and policy.quiet_end is not None
    if now.tzinfo is None:
        raise ValueError("in_quiet_hours: pass an aware datetime")
    tz = policy.tz
    local = now.astimezone(tz)
    start, end, hour = policy.quiet_start, policy.quiet_end, local.hour
    inside = start <= hour < end if start < end else (hour >= start or hour < end)
    if not inside:
        return None
    until = _at_hour(local.date(), end, tz)
    if until <= local:
        until = _at_hour(local.date() + dt.timedelta(days=1), end, tz)
    return until


def monthly_window(now: dt.datetime, tz: dt.tzinfo | str | None = None) -> tuple[dt.datetime, dt.datetime]:
    """``[start, end)`` of the calendar month of ``now`` in ``tz`` (aware datetimes in ``tz``)."""
    zone_ = zone(tz) if tz is None or isinstance(tz, str) else tz
    local = now.astimezone(zone_)
    start = dt.datetime(local.year, local.month, 1, tzinfo=zone_)
    following = dt.datetime(local.year + (local.month == 12), local.month % 12 + 1, 1, tzinfo=zone_)
    return start, following


def usd_available(cap: float | None, committed: float) -> float:
    """What a monthly cap still allows after ``committed`` (never negative; no cap: infinity)."""
    if cap is None:
        return math.inf
    return max(0.0, round(cap - committed, 6))


# --- the decision -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Allow:
    """The repair may start."""

    kind: Literal["allow"] = "allow"


@dataclass(frozen=True, slots=True)
class Defer:
    """Quiet hours: run the repair at ``until`` (aware)."""

    until: dt.datetime
    reason: str
    kind: Literal["defer"] = "defer"


@dataclass(frozen=True, slots=True)
class Refuse:
    """Do not repair: ``reason`` is the sentence shown to people, ``policy`` names the rule."""

    reason: str
    policy: Literal[
        "paused", "monthly_usd", "max_prs_per_day", "quiet_hours", "max_running", "user_daily_usd"
    ]
    data: Mapping[str, object] = field(default_factory=dict)
    kind: Literal["refuse"] = "refuse"


Decision = Allow | Defer | Refuse


def money(usd: float) -> str:
    """``$4.80`` (``$0.004`` below a cent, so small spends do not read as zero)."""
    return f"${usd:.3f}" if 0 < usd < 0.01 else f"${usd:.2f}"


def paused_reason(policy: EffectivePolicy, *, during: bool = False) -> str:
    """``ARCS is paused for octo by an org admin`` (``was paused`` for a running repair)."""
    name = policy.repo if policy.paused_scope == "repo" else policy.owner
    return f"ARCS {'was' if during else 'is'} paused for {name} by an org admin"


def budget_used_reason(cap: UsdCap, committed: float) -> str:
    """``octo's monthly repair budget is used: $4.80 of $5.00``."""
    return f"{cap.name}'s monthly repair budget is used: {money(committed)} of {money(cap.limit_usd)}"


def budget_stop_reason(cap: UsdCap, granted: float, spent: float) -> str:
    """Why a repair that hit the owner's (or repository's) budget stopped (shown on the PR/comment)."""
    return (
        f"stopped at {cap.name}'s monthly budget: this attempt could use {money(granted)} of what is "
        f"left of the {money(cap.limit_usd)} a month, and spent {money(spent)}"
    )


def quiet_reason(policy: EffectivePolicy) -> str:
    """``quiet hours for octo: 22:00-07:00 Europe/Paris``."""
    assert policy.quiet_start is not None and policy.quiet_end is not None
    return (
        f"quiet hours for {policy.owner}: {policy.quiet_start:02d}:00-{policy.quiet_end:02d}:00 "
        f"{policy.tz_name}"
    )


USER_WINDOW = dt.timedelta(hours=24)
"""The per-user cap (``ARCS_USER_DAILY_USD``) counts what a user's repairs committed in this
trailing window."""


def user_cap_exceeded(limit: float, committed: float, want: float) -> bool:
    """True when reserving ``want`` USD on top of ``committed`` would go past a user's daily
    ``limit`` (reaching it exactly is allowed; cents' rounding noise is ignored)."""
    return round(committed + want, 6) > round(limit, 6)


def user_cap_resets(now: dt.datetime, oldest: dt.datetime | None) -> dt.datetime:
    """When the user's window frees spend again: 24 hours after the oldest repair it counts
    (``now`` when it counts none: only running reservations hold it)."""
    return oldest + USER_WINDOW if oldest is not None and oldest + USER_WINDOW > now else now


def user_cap_reason(login: str, limit: float, committed: float, want: float, resets: dt.datetime) -> str:
    """``@ana's daily repair budget (ARCS_USER_DAILY_USD, $1.00 in 24 h) would be exceeded: ...``."""
    return (
        f"@{login}'s daily repair budget (ARCS_USER_DAILY_USD, {money(limit)} in 24 h) would be "
        f"exceeded: {money(committed)} used, this repair reserves {money(want)}; it frees up from "
        f"{resets.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC"
    )


def binding_cap(caps: tuple[UsdCap, ...], committed: Mapping[str, float]) -> tuple[UsdCap, float] | None:
    """The cap with the least left (and what is committed against it), or None without caps.

    ``committed`` maps each cap's :attr:`UsdCap.name` to what is spent or reserved against it.
    """
    best: tuple[UsdCap, float] | None = None
    for cap in caps:
        used = committed.get(cap.name, 0.0)
        left = usd_available(cap.limit_usd, used)
        if best is None or left < usd_available(best[0].limit_usd, best[1]):
            best = (cap, used)
    return best


def decide(policy: EffectivePolicy, now: dt.datetime, committed: Mapping[str, float]) -> Decision:
    """Before a repair starts: paused -> refuse; a monthly budget used -> refuse (with the
    numbers); quiet hours -> defer until they end; else allow.

    ``committed`` maps each cap's name (owner or ``owner/name``) to the USD spent this month plus
    what running repairs hold (:meth:`bot.store.store.Store.usd_committed`). The pull-request
    limit is not decided here: it is counted under the store's per-owner lock at admission.
    """
    if policy.paused:
        return Refuse(paused_reason(policy), "paused", {"scope": policy.paused_scope or "owner"})
    for cap in policy.caps:
        used = committed.get(cap.name, 0.0)
        if usd_available(cap.limit_usd, used) <= 0:
            return Refuse(
                budget_used_reason(cap, used),
                "monthly_usd",
                {"scope": cap.scope, "limit": cap.limit_usd, "committed": round(used, 6)},
            )
    until = in_quiet_hours(policy, now)
    if until is not None:
        return Defer(until, quiet_reason(policy))
    return Allow()


__all__ = [
    "USER_WINDOW",
    "Allow",
    "Decision",
    "Defer",
    "EffectivePolicy",
    "PolicyRow",
    "Refuse",
    "UsdCap",
    "binding_cap",
    "budget_stop_reason",
    "budget_used_reason",
    "decide",
    "in_quiet_hours",
    "merge",
    "money",
    "monthly_window",
    "paused_reason",
    "quiet_reason",
    "usd_available",
    "user_cap_exceeded",
    "user_cap_reason",
    "user_cap_resets",
    "zone",
]
