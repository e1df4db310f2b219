"""The ``on_no_fix: revert`` pull request as pure values: its branch, title, commit message and
body, and the rule that keeps it off anybody's pull-request branch.

When no forward fix passes the gates on the default branch and the commit that turned CI red is
known, the worker reverts it and runs the exact test command on the reverted tree
(:class:`jobs.repair.report.RevertResult`); :mod:`jobs.publish` pushes that revert to
``arcs/revert/<sha7>`` and opens (or updates) its pull request through the same gateway call as a
fix, so ``draft``, ``pr_labels`` and the one-pull-request-per-branch rule apply unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.branches import branch_name
from jobs.render import BODY_BUDGET, MAX_TITLE_CHARS, PR_MARKER
from jobs.render_change import changes_line, culprit_line
from jobs.render_text import defuse, fenced, one_line, truncate
from jobs.summary import diff_stats

if TYPE_CHECKING:
    from jobs.repair.report import Culprit, RevertResult
    from jobs.summary import RepairSummary

__all__ = [
    "revert_body",
    "revert_branch",
    "revert_commit_message",
    "revert_refusal",
    "revert_title",
]


def revert_branch(sha: str) -> str:
    """``arcs/revert/<first 7 hex digits>``: one branch, so one pull request, per reverted commit."""
    return branch_name("revert", sha[:7])


def _culprit_of(revert: RevertResult, culprit: Culprit | None) -> Culprit | None:
    return culprit if culprit is not None and culprit.sha == revert.sha else None


def revert_title(revert: RevertResult, culprit: Culprit | None) -> str:
    """``Revert "<culprit title>"`` (git's wording), or ``Revert abc1234`` without a title."""
    known = _culprit_of(revert, culprit)
    title = one_line(known.title, MAX_TITLE_CHARS - 10) if known is not None else ""
    return f'Revert "{title}"' if title else f"Revert {revert.sha[:7]}"


def revert_commit_message(revert: RevertResult, culprit: Culprit | None, *, attempt_id: int | str) -> str:
    """The commit message, as ``git revert`` writes it plus why ARCS made it."""
    return (
        f"{revert_title(revert, culprit)}\n\n"
        f"This reverts commit {revert.sha}.\n\n"
        f"No forward fix passed ARCS' gates (attempt #{attempt_id}); the exact test command passes "
        "with this revert (.arcs.yml on_no_fix: revert).\n"
    )


def revert_refusal(
    revert: RevertResult,
    *,
    trigger: str,
    head_branch: str | None,
    base_branch: str | None,
    pull_request: int | None,
    default_branch: str,
) -> str | None:
    """Why this revert must not be published (None: it may).

    Only for a CI failure on the default branch itself, never a pull request's branch (``pull_request``:
    the pull request the failing run belongs to), and only a revert the exact test command passed on.
    """
    if trigger != "ci":
        return f"a revert is opened only for a CI failure, not for a `{trigger}` request"
    if pull_request is not None:
        return f"the failure is on pull request #{pull_request}; ARCS never reverts commits on a pull request's branch"
    if head_branch is None or head_branch != default_branch:
        return f"`{head_branch or '?'}` is not the default branch `{default_branch}`"
    if base_branch is not None and base_branch != head_branch:
        return f"the attempt targets `{base_branch}`, not the failing branch `{head_branch}`"
    if not revert.files:
        return "the revert changes no file"
    check = revert.verification
    if check is None or check.exit_code != 0 or check.timed_out:
        got = "no run" if check is None else f"exit {'?' if check.exit_code is None else check.exit_code}"
        return f"the revert was not verified by the exact test command ({got})"
    return None


def revert_body(summary: RepairSummary, revert: RevertResult, *, base: str) -> str:
    """The pull request body: why, the culprit, the verification (exact command, exit 0), the patch.

    ``summary`` is the attempt's (:func:`jobs.report_summary.attempt_summary`); the patch is cut
    first when the body would not fit GitHub's limit.
    """
    culprit = _culprit_of(revert, summary.culprit)
    why = defuse(one_line(summary.reason, 500)) if summary.reason.strip() else "no verified fix"
    context = [
        f"ARCS found no forward fix for the CI failure on `{base}` that passes every gate ({why}). "
        "This repository's `.arcs.yml` asks for a revert in that case (`on_no_fix: revert`), so this "
        "pull request undoes the commit that introduced the failure."
    ]
    if summary.failing_run_url:
        context.append(f"Failing run: {summary.failing_run_url}")
    if summary.head_sha:
        context.append(f"Failing commit: {summary.head_sha}")
    if summary.target_tests:
        tests = "\n".join(f"- `{t.replace('`', '')}`" for t in summary.target_tests[:20])
        more = f"\n- … and {len(summary.target_tests) - 20} more" if len(summary.target_tests) > 20 else ""
        context.append(f"Failing tests:\n{tests}{more}")

    found = [culprit_line(culprit) if culprit is not None else f"Reverted commit: {revert.sha}."]
    if culprit is not None:
        found.append(f"Reverted commit: {revert.sha}.")
    if summary.changes.strip():
        found.append(changes_line(summary.changes))

    check = revert.verification
    if check is not None:
        counts = f"{check.passed} passed, {check.failed} failed" + (
            f", {check.errors} errors" if check.errors else ""
        )
        verified = (
            "The exact test command ran on the reverted tree in a fresh sandbox copy:\n\n"
            f"{fenced(check.command, 'sh')}\n\n"
            f"Exit code {check.exit_code} in {check.duration_s:.1f}s ({counts})."
        )
    else:
        verified = "_No verification run was recorded._"

    stats = diff_stats(revert.patch)
    changed = [stats.label()] + [f"- `{p.replace('`', '')}`" for p in stats.files[:50]]
    footer = (
        "---\nARCS opened this pull request. Merge it to make the branch green again, then re-land the "
        "change with a fix.\n" + PR_MARKER
    )

    def build(patch: str) -> str:
        parts = [
            "## Why",
            "\n\n".join(context),
            "## Culprit",
            "\n".join(found),
            "## Verification",
            verified,
            "## Patch",
            "\n".join(changed),
        ]
        if patch:
            parts.append(f"<details>\n<summary>Diff</summary>\n\n{fenced(patch, 'diff')}\n\n</details>")
        parts.append(footer)
        return "\n\n".join(parts) + "\n"

    body = build(revert.patch)
    over = len(body) - BODY_BUDGET
    if over > 0:
        keep = len(revert.patch) - over - 64
        body = build(truncate(revert.patch, keep, note="\n… (diff truncated)\n") if keep >= 200 else "")
    if len(body) > BODY_BUDGET:
        body = truncate(body, BODY_BUDGET - len(PR_MARKER) - 1) + "\n" + PR_MARKER
    return body
