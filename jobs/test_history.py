"""The repository's test history as evidence (issue #26): what is recorded, and what it says.

:class:`HistoryStore` is the port (``bot.store.store.Store`` implements it; ``Deps.history``).
Recorded: the failing tests of a CI run ARCS is sent (:func:`record_ci_failure`, source ``ci``,
environment ``ci:<workflow>``) and the outcomes an attempt saw in ARCS' sandbox
(:func:`record_report`: the reproduction, its triage re-runs, the verification). Read back:
:func:`verdicts` classifies tests with :func:`jobs.repair.flaky.classify`; :func:`known_flaky_since`
lists a repository's known flaky tests (the dashboard issue and the web dashboard's flaky page).

The history is evidence, never a reason to fail a job: a store error is logged and the job goes
on as if nothing were known.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import structlog

from jobs.repair.flaky import FlakyVerdict, TestRun, classify, evidence, runs_of
from jobs.repair.report import RepairReport

log = structlog.get_logger("arcs.history")

HISTORY_PER_TEST = 200
"""Rows per test the classifier reads (the newest)."""


class HistoryStore(Protocol):
    """Test outcomes per (repository, test id, commit, environment)."""

    def record_test_runs(self, repo: str, runs: Sequence[TestRun], *, attempt_id: int | None = None) -> int:
        """Add outcomes (each at most once per ``run_key``); how many were new."""
        ...

    def test_runs(
        self, repo: str, test_ids: Sequence[str], *, limit: int = HISTORY_PER_TEST
    ) -> list[TestRun]:
        """The recorded outcomes of ``test_ids``, oldest first (about ``limit`` per test)."""
        ...


@runtime_checkable
class HistoryCatalog(HistoryStore, Protocol):
    """A history that can also list the tests it saw failing (the dashboards' starting point)."""

    def failing_tests(self, repo: str, *, since: dt.datetime, limit: int = 100) -> list[str]:
        """The tests of ``repo`` seen failing since ``since``, the most recently failing first."""
        ...


FLAKY_WINDOW = dt.timedelta(days=30)
"""How far back the dashboards look for a failure of a test before classifying it."""
FLAKY_CANDIDATES = 100
"""Recently failing tests the dashboards classify (the most recently failing)."""


def ci_env(workflow: str | None) -> str:
    """The environment key of a CI workflow's runs."""
    return f"ci:{workflow or 'CI'}"


def record_ci_failure(
    history: HistoryStore | None,
    repo: str,
    *,
    sha: str,
    run_id: int,
    run_attempt: int | None,
    workflow: str | None,
    test_ids: Iterable[str],
    attempt_id: int | None = None,
) -> int:
    """The failing tests of CI run ``run_id`` (its ``run_attempt``) at ``sha``; rows added."""
    env = ci_env(workflow)
    key = f"ci:{run_id}:{run_attempt or 1}"
    rows = [TestRun(t, sha, env, "ci", True, run_key=key) for t in dict.fromkeys(test_ids) if t]
    return _record(history, repo, rows, attempt_id)


def record_report(
    history: HistoryStore | None, repo: str, *, sha: str, attempt_id: int, report: RepairReport
) -> int:
    """The outcomes an attempt saw in ARCS' sandbox (:attr:`RepairReport.test_runs`); rows added."""
    rows = runs_of(report.test_runs, sha=sha, key=f"attempt:{attempt_id}")
    return _record(history, repo, list(rows), attempt_id)


def verdicts(
    history: HistoryStore | None, repo: str, test_ids: Iterable[str], *, extra: Iterable[TestRun] = ()
) -> dict[str, FlakyVerdict]:
    """What the history (and ``extra`` rows not recorded, e.g. without a store) says of each test."""
    ids = list(dict.fromkeys(t for t in test_ids if t))
    rows: list[TestRun] = list(extra)
    if history is not None and ids:
        try:
            rows = [*history.test_runs(repo, ids), *rows]
        except Exception as exc:  # evidence only: an unreadable history knows nothing
            log.warning("history.read_failed", repo=repo, error=f"{type(exc).__name__}: {exc}"[:300])
    seen: set[tuple[str, str]] = set()
    unique = []
    for r in rows:  # a row read back and the same row given as ``extra`` count once
        if r.run_key and (r.test_id, r.run_key) in seen:
            continue
        seen.add((r.test_id, r.run_key))
        unique.append(r)
    return {t: classify(t, unique) for t in ids}


def report_evidence(
    history: HistoryStore | None, repo: str, *, sha: str, attempt_id: int, report: RepairReport
) -> str:
    """The evidence sentence of the tests this attempt saw both fail and pass ('' when none)."""
    rows = runs_of(report.test_runs, sha=sha, key=f"attempt:{attempt_id}")
    mixed = {o.test_id for o in report.test_runs if o.failed} & {
        o.test_id for o in report.test_runs if not o.failed
    }
    if not mixed:
        return ""
    found = verdicts(history, repo, sorted(mixed), extra=rows)
    return evidence(found.values())


def flake_rate(history: HistoryStore | None, repo: str, targets: Sequence[str]) -> float:
    """The highest measured flake rate of the flaky ones among ``targets`` (0: no history, none
    flaky): what the culprit bisect repeats its probes for (#26)."""
    if history is None or not targets:
        return 0.0
    return max((v.flake_rate for v in verdicts(history, repo, targets).values() if v.flaky), default=0.0)


def known_flaky(verdicts_: Mapping[str, FlakyVerdict]) -> dict[str, FlakyVerdict]:
    """The flaky ones."""
    return {t: v for t, v in verdicts_.items() if v.flaky}


def known_flaky_since(
    history: HistoryCatalog | None, repo: str, since: dt.datetime, *, limit: int = FLAKY_CANDIDATES
) -> list[FlakyVerdict]:
    """The known flaky tests of ``repo`` among those seen failing since ``since``, from their
    whole recorded history, most recently seen first ([] with no history or an unreadable one)."""
    if history is None:
        return []
    try:
        candidates = history.failing_tests(repo, since=since, limit=limit)
    except Exception as exc:  # evidence only: an unreadable history knows nothing
        log.warning("history.read_failed", repo=repo, error=f"{type(exc).__name__}: {exc}"[:300])
        return []
    found = known_flaky(verdicts(history, repo, candidates)).values()
    epoch = dt.datetime.min.replace(tzinfo=dt.UTC)
    return sorted(found, key=lambda v: (-(v.last_seen or epoch).timestamp(), v.test_id))


def _record(history: HistoryStore | None, repo: str, rows: Sequence[TestRun], attempt_id: int | None) -> int:
    if history is None or not rows:
        return 0
    try:
        return history.record_test_runs(repo, rows, attempt_id=attempt_id)
    except Exception as exc:  # evidence only: a store error must not fail the job
        log.warning("history.record_failed", repo=repo, error=f"{type(exc).__name__}: {exc}"[:300])
        return 0


__all__ = [
    "FLAKY_CANDIDATES",
    "FLAKY_WINDOW",
    "HISTORY_PER_TEST",
    "HistoryCatalog",
    "HistoryStore",
    "ci_env",
    "flake_rate",
    "known_flaky",
    "known_flaky_since",
    "record_ci_failure",
    "record_report",
    "report_evidence",
    "verdicts",
]
