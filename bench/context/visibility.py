"""Which lines a fix must change, and whether a model request showed them (pure functions).

A *target line* is one line of the broken tree that the known fix changes: the lines of each
``replace`` edit's ``old`` text that differ from its ``new`` text (difflib opcodes). A pure
insertion has no changed line; its target is one anchor line (a model must see where the new code
goes): the old line after the insertion point, or the one before when that is blank or outside
the edit.

A request shows a target line when one of its evidence blocks covers it. Evidence is rendered as
``### path:start-end [label]`` followed by a code fence (``jobs/repair/prompts``): the block of
``path`` must span the line number *and* its fenced text must contain the line (an item clipped
before the line does not count). ``loose`` visibility only asks whether the line's text occurs
anywhere in the request (for example in a rendered stack frame), which a model cannot locate as
reliably; the bench reports it beside the strict measure.

Tool results (``jobs/repair/tools.py``, issue #15) count as shown too: their numbered lines
(``   12| text``) under an ``open`` header (``path lines a-b of n``), a ``symbol`` definition header
(``definition q at path:a-b``) or a ``search`` hit header (``path:a-b``), and ``symbol``'s caller
rows (``  path:12 in q: text``, one line each, its text clipped at 160 characters) —
:func:`tool_blocks`. Every numbered line counts as exactly the line its number names.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_HEADER = re.compile(r"^#{2,4} (?P<path>[^\s:][^:\n]*?):(?P<start>\d+)-(?P<end>\d+)(?: |$)", re.M)
_FENCE = re.compile(r"^(`{3,})[^\n]*\n(?P<body>.*?)\n\1[ \t]*$", re.M | re.S)


_TOOL_OPEN = re.compile(r"^(?P<path>[^\s:]+) lines \d+-\d+ of \d+")
_TOOL_SYMBOL = re.compile(r"^definition \S+ at (?P<path>[^\s:]+):\d+-\d+")
_TOOL_SEARCH = re.compile(r"^(?P<path>[^\s:]+):\d+-\d+(?: \(.*\))?$")
_TOOL_LINE = re.compile(r"^ *(?P<n>\d+)\| ?(?P<text>.*)$")
_TOOL_CALLER = re.compile(r"^  (?P<path>[^\s:]+):(?P<n>\d+) in \S+: (?P<text>.*)$")


@dataclass(frozen=True)
class TargetLine:
    """One line of the broken tree the fix changes (``line`` is 1-based)."""

    path: str
    line: int
    text: str

    def to_json(self) -> dict[str, Any]:
        """A JSON object."""
        return {"path": self.path, "line": self.line, "text": self.text}


@dataclass(frozen=True)
class Block:
    """One evidence block of a request: a file's line range and the text shown for it."""

    path: str
    start: int
    end: int
    text: str


def target_lines(files: Mapping[str, str], edits: Sequence[Mapping[str, Any]]) -> list[TargetLine]:
    """The lines of ``files`` (path -> broken text) that ``edits`` (``propose_patch`` replaces) change.

    Raises ``ValueError`` when an edit's ``old`` text does not occur exactly once.
    """
    out: list[TargetLine] = []
    for edit in edits:
        path = str(edit["path"])
        text = files[path]
        old, new = str(edit["old"]), str(edit["new"])
        if text.count(old) != 1:
            raise ValueError(f"{path}: old text occurs {text.count(old)} times")
        first = text[: text.index(old)].count("\n") + 1  # line number of old's first line
        file_lines = text.split("\n")
        old_lines, new_lines = old.split("\n"), new.split("\n")
        matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
        picked: set[int] = set()
        for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
            if tag in ("replace", "delete"):
                picked.update(range(first + i1, first + i2))
            elif tag == "insert":
                # Where the new lines go: one anchor line, the old line after the insertion point
                # unless it is blank or past the edit, else the one before.
                after, before = first + i1, first + i1 - 1
                inside = i1 < len(old_lines) and after <= len(file_lines) and file_lines[after - 1].strip()
                anchor = after if inside or before < 1 else before
                picked.add(anchor)
        out.extend(TargetLine(path, n, file_lines[n - 1]) for n in sorted(picked))
    return _dedupe(out)


def _dedupe(lines: Iterable[TargetLine]) -> list[TargetLine]:
    seen: set[tuple[str, int]] = set()
    out: list[TargetLine] = []
    for t in lines:
        if (t.path, t.line) not in seen:
            seen.add((t.path, t.line))
            out.append(t)
    return out


def evidence_blocks(text: str) -> list[Block]:
    """The evidence blocks of a request's text: each ``### path:start-end`` header and its fence."""
    headers = list(_HEADER.finditer(text))
    out: list[Block] = []
    for i, h in enumerate(headers):
        stop = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        fence = _FENCE.search(text, h.end(), stop)
        body = fence.group("body") if fence else ""
        out.append(Block(h.group("path").strip(), int(h.group("start")), int(h.group("end")), body))
    return out


def tool_blocks(text: str) -> list[Block]:
    """The code a request's tool results showed (``open``, ``symbol``, ``search``; see the module
    docstring): one block per run of consecutive numbered lines under a header, one per caller row."""
    out: list[Block] = []
    path = ""
    run: list[tuple[int, str]] = []

    def flush() -> None:
        if path and run:
            out.append(Block(path, run[0][0], run[-1][0], "\n".join(t for _, t in run)))
        run.clear()

    for line in text.split("\n"):
        m = _TOOL_LINE.match(line)
        if m and path:
            n = int(m.group("n"))
            if run and n != run[-1][0] + 1:
                flush()
            run.append((n, m.group("text")))
            continue
        flush()
        caller = _TOOL_CALLER.match(line)
        if caller:
            n = int(caller.group("n"))
            out.append(Block(caller.group("path"), n, n, caller.group("text")))
            path = ""
            continue
        header = _TOOL_OPEN.match(line) or _TOOL_SYMBOL.match(line) or _TOOL_SEARCH.match(line)
        path = header.group("path") if header else ""
    flush()
    return out


def shown(target: TargetLine, blocks: Sequence[Block]) -> bool:
    """Whether an evidence block of the target's file covers the line and shows its text."""
    needle = target.text.strip()
    for b in blocks:
        if b.path != target.path or not b.start <= target.line <= b.end:
            continue
        if not needle:
            return True  # a blank line inside a shown range is shown
        body = b.text.split("\n")
        offset = target.line - b.start
        # The body may number its lines or be clipped: the exact slot first, then anywhere.
        if 0 <= offset < len(body) and needle in body[offset]:
            return True
        if needle in b.text:
            return True
    return False


@dataclass(frozen=True)
class Visibility:
    """What one request (or a union of requests) showed of the target lines."""

    shown: int
    total: int
    loose: int
    """Target lines whose text occurs anywhere in the request(s)."""
    file_shown: bool
    """Some evidence block of a file the fix changes."""

    @property
    def all_shown(self) -> bool:
        """Every target line was shown (the perfect model can fix the bug)."""
        return self.total > 0 and self.shown == self.total

    @property
    def share(self) -> float:
        """The share of target lines shown."""
        return self.shown / self.total if self.total else 0.0

    def to_json(self) -> dict[str, Any]:
        """A JSON object."""
        return {
            "shown": self.shown,
            "total": self.total,
            "all": self.all_shown,
            "share": round(self.share, 3),
            "loose": self.loose,
            "file_shown": self.file_shown,
        }


def visibility(targets: Sequence[TargetLine], texts: Sequence[str], *, tools: bool = True) -> Visibility:
    """How many ``targets`` the request texts ``texts`` showed, together (a union): evidence
    blocks and, unless ``tools`` is false, tool results (:func:`tool_blocks`)."""
    blocks = [b for t in texts for b in evidence_blocks(t)]
    if tools:
        blocks += [b for t in texts for b in tool_blocks(t)]
    joined = "\n".join(texts)
    paths = {t.path for t in targets}
    return Visibility(
        shown=sum(1 for t in targets if shown(t, blocks)),
        total=len(targets),
        loose=sum(1 for t in targets if t.text.strip() and t.text.strip() in joined),
        file_shown=any(b.path in paths for b in blocks),
    )


def rank_of_file(paths: Sequence[str], wanted: Iterable[str]) -> int | None:
    """1-based rank of the first of ``wanted`` among the distinct ``paths`` (None: absent)."""
    goal = set(wanted)
    distinct: list[str] = []
    for p in paths:
        if p not in distinct:
            distinct.append(p)
    for i, p in enumerate(distinct, 1):
        if p in goal:
            return i
    return None
