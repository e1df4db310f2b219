"""A deterministic synthetic org history for the dashboard benchmark, and its bulk load.

:func:`generate_org` draws one owner's history from a seeded RNG (same spec, same ``now``, same
rows): repositories with a skewed share of the activity (some onboarded late), attempts over
``weeks`` ISO weeks with growing adoption and a weekday/office-hours rhythm, statuses and costs that
depend on the failure class and the tier, pull requests of fixed attempts with their fate by age,
events (refusals, errors, job failures, notices) and webhook deliveries with latencies.

Attempt rows carry payloads of realistic size (``OrgSpec.payload``): the patch, the new contents of
the changed files (``attempts.files``, kept after publishing), the explanation and the trace summary
(rendered markdown and the failure log, as ``jobs.repair_service.outcome_from_report`` stores them).
They are what makes the attempts table large; the dashboard never reads them in aggregates, but on
SQLite they sit between the columns it does read (see ``bench/dashboard/README.md``).

:func:`load` bulk-inserts a history into a migrated store: SQLAlchemy Core ``executemany`` in one
transaction on SQLite, ``COPY … FROM STDIN`` on PostgreSQL (then the id sequences are advanced
and the tables vacuumed and analyzed, as autovacuum would have done on a live database).
"""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import json
import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import JSON, Engine, Table, insert, text

from bot.store.models import Attempt, Delivery, Event, PullRequest

FAILURE_CLASS_MIX: tuple[tuple[str | None, float], ...] = (
    ("test", 0.46),
    ("build", 0.18),
    ("lint", 0.12),
    ("dependency", 0.08),
    ("infrastructure", 0.05),
    ("timeout", 0.04),
    ("unknown", 0.02),
    (None, 0.05),
)
"""Failure classes of CI-triggered attempts (``None``: the log was not classified)."""
TRIGGER_MIX: tuple[tuple[str, float], ...] = (
    ("ci", 0.72),
    ("issue", 0.12),
    ("comment", 0.10),
    ("revise", 0.06),
)
FIXED_SHARE: dict[str | None, float] = {
    "lint": 0.62,
    "test": 0.40,
    "build": 0.36,
    "dependency": 0.30,
    "infrastructure": 0.12,
    "timeout": 0.20,
    "unknown": 0.22,
    None: 0.28,
}
"""Probability that an attempt of the class ends ``fixed``; the rest splits as :data:`OTHER_OUTCOMES`."""
OTHER_OUTCOMES: tuple[tuple[str, float], ...] = (
    ("no_fix", 0.30),
    ("skipped", 0.19),
    ("refused", 0.08),
    ("error", 0.05),
)
TIERS: tuple[tuple[str, float], ...] = (("small", 0.50), ("medium", 0.33), ("large", 0.17))
TIER_USD_MEDIAN = {"0": 0.0, "small": 0.03, "medium": 0.2, "large": 1.0}
REFUSALS = (
    "paused by the org policy",
    "monthly budget of the org reached",
    "quiet hours (22-6 Europe/Berlin)",
    "max PRs per day reached for this repository",
    "not a repairable failure (infrastructure)",
)
NO_FIX_VERDICTS = ("no_candidate", "tests_failed", "budget_exhausted", "gates_failed")
IN_PROGRESS = 30
"""The newest attempts are still queued (two thirds) or running."""
_WORDS = [
    "items",
    "total",
    "value",
    "result",
    "config",
    "client",
    "request",
    "response",
    "status",
    "owner",
    "amount",
    "region",
    "cache",
    "index",
    "parse",
    "render",
    "build",
    "check",
    "update",
    "fetch",
    "store",
    "query",
    "table",
    "record",
    "limit",
    "offset",
    "token",
    "session",
    "event",
    "handler",
    "router",
    "worker",
    "queue",
    "retry",
    "timeout",
    "buffer",
    "stream",
    "reader",
    "writer",
    "format",
    "encode",
    "decode",
]


@dataclass(frozen=True, slots=True)
class OrgSpec:
    """What to generate (the defaults are the benchmark's "large org")."""

    owner: str = "Acme-Corp"
    repos: int = 200
    attempts: int = 100_000
    pull_requests: int = 30_000
    events: int = 20_000
    deliveries: int = 150_000
    weeks: int = 52
    payload: bool = True
    """Realistic patch/files/explanation/trace sizes (False: those columns stay NULL)."""
    seed: int = 20261122


@dataclass(slots=True)
class AttemptSkel:
    """The part of an attempt that other rows depend on (payloads are drawn when loading)."""

    id: int
    repo: str
    trigger: str
    failure_class: str | None
    status: str
    created_at: dt.datetime
    started_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    red_build_at: dt.datetime | None = None
    tier: str | None = None
    rounds: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    verdict: str | None = None
    reason: str | None = None
    pr_number: int | None = None
    pr_state: str | None = None


@dataclass
class OrgHistory:
    """A generated history: attempt skeletons, pull requests and events; deliveries are drawn lazily."""

    spec: OrgSpec
    now: dt.datetime
    repos: tuple[str, ...]
    repo_weights: dict[str, float]
    attempts: list[AttemptSkel]
    pull_requests: list[dict[str, Any]]
    events: list[dict[str, Any]]
    pool: str = field(repr=False)

    def attempt_rows(self, start: int, stop: int) -> list[dict[str, Any]]:
        """Full ``attempts`` rows of skeletons ``[start, stop)`` (payloads drawn per attempt id)."""
        return [_attempt_row(self, skel) for skel in self.attempts[start:stop]]

    def delivery_rows(self, start: int, stop: int) -> list[dict[str, Any]]:
        """``deliveries`` rows ``[start, stop)`` (each drawn from its own index)."""
        return [_delivery_row(self, i) for i in range(start, stop)]

    def counts(self) -> dict[str, Any]:
        """Row counts and mixes, for the report."""
        by_status: dict[str, int] = {}
        by_trigger: dict[str, int] = {}
        for a in self.attempts:
            by_status[a.status] = by_status.get(a.status, 0) + 1
            by_trigger[a.trigger] = by_trigger.get(a.trigger, 0) + 1
        pr_states: dict[str, int] = {}
        for p in self.pull_requests:
            pr_states[p["state"]] = pr_states.get(p["state"], 0) + 1
        kinds: dict[str, int] = {}
        for e in self.events:
            kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
        per_repo: dict[str, int] = {}
        for a in self.attempts:
            per_repo[a.repo] = per_repo.get(a.repo, 0) + 1
        busiest = sorted(per_repo.values(), reverse=True)
        return {
            "owner": self.spec.owner,
            "repos": len(self.repos),
            "repos_with_attempts": len(per_repo),
            "attempts": len(self.attempts),
            "attempts_by_status": dict(sorted(by_status.items())),
            "attempts_by_trigger": dict(sorted(by_trigger.items())),
            "attempts_busiest_repo": busiest[0] if busiest else 0,
            "attempts_median_repo": busiest[len(busiest) // 2] if busiest else 0,
            "pull_requests": len(self.pull_requests),
            "pull_requests_by_state": dict(sorted(pr_states.items())),
            "events": len(self.events),
            "events_by_kind": dict(sorted(kinds.items())),
            "deliveries": self.spec.deliveries,
            "weeks": self.spec.weeks,
            "payload": self.spec.payload,
            "total_usd": round(sum(a.cost_usd or 0.0 for a in self.attempts), 2),
            "now": self.now.isoformat(),
        }

    def busiest_repo(self) -> str:
        """The repository with the most attempts."""
        per_repo: dict[str, int] = {}
        for a in self.attempts:
            per_repo[a.repo] = per_repo.get(a.repo, 0) + 1
        return max(sorted(per_repo), key=lambda r: per_repo[r])


# --- drawing ---------------------------------------------------------------------------------------


def _pick(rng: random.Random, mix: Sequence[tuple[Any, float]]) -> Any:
    return rng.choices([v for v, _ in mix], weights=[w for _, w in mix])[0]


def _lognormal(rng: random.Random, median: float, sigma: float, low: float, high: float) -> float:
    return min(high, max(low, rng.lognormvariate(math.log(median), sigma)))


def _repo_names(owner: str, n: int) -> list[str]:
    areas = [
        "api",
        "billing",
        "auth",
        "search",
        "mobile",
        "infra",
        "data",
        "ml",
        "payments",
        "notify",
        "gateway",
        "admin",
        "reports",
        "sdk",
        "cli",
        "docs",
        "worker",
        "events",
        "storage",
        "web",
    ]
    kinds = ["service", "app", "lib", "core", "tools", "ui", "jobs", "proxy", "client", "server"]
    names = []
    for i, (kind, area) in enumerate(itertools.product(kinds, areas)):
        if i >= n:
            break
        name = f"{area}-{kind}"
        # Some repositories are spelled with capitals on GitHub (the dashboard compares lowercase).
        names.append(f"{owner}/{name.title() if i % 7 == 3 else name}")
    for i in range(len(names), n):
        names.append(f"{owner}/repo-{i:04d}")
    return names


def _text_pool(rng: random.Random, size: int = 1 << 18) -> str:
    """Code-like lines (compresses about like source code), sliced for payloads."""
    lines: list[str] = []
    total = 0
    while total < size:
        indent = "    " * rng.randrange(3)
        a, b, c = rng.choice(_WORDS), rng.choice(_WORDS), rng.choice(_WORDS)
        line = rng.choice(
            (
                f"{indent}{a}_{b} = {c}({a}, {b}={rng.randrange(100)})",
                f"{indent}if {a}.{b} is None or {c} > {rng.randrange(1000)}:",
                f"{indent}return [{a} for {a} in {b}_{c} if {a}.{c}]",
                f"{indent}def {a}_{b}(self, {c}: int) -> {b.title()}:",
                f"{indent}# {a} {b} {c}: keep the {b} when the {c} is empty",
            )
        )
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def _slice(pool: str, rng: random.Random, n: int) -> str:
    n = max(1, min(n, len(pool) - 1))
    start = rng.randrange(len(pool) - n)
    return pool[start : start + n]


def generate_org(spec: OrgSpec, now: dt.datetime) -> OrgHistory:
    """Draw the history of ``spec.owner`` up to ``now`` (aware UTC), deterministically from ``spec.seed``."""
    if now.tzinfo is None:
        raise ValueError("now must be an aware UTC datetime")
    rng = random.Random(spec.seed)
    repos = _repo_names(spec.owner, spec.repos)
    # Activity share: Zipf-like over a shuffled order; 30% of the repositories onboarded late.
    order = list(range(len(repos)))
    rng.shuffle(order)
    weights = {repos[i]: 1.0 / (rank + 1) ** 0.75 for rank, i in enumerate(order)}
    onboard = {r: (0 if rng.random() < 0.7 else rng.randrange(max(1, spec.weeks - 6))) for r in repos}
    monday0 = (now - dt.timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
    first = monday0 - dt.timedelta(weeks=spec.weeks - 1)
    # Per week: the repositories active then and their cumulative weights.
    active: list[tuple[list[str], list[float]]] = []
    for w in range(spec.weeks):
        names = [r for r in repos if onboard[r] <= w]
        active.append((names, list(itertools.accumulate(weights[r] for r in names))))
    week_weights = [0.5 + w / max(1, spec.weeks - 1) for w in range(spec.weeks)]
    day_weights = (1.0, 1.0, 1.0, 1.0, 0.9, 0.3, 0.25)

    times: list[dt.datetime] = []
    latest = now - dt.timedelta(minutes=1)
    while len(times) < spec.attempts:
        w = rng.choices(range(spec.weeks), weights=week_weights)[0]
        d = rng.choices(range(7), weights=day_weights)[0]
        hour = rng.gauss(14, 3.5) if rng.random() < 0.8 else rng.uniform(0, 24)
        seconds = min(86_399.0, max(0.0, hour * 3600))
        at = first + dt.timedelta(weeks=w, days=d, seconds=seconds)
        if at < latest:
            times.append(at.replace(microsecond=rng.randrange(1_000_000)))
    times.sort()

    attempts: list[AttemptSkel] = []
    for i, created in enumerate(times):
        w = min(spec.weeks - 1, (created - first).days // 7)
        names, cum = active[w]
        repo = names[bisect.bisect_right(cum, rng.random() * cum[-1])]
        trigger = _pick(rng, TRIGGER_MIX)
        if trigger == "ci":
            cls = _pick(rng, FAILURE_CLASS_MIX)
        else:
            cls = "test" if trigger == "revise" and rng.random() < 0.3 else None
        skel = AttemptSkel(
            id=i + 1, repo=repo, trigger=trigger, failure_class=cls, status="", created_at=created
        )
        if i >= len(times) - IN_PROGRESS:
            skel.status = "queued" if rng.random() < 0.67 else "running"
        elif rng.random() < FIXED_SHARE[cls]:
            skel.status = "fixed"
        else:
            skel.status = _pick(rng, OTHER_OUTCOMES)
        _outcome(rng, skel, now)
        attempts.append(skel)

    pull_requests = _pull_requests(rng, spec, attempts, now)
    events = _events(rng, spec, attempts, repos)
    return OrgHistory(
        spec=spec,
        now=now,
        repos=tuple(repos),
        repo_weights=weights,
        attempts=attempts,
        pull_requests=pull_requests,
        events=events,
        pool=_text_pool(random.Random(spec.seed + 1)),
    )


def _outcome(rng: random.Random, a: AttemptSkel, now: dt.datetime) -> None:
    """Times, tier, cost and verdict of one attempt, from its status."""
    if a.trigger == "ci":
        a.red_build_at = a.created_at - dt.timedelta(seconds=rng.uniform(30, 900))
    if a.status == "queued":
        return
    if a.status == "refused":
        a.finished_at = a.created_at + dt.timedelta(seconds=rng.uniform(0.2, 3))
        a.reason = rng.choice(REFUSALS)
        return
    if a.status == "skipped" and rng.random() < 0.7:
        a.finished_at = a.created_at + dt.timedelta(seconds=rng.uniform(0.2, 5))
        a.reason = rng.choice(
            ("no failing test found in the log", "a newer run superseded this one", "label removed")
        )
        return
    a.started_at = a.created_at + dt.timedelta(seconds=_lognormal(rng, 4, 1.0, 0.5, 600))
    a.tier = (
        "0"
        if (a.failure_class == "lint" and rng.random() < 0.55) or rng.random() < 0.04
        else _pick(rng, TIERS)
    )
    median = TIER_USD_MEDIAN[a.tier]
    a.cost_usd = round(_lognormal(rng, median, 0.7, 0.001, 12.0), 6) if median else 0.0
    a.tokens = int(a.cost_usd * rng.uniform(180_000, 320_000))
    a.rounds = 1 if a.tier in ("0", "small") and rng.random() < 0.8 else rng.randint(1, 5)
    if a.status == "running":
        a.cost_usd = None
        a.tokens = None
        return
    duration = _lognormal(rng, 20 if a.tier == "0" else 140, 0.9, 2, 3600)
    a.finished_at = min(now - dt.timedelta(seconds=1), a.started_at + dt.timedelta(seconds=duration))
    if a.status == "error":
        a.cost_usd = round(a.cost_usd * rng.uniform(0, 0.6), 6)
        a.verdict = "error"
        a.reason = rng.choice(
            ("sandbox setup failed", "the repository could not be cloned", "LLM API error 529")
        )
    elif a.status == "fixed":
        a.verdict = "fixed"
        a.reason = "the failing tests pass and the gates are green"
    elif a.status == "no_fix":
        a.verdict = rng.choice(NO_FIX_VERDICTS)
        a.reason = f"{a.verdict.replace('_', ' ')} after {a.rounds} round(s)"
    else:  # skipped after starting: interrupted
        a.verdict = "interrupted"
        a.reason = "interrupted: /arcs stop"


def _pull_requests(
    rng: random.Random, spec: OrgSpec, attempts: list[AttemptSkel], now: dt.datetime
) -> list[dict[str, Any]]:
    fixed = [a for a in attempts if a.status == "fixed" and a.finished_at is not None]
    chosen = sorted(rng.sample(fixed, min(spec.pull_requests, len(fixed))), key=lambda a: a.id)
    numbers = {r: rng.randrange(50, 3000) for r in {a.repo for a in chosen}}
    rows: list[dict[str, Any]] = []
    for a in chosen:
        assert a.finished_at is not None
        created = min(now - dt.timedelta(seconds=1), a.finished_at + dt.timedelta(seconds=rng.uniform(5, 90)))
        age = now - created
        mix = (
            (("open", 0.75), ("merged", 0.2), ("closed", 0.05))
            if age < dt.timedelta(days=2)
            else (("merged", 0.62), ("closed", 0.26), ("open", 0.12))
        )
        state = _pick(rng, mix)
        decided = min(now, created + dt.timedelta(hours=_lognormal(rng, 20, 1.2, 0.05, 24 * 30)))
        numbers[a.repo] += rng.randint(1, 4)
        number = numbers[a.repo]
        a.pr_number = number
        a.pr_state = state
        rows.append(
            {
                "attempt_id": a.id,
                "repo": a.repo,
                "number": number,
                "url": f"https://github.com/{a.repo}/pull/{number}",
                "branch": f"arcs/fix-{a.id}",
                "head_sha": f"{rng.getrandbits(160):040x}",
                "state": state,
                "created_at": created,
                "updated_at": decided if state != "open" else created,
                "merged_at": decided if state == "merged" else None,
                "closed_at": decided if state != "open" else None,
            }
        )
    return rows


def _events(
    rng: random.Random, spec: OrgSpec, attempts: list[AttemptSkel], repos: list[str]
) -> list[dict[str, Any]]:
    """Refusals, errors, job failures (the problems list) and notices, ``spec.events`` in all."""
    refused = [a for a in attempts if a.status == "refused"]
    errors = [a for a in attempts if a.status == "error"]
    target = spec.events
    n_refusal = min(len(refused), int(target * 0.32))
    n_error = min(len(errors), int(target * 0.18))
    n_failed = int(target * 0.03)
    n_loose = int(target * 0.02)
    n_notice = max(0, target - n_refusal - n_error - n_failed - n_loose)
    rows: list[dict[str, Any]] = []

    def add(kind: str, message: str, a: AttemptSkel | None, repo: str | None, data: dict[str, Any]) -> None:
        at = (a.finished_at or a.created_at) if a is not None else None
        rows.append(
            {
                "kind": kind,
                "message": message,
                "attempt_id": a.id if a is not None else None,
                "delivery_id": f"dlv-{a.id}" if a is not None else None,
                "installation_id": 4242,
                "repo": repo,
                "data": data,
                "created_at": at,
            }
        )

    for a in rng.sample(refused, n_refusal):
        add("refusal", f"refused: {a.reason}", a, a.repo, {"policy": (a.reason or "").split()[0]})
    for a in rng.sample(errors, n_error):
        add("error", f"attempt failed: {a.reason}", a, a.repo, {"error": a.reason})
    for a in rng.sample(attempts[: len(attempts) - IN_PROGRESS], n_failed):
        # Half of the job failures were recorded before the repository was known.
        add(
            "job_failed",
            "the worker died (OOM kill)",
            a,
            a.repo if rng.random() < 0.5 else None,
            {"retries": 3},
        )
    span = (attempts[-1].created_at - attempts[0].created_at).total_seconds() if attempts else 0.0
    for _ in range(n_loose):
        # Repository-level refusals with no attempt (e.g. a trigger refused before claiming one).
        add("refusal", "refused: max open PRs reached", None, rng.choice(repos), {"policy": "max_open_prs"})
        rows[-1]["created_at"] = attempts[0].created_at + dt.timedelta(seconds=rng.uniform(0, span))
    others = [a for a in attempts if a.status in ("skipped", "fixed", "no_fix")]
    for a in rng.sample(others, min(len(others), n_notice)):
        add("notice", "deferred: quiet hours" if a.status != "skipped" else "stopped", a, a.repo, {})
    rows.sort(key=lambda r: (r["created_at"], r["attempt_id"] or 0))
    return rows


def _attempt_row(h: OrgHistory, a: AttemptSkel) -> dict[str, Any]:
    rng = random.Random(h.spec.seed * 1_000_003 + a.id)
    owner = a.repo.split("/", 1)[0]
    finished = a.status in ("fixed", "no_fix", "error")
    patch = files = explanation = trace = None
    if h.spec.payload and finished:
        trace = {
            "markdown": _slice(h.pool, rng, int(_lognormal(rng, 3000, 0.8, 400, 20_000))),
            "trace_id": f"{rng.getrandbits(64):016x}",
            "tests_before": {"passed": rng.randrange(400), "failed": rng.randint(1, 5)},
            "tests_after": {"passed": rng.randrange(400), "failed": 0 if a.status == "fixed" else 1},
            "gates": [{"gate": g, "passed": True, "detail": ""} for g in ("size", "lint", "tests")],
            "target_tests": [f"tests/test_{rng.choice(_WORDS)}.py::test_{rng.choice(_WORDS)}"],
            "duration_s": round(
                ((a.finished_at or a.created_at) - (a.started_at or a.created_at)).total_seconds(), 3
            ),
            "executions": rng.randint(1, 12),
            "candidates": rng.randint(1, 6),
            "tiers": [a.tier],
            "notices": [],
            "interrupt": None,
            "failure_class": a.failure_class,
            "failure_log": _slice(h.pool, rng, int(_lognormal(rng, 2000, 0.6, 200, 4000)))
            if a.trigger == "ci"
            else None,
        }
        explanation = _slice(h.pool, rng, int(_lognormal(rng, 500, 0.5, 80, 3000)))
        if a.status == "fixed":
            paths = [
                f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}_{k}.py"
                for k in range(rng.choice((1, 1, 2, 2, 3)))
            ]
            files = {p: _slice(h.pool, rng, int(_lognormal(rng, 4000, 0.8, 300, 40_000))) for p in paths}
            patch = "".join(
                f"--- a/{p}\n+++ b/{p}\n@@ -1,8 +1,9 @@\n{_slice(h.pool, rng, int(_lognormal(rng, 700, 0.6, 100, 6000)))}\n"
                for p in paths
            )
    ci = a.trigger == "ci"
    return {
        "id": a.id,
        "idempotency_key": f"bench:{a.id}",
        "installation_id": 4242,
        "repo": a.repo,
        "owner": owner,
        "trigger": a.trigger,
        "delivery_id": f"dlv-{a.id}",
        "requested_by": None if ci else f"dev{rng.randrange(400)}",
        "head_sha": f"{rng.getrandbits(160):040x}",
        "head_branch": "main" if rng.random() < 0.6 else f"feature/{rng.choice(_WORDS)}-{rng.randrange(999)}",
        "base_branch": "main",
        "run_id": rng.randrange(10**9, 10**10) if ci else None,
        "issue_number": None if ci else rng.randrange(1, 5000),
        "comment_id": rng.randrange(10**9, 10**10) if a.trigger in ("comment", "revise") else None,
        "failure_class": a.failure_class,
        "options": {"tier": "large"} if rng.random() < 0.05 else None,
        "status": a.status,
        "verdict": a.verdict,
        "reason": a.reason,
        "tier": a.tier,
        "rounds": a.rounds,
        "tokens": a.tokens,
        "cost_usd": a.cost_usd,
        "patch": patch,
        "files": files,
        "explanation": explanation,
        "trace_path": f"traces/{a.repo}/{a.id}.json" if finished else None,
        "trace": trace,
        "created_at": a.created_at,
        "started_at": a.started_at,
        "finished_at": a.finished_at,
        "red_build_at": a.red_build_at,
        "branch": f"arcs/fix-{a.id}" if a.pr_number is not None else None,
        "pr_number": a.pr_number,
        "pr_url": f"https://github.com/{a.repo}/pull/{a.pr_number}" if a.pr_number is not None else None,
        "pr_state": a.pr_state,
        "check_run_id": rng.randrange(10**9, 10**10) if ci else None,
        "status_comment_id": None if ci else rng.randrange(10**9, 10**10),
        "message_id": f"{rng.getrandbits(64):016x}",
        "publish_state": "published" if a.pr_number is not None else None,
        "publish_started_at": a.finished_at if a.pr_number is not None else None,
        "title": (
            f"CI failed: {a.failure_class or 'unclassified'} on {'main' if rng.random() < 0.6 else 'a branch'}"
            if ci
            else f"Issue #{rng.randrange(1, 5000)}: {rng.choice(_WORDS)} {rng.choice(_WORDS)} is wrong"
        ),
        "cancel_requested_at": None,
        "cancel_reason": None,
        "reserved_usd": 0.5 if a.status == "running" else None,
    }


def _delivery_row(h: OrgHistory, i: int) -> dict[str, Any]:
    rng = random.Random(h.spec.seed * 7_919 + i)
    span = h.spec.weeks * 7 * 86_400
    received = h.now - dt.timedelta(seconds=rng.uniform(60, span))
    event = rng.choice(
        ("workflow_run", "workflow_run", "check_suite", "issue_comment", "issues", "pull_request")
    )
    status = "queued" if rng.random() < 0.45 else "ignored"
    return {
        "delivery_id": f"bench-{i:08d}-{rng.getrandbits(48):012x}",
        "event": event,
        "action": "completed" if event in ("workflow_run", "check_suite") else "created",
        "installation_id": 4242,
        "repo": rng.choice(h.repos),
        "payload_sha256": f"{rng.getrandbits(256):064x}",
        "status": status,
        "reason": None if status == "queued" else "not a failed run",
        "received_at": received,
        "updated_at": received,
        "latency_ms": round(_lognormal(rng, 35, 0.8, 2, 9000), 3),
    }


# --- loading ---------------------------------------------------------------------------------------

Progress = Callable[[str], None]


def _chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


def load(
    engine: Engine, history: OrgHistory, *, chunk: int = 2_000, progress: Progress | None = None
) -> dict[str, float]:
    """Bulk-insert ``history`` into the migrated database of ``engine``; seconds per table."""
    say = progress or (lambda _msg: None)
    tables: list[tuple[Table, int, Callable[[int, int], list[dict[str, Any]]]]] = [
        (_table(Attempt), len(history.attempts), history.attempt_rows),
        (_table(PullRequest), len(history.pull_requests), lambda a, b: history.pull_requests[a:b]),
        (_table(Event), len(history.events), lambda a, b: history.events[a:b]),
        (_table(Delivery), history.spec.deliveries, history.delivery_rows),
    ]
    seconds: dict[str, float] = {}
    postgres = engine.dialect.name == "postgresql"
    for table, n, rows_of in tables:
        started = time.perf_counter()
        if postgres:
            _copy_pg(engine, table, n, rows_of, chunk)
        else:
            with engine.begin() as conn:
                for a, b in _chunks(n, chunk):
                    conn.execute(insert(table), rows_of(a, b))
        seconds[table.name] = round(time.perf_counter() - started, 2)
        say(f"  {table.name}: {n} rows in {seconds[table.name]} s")
    started = time.perf_counter()
    with engine.connect() as conn:
        if postgres:
            for table, _, _ in tables:
                conn.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                        f"(SELECT coalesce(max(id), 1) FROM {table.name}))"
                    )
                )
            conn.commit()
            # Autovacuum would have done this on a live database: statistics and the visibility map.
            auto = conn.execution_options(isolation_level="AUTOCOMMIT")
            for table, _, _ in tables:
                auto.execute(text(f"VACUUM (ANALYZE) {table.name}"))
        else:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    seconds["finish"] = round(time.perf_counter() - started, 2)
    return seconds


def _table(model: type[Any]) -> Table:
    table = model.__table__
    assert isinstance(table, Table)
    return table


def _copy_pg(
    engine: Engine, table: Table, n: int, rows_of: Callable[[int, int], list[dict[str, Any]]], chunk: int
) -> None:
    """``COPY table FROM STDIN`` through psycopg 3 (JSON columns as text, timestamps as timestamptz)."""
    if n == 0:
        return
    json_cols = {c.name for c in table.columns if isinstance(c.type, JSON)}
    first = rows_of(0, min(n, chunk))
    columns = list(first[0])
    raw = engine.raw_connection()
    try:
        driver: Any = raw.driver_connection
        with (
            driver.cursor() as cursor,
            cursor.copy(f"COPY {table.name} ({', '.join(columns)}) FROM STDIN") as copy,
        ):
            for a, b in _chunks(n, chunk):
                for row in first if a == 0 else rows_of(a, b):
                    copy.write_row(
                        [
                            json.dumps(row[c]) if c in json_cols and row[c] is not None else row[c]
                            for c in columns
                        ]
                    )
        driver.commit()
    finally:
        raw.close()
