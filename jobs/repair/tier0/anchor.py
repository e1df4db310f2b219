"""Undo one hunk on a file that later commits changed around it: anchored on the hunk's own
changed lines rather than on its context.

Pure. A hunk's usual undo (:func:`jobs.repair.tier0.reverts`) needs its head-side text, context
included, to occur once in the current file. When a later commit edited the context or re-indented
the block, that text is gone although the changed lines are still there. Like a three-way merge
that ignores whitespace changes, :func:`anchored_undo` finds each group of the hunk's added lines
in the current file (whitespace-insensitive, once only; the context next to the group decides
between several places), puts the removed lines back with the indentation the file uses now, and
gives up (None) when a group cannot be placed exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jobs.repair.diffing import Hunk, HunkLine

MAX_WIDEN = 4
"""Lines of the current file added around an edit's text, at most, to make it unique."""


@dataclass(frozen=True, slots=True)
class _Group:
    """One run of changed lines of a hunk, with the context lines just before and after it."""

    removed: tuple[str, ...]
    added: tuple[str, ...]
    before: str | None
    after: str | None


def anchored_undo(hunk: Hunk, current: str) -> list[tuple[str, str]] | None:
    """``(old, new)`` replace pairs, applied in order to ``current``, that undo ``hunk``; None
    when a group of its changed lines is not found exactly once."""
    text = current
    pairs: list[tuple[str, str]] = []
    for group in _groups(hunk.lines):
        pair = _undo_group(group, text)
        if pair is None:
            return None
        old, new = pair
        pairs.append(pair)
        text = text.replace(old, new, 1)
    return pairs or None


def replace_pair(current: str, new: str) -> tuple[str, str] | None:
    """One ``(old, new)`` replace pair that turns ``current`` into ``new``: the lines between
    their common head and tail, widened until unique; None when they are equal or it cannot be."""
    if current == new:
        return None
    cur, want = current.split("\n"), new.split("\n")
    head = 0
    while head < min(len(cur), len(want)) and cur[head] == want[head]:
        head += 1
    tail = 0
    while tail < min(len(cur), len(want)) - head and cur[-1 - tail] == want[-1 - tail]:
        tail += 1
    return _unique_pair(cur, (head, len(cur) - tail), want[head : len(want) - tail], current)


def _groups(lines: Sequence[HunkLine]) -> list[_Group]:
    out: list[_Group] = []
    i = 0
    while i < len(lines):
        if lines[i].kind == " ":
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].kind in "+-":
            j += 1
        before = lines[i - 1].text if i > 0 and lines[i - 1].kind == " " else None
        after = lines[j].text if j < len(lines) and lines[j].kind == " " else None
        run = lines[i:j]
        out.append(
            _Group(
                tuple(ln.text for ln in run if ln.kind == "-"),
                tuple(ln.text for ln in run if ln.kind == "+"),
                before,
                after,
            )
        )
        i = j
    return out


def _undo_group(g: _Group, text: str) -> tuple[str, str] | None:
    cur = text.split("\n")
    if any(a.strip() for a in g.added):
        at = _place(cur, g.added, g.before, g.after)
        if at is None:
            return None
        span = (at, at + len(g.added))
        mapping = _indents(g.added, cur[span[0] : span[1]])
        replacement = [_reindent(r, mapping) for r in g.removed]
    else:  # a pure deletion: put the lines back between the context lines that surround it
        if g.before is None or g.after is None:
            return None
        at = _place(cur, (g.before, g.after), None, None)
        if at is None:
            return None
        mapping = _indents((g.before,), cur[at : at + 1])
        span = (at + 1, at + 1)
        replacement = [_reindent(r, mapping) for r in g.removed]
    return _unique_pair(cur, span, replacement, text)


def _place(cur: Sequence[str], block: Sequence[str], before: str | None, after: str | None) -> int | None:
    """The one index where ``block`` starts in ``cur`` (ignoring whitespace); the context lines
    (when given) break a tie. None when absent or still ambiguous."""
    want = [_norm(b) for b in block]
    hits = [
        i for i in range(len(cur) - len(want) + 1) if all(_norm(cur[i + k]) == w for k, w in enumerate(want))
    ]
    if len(hits) > 1 and (before is not None or after is not None):

        def fits(i: int) -> bool:
            ok_before = before is None or (i > 0 and _norm(cur[i - 1]) == _norm(before))
            end = i + len(want)
            ok_after = after is None or (end < len(cur) and _norm(cur[end]) == _norm(after))
            return ok_before and ok_after

        hits = [i for i in hits if fits(i)]
    return hits[0] if len(hits) == 1 else None


def _unique_pair(
    cur: list[str], span: tuple[int, int], replacement: list[str], text: str
) -> tuple[str, str] | None:
    """The replace pair for lines ``span`` -> ``replacement``, widened by whole lines until its
    old text occurs once in ``text``."""
    lo, hi = span
    for _ in range(MAX_WIDEN + 1):
        old_lines = cur[lo:hi]
        new_lines = cur[lo : span[0]] + replacement + cur[span[1] : hi]
        old = "\n".join(old_lines)
        if old_lines and old.strip() and text.count(old) == 1:
            new = "\n".join(new_lines)
            return (old, new) if old != new else None
        if lo == 0 and hi >= len(cur):
            return None
        lo, hi = max(0, lo - 1), min(len(cur), hi + 1)
    return None


def _indents(was: Sequence[str], now: Sequence[str]) -> dict[str, str]:
    """Old indentation -> the current one, from lines matched one to one."""
    return {_indent(a): _indent(b) for a, b in zip(was, now, strict=False) if a.strip()}


def _reindent(line: str, mapping: dict[str, str]) -> str:
    """``line`` with its indentation translated by the longest matching known prefix."""
    if not line.strip():
        return line
    ind = _indent(line)
    if ind in mapping:
        return mapping[ind] + line[len(ind) :]
    for old in sorted(mapping, key=len, reverse=True):
        if old and ind.startswith(old):
            return mapping[old] + line[len(old) :]
    return line


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _norm(line: str) -> str:
    return "".join(line.split())


__all__ = ["anchored_undo", "replace_pair"]
