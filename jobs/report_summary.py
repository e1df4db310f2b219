"""The :class:`jobs.summary.RepairSummary` of a stored attempt, from its
:class:`jobs.repair.report.RepairReport` (pure).

The attempt's columns say what was decided (status, verdict, reason, patch, spend), the report
stored in ``attempts.trace`` (either shape, see :meth:`RepairReport.from_json`) says what the
repair saw. For a v1 summary the result is the old ``repair_summary``'s (tests/jobs/test_report.py
checks it against a verbatim copy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.repair import trace_read
from jobs.repair.report import RepairReport
from jobs.repair.threats import threat_notices
from jobs.summary import RepairSummary, TestTally

if TYPE_CHECKING:
    from jobs.ports import AttemptView


def stored_report(attempt: AttemptView) -> RepairReport:
    """The report stored with ``attempt`` (an empty one when none, or one this ARCS cannot read)."""
    try:
        return RepairReport.from_json(attempt.trace or {})
    except ValueError:
        return RepairReport(verdict="")


def tally(run: trace_read.TestTally | None) -> TestTally | None:
    """The message's tally of a report's test run."""
    if run is None:
        return None
    return TestTally(passed=run.passed, failed=run.failed, errors=run.errors, failing=run.failing)


def is_issue(attempt: AttemptView) -> bool:
    """The attempt answers an issue (an ``issue`` trigger, or a comment outside a pull request)."""
    return attempt.trigger == "issue" or (attempt.trigger == "comment" and attempt.head_branch is None)


def attempt_summary(
    attempt: AttemptView,
    *,
    fixed: bool | None = None,
    reason: str | None = None,
    report: RepairReport | None = None,
) -> RepairSummary:
    """What :mod:`jobs.render` needs about an attempt, from the store alone.

    ``fixed``/``reason`` override the attempt's (a refusal's wording); ``report`` defaults to
    :func:`stored_report`. Absent parts read as "not recorded".
    """
    r = stored_report(attempt) if report is None else report
    issue = is_issue(attempt)
    failure = ""
    if not issue:
        where = attempt.head_branch or attempt.base_branch or (attempt.head_sha or "")[:12]
        failure = f"CI failed on `{where}`" + (
            f" ({attempt.failure_class} failure)." if attempt.failure_class else "."
        )
    return RepairSummary(
        verdict=attempt.verdict or "",
        fixed=attempt.status == "fixed" if fixed is None else fixed,
        reason=reason if reason is not None else (attempt.reason or ""),
        kind="issue" if issue else "ci",
        failure_summary=failure,
        root_cause=attempt.explanation or "",
        diff=attempt.patch or "",
        target_tests=r.target_tests,
        tests_before=tally(r.tests_before),
        tests_after=tally(r.tests_after),
        pre_existing=r.pre_existing,
        verification=r.verification_line,
        gates=tuple((g.gate or "?", g.passed, g.detail) for g in r.gates),
        tokens=attempt.tokens or 0,
        cost_usd=attempt.cost_usd or 0.0,
        rounds=attempt.rounds or 0,
        duration_s=r.spend.wall_s,
        tier=attempt.tier or "",
        trace_markdown=r.trace_markdown,
        issue_number=attempt.issue_number if issue else None,
        head_sha=attempt.head_sha or "",
        attempt_id=str(attempt.id),
        changes=r.changes,
        culprit=r.culprit,
        on_no_fix=_recorded(r, "on_no_fix"),
        revert_sha=r.revert.sha if r.revert is not None and r.revert.files else "",
        revert_skipped=_recorded(r, "revert_skipped"),
        dependency=r.dependency.markdown if r.dependency is not None else "",
        refused=threat_notices(r.notices),
        failure_spots=r.failures,
    )


def _recorded(report: RepairReport, name: str) -> str:
    """A text field of the report that older reports (and builds) may not have ('' then)."""
    value = getattr(report, name, "")
    return value if isinstance(value, str) else ""


__all__ = ["attempt_summary", "is_issue", "stored_report", "tally"]
