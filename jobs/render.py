"""What ARCS says on GitHub, as pure functions: pull request title and body, check-run output,
the status comment, refusals, help, config errors.

Inputs are plain values (:class:`~jobs.summary.RepairSummary`; the integrator maps a
``RepairResult`` onto it),
outputs are strings/dicts within GitHub's limits (65 536 characters for a body, 65 535 for a check
run's summary and text). Untrusted text (logs, issue text, model output) is defused before it is
placed outside a code block: ``@mentions`` would notify people and an HTML comment could forge
ARCS' hidden markers.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Literal

from jobs.render_change import change_notes, changes_line, culprit_line
from jobs.render_text import TRUNCATED, defuse, fenced, truncate
from jobs.render_text import one_line as _one_line
from jobs.summary import DiffStats, RepairSummary, TestTally, diff_stats

__all__ = [
    "BODY_BUDGET",
    "HELP_TEXT",
    "MAX_BODY_CHARS",
    "MAX_BUDGET_USD",
    "MAX_CHECK_TEXT",
    "MAX_CHECK_TITLE",
    "MAX_ITERATIONS",
    "MAX_TITLE_CHARS",
    "PR_MARKER",
    "STATUS_MARKER_RE",
    "TRUNCATED",
    "CheckStatus",
    "DiffStats",
    "RefusalKind",
    "RepairSummary",
    "StatusState",
    "TestTally",
    "change_notes",
    "changes_line",
    "check_run_conclusion",
    "check_run_output",
    "config_error_comment",
    "cost_table",
    "culprit_line",
    "defuse",
    "diff_stats",
    "fenced",
    "find_status_marker",
    "help_comment",
    "partial_note",
    "pr_body",
    "pr_title",
    "refusal_comment",
    "refused_section",
    "status_comment",
    "status_marker",
    "truncate",
    "unrepairable_summary",
    "verification_table",
]

MAX_BODY_CHARS = 65536
"""GitHub's limit for issue/PR/comment bodies."""
MAX_CHECK_TEXT = 65535
"""GitHub's limit for a check run's ``output.summary`` and ``output.text``."""
MAX_CHECK_TITLE = 255
MAX_TITLE_CHARS = 120
BODY_BUDGET = 60000
"""What ARCS allows itself of a body (headroom for GitHub's own counting of multi-byte text)."""
PR_MARKER = "<!-- arcs:pr -->"

StatusState = Literal[
    "queued", "working", "pr_opened", "pr_updated", "no_fix", "partial", "environment", "skipped", "error"
]
CheckStatus = Literal["queued", "in_progress", "completed"]
RefusalKind = Literal["permission", "rate_limit", "open_prs", "disabled", "unrepairable", "busy", "fork"]

_STATUS_MARKER = "<!-- arcs:status attempt={attempt} -->"
STATUS_MARKER_RE = re.compile(r"<!-- arcs:status attempt=([A-Za-z0-9._:/-]+) -->")


# --------------------------------------------------------------------------- text helpers


def _cell(text: str) -> str:
    return defuse(_one_line(text, 200)).replace("|", "\\|")


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _mark(ok: bool | None) -> str:
    return "✅" if ok else ("➖" if ok is None else "❌")


# --------------------------------------------------------------------------- pull request


def pr_title(result: RepairSummary) -> str:
    """``ARCS: fix #12: <issue title>`` / ``ARCS: fix failing test tests/test_x.py::test_y`` …"""
    if result.kind == "issue" and result.issue_number is not None:
        what = f"fix #{result.issue_number}"
        if result.issue_title.strip():
            what += f": {result.issue_title.strip()}"
    elif len(result.target_tests) == 1:
        what = f"fix failing test {result.target_tests[0]}"
    elif result.target_tests:
        what = f"fix {len(result.target_tests)} failing tests"
    elif result.failing_job:
        what = f"fix the failing {result.failing_job} job"
    elif result.failure_summary.strip():
        what = f"fix {result.failure_summary.strip().splitlines()[0]}"
    else:
        what = "fix the CI failure"
    prefix = "ARCS (partial fix)" if result.partial else "ARCS"
    return _one_line(f"{prefix}: {what}", MAX_TITLE_CHARS)


def verification_table(result: RepairSummary) -> str:
    """The Markdown table: target tests before -> after, regression suite, each gate."""
    rows = ["| Check | Before | After |", "| --- | --- | --- |"]
    before = result.tests_before
    after = result.tests_after
    targets = len(result.target_tests)
    name = f"Target tests ({targets})" if targets else "Target tests"
    rows.append(
        f"| {name} | {_mark(before.ok) + ' ' + before.label() if before else '—'} "
        f"| {_mark(after.ok) + ' ' + after.label() if after else '—'} |"
    )
    if result.regression or result.regression_passed is not None:
        if result.regression:
            text = _cell(result.regression)
        else:
            text = "passed" if result.regression_passed else "failed"
        rows.append(f"| Regression suite | — | {_mark(result.regression_passed)} {text} |")
    for gate, passed, detail in result.gates:
        text = _cell(detail) if detail else ("passed" if passed else "failed")
        rows.append(f"| Gate: {_cell(gate)} | — | {_mark(passed)} {text} |")
    if result.verification:
        ok = result.fixed and not result.partial
        rows.append(f"| Final run of the exact test command | — | {_mark(ok)} {_cell(result.verification)} |")
    return "\n".join(rows)


def partial_note(result: RepairSummary) -> str:
    """The plain statement a ``partial`` repair carries (PR body, check run)."""
    shown = result.pre_existing[:20]
    tests = "\n".join(f"- `{t.replace('`', '')}`" for t in shown)
    more = f"\n- … and {len(result.pre_existing) - 20} more" if len(result.pre_existing) > 20 else ""
    return (
        "**Partial fix: CI will still fail.** Every target test passes with this change, but the test "
        "command still fails on tests that fail at the last green commit as well (not caused by this change):\n"
        f"{tests}{more}"
    )


def cost_table(result: RepairSummary) -> str:
    """Tokens, USD, rounds, wall time and tier, as a one-row table."""
    return "\n".join(
        [
            "| Tokens | Cost (USD) | Rounds | Wall time | Tier |",
            "| ---: | ---: | ---: | ---: | --- |",
            f"| {result.tokens:,} | ${result.cost_usd:.4f} | {result.rounds} | "
            f"{_duration(result.duration_s)} | {_cell(result.tier or '—')} |",
        ]
    )


def _details(summary: str, content: str) -> str:
    return f"<details>\n<summary>{summary}</summary>\n\n{content}\n\n</details>"


def pr_body(
    result: RepairSummary,
    *,
    dashboard_url: str = "",
    trace_markdown: str | None = None,
) -> str:
    """The pull request body: summary, root cause, what changed, verification, cost, trace.

    Fits GitHub's limit: the trace is cut first, then the diff, then the explanation.
    """
    trace = result.trace_markdown if trace_markdown is None else trace_markdown
    stats = result.stats
    summary_lines = []
    if result.partial:
        summary_lines += [partial_note(result), ""]
    if result.kind == "issue" and result.issue_number is not None:
        summary_lines.append(f"Fixes #{result.issue_number}.")
        summary_lines.append("")
    if result.failure_summary.strip():
        summary_lines.append(defuse(result.failure_summary.strip()))
    elif result.kind == "ci":
        summary_lines.append("A CI job failed on this branch; ARCS reproduced the failure and repaired it.")
    if result.failing_run_url:
        job = f" ({_cell(result.failing_job)})" if result.failing_job else ""
        summary_lines.append(f"\nFailing run{job}: {result.failing_run_url}")
    if result.head_sha:
        summary_lines.append(f"Failing commit: {result.head_sha}")
    if result.culprit is not None or result.changes.strip():
        summary_lines.append(change_notes(result))
    if result.target_tests:
        shown = result.target_tests[:20]
        tests = "\n".join(f"- `{t.replace('`', '')}`" for t in shown)
        more = (
            f"\n- … and {len(result.target_tests) - len(shown)} more" if len(result.target_tests) > 20 else ""
        )
        summary_lines.append(f"\nTarget tests:\n{tests}{more}")

    changed = [stats.label()]
    changed.extend(f"- `{path.replace('`', '')}`" for path in stats.files[:50])
    if len(stats.files) > 50:
        changed.append(f"- … and {len(stats.files) - 50} more")

    footer_lines = ["---"]
    links = []
    if dashboard_url:
        links.append(f"[Trace on the ARCS dashboard]({dashboard_url})")
    if result.attempt_url:
        links.append(f"[Attempt {result.attempt_id or ''}]({result.attempt_url})".replace(" ]", "]"))
    if links:
        footer_lines.append(" · ".join(links))
    footer_lines.append(
        "ARCS opened this pull request. Review it like any other change; "
        "comment `/arcs revise <instructions>` to ask for changes."
    )
    footer_lines.append(PR_MARKER)

    def build(root: str, diff: str, trace_text: str) -> str:
        parts = [
            "## Summary",
            "\n".join(summary_lines),
            "## Root cause",
            root or "_No explanation was recorded._",
            "## What changed",
            "\n".join(changed),
        ]
        if diff:
            parts.append(_details("Diff", fenced(diff, "diff")))
        if result.dependency.strip():  # rendered defused and fenced (jobs.render_depupdate)
            parts.append(result.dependency.strip())
        parts += ["## Verification", verification_table(result), "## Cost", cost_table(result), "## Trace"]
        if trace_text:
            parts.append(_details("Repair trace", trace_text))
        else:
            parts.append("_No trace recorded._")
        parts.append("\n".join(footer_lines))
        return "\n\n".join(parts) + "\n"

    root = defuse(result.root_cause.strip())
    diff = result.diff
    trace_text = defuse(trace.strip())
    body = build(root, diff, trace_text)
    # Shrink in order of least value per character: trace, diff, explanation.
    for stage in ("trace", "diff", "root"):
        over = len(body) - BODY_BUDGET
        if over <= 0:
            break
        if stage == "trace" and trace_text:
            keep = len(trace_text) - over - 64
            trace_text = (
                truncate(trace_text, keep, note="\n\n… (trace truncated)")
                if keep >= 200
                else "_The trace is too long for a pull request body; see the dashboard._"
            )
        elif stage == "diff" and diff:
            keep = len(diff) - over - 64
            diff = truncate(diff, keep, note="\n… (diff truncated)\n") if keep >= 200 else ""
        elif stage == "root":
            root = truncate(root, max(0, len(root) - over - 64))
        body = build(root, diff, trace_text)
    if len(body) > BODY_BUDGET:  # pathological summaries: hard cut, keep the marker
        body = truncate(body, BODY_BUDGET - len(PR_MARKER) - 1) + "\n" + PR_MARKER
    return body


# --------------------------------------------------------------------------- check run


def refused_section(result: RepairSummary) -> str:
    """The candidates the patch threat check refused, each line naming the rule (the rules:
    ``jobs/repair/threat_rules.json``); none of them was run or published."""
    shown = [f"- {defuse(_one_line(line, 400))}" for line in result.refused[:20]]
    if len(result.refused) > 20:
        shown.append(f"- … and {len(result.refused) - 20} more")
    return (
        "## Refused by the patch threat check\n\n"
        "ARCS never runs or publishes a patch that adds network, subprocess or environment access, "
        "edits files that run at test or build time, or adds encoded blobs, unless the task asks for "
        "exactly that:\n" + "\n".join(shown)
    )


def check_run_conclusion(result: RepairSummary | None, *, skipped: bool = False) -> str:
    """``success`` when a fix was found, ``skipped`` when ARCS did not try, else ``neutral``.

    Never ``failure``: the commit is already red because of its own CI; ARCS not finding a fix is
    information, not a second failure.
    """
    if skipped:
        return "skipped"
    return "success" if result is not None and result.fixed else "neutral"


def check_run_output(
    status: CheckStatus,
    result: RepairSummary | None = None,
    *,
    reason: str = "",
    pr_url: str = "",
    dashboard_url: str = "",
) -> dict[str, str]:
    """``output`` for the "ARCS" check run (``title``, ``summary``, optional ``text``)."""
    if status == "queued":
        title, summary = "Queued", "ARCS will try to repair this failure."
    elif status == "in_progress":
        title, summary = "Repairing…", "ARCS is reproducing the failure and searching for a fix."
    elif result is not None and result.verdict == "environment":
        why = reason or result.reason or "the tests could not run in the sandbox"
        title = f"Environment: {_one_line(why, 80)}"
        summary = (
            "ARCS could not run the tests, so it repaired nothing (no model was called): "
            f"{defuse(_one_line(why, 2000))}"
        )
    elif result is not None and result.partial:
        title = "Partial fix proposed" if pr_url else "Partial fix (no pull request)"
        why = reason or result.reason
        summary = f"ARCS opened a pull request with a partial fix: {pr_url}\n\n" if pr_url else ""
        summary += partial_note(result)
        if why:
            summary += f"\n\n{defuse(_one_line(why, 2000))}"
        if not pr_url:
            summary += "\n\nNo pull request was opened (`open_pr_on_partial` in `.arcs.yml` asks for one)."
        if notes := change_notes(result):
            summary += f"\n\n{notes}"
    elif result is not None and result.fixed:
        title = "Fix proposed" if pr_url else "Fix found"
        summary = f"ARCS found a fix: {pr_url}" if pr_url else "ARCS found a fix."
        stats = result.stats
        summary += f"\n\n{stats.label()}."
        if notes := change_notes(result):
            summary += f"\n\n{notes}"
    else:
        why = reason or (result.reason if result is not None else "") or "no verified fix"
        title = f"No fix: {_one_line(why, 80)}"
        summary = f"ARCS did not open a pull request: {defuse(_one_line(why, 2000))}"
        if result is not None and (notes := change_notes(result)):
            summary += f"\n\n{notes}"
    if result is not None and result.dependency.strip():
        summary += "\n\n" + result.dependency.strip()
    if result is not None and result.refused:
        summary += "\n\n" + refused_section(result)
    if result is not None and status == "completed":
        summary += "\n\n## Verification\n\n" + verification_table(result)
        summary += "\n\n## Cost\n\n" + cost_table(result)
    if dashboard_url:
        summary += f"\n\n[Trace on the ARCS dashboard]({dashboard_url})"
    output = {
        "title": _one_line(title, MAX_CHECK_TITLE),
        "summary": truncate(summary, MAX_CHECK_TEXT),
    }
    if result is not None and status == "completed":
        text_parts = []
        if result.root_cause.strip():
            text_parts.append("## Root cause\n\n" + defuse(result.root_cause.strip()))
        if result.trace_markdown.strip():
            text_parts.append("## Trace\n\n" + defuse(result.trace_markdown.strip()))
        if text_parts:
            output["text"] = truncate("\n\n".join(text_parts), MAX_CHECK_TEXT)
    return output


# --------------------------------------------------------------------------- comments


def status_marker(attempt_id: str | int) -> str:
    """The hidden marker that identifies the status comment of one attempt."""
    value = re.sub(r"[^A-Za-z0-9._:/-]", "-", str(attempt_id)) or "-"
    return _STATUS_MARKER.format(attempt=value)


def find_status_marker(body: str) -> str | None:
    """The attempt id of the status marker in ``body`` (None when there is none)."""
    match = STATUS_MARKER_RE.search(body)
    return match.group(1) if match else None


_STATUS_TEXT: dict[str, str] = {
    "queued": "👀 ARCS queued a repair.",
    "working": "⏳ ARCS is working on a fix: reproducing the failure, then searching for a change.",
    "pr_opened": "✅ ARCS opened a pull request with a fix",
    "pr_updated": "✅ ARCS updated its pull request with a new fix",
    "no_fix": "❌ ARCS did not find a fix",
    "partial": "🟡 ARCS found only a partial fix (the targets pass; the test command still fails on tests that "
    "failed at the last green commit too)",
    "environment": "⚙️ ARCS could not run the tests here",
    "skipped": "➖ ARCS skipped this",
    "error": "⚠️ ARCS failed while working on this",
}


def status_comment(
    state: StatusState,
    *,
    attempt_id: str | int,
    reason: str = "",
    pr_url: str = "",
    attempt_url: str = "",
) -> str:
    """The single status comment of an attempt, edited in place as the attempt progresses."""
    line = _STATUS_TEXT[state]
    if state in ("pr_opened", "pr_updated"):
        line += f": {pr_url}" if pr_url else "."
    elif state in ("no_fix", "partial", "environment", "skipped", "error"):
        line += f": {defuse(_one_line(reason, 500))}" if reason.strip() else "."
    parts = [line]
    if attempt_url:
        parts.append(f"[Attempt {attempt_id} on the dashboard]({attempt_url})")
    parts.append(status_marker(attempt_id))
    return "\n\n".join(parts)


MAX_BUDGET_USD = Decimal(1000)
"""A sanity bound on one ``/arcs`` request (``budget=``); the owner's policy caps it further."""
MAX_ITERATIONS = 100
"""The most ``iterations=`` one ``/arcs`` request may ask for."""

HELP_TEXT = f"""ARCS commands (one per comment, on a line of its own):

- `/arcs fix [tier=…] [budget=…] [iterations=N]`: repair this failure or issue.
  `tier` is `0` (templates only, no model), `small`, `medium`, `large` or `auto` (default);
  `budget` is a spending cap in US dollars (`budget=0.50`, `budget=$2`);
  `iterations` caps the number of repair iterations.
- `/arcs retry [options]`: run the last repair again (options as for fix).
- `/arcs stop`: stop the repair running here.
- `/arcs apply`: open a pull request with the partial fix ARCS found here but did not publish.
- `/arcs revise <instructions>`: on an ARCS pull request, run the loop again on its branch with
  your instructions as review feedback.
- `/arcs help`: this message.

Only people with write, maintain or admin permission on the repository can run commands.
Maximum budget per request: ${MAX_BUDGET_USD}; maximum iterations: {MAX_ITERATIONS}."""
"""The answer to ``/arcs help`` (the command parser, :mod:`bot.commands`, enforces the limits)."""


def help_comment() -> str:
    """The answer to ``/arcs help``."""
    return HELP_TEXT


_REFUSALS: dict[str, str] = {
    "permission": "ARCS only takes commands from people with write, maintain or admin permission on this repository.",
    "rate_limit": "ARCS has reached this repository's limit of pull requests per day (`max_prs_per_day` in `.arcs.yml`).",
    "open_prs": "ARCS already has the maximum number of open pull requests here (`max_open_prs` in `.arcs.yml`).",
    "disabled": "This trigger is turned off in this repository's `.arcs.yml` (`triggers`).",
    "unrepairable": "ARCS does not repair this kind of failure: the code is not what is broken.",
    "busy": "ARCS is already working on this; its status comment will say when it is done.",
    "fork": "ARCS does not push to or run code from forks.",
}


def refusal_comment(kind: RefusalKind, detail: str = "") -> str:
    """Why ARCS will not do what was asked (one short paragraph; ``detail`` is untrusted)."""
    text = _REFUSALS[kind]
    if detail.strip():
        text += f"\n\n{defuse(_one_line(detail, 1000))}"
    return text


def config_error_comment(error: BaseException | str) -> str:
    """The message for a malformed ``.arcs.yml``: the error names the key; defaults are not used
    silently for a file the user believes is in effect."""
    message = error if isinstance(error, str) else getattr(error, "message", str(error))
    key = getattr(error, "key", None)
    lines = [
        "⚠️ ARCS could not read this repository's `.arcs.yml`:",
        "",
        fenced(_one_line(str(message), 1000)),
    ]
    if key:
        lines += [
            "",
            f"Fix the `{key}` key on the default branch and ARCS will pick it up on the next event.",
        ]
    else:
        lines += ["", "Fix the file on the default branch and ARCS will pick it up on the next event."]
    return "\n".join(lines)


def unrepairable_summary(failure_class: str, reason: str, *, job: str = "") -> str:
    """The note ARCS leaves (when ``notify_unrepairable`` is on) for a failure it will not repair."""
    where = f" in job {_cell(job)}" if job else ""
    return (
        f"ARCS looked at this failure{where} and did not try to repair it: it is a `{failure_class}` "
        f"failure. {defuse(_one_line(reason, 500))}"
    )
