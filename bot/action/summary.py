"""What ``arcs action`` writes: the job summary, the step outputs, the comment (pure builders).

The pull request body, the verification and cost tables come from :mod:`jobs.render`
(the App's builders); this module adds the Action's own table (command, exit code and counts of
the reproduction run and of the final verification run) and the lines that only the Action says
(sandbox or not, what was published, why nothing was).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobs import render
from jobs.render import RepairSummary, TestTally, defuse, fenced
from jobs.repair.threats import threat_notices

if TYPE_CHECKING:
    from jobs.repair.report import Culprit, FailureSpot, RepairReport
    from jobs.repair.trace_read import TestTally as RunTally

ACTION_MARKER = "<!-- arcs:action signature={signature} -->"
MAX_SUMMARY_DIFF = 40_000
"""Characters of the diff shown in the job summary (GitHub caps a step summary at 1 MiB)."""


@dataclass(frozen=True, slots=True)
class RunRow:
    """One test run of the verification table."""

    label: str
    command: str
    exit_code: int | None
    passed: int
    failed: int
    errors: int


@dataclass(frozen=True, slots=True)
class Published:
    """What publishing did, in one line."""

    mode: str
    ok: bool
    """The result reached GitHub as the mode asked."""
    url: str = ""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ActionOutcome:
    """Everything the job summary and the step outputs say about one ``arcs action`` run."""

    verdict: str
    """The repair's verdict, or ``skipped``/``refused`` when no repair ran."""
    reason: str
    fixed: bool = False
    repository: str = ""
    run_url: str = ""
    trace_path: str = ""
    sandbox: str = ""
    """How the tests ran (``bubblewrap sandbox`` or ``unsandboxed: …``); empty when none ran."""
    summary: RepairSummary | None = None
    rows: tuple[RunRow, ...] = ()
    published: Published | None = None
    notices: tuple[str, ...] = ()
    test_command: str = ""
    signature: str = ""
    exit_code: int = 1
    changes: str = ""
    """The change since the last green commit in one line (``abc1234..def5678, 3 commits, 2 files``);
    '' without a change signal (the reason is then one of :attr:`notices`)."""
    change_origin: str = ""
    """Where that change starts (``base: the push's previous tip abc1234``)."""
    culprit: Culprit | None = None
    """The commit that turned CI red, when the repair named it."""
    failures: tuple[FailureSpot, ...] = ()
    """Where the failing tests failed (regular files of the workspace only): the ``::error`` lines."""
    dashboard_url: str = ""
    """The ARCS App's attempt for this commit on its dashboard ('' when none was found)."""


def _tally(run: RunTally | None) -> TestTally | None:
    if run is None:
        return None
    return TestTally(passed=run.passed, failed=run.failed, errors=run.errors, failing=run.failing)


def run_rows(r: RepairReport) -> tuple[RunRow, ...]:
    """The reproduction run and the final verification run (else the accepted candidate's run)."""
    rows: list[RunRow] = []
    before = r.tests_before
    if before is not None:
        rows.append(
            RunRow(
                "before (reproduction)",
                before.command,
                before.exit_code,
                before.passed,
                before.failed,
                before.errors,
            )
        )
    final = r.verification
    if final is not None:
        rows.append(
            RunRow(
                "after (final verification)",
                final.command,
                final.exit_code,
                final.passed,
                final.failed,
                final.errors,
            )
        )
    elif r.tests_after is not None:
        after = r.tests_after
        rows.append(
            RunRow(
                "after (fix candidate)",
                after.command,
                after.exit_code,
                after.passed,
                after.failed,
                after.errors,
            )
        )
    return tuple(rows)


def repair_summary(
    r: RepairReport,
    *,
    kind: str = "ci",
    failure_summary: str = "",
    failing_run_url: str = "",
    head_sha: str = "",
    issue_number: int | None = None,
    issue_title: str = "",
) -> RepairSummary:
    """:class:`jobs.render.RepairSummary` of a repair's report (what the App's messages say, from
    the report instead of the store)."""
    targets = r.target_tests or (r.tests_before.failing if r.tests_before else ())
    return RepairSummary(
        verdict=r.verdict,
        fixed=r.fixed,
        reason=r.reason,
        kind="issue" if kind == "issue" else "ci",
        failure_summary=failure_summary,
        root_cause=r.explanation,
        diff=r.patch if r.fixed else "",
        target_tests=targets[:50],
        tests_before=_tally(r.tests_before),
        tests_after=_tally(r.tests_after),
        gates=tuple((g.gate, g.passed, g.detail) for g in r.gates),
        tokens=r.spend.tokens,
        cost_usd=float(r.spend.usd),
        rounds=r.rounds,
        duration_s=r.spend.wall_s,
        tier=r.tier,
        trace_markdown=r.trace_markdown,
        issue_number=issue_number,
        issue_title=issue_title,
        failing_run_url=failing_run_url,
        head_sha=head_sha,
        changes=r.changes,
        culprit=r.culprit,
        refused=threat_notices(r.notices),
    )


def _cell(text: str) -> str:
    flat = " ".join(text.split())
    flat = flat if len(flat) <= 160 else flat[:159] + "…"
    return defuse(flat).replace("|", "\\|").replace("`", "'")


def runs_table(rows: tuple[RunRow, ...]) -> str:
    """| Run | Command | Exit code | Passed | Failed | Errors |"""
    lines = [
        "| Run | Command | Exit code | Passed | Failed | Errors |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        code = "—" if row.exit_code is None else str(row.exit_code)
        lines.append(
            f"| {row.label} | `{_cell(row.command) or '—'}` | {code} | {row.passed} | {row.failed} | {row.errors} |"
        )
    return "\n".join(lines)


_TITLES = {
    "fixed": "✅ ARCS found a verified fix",
    "skipped": "➖ ARCS did not run",
    "refused": "⛔ ARCS refused",
    "timeout": "⏱️ ARCS stopped at timeout-minutes",
}


def job_summary(outcome: ActionOutcome) -> str:
    """The Markdown for ``GITHUB_STEP_SUMMARY``."""
    title = _TITLES.get(outcome.verdict) or (
        "✅ ARCS found a verified fix"
        if outcome.fixed
        else f"❌ ARCS found no verified fix ({outcome.verdict})"
    )
    parts = [f"## {title}"]
    if outcome.reason:
        parts.append(defuse(" ".join(outcome.reason.split())))
    facts = [f"- **Verdict**: `{outcome.verdict}`"]
    if outcome.test_command:
        facts.append(f"- **Test command**: `{_cell(outcome.test_command)}`")
    if outcome.sandbox:
        facts.append(f"- **Tests ran**: {defuse(outcome.sandbox)}")
    if outcome.published is not None:
        pub = outcome.published
        mark = "✅" if pub.ok else "⚠️"
        what = f"[{pub.url}]({pub.url})" if pub.url else ""
        facts.append(f"- **Published** ({pub.mode}): {mark} {defuse(pub.detail)} {what}".rstrip())
    if outcome.trace_path:
        facts.append(f"- **Trace**: `{_cell(outcome.trace_path)}` (step output `trace`)")
    if outcome.run_url:
        facts.append(f"- **Run**: {outcome.run_url}")
    if outcome.dashboard_url:
        attempt = outcome.dashboard_url.rstrip("/").rsplit("/", 1)[-1]
        facts.append(f"- **Dashboard**: [the ARCS App's attempt #{attempt}]({outcome.dashboard_url})")
    parts.append("\n".join(facts))
    change = change_lines(outcome)
    if change:
        parts.append(change)
    for notice in outcome.notices:
        parts.append(f"> {defuse(' '.join(notice.split()))}")
    if outcome.rows:
        parts += ["### Verification", runs_table(outcome.rows)]
    summary = outcome.summary
    if summary is not None:
        parts += [
            "### Quality gates",
            render.verification_table(summary),
            "### Cost",
            render.cost_table(summary),
        ]
        if summary.diff:
            diff = (
                summary.diff
                if len(summary.diff) <= MAX_SUMMARY_DIFF
                else summary.diff[:MAX_SUMMARY_DIFF] + "\n… (diff truncated)\n"
            )
            parts += ["### Patch", fenced(diff, "diff")]
    return "\n\n".join(parts) + "\n"


def change_lines(outcome: ActionOutcome) -> str:
    """The change signal's lines: the culprit, the range since the last green run, its base."""
    lines = []
    if outcome.culprit is not None:
        lines.append(render.culprit_line(outcome.culprit))
    if outcome.changes:
        lines.append(render.changes_line(outcome.changes))
        if outcome.change_origin:
            lines.append(defuse(f"({' '.join(outcome.change_origin.split())})"))
    return "  \n".join(lines)


def comment_body(summary: RepairSummary, *, signature: str, run_url: str = "") -> str:
    """The ``mode: comment`` comment: verdict, diff, verification and cost (edited in place on
    later runs of the same failure: the hidden marker names the failure signature)."""
    head = (
        "✅ ARCS found a verified fix for this failure." if summary.fixed else "ARCS found no verified fix."
    )
    parts = [head]
    if run_url:
        parts.append(f"Failing run: {run_url}")
    if summary.root_cause.strip():
        parts += ["### Root cause", defuse(summary.root_cause.strip())]
    if summary.diff:
        parts += ["### Patch", fenced(summary.diff, "diff")]
    parts += [
        "### Verification",
        render.verification_table(summary),
        "### Cost",
        render.cost_table(summary),
    ]
    parts.append(render.status_marker(f"action-{signature}"))
    return render.truncate("\n\n".join(parts), render.BODY_BUDGET)


def review_body(summary: RepairSummary, *, signature: str, placed: int, outside: str) -> str:
    """The body of the ``mode: suggest`` review."""
    parts = [
        f"✅ ARCS found a verified fix: {placed} suggestion{'s' if placed != 1 else ''} below "
        "(commit them from this review)."
        if placed
        else "✅ ARCS found a verified fix, but none of its changes falls on lines this pull request changes."
    ]
    if summary.root_cause.strip():
        parts += ["### Root cause", defuse(summary.root_cause.strip())]
    if outside:
        parts += ["### Changes outside this pull request's diff", outside]
    parts += [
        "### Verification",
        render.verification_table(summary),
        "### Cost",
        render.cost_table(summary),
    ]
    parts.append(ACTION_MARKER.format(signature=signature))
    return render.truncate("\n\n".join(parts), render.BODY_BUDGET)


def step_outputs(outcome: ActionOutcome) -> dict[str, str]:
    """``verdict``, ``pr-url``, ``trace``, ``published``, ``culprit`` (the Action's outputs)."""
    pub = outcome.published
    return {
        "verdict": outcome.verdict,
        "pr-url": pub.url if pub is not None and pub.ok and pub.mode == "pr" else "",
        "trace": outcome.trace_path,
        "published": "true" if pub is not None and pub.ok else "false",
        "culprit": outcome.culprit.sha if outcome.culprit is not None else "",
    }


def format_outputs(values: Mapping[str, str], *, delimiter: str | None = None) -> str:
    """``GITHUB_OUTPUT`` lines: ``name=value``, or the heredoc form for a value with a newline."""
    lines = []
    for name, value in values.items():
        if "\n" in value or "\r" in value:
            mark = delimiter or f"ARCS_EOF_{secrets.token_hex(8)}"
            lines.append(f"{name}<<{mark}\n{value}\n{mark}")
        else:
            lines.append(f"{name}={value}")
    return "\n".join(lines) + "\n"


__all__ = [
    "ACTION_MARKER",
    "ActionOutcome",
    "Published",
    "RunRow",
    "change_lines",
    "comment_body",
    "format_outputs",
    "job_summary",
    "repair_summary",
    "review_body",
    "run_rows",
    "runs_table",
    "step_outputs",
]
