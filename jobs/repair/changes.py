"""What changed between the last green commit and the red one: a pure value for the repair core.

:class:`ChangeSet` holds the base and head commits, the commits in between (oldest first, with
title and author, and each commit's own patch), and the cumulative diff per file with its hunks.
It is built from git's text output by :func:`changeset_from_git` (pure parsing); the git calls
live in the adapter :mod:`jobs.history`. The core uses it for revert candidates
(:mod:`jobs.repair.tier0.reverts`), for culprit bisection (:mod:`jobs.repair.bisect`) and for the
"introduced by" line of a report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobs.repair.diffing import FilePatch, Hunk, HunkLine, parse_patch

FIELD = "\x1f"
"""Separates the fields of one commit in :data:`LOG_FORMAT`."""
RECORD = "\x1e"
"""Ends one commit in :data:`LOG_FORMAT`."""
LOG_FORMAT = f"%H{FIELD}%an{FIELD}%ae{FIELD}%s{RECORD}"
"""The ``git log --format`` whose output :func:`parse_log` reads."""


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """One commit between green and red, with its own patch (against its first parent)."""

    sha: str
    title: str
    author: str
    email: str = ""
    files: tuple[FilePatch, ...] = ()

    @property
    def short(self) -> str:
        """The first 7 hex digits."""
        return self.sha[:7]

    @property
    def paths(self) -> tuple[str, ...]:
        """The files the commit touched."""
        return tuple(f.path for f in self.files)

    def describe(self) -> str:
        """``abc1234 (title, author)``."""
        return f"{self.short} ({self.title}, {self.author})"


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """The change from ``base`` (last green) to ``head`` (red)."""

    base: str
    head: str
    commits: tuple[CommitInfo, ...] = ()
    """Oldest first; empty when only the two trees are known (a local diff)."""
    files: tuple[FilePatch, ...] = ()
    """The cumulative diff ``base..head``, one entry per file."""
    truncated: bool = False
    """True when the reader dropped commits or diff text to stay within its bounds."""

    @property
    def paths(self) -> tuple[str, ...]:
        """Changed paths (after the change), sorted as git lists them."""
        return tuple(f.path for f in self.files)

    def file(self, path: str) -> FilePatch | None:
        """The cumulative patch of ``path``, or None when it did not change."""
        for f in self.files:
            if f.path == path or f.old_path == path:
                return f
        return None

    def changed_lines(self, path: str) -> tuple[tuple[int, int], ...]:
        """Head-side line ranges ``(first, last)`` (1-based, inclusive) of the hunks of ``path``."""
        f = self.file(path)
        if f is None:
            return ()
        return tuple(head_range(h) for h in f.hunks)

    def touches(self, path: str, line: int, *, slack: int = 0) -> bool:
        """True when ``line`` of ``path`` (head side) lies in a changed hunk, give or take ``slack``."""
        return any(first - slack <= line <= last + slack for first, last in self.changed_lines(path))

    def commit(self, sha: str) -> CommitInfo | None:
        """The commit whose sha starts with ``sha`` (7+ hex digits), or None."""
        if len(sha) < 7:
            return None
        return next((c for c in self.commits if c.sha.startswith(sha)), None)

    def introduced_by(self, sha: str) -> str:
        """``introduced by abc1234 (title, author)``, or '' when ``sha`` is not one of the commits."""
        c = self.commit(sha)
        return f"introduced by {c.describe()}" if c is not None else ""

    def summary(self, *, max_chars: int = 2000) -> str:
        """A short "what changed since the last green run" text (commits, then files with ranges)."""
        lines = [f"Changes since the last green commit {self.base[:7]} (head {self.head[:7]}):"]
        lines += [f"- {c.describe()}" for c in self.commits]
        for f in self.files:
            ranges = ", ".join(f"{a}-{b}" for a, b in self.changed_lines(f.path))
            lines.append(f"  {f.status} {f.path}" + (f" lines {ranges}" if ranges else ""))
        text = "\n".join(lines)
        return text if len(text) <= max_chars else text[: max_chars - 15].rstrip() + "\n… (truncated)"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping (patches as their unified diff text)."""
        return {
            "v": 1,
            "base": self.base,
            "head": self.head,
            "commits": [
                {
                    "sha": c.sha,
                    "title": c.title,
                    "author": c.author,
                    "email": c.email,
                    "diff": render(c.files),
                }
                for c in self.commits
            ],
            "diff": render(self.files),
            "truncated": self.truncated,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChangeSet:
        """Inverse of :meth:`to_json`."""
        return cls(
            base=str(data["base"]),
            head=str(data["head"]),
            commits=tuple(
                CommitInfo(
                    sha=str(c["sha"]),
                    title=str(c.get("title", "")),
                    author=str(c.get("author", "")),
                    email=str(c.get("email", "")),
                    files=parse_patch(str(c.get("diff", ""))),
                )
                for c in data.get("commits", ())
            ),
            files=parse_patch(str(data.get("diff", ""))),
            truncated=bool(data.get("truncated", False)),
        )


def head_range(h: Hunk) -> tuple[int, int]:
    """The head-side lines ``(first, last)`` a hunk covers; a pure deletion covers the line it sits at."""
    first = h.new_start if h.new_len else max(h.new_start, 1)
    return first, max(first, h.new_start + h.new_len - 1)


def parse_log(text: str) -> list[tuple[str, str, str, str]]:
    """``(sha, author, email, title)`` per commit of ``git log --format=LOG_FORMAT`` output."""
    out: list[tuple[str, str, str, str]] = []
    for record in text.split(RECORD):
        parts = record.strip("\n").split(FIELD)
        if len(parts) == 4 and parts[0]:
            out.append((parts[0].strip(), parts[1], parts[2], parts[3]))
    return out


def changeset_from_git(
    base: str,
    head: str,
    *,
    log: str,
    diff: str,
    commit_diffs: Mapping[str, str] | None = None,
    truncated: bool = False,
) -> ChangeSet:
    """Build a :class:`ChangeSet` from ``git log --reverse --format=LOG_FORMAT base..head`` output,
    ``git diff base head`` output and, per commit sha, ``git diff sha^ sha`` output."""
    per_commit = commit_diffs or {}
    commits = tuple(
        CommitInfo(
            sha=sha, title=title, author=author, email=email, files=parse_patch(per_commit.get(sha, ""))
        )
        for sha, author, email, title in parse_log(log)
    )
    return ChangeSet(base=base, head=head, commits=commits, files=parse_patch(diff), truncated=truncated)


def render(files: Iterable[FilePatch]) -> str:
    """Unified diff text of parsed patches (enough for :func:`parse_patch` to read them back)."""
    out: list[str] = []
    for f in files:
        old = f"a/{f.old_path}" if f.old_path is not None else "/dev/null"
        new = f"b/{f.new_path}" if f.new_path is not None else "/dev/null"
        out.append(f"diff --git a/{f.old_path or f.new_path} b/{f.new_path or f.old_path}")
        if f.binary:
            out.append(f"Binary files {old} and {new} differ")
            continue
        out += [f"--- {old}", f"+++ {new}"]
        for h in f.hunks:
            out.append(f"@@ -{h.old_start},{h.old_len} +{h.new_start},{h.new_len} @@")
            out += [_prefix(line) + line.text for line in h.lines]
    return "\n".join(out) + ("\n" if out else "")


def _prefix(line: HunkLine) -> str:
    return line.kind


def side_text(lines: Sequence[HunkLine], side: str) -> list[str]:
    """The hunk's lines as they read on ``side`` (``old``: context + removed; ``new``: context + added)."""
    drop = "+" if side == "old" else "-"
    return [ln.text for ln in lines if ln.kind != drop]


__all__ = [
    "LOG_FORMAT",
    "ChangeSet",
    "CommitInfo",
    "changeset_from_git",
    "head_range",
    "parse_log",
    "render",
    "side_text",
]
