"""Tier 0: candidates that undo one hunk, or one commit, of the change since the last green run.

Pure. The commonest human fix of a red build is to undo part of the last change. From a
:class:`~jobs.repair.changes.ChangeSet` this makes one candidate per hunk of the cumulative diff
and one per commit, ranked by how well they touch the failing frames (the failure's file/line, its
stack), so that the loop verifies the likeliest ones first; each is verified like any candidate.

Edits are ``replace`` edits of the hunk's head-side text (context included, so it is unique) by its
base-side text; a commit is undone by reversing each of its hunks on the head tree. A hunk that a
later commit rewrote no longer matches, and that candidate fails its preview (like a revert
conflict) instead of doing something else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from jobs.repair.changes import ChangeSet, CommitInfo, head_range, side_text
from jobs.repair.diffing import FilePatch, Hunk
from jobs.repair.model import Edit, Failure, Proposal

PROPOSER = "revert"
NEAR_LINES = 5
"""A frame this close to a hunk counts as touching it (stack lines point at calls, not at the change)."""

Kind = Literal["hunk", "commit"]


@dataclass(frozen=True, slots=True)
class RevertCandidate:
    """One revert with its rank score and the proposal the loop runs."""

    kind: Kind
    label: str
    """``hunk src/a.py:10-14`` or ``commit abc1234 (title, author)``."""
    score: float
    proposal: Proposal
    sha: str = ""
    """The commit reverted (``commit``), or the one that introduced the hunk (``hunk``; '' when unknown)."""
    order: int = 0
    """Tie-break: hunks in diff order, commits newest first."""


def revert_candidates(
    changes: ChangeSet,
    failures: Sequence[Failure],
    *,
    read: Callable[[str], str | None],
    limit: int = 8,
) -> list[RevertCandidate]:
    """Up to ``limit`` revert candidates, best first. ``read`` gives a head-tree file's text
    (None when absent); candidates whose edits would not apply to it are left out."""
    sites = list(_sites(failures))
    out: list[RevertCandidate] = []
    for f in changes.files:
        for hunk in f.hunks:
            edits = _reverse_hunks(f, [hunk], read)
            if edits is None:
                continue
            first, last = head_range(hunk)
            label = f"hunk {f.path}:{first}-{last}"
            score = _score(sites, f.path, [(first, last)])
            sha = _introducing(changes.commits, f.path, hunk)
            named = changes.introduced_by(sha) if sha else ""
            explanation = f"Undo {label} of the change since the last green commit {changes.base[:7]}" + (
                f", {named}" if named else ""
            )
            proposal = _proposal(edits, explanation, label)
            out.append(RevertCandidate("hunk", label, score, proposal, sha, order=len(out)))
    seen = {c.proposal.edits for c in out}
    for age, c in enumerate(reversed(changes.commits)):
        edits = _reverse_commit(c, read)
        if not edits or tuple(edits) in seen:
            continue  # a one-hunk commit is already its hunk's candidate
        label = f"commit {c.describe()}"
        ranges = [(p.path, head_range(h)) for p in c.files for h in p.hunks]
        score = max((_score(sites, path, [r]) for path, r in ranges), default=0.0)
        proposal = _proposal(edits, f"Revert {label}", label)
        out.append(RevertCandidate("commit", label, score, proposal, c.sha, order=age))
    # Best first; on a tie a hunk (the smaller change) before a commit, the newer commit first.
    out.sort(key=lambda c: (-c.score, c.kind != "hunk", c.order))
    return out[:limit]


def _sites(failures: Iterable[Failure]) -> Iterable[tuple[str, int, float]]:
    """(path, line, weight) of every place a failure points at; the innermost frame weighs most."""
    for f in failures:
        if f.path and f.line:
            yield f.path, f.line, 1.0
        frames = list(f.frames)
        for depth, fr in enumerate(reversed(frames)):
            if fr.path and fr.line:
                yield fr.path, fr.line, 1.0 / (1 + depth)


def _score(sites: Sequence[tuple[str, int, float]], path: str, ranges: Sequence[tuple[int, int]]) -> float:
    score = 0.0
    for site_path, line, weight in sites:
        if not _same_file(site_path, path):
            continue
        if any(a <= line <= b for a, b in ranges):
            score += 3 * weight
        elif any(a - NEAR_LINES <= line <= b + NEAR_LINES for a, b in ranges):
            score += 2 * weight
        else:
            score += weight
    return round(score, 4)


def _same_file(a: str, b: str) -> bool:
    a, b = a.removeprefix("./"), b.removeprefix("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _introducing(commits: Sequence[CommitInfo], path: str, hunk: Hunk) -> str:
    """The newest commit whose own patch adds (or, for a pure deletion, removes) one of the hunk's
    changed lines; else the newest commit that touched the file; '' when none did."""
    for kind in ("+", "-"):
        wanted = {ln.text for ln in hunk.lines if ln.kind == kind and ln.text.strip()}
        if not wanted:
            continue
        for c in reversed(commits):
            for p in c.files:
                if p.path == path and wanted & {ln.text for ln in p.lines(kind)}:
                    return c.sha
    return next((c.sha for c in reversed(commits) if path in c.paths), "")


def _reverse_commit(c: CommitInfo, read: Callable[[str], str | None]) -> list[Edit] | None:
    edits: list[Edit] = []
    for p in c.files:
        if p.binary:
            return None
        part = _reverse_hunks(p, list(p.hunks), read)
        if part is None:
            return None
        edits += part
    return edits


def _reverse_hunks(
    p: FilePatch, hunks: Sequence[Hunk], read: Callable[[str], str | None]
) -> list[Edit] | None:
    """Edits that undo ``hunks`` of ``p`` on the head tree, or None when they cannot apply there."""
    if p.binary:
        return None
    status = p.status
    if status == "added":
        return [Edit(path=p.path, kind="delete_file")] if read(p.path) is not None else None
    if status == "deleted":
        old_path = p.old_path or p.path
        if read(old_path) is not None:
            return None
        text = "\n".join(line for h in p.hunks for line in side_text(h.lines, "old"))
        return [Edit(path=old_path, kind="create", new=text + "\n" if text else "")]
    if status == "renamed":
        return None  # undoing a rename moves a file: a reviewer's call, not a tier-0 candidate
    current = read(p.path)
    if current is None:
        return None
    edits: list[Edit] = []
    for h in hunks:
        new_side = "\n".join(side_text(h.lines, "new"))
        old_side = "\n".join(side_text(h.lines, "old"))
        if not new_side or current.count(new_side) != 1:
            return None  # nothing unique to anchor the undo on
        edits.append(Edit(path=p.path, kind="replace", old=new_side, new=old_side))
        current = current.replace(new_side, old_side, 1)
    return edits


def _proposal(edits: Sequence[Edit], explanation: str, label: str) -> Proposal:
    return Proposal(edits=tuple(edits), explanation=explanation, proposer=PROPOSER, variant=label)


__all__ = ["PROPOSER", "RevertCandidate", "revert_candidates"]
