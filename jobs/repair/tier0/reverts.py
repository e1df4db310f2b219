"""Tier 0: candidates that undo one hunk, or one commit, of the change since the last green run.

Pure. The commonest human fix of a red build is to undo part of the last change. From a
:class:`~jobs.repair.changes.ChangeSet` this makes one candidate per hunk of the cumulative diff
and one per commit, ranked by how well they touch the failing frames (the failure's file/line, its
stack), so that the loop verifies the likeliest ones first; each is verified like any candidate.

Edits are ``replace`` edits of the hunk's head-side text (context included, so it is unique) by its
base-side text; a commit is undone by reversing each of its hunks on the head tree. A hunk that a
later commit rewrote no longer matches, and that candidate fails its preview (like a revert
conflict) instead of doing something else.

A candidate that only undoes a detected dependency bump (its manifest/lock lines) is not offered:
it would pass (the old versions were green) and make the update pointless (issue #27).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from indexing.languages import is_test_path
from jobs.repair.changes import ChangeSet, CommitInfo, head_range, side_text
from jobs.repair.depupdate.detect import bumps_in
from jobs.repair.depupdate.keep import reverts_only_bump
from jobs.repair.diffing import FilePatch, Hunk
from jobs.repair.model import Edit, Failure, Proposal
from jobs.repair.tier0.anchor import anchored_undo, replace_pair

PROPOSER = "revert"
NEAR_LINES = 5
"""A frame this close to a hunk counts as touching it (stack lines point at calls, not at the change)."""

Kind = Literal["hunk", "commit"]
RevertTree = Callable[[str], Mapping[str, str | None] | None]
"""A commit -> the files its three-way revert on the head tree changes (None: deleted), or None."""


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
    tier: int = 2
    """0: the culprit commit's revert, 1: its own hunks, 2: the others (ranked by ``score``)."""


def revert_candidates(
    changes: ChangeSet,
    failures: Sequence[Failure],
    *,
    read: Callable[[str], str | None],
    limit: int = 8,
    culprit: str = "",
    fallback: RevertTree | None = None,
    keep_bumps: bool = True,
) -> list[RevertCandidate]:
    """Up to ``limit`` revert candidates, best first. ``read`` gives a head-tree file's text
    (None when absent); candidates whose edits would not apply to it are left out.

    ``culprit``: the commit a bisection named. Without one, the newest commit whose own added
    lines sit at a failing frame (:func:`frame_culprit`) is taken as the likely culprit. Either
    way its revert comes first, then its own hunks (reversed onto the head tree) one by one; with
    a bisected culprit those replace the cumulative hunks of files that other commits touched too
    (such a hunk mixes the culprit's lines with theirs). When the culprit's hunks no longer apply
    even anchored on their changed lines, ``fallback`` (a three-way revert of a commit on the head
    tree, by the application) gives its revert.

    ``keep_bumps``: leave out candidates that only undo a dependency bump of the change
    (:func:`~jobs.repair.depupdate.keep.reverts_only_bump`)."""
    sites = list(_sites(failures))
    certain = bool(culprit) and changes.commit(culprit) is not None
    if not certain:
        culprit = frame_culprit(changes, failures, read)
    suspect = changes.commit(culprit) if culprit else None
    out: list[RevertCandidate] = []
    shared: set[str] = set()
    if suspect is not None:
        out += _culprit_candidates(changes, suspect, sites, read, fallback)
        if certain:
            others = {p for c in changes.commits if c.sha != suspect.sha for p in c.paths}
            shared = {p for p in suspect.paths if p in others}
    for f in changes.files:
        if f.path in shared:
            continue
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
    for age, c in enumerate(reversed(changes.commits)):
        if suspect is not None and c.sha == suspect.sha:
            continue
        edits = _reverse_commit(c, read)
        if not edits:
            continue
        label = f"commit {c.describe()}"
        ranges = [(p.path, head_range(h)) for p in c.files for h in p.hunks]
        score = max((_score(sites, path, [r]) for path, r in ranges), default=0.0)
        proposal = _proposal(edits, f"Revert {label}", label)
        out.append(RevertCandidate("commit", label, score, proposal, c.sha, order=age))
    # The culprit's first; then best first; on a tie a hunk (the smaller change) before a commit,
    # the newer commit first. The same edits are offered once (a one-hunk commit is its hunk).
    out.sort(key=lambda c: (c.tier, -c.score, c.kind != "hunk", c.order))
    seen: set[tuple[Edit, ...]] = set()
    unique: list[RevertCandidate] = []
    bumps = bumps_in(changes, read) if keep_bumps else []
    for cand in out:
        if bumps and reverts_only_bump(cand.proposal.edits, bumps, read):
            continue
        if cand.proposal.edits not in seen and _changes_something(cand.proposal.edits):
            seen.add(cand.proposal.edits)
            unique.append(cand)
    return unique[:limit]


def frame_culprit(changes: ChangeSet, failures: Sequence[Failure], read: Callable[[str], str | None]) -> str:
    """The newest commit whose own added lines are, in the head tree, within :data:`NEAR_LINES`
    of a line a failure points at ('' when none is). Line numbers of a commit's patch are those
    of its own tree, so the match is by text: the head file's lines around the failing line
    against the commit's added lines."""
    near: dict[str, set[str]] = {}
    for path, line, _weight in _sites(failures):
        rel = next((p for p in changes.paths if _same_file(path, p)), None)
        if rel is None or is_test_path(rel):
            continue  # a test's own line is where it noticed the failure, not what caused it
        text = read(rel)
        if text is None:
            continue
        lines = text.split("\n")
        lo, hi = max(0, line - 1 - NEAR_LINES), min(len(lines), line + NEAR_LINES)
        near.setdefault(rel, set()).update(_norm(ln) for ln in lines[lo:hi] if ln.strip())
    for c in reversed(changes.commits):
        for p in c.files:
            wanted = near.get(p.path)
            if wanted and any(_norm(ln.text) in wanted for ln in p.lines("+") if ln.text.strip()):
                return c.sha
    return ""


def _culprit_candidates(
    changes: ChangeSet,
    c: CommitInfo,
    sites: Sequence[tuple[str, int, float]],
    read: Callable[[str], str | None],
    fallback: RevertTree | None = None,
) -> list[RevertCandidate]:
    """The culprit commit's revert, then each of its own hunks undone on the head tree."""
    out: list[RevertCandidate] = []
    edits = _reverse_commit(c, read)
    if not edits and fallback is not None:
        edits = _edits_to(fallback(c.sha), read)
    if edits:
        label = f"commit {c.describe()}"
        ranges = [(p.path, head_range(h)) for p in c.files for h in p.hunks]
        score = max((_score(sites, path, [r]) for path, r in ranges), default=0.0)
        proposal = _proposal(edits, f"Revert {label}, the likely culprit", label)
        out.append(RevertCandidate("commit", label, score, proposal, c.sha, tier=0))
    hunks = [(p, h) for p in c.files for h in p.hunks]
    if len(hunks) < 2:
        return out  # its one hunk is the commit's revert
    for p, h in hunks:
        part = _reverse_hunks(p, [h], read)
        if part is None:
            continue
        first, last = head_range(h)
        label = f"hunk {p.path}:{first}-{last} of {c.short}"
        explanation = f"Undo {label}, {changes.introduced_by(c.sha) or 'the likely culprit'}"
        proposal = _proposal(part, explanation, label)
        score = _score(sites, p.path, [(first, last)])
        out.append(RevertCandidate("hunk", label, score, proposal, c.sha, order=len(out), tier=1))
    return out


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


def _norm(line: str) -> str:
    return "".join(line.split())


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


def _edits_to(files: Mapping[str, str | None] | None, read: Callable[[str], str | None]) -> list[Edit] | None:
    """Edits that give the head tree the texts of ``files`` (None: delete the file)."""
    if not files:
        return None
    edits: list[Edit] = []
    for path, text in sorted(files.items()):
        current = read(path)
        if text is None:
            if current is not None:
                edits.append(Edit(path=path, kind="delete_file"))
        elif current is None:
            edits.append(Edit(path=path, kind="create", new=text))
        else:
            pair = replace_pair(current, text)
            if pair is None:
                if current != text:
                    return None
                continue
            edits.append(Edit(path=path, kind="replace", old=pair[0], new=pair[1]))
    return edits or None


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
        if new_side and current.count(new_side) == 1:
            pairs = [(new_side, old_side)]
        else:  # the context changed since (a later commit): anchor on the changed lines themselves
            anchored = anchored_undo(h, current)
            if anchored is None:
                return None  # nothing unique to anchor the undo on
            pairs = anchored
        for old, new in pairs:
            edits.append(Edit(path=p.path, kind="replace", old=old, new=new))
            current = current.replace(old, new, 1)
    return edits


def undo_change(changes: ChangeSet, read: Callable[[str], str | None]) -> list[Edit] | None:
    """Edits that turn the head tree back into the last green commit's tree (the whole change
    ``base..head`` undone), or None when that cannot be rebuilt from the diff (it was cut short, a
    binary file, a rename, a hunk that no longer applies)."""
    if changes.truncated or not changes.files:
        return None
    edits: list[Edit] = []
    for f in changes.files:
        part = _reverse_hunks(f, list(f.hunks), read)
        if part is None:
            return None
        edits += part
    return edits or None


def _proposal(edits: Sequence[Edit], explanation: str, label: str) -> Proposal:
    return Proposal(edits=tuple(edits), explanation=explanation, proposer=PROPOSER, variant=label)


def _changes_something(edits: Sequence[Edit]) -> bool:
    """False when every edit is a replace whose texts differ in line endings only (a hunk that
    converted CRLF: undoing it through an edit changes nothing)."""
    return any(e.kind != "replace" or e.old.replace("\r", "") != e.new.replace("\r", "") for e in edits)


__all__ = ["PROPOSER", "RevertCandidate", "RevertTree", "frame_culprit", "revert_candidates", "undo_change"]
