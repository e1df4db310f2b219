"""What the attempt page shows of the change since the last green run (issue #14).

Two sources, both read tolerantly: the full trace's ``repo["changes"]`` record
(:class:`jobs.repair.trace_parts.ChangeDoc`: the range, its commits, the bisection's probes) and
the result stored with the attempt (:class:`jobs.repair.report.RepairReport`: the one-line range,
the culprit, the verified revert, why no revert was offered, ``on_no_fix``). The revert pull
request is the attempt's pull request when its branch is ``arcs/revert/…``. This module only
arranges them; the page escapes every text (commit titles and authors are untrusted).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.dashboard.queries import REVERT_BRANCH_PREFIX, PullRequestRow
from jobs.repair.report import RepairReport
from jobs.repair.trace_parts import BisectDoc, ChangeDoc, CommitDoc, CulpritDoc


@dataclass(frozen=True, slots=True)
class CommitRow:
    """One commit of the range as listed: the commit, its bisection probe, whether it is the culprit."""

    commit: CommitDoc
    probe: str = ""
    """``pass``/``fail``/``flaky``/``skip`` when the bisection tested it, else ''."""
    culprit: bool = False


@dataclass(frozen=True, slots=True)
class ChangeView:
    """The "Change since last green" section of the attempt page."""

    line: str = ""
    """``abc1234..def5678, 3 commits, 4 files`` ('' when the range is not known)."""
    source: str = ""
    commits: tuple[CommitRow, ...] = ()
    files: tuple[str, ...] = ()
    culprit: CulpritDoc | None = None
    bisect: BisectDoc | None = None
    on_no_fix: str = ""
    revert_sha: str = ""
    """The commit the run reverted (its revert passed the final verification), '' when none."""
    revert_verification: str = ""
    revert_skipped: str = ""
    revert_pr: PullRequestRow | None = None

    @property
    def culprit_how(self) -> str:
        """How the culprit was named, in words."""
        c = self.culprit
        if c is None:
            return ""
        if c.found_by == "bisect":
            return f"bisected in {c.runs} test run{'s' if c.runs != 1 else ''}"
        if c.found_by == "single_commit":
            return "the only commit since the last green run"
        return c.found_by

    @property
    def shows_revert(self) -> bool:
        """The page has something to say about a revert."""
        return bool(self.revert_pr or self.revert_sha or self.revert_skipped or self.on_no_fix == "revert")


def _culprit(doc: ChangeDoc | None, report: RepairReport | None) -> CulpritDoc | None:
    if doc is not None and doc.culprit is not None:
        return doc.culprit
    c = report.culprit if report is not None else None
    return None if c is None else CulpritDoc(c.sha, c.title, c.author, c.found_by, c.runs)


def change_view(
    doc: ChangeDoc | None, report: RepairReport | None, pr: PullRequestRow | None = None
) -> ChangeView | None:
    """The section's content, or None when the attempt recorded no change, culprit or revert."""
    culprit = _culprit(doc, report)
    revert_pr = pr if pr is not None and pr.branch.startswith(REVERT_BRANCH_PREFIX) else None
    revert = report.revert if report is not None else None
    revert_sha = revert.sha if revert is not None else ""
    if not revert_sha and doc is not None and doc.revert is not None and doc.revert.passed:
        revert_sha = doc.revert.sha
    rows: tuple[CommitRow, ...] = ()
    if doc is not None:
        probes = dict(doc.bisect.probes) if doc.bisect is not None else {}
        rows = tuple(
            CommitRow(c, probes.get(c.sha, ""), culprit is not None and c.sha == culprit.sha)
            for c in doc.commits
        )
    view = ChangeView(
        line=(report.changes if report is not None else "") or (doc.line if doc is not None else ""),
        source=doc.source if doc is not None else "",
        files=doc.files if doc is not None else (),
        culprit=culprit,
        bisect=doc.bisect if doc is not None else None,
        on_no_fix=report.on_no_fix if report is not None else "",
        revert_sha=revert_sha,
        revert_verification=(
            revert.verification.line() if revert is not None and revert.verification is not None else ""
        ),
        revert_skipped=report.revert_skipped if report is not None else "",
        revert_pr=revert_pr,
        commits=rows,
    )
    if not (view.line or view.culprit or view.shows_revert):
        return None
    return view


__all__ = ["ChangeView", "CommitRow", "change_view"]
