"""Recording a repair's :class:`jobs.repair.report.RepairReport`: the attempt's final status, what
the user is told, and for a fix (or a partial fix the repository asked to publish) the
``publish_result`` job.

``fixed`` with changed files -> ``fixed`` and publishing queued; ``interrupted`` (``/arcs stop``,
a pause) -> ``skipped``; ``environment`` (the tests could not run at all) -> ``environment``;
``partial`` -> ``partial`` (a pull request only with ``open_pr_on_partial``); anything else ->
``no_fix``, naming the owner's monthly cap when that, not the attempt's own budget, stopped it;
for a dependency update (#27) a ``no_fix`` also gets its own comment on the update's pull request
naming the breaking changes that hit the repository.
The cost replaces the attempt's USD reservation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import structlog

from jobs import render, render_checks
from jobs.logctx import set_outcome
from jobs.policy import binding_cap, budget_stop_reason
from jobs.render_depupdate import dependency_comment
from jobs.repair.report import RepairReport
from jobs.report_summary import attempt_summary
from jobs.run import AttemptRun, enqueue_publish, one_line
from jobs.test_history import record_report, report_evidence

log = structlog.get_logger("arcs.pipeline")


def _policy_budget_stop(run: AttemptRun, report: RepairReport) -> str | None:
    """``stopped at octo's monthly budget: …`` when the owner's (or repository's) monthly cap,
    not the attempt's own budget, was the limit the repair ran into; else None."""
    if report.verdict != "budget_exhausted" or report.stopped_by != "usd" or not report.usd_capped:
        return None
    if run.policy is None or run.granted_usd is None:
        return None
    bound = binding_cap(run.policy.caps, run.committed)
    if bound is None:
        return None
    return budget_stop_reason(bound[0], run.granted_usd, report.spend.usd)


def _stopped(run: AttemptRun, report: RepairReport, common: Mapping[str, Any], spend: str) -> str:
    """An interrupted repair (``/arcs stop``, a pause): ``skipped``, a ``notice``, and the
    check run/status comment say who or what stopped it."""
    reason = report.reason or "stopped"
    run.update(**common)
    body = f"Attempt #{run.attempt.id} stopped: {reason}. Nothing was changed in the repository ({spend})."
    return run.finish(
        "skipped",
        f"interrupted: {reason}",
        title="ARCS stopped",
        body=body,
        conclusion="cancelled",
        event="notice",
        event_data={"policy": "interrupted"},
        check={"title": one_line(f"Stopped: {reason}", 200), "summary": body},
    )


def _environment(run: AttemptRun, report: RepairReport, common: Mapping[str, Any]) -> str:
    """The tests could not run at all (a missing command, runner or dependency, a failed setup):
    ``environment``, with the one line that says what is missing and which ``.arcs.yml`` key fixes
    it. Nothing was repaired and no model was called."""
    hint = report.reason or "the tests could not run in the sandbox"
    run.update(**common)
    summary = attempt_summary(run.attempt, fixed=False, reason=hint, report=report)
    body = (
        f"Attempt #{run.attempt.id}: the tests could not run in ARCS' sandbox, so nothing was repaired "
        f"(no model was called): {one_line(hint)}."
    )
    return run.finish(
        "environment",
        f"environment: {hint}",
        title="ARCS could not run the tests",
        body=body,
        conclusion="neutral",
        check=render.check_run_output("completed", summary, reason=hint),
    )


def _partial(run: AttemptRun, report: RepairReport, common: Mapping[str, Any], spend: str) -> str:
    """The targets pass but the command still fails on tests that already failed before:
    ``partial``. A pull request only when ``.arcs.yml`` says ``open_pr_on_partial: true`` (then the
    engine applied the patch and ``report.files`` holds it); it says so plainly."""
    reason = report.reason or "partial"
    if report.files:
        run.update(
            status="partial",
            reason=one_line(reason),
            patch=report.patch,
            files=dict(report.files),
            finished_at=run.deps.clock(),
            **common,
        )
        run.tell(
            "ARCS found a partial fix",
            f"Attempt #{run.attempt.id} found a partial fix ({spend}): {one_line(reason)}. "
            "Opening a pull request, as `.arcs.yml` asks (`open_pr_on_partial`); CI will still fail.",
            conclusion=None,
            comment=False,
            annotations=render_checks.check_annotations(attempt_summary(run.attempt, report=report)),
        )
        enqueue_publish(run.deps, run.job, run.attempt, dashboard=run.dashboard)
        set_outcome("partial")
        log.info("attempt.finish", status="partial", verdict=report.verdict)
        return "partial"
    run.update(**common)
    summary = attempt_summary(run.attempt, fixed=False, reason=reason, report=report)
    return run.finish(
        "partial",
        f"partial: {reason}",
        title="ARCS found a partial fix (no pull request)",
        body=f"Attempt #{run.attempt.id} found only a partial fix ({spend}): {one_line(reason)}. "
        "No pull request was opened: the test command would still fail (set `open_pr_on_partial: true` "
        "in `.arcs.yml` to get one anyway).",
        conclusion="neutral",
        check=render.check_run_output("completed", summary, reason=reason),
        annotations=render_checks.check_annotations(replace(summary, diff=report.patch)),
        patch=report.patch or None,
    )


def _test_history(run: AttemptRun, report: RepairReport) -> str:
    """Record the outcomes the attempt saw in the repository's test history; for a ``flaky``
    verdict, the evidence sentence ('' otherwise, or when there is none)."""
    sha = run.attempt.head_sha
    if not sha or not report.test_runs:
        return ""
    history = run.deps.history
    record_report(history, run.repo, sha=sha, attempt_id=run.attempt.id, report=report)
    if report.verdict != "flaky":
        return ""
    return report_evidence(history, run.repo, sha=sha, attempt_id=run.attempt.id, report=report)


def _dependency_comment(run: AttemptRun, report: RepairReport) -> None:
    """A dependency update with no verified fix (``dependency_updates: comment``, or ``fix`` when
    nothing passed, #27): its own comment on the update's pull request naming what broke. Its
    marker makes a retried job edit it in place; a failure to post is an event, not raised."""
    update = report.dependency
    number = run.attempt.issue_number
    if update is None or update.mode == "off" or number is None or run.attempt.trigger != "ci":
        return
    body = dependency_comment(update, run.attempt.id)
    try:
        run.gh.create_or_edit_status_comment(run.repo, number, body, None)
    except Exception as exc:  # the check run carries the same section
        run.event("error", f"could not post the dependency comment: {type(exc).__name__}: {exc}")


def record_outcome(run: AttemptRun, report: RepairReport) -> str:
    """Store what the repair produced and tell the user; a fix queues ``publish_result``.

    ``attempts.trace`` keeps ``report.to_json(with_files=False)`` (the files have their own
    column); publishing renders the pull request from it (:mod:`jobs.report_summary`)."""
    common: dict[str, Any] = {
        "verdict": report.verdict,
        "tier": report.tier or None,
        "rounds": report.rounds,
        "tokens": report.spend.tokens,
        "cost_usd": round(report.spend.usd, 6),
        "trace_path": report.trace_path or None,
        "trace": report.to_json(with_files=False),
        "explanation": report.explanation or None,
        "reserved_usd": None,  # the cost replaces the reservation
    }
    flaky_evidence = _test_history(run, report)
    spend = f"tier {report.tier or '?'}, {report.rounds} round(s), ${report.spend.usd:.2f}"
    if report.fixed and report.files:
        run.update(
            status="fixed",
            reason=one_line(report.reason),
            patch=report.patch,
            files=dict(report.files),
            finished_at=run.deps.clock(),
            **common,
        )
        run.tell(
            "ARCS found a fix",
            f"Attempt #{run.attempt.id} found a fix ({spend}); opening a pull request.",
            conclusion=None,
            comment=False,
            # Once per attempt, here: publishing may be retried, and GitHub appends annotations.
            annotations=render_checks.check_annotations(attempt_summary(run.attempt, report=report)),
        )
        enqueue_publish(run.deps, run.job, run.attempt, dashboard=run.dashboard)
        set_outcome("fixed")
        log.info("attempt.finish", status="fixed", verdict=report.verdict)
        return "fixed"
    if report.verdict == "interrupted":
        return _stopped(run, report, common, spend)
    if report.verdict == "environment":
        return _environment(run, report, common)
    if report.verdict == "partial":
        return _partial(run, report, common, spend)
    reason = report.reason or report.verdict
    if flaky_evidence:
        reason = f"{reason}. Evidence: {flaky_evidence}"
    if report.fixed:
        reason = f"the repair reported a fix but changed no file ({reason})"
    capped = _policy_budget_stop(run, report)
    if capped is not None:
        reason = f"{capped} ({reason})"
    run.update(**common)
    summary = attempt_summary(run.attempt, fixed=False, reason=reason, report=report)
    finished = run.finish(
        "no_fix",
        f"{report.verdict}: {reason}",
        title="ARCS did not find a fix",
        body=f"Attempt #{run.attempt.id} ended with `{report.verdict}`: {one_line(reason)} ({spend})."
        + (f"\n\n{report.explanation}" if report.explanation else ""),
        conclusion="neutral",
        check=render.check_run_output("completed", summary, reason=f"{report.verdict}: {reason}"),
        annotations=render_checks.check_annotations(summary),
    )
    _dependency_comment(run, report)
    if report.revert is not None and report.revert.files:
        # `on_no_fix: revert` (#14): the engine verified a revert of the culprit; publishing
        # re-checks every rule (default branch, limits, .arcs.yml) before opening its PR.
        enqueue_publish(run.deps, run.job, run.attempt, dashboard=run.dashboard)
    return finished
