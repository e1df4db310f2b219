"""GitHub suggestion blocks for a fix, placed on a pull request's diff (pure).

A suggestion is a review comment on lines ``start_line..line`` of the pull request head's version of
a file (``side: RIGHT``) whose body is a ````suggestion`` block: committing it replaces exactly
those lines with the block's lines (GitHub's "Commenting on a pull request": multi-line comments
take ``start_line``/``line``; a review comment may only sit on lines the pull request's diff shows).

- :func:`suggestions_for` turns a file's text before/after the fix into minimal line replacements
  (a pure insertion is anchored on the line before it, or after it at the top of a file);
- :func:`commentable_ranges` reads the RIGHT-side line ranges of a file's ``patch`` (from
  ``GET /pulls/{n}/files``);
- :func:`place` keeps the suggestions that lie inside one range; the others go into the review body
  as a diff (:func:`outside_diff_text`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobs.render import fenced

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True, slots=True)
class Suggestion:
    """Replace lines ``start_line..line`` (1-based, inclusive) of ``path`` by ``new``."""

    path: str
    start_line: int
    line: int
    old: tuple[str, ...]
    new: tuple[str, ...]

    def body(self) -> str:
        """The comment body: one suggestion block (an empty block deletes the lines)."""
        if not self.new:
            return "```suggestion\n```"
        return fenced("\n".join(self.new), "suggestion")

    def review_comment(self) -> dict[str, Any]:
        """The ``comments[]`` item of ``POST /pulls/{n}/reviews``."""
        comment: dict[str, Any] = {"path": self.path, "body": self.body(), "line": self.line, "side": "RIGHT"}
        if self.start_line != self.line:
            comment["start_line"] = self.start_line
            comment["start_side"] = "RIGHT"
        return comment


def suggestions_for(path: str, before: str, after: str) -> list[Suggestion]:
    """Minimal line replacements turning ``before`` into ``after``."""
    old = before.splitlines()
    new = after.splitlines()
    out: list[Suggestion] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i1 < i2:  # replace or delete: exactly the old lines
            out.append(Suggestion(path, i1 + 1, i2, tuple(old[i1:i2]), tuple(new[j1:j2])))
        elif i1 > 0:  # insertion after line i1: suggest that line followed by the new ones
            out.append(Suggestion(path, i1, i1, (old[i1 - 1],), (old[i1 - 1], *new[j1:j2])))
        elif old:  # insertion at the top: the new lines, then the first line
            out.append(Suggestion(path, 1, 1, (old[0],), (*new[j1:j2], old[0])))
    return out


def commentable_ranges(patch: str) -> list[tuple[int, int]]:
    """The RIGHT-side ``(first, last)`` line ranges of each hunk of a file's ``patch``."""
    ranges: list[tuple[int, int]] = []
    for line in patch.splitlines():
        match = _HUNK.match(line)
        if match:
            start = int(match.group(1))
            count = int(match.group(2)) if match.group(2) is not None else 1
            if count > 0:
                ranges.append((start, start + count - 1))
    return ranges


def place(
    suggestions: Sequence[Suggestion], ranges: Mapping[str, Sequence[tuple[int, int]]]
) -> tuple[list[Suggestion], list[Suggestion]]:
    """``(placed, outside)``: a suggestion is placed when all its lines lie in one hunk of its file."""
    placed: list[Suggestion] = []
    outside: list[Suggestion] = []
    for item in suggestions:
        spans = ranges.get(item.path, ())
        inside = any(first <= item.start_line and item.line <= last for first, last in spans)
        (placed if inside else outside).append(item)
    return placed, outside


def outside_diff_text(items: Sequence[Suggestion]) -> str:
    """The suggestions that cannot be review comments, as one diff block per change."""
    parts = []
    for item in items:
        where = f"`{item.path}` line {item.start_line}" + (
            f"–{item.line}" if item.line != item.start_line else ""
        )
        lines = [f"-{text}" for text in item.old] + [f"+{text}" for text in item.new]
        parts.append(f"{where}:\n\n{fenced(chr(10).join(lines), 'diff')}")
    return "\n\n".join(parts)


__all__ = ["Suggestion", "commentable_ranges", "outside_diff_text", "place", "suggestions_for"]
