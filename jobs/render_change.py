"""The change signal in ARCS' GitHub messages (pure): the commit that turned CI red, the range
since the last green run, and what became of the ``on_no_fix: revert`` fallback.

:func:`change_notes` is what the pull request body and the check run carry
(:mod:`jobs.render`); the values come from :class:`jobs.summary.RepairSummary`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobs.render_text import defuse
from jobs.render_text import one_line as _one_line

if TYPE_CHECKING:
    from jobs.repair.report import Culprit
    from jobs.summary import RepairSummary

__all__ = ["change_notes", "changes_line", "culprit_line"]


def culprit_line(culprit: Culprit) -> str:
    """``Introduced by abc1234 — <title> (<author>), found by bisect in 3 runs.`` (title and
    author are untrusted: defused)."""
    what = culprit.short
    title = _one_line(culprit.title, 200)
    if title:
        what += f" — {title}"
    author = _one_line(culprit.author, 100)
    if author:
        what += f" ({author})"
    if culprit.found_by == "bisect":
        runs = culprit.runs
        how = f"found by bisect in {runs} run{'s' if runs != 1 else ''}"
        if culprit.probability is not None:  # a flake-aware bisection (#26)
            how = f"found by a flake-aware bisect in {runs} run{'s' if runs != 1 else ''} (probability {culprit.probability:.0%})"
    else:
        how = "the only commit since the last green run"
    return defuse(f"Introduced by {what}, {how}.")


def changes_line(changes: str) -> str:
    """``Changes since the last green run: abc1234..def5678, 3 commits, 4 files.``"""
    text = _one_line(changes, 300).rstrip(".")
    return defuse(f"Changes since the last green run: {text}.") if text else ""


def _revert_note(result: RepairSummary) -> str:
    """What became of the revert fallback, for a repair without a (full) fix and a culprit."""
    if result.culprit is None or result.fixed:
        return ""
    short = result.culprit.short
    if result.revert_sha:
        return (
            f"No forward fix passed the gates; the test command passes with {short} reverted, so ARCS "
            "opens a pull request that reverts it (`on_no_fix: revert` in `.arcs.yml`)."
        )
    if result.on_no_fix == "revert":
        why = result.revert_skipped.strip() or (
            "a revert is opened only on the default branch, when the exact test command passes with it"
        )
        return f"No revert pull request was opened: {defuse(_one_line(why, 500))}."
    return (
        f"A revert of {short} can be opened automatically when no forward fix passes: set "
        "`on_no_fix: revert` in `.arcs.yml` (default branch only, verified by the same final run)."
    )


def change_notes(result: RepairSummary) -> str:
    """The change signal in Markdown: the culprit, the range since the last green run and, with
    no fix, what became of the revert fallback ('' when nothing is known)."""
    lines = []
    if result.culprit is not None:
        lines.append(culprit_line(result.culprit))
    if result.changes.strip():
        lines.append(changes_line(result.changes))
    note = _revert_note(result)
    if note:
        lines.append(note)
    return "\n".join(lines)
