"""A deterministic dashboard seed: two owners, ~8 weeks of attempts, PRs, events, a real trace.

:func:`seed_dashboard` writes through the :class:`~bot.store.store.Store` API only (a second
``Store`` on the same engine with a clock the seed moves, so PR and event timestamps are the
seed's), and computes the numbers the dashboard must show from its own specification, in plain
Python, so tests compare the SQL aggregation against an independent calculation.

- ``octo-org``: repos ``api``, ``web``, ``cli``; 7 of the last 8 ISO weeks have attempts (the
  week three weeks before ``now``'s is empty); every status, failure class and PR fate.
- ``other-org``: one repo, ``secret-repo``, that an ``octo-org`` viewer must never see.
- One fixed attempt of ``octo-org/api`` carries a real trace: the repair loop run with the
  in-repo fakes (two rounds: the first's candidates fail, the second fixes it), written as JSON
  under ``traces_dir``.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.store.store import Store

OCTO = "octo-org"
OTHER = "other-org"
OCTO_REPOS = ("octo-org/api", "octo-org/web", "octo-org/cli")
OTHER_REPOS = ("other-org/secret-repo",)
EMPTY_WEEK = 3
"""Weeks before ``now``'s week with no attempt in ``octo-org`` (when ``now`` is mid-week)."""

# One row per attempt: the pattern repeats; statuses and classes are chosen so that every status
# and failure class occurs and the rates are not trivial.
_STATUSES = ("fixed", "no_fix", "fixed", "refused", "error", "fixed", "skipped", "no_fix", "fixed")
_CLASSES = ("test", "build", "lint", None, "test", "dependency", "build")
_PR_FATES = ("merged", "merged", "closed", "open", "merged")


@dataclass(frozen=True, slots=True)
class Spec:
    """One seeded attempt as the seed meant it."""

    repo: str
    created_at: dt.datetime
    trigger: str
    status: str
    failure_class: str | None
    cost_usd: float | None
    red_build_at: dt.datetime | None
    pr_state: str | None = None
    pr_created_at: dt.datetime | None = None
    reason: str | None = None
    title: str | None = None


@dataclass(frozen=True, slots=True)
class Expected:
    """The numbers the dashboard must show for one scope (see bot.dashboard.queries)."""

    attempts: int
    fixed: int
    no_fix: int
    refused: int
    errors: int
    skipped: int
    in_progress: int
    finished: int
    prs_opened: int
    prs_merged: int
    prs_closed: int
    total_usd: float
    median_time_to_pr_s: float | None
    repair_rate: float | None
    accepted_fix_rate: float | None
    usd_per_fix: float | None


def expected_of(specs: list[Spec]) -> Expected:
    """The definitions of the dashboard, computed directly from specs."""
    count: defaultdict[str, int] = defaultdict(int)
    for s in specs:
        count[s.status] += 1
    finished = count["fixed"] + count["no_fix"] + count["error"]
    prs = [s for s in specs if s.pr_state is not None]
    merged = sum(1 for s in prs if s.pr_state == "merged")
    closed = sum(1 for s in prs if s.pr_state == "closed")
    total = sum(s.cost_usd or 0.0 for s in specs)
    durations = [
        (s.pr_created_at - (s.red_build_at or s.created_at)).total_seconds()
        for s in prs
        if s.pr_created_at is not None
    ]
    return Expected(
        attempts=len(specs),
        fixed=count["fixed"],
        no_fix=count["no_fix"],
        refused=count["refused"],
        errors=count["error"],
        skipped=count["skipped"],
        in_progress=count["queued"] + count["running"],
        finished=finished,
        prs_opened=len(prs),
        prs_merged=merged,
        prs_closed=closed,
        total_usd=total,
        median_time_to_pr_s=statistics.median(durations) if durations else None,
        repair_rate=count["fixed"] / finished if finished else None,
        accepted_fix_rate=merged / (merged + closed) if merged + closed else None,
        usd_per_fix=total / count["fixed"] if count["fixed"] else None,
    )


def _monday(when: dt.datetime) -> dt.date:
    day = when.astimezone(dt.UTC).date()
    return day - dt.timedelta(days=day.weekday())


@dataclass(frozen=True)
class SeedInfo:
    """What was seeded and what the dashboard must show."""

    now: dt.datetime
    specs: tuple[Spec, ...]
    attempt_ids: dict[str, list[int]]
    """Attempt ids by repository, in creation order."""
    spec_ids: tuple[int, ...]
    """The attempt id of each spec."""
    traced_attempt_id: int
    trace_path: Path
    org: dict[str, Expected]
    repo: dict[str, Expected]
    weeks: dict[str, dict[dt.date, Expected]]
    """Per owner: ISO week Monday -> numbers (weeks with attempts or PRs only)."""
    classes: dict[str, dict[str, dict[str, int]]]
    """Per owner: failure class -> status -> attempts."""
    problems: dict[str, int]
    """Per owner: entries of the refusals-and-errors list."""
    problem_messages: dict[str, list[str]] = field(default_factory=dict)

    def specs_of(self, owner: str) -> list[Spec]:
        """The owner's specs."""
        return [s for s in self.specs if s.repo.startswith(owner + "/")]

    def first_id(self, owner: str, status: str) -> int:
        """The id of the owner's first attempt with ``status``."""
        return next(
            i
            for i, s in zip(self.spec_ids, self.specs, strict=True)
            if s.repo.startswith(owner + "/") and s.status == status
        )

    def week_expected(self, owner: str, start: dt.date) -> Expected:
        """The numbers of one week (zeros when nothing happened)."""
        return self.weeks[owner].get(start) or expected_of([])


def _specs(now: dt.datetime) -> list[Spec]:
    specs: list[Spec] = []
    k = 0
    for weeks_ago in range(8):
        if weeks_ago == EMPTY_WEEK:
            continue
        for j in range(4 + weeks_ago % 2):
            status = _STATUSES[k % len(_STATUSES)]
            cls = _CLASSES[k % len(_CLASSES)]
            repo = OCTO_REPOS[(k + k // 3) % len(OCTO_REPOS)]
            created = now - dt.timedelta(days=7 * weeks_ago, hours=4 + 7 * j, minutes=k)
            trigger = "ci" if cls is not None else "issue"
            red = created - dt.timedelta(minutes=10 + k) if trigger == "ci" else None
            cost = {"fixed": 0.12 + 0.03 * (k % 5), "no_fix": 0.4, "error": 0.05}.get(status)
            pr_state = pr_created = None
            if status == "fixed":
                pr_state = _PR_FATES[k % len(_PR_FATES)]
                pr_created = created + dt.timedelta(minutes=20 + 3 * k)
            reason = {
                "refused": "monthly budget of $100.00 reached",
                "error": f"sandbox crashed (attempt {k})",
                "no_fix": "budget exhausted after 3 rounds",
                "skipped": "not a repairable failure",
            }.get(status)
            title = f"CI failed on main ({cls})" if trigger == "ci" else f"Issue {100 + k}: wrong result"
            specs.append(
                Spec(repo, created, trigger, status, cls, cost, red, pr_state, pr_created, reason, title)
            )
            k += 1
    # One attempt still running in the current week (no cost yet, log not classified).
    specs.append(
        Spec(
            OCTO_REPOS[1],
            now - dt.timedelta(hours=1),
            "ci",
            "running",
            None,
            None,
            now - dt.timedelta(hours=2),
        )
    )
    # other-org: never visible to an octo-org viewer.
    for j, status in enumerate(("fixed", "fixed", "no_fix", "error")):
        created = now - dt.timedelta(days=3 + 5 * j, hours=6)
        specs.append(
            Spec(
                OTHER_REPOS[0],
                created,
                "ci",
                status,
                "test",
                0.9 if status != "error" else 0.1,
                created - dt.timedelta(minutes=5),
                "merged" if status == "fixed" else None,
                created + dt.timedelta(minutes=30) if status == "fixed" else None,
                "other-org secret reason" if status != "fixed" else None,
                "other-org secret title",
            )
        )
    return specs


def make_trace(now: dt.datetime) -> dict[str, Any]:
    """A real trace: the repair loop with fakes, two rounds, fixed in the second."""
    from indexing.model import Chunk, SearchHit
    from jobs.repair.budget import Budget
    from jobs.repair.fakes import (
        FakeClock,
        FakeRetriever,
        FakeWorkbench,
        ScriptedLLM,
        ScriptedProposer,
        outcome,
        replace_proposal,
    )
    from jobs.repair.loop import LoopConfig, RepairLoop
    from jobs.repair.model import Failure, Frame
    from jobs.repair.task import RepairTask
    from jobs.repair.workbench import TestOutcome

    core = "calc/core.py"
    files = {
        core: "def is_adult(age):\n    return age > 18\n\n\ndef double(x):\n    return x * 2\n",
        "tests/test_core.py": (
            "from calc.core import double, is_adult\n\n\n"
            "def test_adult():\n    assert is_adult(18)\n\n\n"
            "def test_child():\n    assert not is_adult(3)\n\n\n"
            "def test_double():\n    assert double(2) == 4\n"
        ),
    }
    target, child, dbl = (
        "tests/test_core.py::test_adult",
        "tests/test_core.py::test_child",
        "tests/test_core.py::test_double",
    )
    failure = Failure(
        target,
        "AssertionError",
        "assert False\n +  where False = is_adult(18)",
        "tests/test_core.py",
        5,
        (Frame("tests/test_core.py", 5, "test_adult"),),
    )

    def judge(tree: Any, select: Any) -> TestOutcome:
        text = tree[core]
        if "return True" in text:
            return outcome([target, dbl], {child: Failure(child, "AssertionError", "assert not True")})
        if "age >= 18" in text:
            return outcome([target, child, dbl])
        return outcome([child, dbl], {target: failure})

    noop = replace_proposal(core, "return age > 18", "return age > 19", usage_tokens=1200, usd=0.011)
    # A hostile explanation: the page must escape it.
    brk = replace_proposal(
        core,
        "return age > 18",
        "return True",
        explanation="<script>alert('trace')</script> always adult",
        usage_tokens=1300,
        usd=0.012,
    )
    fix = replace_proposal(core, "return age > 18", "return age >= 18", usage_tokens=1500, usd=0.014)
    hits = [
        SearchHit(
            Chunk(core, "python", "function", "is_adult", "calc.core.is_adult", 1, 2, files[core][:40]),
            0.91,
            ("bm25", "frame"),
        ),
        SearchHit(
            Chunk(
                "tests/test_core.py",
                "python",
                "function",
                "test_adult",
                "test_adult",
                4,
                5,
                "assert is_adult(18)",
            ),
            0.47,
            ("dense",),
        ),
    ]
    clock = FakeClock(tick=0.25)
    wb = FakeWorkbench(files, base=outcome([child, dbl], {target: failure}), judge=judge, clock=clock)
    loop = RepairLoop(
        FakeRetriever(hits),
        ScriptedProposer([[noop, brk], [fix]]),
        wb,
        clock,
        llm=ScriptedLLM([]),
        config=LoopConfig(),
    )
    result = loop.run(RepairTask(kind="ci", test_command="pytest"), Budget(), "large")
    assert result.fixed, result.reason
    trace = result.trace
    trace.id = "seed-trace-0001"
    trace.created = now.isoformat()
    trace.repo = {"path": "octo-org/api", "commit": "0" * 40, "test_command": "pytest", "framework": "pytest"}
    data: dict[str, Any] = trace.to_json()
    return data


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    """The ``attempts.trace`` summary in the shape of jobs.repair_service.outcome_from_report."""

    def tests(t: dict[str, Any] | None) -> dict[str, Any] | None:
        if not t:
            return None
        return {
            "passed": len(t["passed"]),
            "failed": len(t["failed"]),
            "errors": len(t["errors"]),
            "failing": [*t["failed"], *t["errors"]],
        }

    out = data["outcome"]
    return {
        "markdown": "## ARCS: FIXED",
        "trace_id": data["id"],
        "tests_before": tests(data["reproduction"]["baseline"]),
        "tests_after": tests(out["tests_after"]),
        "gates": [{"gate": g["gate"], "passed": g["passed"], "detail": g["detail"]} for g in out["gates"]],
        "target_tests": data["reproduction"]["targets"],
        "duration_s": data["spend"]["wall_s"],
        "executions": data["spend"]["executions"],
        "candidates": len(data["rounds"][0]["candidates"]) + len(data["rounds"][1]["candidates"]),
        "tiers": data["tiers"],
        "notices": data["notices"],
        "failure_class": "test",
        "failure_log": "FAILED tests/test_core.py::test_adult - AssertionError",
    }


def seed_dashboard(store: Store, *, now: dt.datetime, traces_dir: Path | None = None) -> SeedInfo:
    """Fill an empty store as of ``now``; the trace file is written under ``traces_dir`` (without
    one, the traced attempt has only the summary and no ``trace_path``)."""
    clock_now = [now]
    clocked = Store(store.engine, clock=lambda: clock_now[0])
    specs = _specs(now)
    ids: dict[str, list[int]] = defaultdict(list)
    spec_ids: list[int] = []
    traced_id = 0
    trace_file = Path()
    trace_data = make_trace(now)
    pr_number: defaultdict[str, int] = defaultdict(lambda: 40)
    for n, s in enumerate(specs):
        fields: dict[str, Any] = {
            "repo": s.repo,
            "trigger": s.trigger,
            "status": s.status,
            "failure_class": s.failure_class,
            "created_at": s.created_at,
            "red_build_at": s.red_build_at,
            "installation_id": 1 if s.repo.startswith(OCTO) else 2,
            "title": s.title,
            "reason": s.reason,
        }
        if s.trigger == "ci":
            fields.update(run_id=9000 + n, head_branch="main", head_sha=f"{n:040x}")
        else:
            fields.update(issue_number=100 + n, requested_by="octocat")
        if s.status in ("fixed", "no_fix", "error", "refused", "skipped"):
            fields["finished_at"] = s.created_at + dt.timedelta(minutes=15)
        if s.status in ("fixed", "no_fix", "error"):
            fields.update(
                started_at=s.created_at + dt.timedelta(minutes=1),
                cost_usd=s.cost_usd,
                tier="large",
                rounds=2,
                tokens=4000 + n,
                verdict={"fixed": "fixed", "no_fix": "budget_exhausted", "error": None}[s.status],
            )
        if s.status == "fixed":
            fields.update(
                patch="--- a/calc/core.py\n+++ b/calc/core.py\n@@ -1 +1 @@\n-    return age > 18\n+    return age >= 18\n",
                files={"calc/core.py": "SECRET FILE CONTENTS"},
                explanation="The boundary comparison excluded 18.",
            )
        attempt, _ = clocked.claim_attempt(f"seed-{n}", **fields)
        ids[s.repo].append(attempt.id)
        spec_ids.append(attempt.id)
        if s.pr_state is not None and s.pr_created_at is not None:
            pr_number[s.repo] += 1
            number = pr_number[s.repo]
            clock_now[0] = s.pr_created_at
            clocked.record_pr(
                repo=s.repo,
                number=number,
                url=f"https://github.com/{s.repo}/pull/{number}",
                branch=f"arcs/fix-{attempt.id}",
                attempt_id=attempt.id,
                head_sha=f"{n:040x}",
            )
            if s.pr_state != "open":
                decided = min(s.pr_created_at + dt.timedelta(hours=5), now)
                clocked.set_pr_state(s.repo, number, s.pr_state, at=decided)
        if not traced_id and s.status == "fixed" and s.repo == OCTO_REPOS[0] and s.trigger == "ci":
            traced_id = attempt.id
            if traces_dir is not None:
                traces_dir.mkdir(parents=True, exist_ok=True)
                trace_file = traces_dir / f"{trace_data['id']}.json"
                trace_file.write_text(json.dumps(trace_data, indent=1), encoding="utf-8")
            clocked.update_attempt(
                attempt.id,
                trace_path=str(trace_file) if traces_dir is not None else None,
                trace=_summary(trace_data),
                verdict="fixed",
            )
    # Events: a refusal per refused attempt except the first (that one shows as an attempt), an
    # error event per error attempt, a job failure without attempt, and notices (never listed).
    problems: dict[str, int] = defaultdict(int)
    messages: dict[str, list[str]] = defaultdict(list)
    refused_seen = 0
    for n, s in enumerate(specs):
        owner = s.repo.split("/")[0]
        attempt_id = spec_ids[n]
        clock_now[0] = s.created_at + dt.timedelta(minutes=15)
        if s.status == "refused":
            refused_seen += 1
            if refused_seen > 1:
                clocked.record_event(
                    "refusal",
                    f"refused: {s.reason}",
                    attempt_id=attempt_id,
                    repo=s.repo,
                    data={"policy": "budget"},
                )
                messages[owner].append(f"refused: {s.reason}")
            else:
                messages[owner].append(s.reason or "")
            problems[owner] += 1
        elif s.status == "error":
            clocked.record_event("error", f"error: {s.reason}", attempt_id=attempt_id, repo=s.repo)
            messages[owner].append(f"error: {s.reason}")
            problems[owner] += 1
        elif s.status == "fixed":
            clocked.record_event("notice", "pull request opened", attempt_id=attempt_id, repo=s.repo)
    clock_now[0] = now - dt.timedelta(days=2)
    clocked.record_event("job_failed", "repair will not run again: worker lost", repo=OCTO_REPOS[2])
    messages[OCTO].append("repair will not run again: worker lost")
    problems[OCTO] += 1
    clocked.record_event("job_failed", "other-org secret failure", repo=OTHER_REPOS[0])
    messages[OTHER].append("other-org secret failure")
    problems[OTHER] += 1
    # Policies: the owner's row and a repository row of the other org.
    clock_now[0] = now - dt.timedelta(days=1)
    clocked.set_policy(
        OCTO,
        updated_by="admin-user",
        paused=False,
        monthly_usd=100.0,
        max_prs_per_day=5,
        quiet_start=22,
        quiet_end=6,
        timezone="Europe/Berlin",
    )
    clocked.set_policy(OTHER, OTHER_REPOS[0], updated_by="other-admin", paused=True)

    owners = {OCTO: OCTO_REPOS, OTHER: OTHER_REPOS}
    org = {o: expected_of([s for s in specs if s.repo in repos]) for o, repos in owners.items()}
    repo = {r: expected_of([s for s in specs if s.repo == r]) for r in (*OCTO_REPOS, *OTHER_REPOS)}
    weeks: dict[str, dict[dt.date, Expected]] = {}
    classes: dict[str, dict[str, dict[str, int]]] = {}
    for o, repos in owners.items():
        mine = [s for s in specs if s.repo in repos]
        starts = {_monday(s.created_at) for s in mine} | {
            _monday(s.pr_created_at) for s in mine if s.pr_created_at
        }
        # Attempts count in their week, PRs in the week they were opened.
        weeks[o] = {}
        for start in sorted(starts):
            in_week = [s for s in mine if _monday(s.created_at) == start]
            prs = [s for s in mine if s.pr_created_at is not None and _monday(s.pr_created_at) == start]
            a = expected_of(in_week)
            p = expected_of(prs)
            weeks[o][start] = Expected(
                attempts=a.attempts,
                fixed=a.fixed,
                no_fix=a.no_fix,
                refused=a.refused,
                errors=a.errors,
                skipped=a.skipped,
                in_progress=a.in_progress,
                finished=a.finished,
                prs_opened=p.prs_opened,
                prs_merged=p.prs_merged,
                prs_closed=p.prs_closed,
                total_usd=a.total_usd,
                median_time_to_pr_s=p.median_time_to_pr_s,
                repair_rate=a.repair_rate,
                accepted_fix_rate=p.accepted_fix_rate,
                usd_per_fix=a.usd_per_fix,
            )
        by_class: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for s in mine:
            name = s.failure_class or ("unknown" if s.trigger == "ci" else "issue")
            by_class[name][s.status] += 1
        classes[o] = {k: dict(v) for k, v in by_class.items()}
    return SeedInfo(
        now=now,
        specs=tuple(specs),
        attempt_ids=dict(ids),
        spec_ids=tuple(spec_ids),
        traced_attempt_id=traced_id,
        trace_path=trace_file,
        org=org,
        repo=repo,
        weeks=weeks,
        classes=classes,
        problems=dict(problems),
        problem_messages=dict(messages),
    )
