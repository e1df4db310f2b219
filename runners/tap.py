"""TAP (Test Anything Protocol) streams, read into tests: ``tape``, ``tap``, plain TAP producers.

Pure syntax: this module knows the stream, not ARCS's result types (``runners.results`` turns a
:class:`TapStream` into per-test outcomes). Two shapes of stream are read:

- **tape style** (``tape``, ``tap`` 1.x-era producers): ``# name`` comment lines open a test and the
  test points under it are its *assertions*. A test fails when one of its assertions fails; its id
  is its name (tape never prints the file of a passing test, and an id must not change with the
  outcome). A name seen again in the same run gets `` #2``, `` #3``... in order of appearance.
- **points style** (``node --test``, ``tap`` >= 15, bats, pytest-tap...): every test point is a test;
  subtests are indented blocks (``# Subtest: name`` then the child points, then the parent point).
  A parent with children is a suite: it is reported only when it failed although no child did
  (a hook or a load failure). The id is the names from the outermost suite down, joined by spaces.

A stream is complete when its plan (``1..N``) was printed and ``N`` top-level points were seen. A
``Bail out!``, a missing plan or fewer points than planned makes it incomplete: tests that did not
report are unknown (left out, never passed), and the test in progress when a process crashed (the
non-TAP text after the last TAP line, e.g. node's uncaught exception report) is an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

TapOutcome = Literal["passed", "failed", "error", "skipped"]
Stop = Literal["", "bail", "crash", "truncated"]

_VERSION = re.compile(r"^TAP version \d+\s*$")
_POINT = re.compile(r"^(?P<indent> *)(?P<not>not )?ok\b(?:\s+(?P<num>\d+))?(?:\s+-)?(?:\s+(?P<desc>.*))?$")
_DIRECTIVE = re.compile(r"(?:^|\s)(?<!\\)#\s*(?P<dir>SKIP|TODO)\S*\b", re.I)
_TRAILING_COMMENT = re.compile(r"\s+(?<!\\)#(?:\s.*|\S*=.*)?$")
_PLAN = re.compile(r"^(?P<indent> *)1\.\.(?P<n>\d+)(?:\s*#.*)?\s*$")
_BAIL = re.compile(r"^\s*Bail out!\s*(?P<reason>.*)$")
_COMMENT = re.compile(r"^(?P<indent> *)#\s?(?P<text>.*)$")
_SUBTEST = re.compile(r"^Subtest: (?P<name>.+)$")
_SUMMARY = re.compile(
    r"^(?:tests|pass|fail|ok|skip|todo|cancelled|suites|duration_ms|time=)\b[\s\d.:ms]*$", re.I
)
_TAPE_MARK = re.compile(r"^(?P<dir>SKIP|TODO) (?P<name>.+)$")
_CRASH_HEAD = re.compile(r"^(?:Uncaught )?(?:[A-Z]\w*(?:Error|Exception)|Error)\b(?::|$)")


@dataclass(frozen=True, slots=True)
class TapTest:
    """One test of the stream and its outcome."""

    id: str
    outcome: TapOutcome
    description: str = ""
    """The failing assertion's (or point's) description; ``""`` when it passed."""
    diagnostics: Mapping[str, str] = field(default_factory=dict)
    """The failing point's YAML diagnostics (flat ``key: value`` fields)."""
    crash: str = ""
    """The crash report (an errored test's non-TAP output: message and stack)."""


@dataclass(frozen=True, slots=True)
class TapStream:
    """What a TAP stream reported."""

    tests: tuple[TapTest, ...] = ()
    stop: Stop = ""
    """Why the stream is incomplete (``""``: it is complete)."""
    detail: str = ""
    """One line saying where it stopped (the bail-out reason, how many points of the plan came)."""
    crash: str = ""
    """The non-TAP text after the last TAP line of an incomplete stream."""

    @property
    def complete(self) -> bool:
        """The plan was printed and fully reported, and nothing bailed out."""
        return not self.stop


def looks_like_tap(text: str) -> bool:
    """A ``TAP version`` line, or a plan next to test points."""
    if re.search(r"^TAP version \d+\s*$", text, re.M):
        return True
    return bool(re.search(r"^1\.\.\d+\s*$", text, re.M) and re.search(r"^(?:not )?ok \d+\b", text, re.M))


def _split_description(raw: str | None) -> tuple[str, str]:
    """(description, directive) of a point's text: ``"adds # SKIP slow"`` -> ``("adds", "skip")``."""
    text = (raw or "").strip()
    directive = ""
    if m := _DIRECTIVE.search(text):
        directive = m["dir"].lower()
        text = text[: m.start()]
    text = _TRAILING_COMMENT.sub("", text)
    return text.replace("\\#", "#").strip(), directive


def tap_yaml(lines: Sequence[str]) -> dict[str, str]:
    """The flat ``key: value`` / ``key: |-`` block fields of a TAP YAML diagnostic (dedented lines)."""
    fields: dict[str, str] = {}
    k = 0
    while k < len(lines):
        m = re.match(r"^(?P<key>[\w]+): ?(?P<value>.*)$", lines[k])
        k += 1
        if not m:
            continue
        value = m["value"].strip()
        if value in ("|-", "|", ">-", ">", "|+"):
            block: list[str] = []
            while k < len(lines) and (lines[k].startswith("  ") or not lines[k].strip()):
                block.append(lines[k][2:])
                k += 1
            value = "\n".join(block).strip("\n")
        elif len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1].replace("''", "'")
        fields[m["key"]] = value
    return fields


@dataclass
class _Group:
    """A tape-style test being read: its assertions so far."""

    name: str
    directive: str = ""
    failed: tuple[str, dict[str, str]] | None = None
    points: int = 0


@dataclass
class _Entry:
    """A points-style test point being read."""

    indent: int
    names: list[str]
    ok: bool
    directive: str
    description: str
    diagnostics: dict[str, str]
    children: list[_Entry] = field(default_factory=list)


class _Reader:
    """One pass over the lines of a stream."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.i = 0

    def yaml_after(self, indent: int) -> dict[str, str]:
        """The YAML block right after a point (advancing past it), else ``{}``."""
        j = self.i
        if (
            j >= len(self.lines)
            or self.lines[j].strip() != "---"
            or not self.lines[j].startswith(" " * indent)
        ):
            return {}
        raw: list[str] = []
        j += 1
        while j < len(self.lines) and self.lines[j].strip() != "...":
            raw.append(self.lines[j])
            j += 1
        self.i = j + 1
        pad = min((len(ln) - len(ln.lstrip()) for ln in raw if ln.strip()), default=0)
        return tap_yaml([ln[pad:] if ln.startswith(" " * pad) else ln.lstrip() for ln in raw])


_ERROR_LINE = re.compile(r"^(?P<name>[A-Z]\w*(?:Error|Exception)|Error)(?: \[\w+\])?(?::|$)")


def _indented_error(reader: _Reader, indent: int) -> dict[str, str]:
    """The plain indented text under a failed point that has no YAML block (mocha's ``tap``
    reporter: the message, then the error's stack), as ``message``/``name``/``stack`` fields;
    advances past it."""
    lines = reader.lines
    j = reader.i
    text: list[str] = []
    while j < len(lines):
        line = lines[j]
        if not line.startswith(" " * (indent + 1)):  # mocha indents its blank lines too
            break
        if _POINT.match(line) or _COMMENT.match(line) or _PLAN.match(line):
            break
        text.append(line.strip())
        j += 1
    if not text:
        return {}
    reader.i = j
    at = next((k for k, ln in enumerate(text) if _ERROR_LINE.match(ln) or ln.startswith("at ")), len(text))
    fields = {"message": "\n".join(text[:at]).strip()}
    if at < len(text) and (head := _ERROR_LINE.match(text[at])):
        fields["name"] = head["name"]
        if not fields["message"]:
            fields["message"] = text[at].split(":", 1)[1].strip() if ":" in text[at] else ""
    frames = [ln for ln in text if ln.startswith("at ")]
    if frames:
        fields["stack"] = "\n".join(frames)
    return fields


def _start(lines: Sequence[str]) -> int | None:
    for i, line in enumerate(lines):
        if _VERSION.match(line):
            return i + 1
    for i, line in enumerate(lines):
        if not line.startswith(" ") and (_POINT.match(line) or _PLAN.match(line)):
            return i
    return None


def _tape_style(lines: Sequence[str], start: int) -> bool:
    if any(_COMMENT.match(ln) and _SUBTEST.match(ln.lstrip()[1:].strip()) for ln in lines[start:]):
        return False
    for line in lines[start:]:
        if not line.strip():
            continue
        m = _COMMENT.match(line)
        return bool(m and not m["indent"] and not _SUMMARY.match(m["text"].strip()))
    return False


class _Ids:
    """Test ids, with `` #2``, `` #3``... for a name seen again."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def __call__(self, name: str) -> str:
        n = self.seen.get(name, 0) + 1
        self.seen[name] = n
        return name if n == 1 else f"{name} #{n}"


def parse_tap(text: str) -> TapStream:
    """Read a TAP stream (``text`` without ANSI escapes); empty when ``text`` holds none."""
    lines = text.splitlines()
    start = _start(lines)
    if start is None:
        return TapStream()
    if _tape_style(lines, start):
        return _read_tape(lines, start)
    return _read_points(lines, start)


def _finish(
    tests: list[TapTest], plan: int | None, points: int, bail: str | None, tail: list[str]
) -> tuple[Stop, str, str]:
    crash = "\n".join(tail).strip("\n")
    if bail is not None:
        return "bail", f"Bail out! {bail}".strip(), crash
    if plan is not None and points >= plan:
        return "", "", ""
    last = f" after {tests[-1].id!r}" if tests else ""
    if plan is None:
        head = f"the TAP stream ended without a plan{last}"
    else:
        head = f"the TAP stream ended{last} with {points} of {plan} planned test points"
    has_crash = any(_CRASH_HEAD.match(ln.strip()) for ln in tail)
    return ("crash" if has_crash else "truncated"), head + ": later tests are unknown", crash


def _read_tape(lines: list[str], start: int) -> TapStream:
    ids = _Ids()
    tests: list[TapTest] = []
    group: _Group | None = None
    plan: int | None = None
    points = 0
    bail: str | None = None
    tail: list[str] = []
    reader = _Reader(lines)
    reader.i = start

    def close(g: _Group | None) -> None:
        if g is None:
            return
        test_id = ids(g.name)
        if g.directive == "skip" or (g.directive == "todo" and g.failed is None):
            tests.append(TapTest(test_id, "skipped"))
        elif g.failed is not None and g.directive != "todo":
            tests.append(TapTest(test_id, "failed", g.failed[0], g.failed[1]))
        else:
            tests.append(TapTest(test_id, "skipped" if g.directive == "todo" else "passed"))

    while reader.i < len(lines):
        line = lines[reader.i]
        reader.i += 1
        if m := _BAIL.match(line):
            bail = m["reason"].strip()
            break
        if (m := _PLAN.match(line)) and not m["indent"]:
            plan = int(m["n"])
            tail = []
            continue
        if (m := _POINT.match(line)) and not m["indent"]:
            tail = []
            points += 1
            desc, directive = _split_description(m["desc"])
            diag = reader.yaml_after(0)
            if group is None:
                group = _Group(name=desc)
            group.points += 1
            if m["not"] and directive != "todo" and group.failed is None:
                group.failed = (desc, diag)
            continue
        if (m := _COMMENT.match(line)) and not m["indent"]:
            name = m["text"].strip()
            if plan is not None or _SUMMARY.match(name):
                continue
            tail = []
            close(group)
            mark = _TAPE_MARK.match(name)
            group = (
                _Group(name=mark["name"].strip(), directive=mark["dir"].lower())
                if mark
                else _Group(name=name)
            )
            continue
        tail.append(line)
    stop, detail, crash = _finish(tests, plan, points, bail, tail)
    if stop and group is not None:
        # The test in progress: an error when the process crashed in it, failed when an
        # assertion already failed, else unknown (left out).
        if stop == "crash":
            tests.append(TapTest(ids(group.name), "error", crash=crash))
        elif group.failed is not None:
            close(group)
    else:
        close(group)
    return TapStream(tuple(tests), stop, detail, crash)


def _read_points(lines: list[str], start: int) -> TapStream:
    reader = _Reader(lines)
    reader.i = start
    subtests: list[tuple[int, str]] = []
    pending: list[_Entry] = []
    plan: int | None = None
    points = 0
    bail: str | None = None
    tail: list[str] = []
    while reader.i < len(lines):
        line = lines[reader.i]
        reader.i += 1
        if m := _BAIL.match(line):
            bail = m["reason"].strip()
            break
        if m := _PLAN.match(line):
            if not m["indent"]:
                plan = int(m["n"])
            tail = []
            continue
        if m := _COMMENT.match(line):
            if sub := _SUBTEST.match(m["text"].strip()):
                indent = len(m["indent"])
                while subtests and subtests[-1][0] >= indent:
                    subtests.pop()
                subtests.append((indent, sub["name"].strip()))
                tail = []
            continue
        m = _POINT.match(line)
        if not m:
            tail.append(line)
            continue
        tail = []
        indent = len(m["indent"])
        desc, directive = _split_description(m["desc"])
        diag = reader.yaml_after(indent)
        if m["not"] and not diag:
            diag = _indented_error(reader, indent)
        while subtests and subtests[-1][0] > indent:
            subtests.pop()
        if subtests and subtests[-1][0] == indent:
            subtests.pop()
        entry = _Entry(indent, [n for _, n in subtests], not m["not"], directive, desc, diag)
        while pending and pending[-1].indent > indent:
            entry.children.insert(0, pending.pop())
        pending.append(entry)
        if not indent:
            points += 1
    ids = _Ids()
    tests: list[TapTest] = []
    # node --test gives every test a duration; tap's assertions have none: fold them into their test.
    fold = not any(re.match(r"^\s*duration_ms:", ln) for ln in lines)

    def emit(e: _Entry, prefix: list[str]) -> bool:
        """Report ``e`` (and its children); True when something under it failed."""
        names = e.names if e.names else prefix
        path = [*names, e.description] if e.description else names
        if fold and e.children and all(not c.children for c in e.children):
            bad = next((c for c in e.children if not c.ok and c.directive != "todo"), None)
            if bad is not None or (not e.ok and e.directive != "todo"):
                src = bad or e
                tests.append(TapTest(ids(" ".join(path)), "failed", src.description, src.diagnostics))
                return True
            tests.append(TapTest(ids(" ".join(path)), "skipped" if e.directive else "passed"))
            return False
        child_failed = False
        for c in e.children:
            child_failed = emit(c, path if not c.names else []) or child_failed
        failed = not e.ok and e.directive != "todo"
        if e.children and (not failed or child_failed):
            return child_failed or failed
        test_id = ids(" ".join(path))
        if e.directive in ("skip", "todo") and not failed:
            tests.append(TapTest(test_id, "skipped"))
        elif failed:
            tests.append(TapTest(test_id, "failed", e.description, e.diagnostics))
        else:
            tests.append(TapTest(test_id, "passed"))
        return failed

    for e in pending:
        emit(e, [])
    stop, detail, crash = _finish(tests, plan, points, bail, tail)
    if stop == "crash" and subtests:
        tests.append(TapTest(ids(" ".join(n for _, n in subtests)), "error", crash=crash))
    return TapStream(tuple(tests), stop, detail, crash)
