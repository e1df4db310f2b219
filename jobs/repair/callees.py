"""Code the failing tests call: definitions followed from the failing test lines (issue #15).

Most real failures are assertions in the test itself: the stack holds only the test frame, and
the buggy code already returned. The code to change is then a function the test *calls*, often
one or two calls further. :func:`callee_context` reads the failing test function up to the
failing line, takes the names it calls (nearest to the failing line first), finds their
definitions in the repository's non-test files (Python ``def``/``class``, JavaScript
``function``/methods/arrow assignments) and returns each definition's whole body as evidence —
split into parts of at most :data:`PART_LINES` lines, so a large function is shown whole instead
of clipped — then follows the names those bodies call one hop further (first part only).

The test function's own frame leads, not an assertion helper it calls (``test/common.py``); a
helper defined in a test file is looked through: the names it calls count as the test's. A
called method brings its class's constructor (the state the method reads is set there). Later
rounds explore further (``explore``: rounds already spent without a fix): more second-hop names,
one hop deeper per round, and the later parts of large definitions — so round 2 does not repeat
round 1.

Deterministic and pure: reads through the :class:`~jobs.repair.ports.SourceView` only.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from indexing.languages import is_test_path
from jobs.repair.model import Evidence, Failure
from jobs.repair.ports import SourceView

PART_LINES = 100
"""Lines per evidence item (items are clipped at 8,000 characters when rendered)."""
MAX_PARTS = 3
"""Parts of one first-hop definition (300 lines); the rest of a longer one is not shown."""
SCAN_UP = 40
"""Test lines read above the failing line (within its function)."""
_CALL = re.compile(r"(\.?)\b([A-Za-z_]\w*)\s*\(")
"""A call: group 1 is ``.`` for a method call (``x.name(``), group 2 the name."""
_NOT_SOURCE = re.compile(r"(^|/)(docs?|examples?|benchmarks?)/")
_PY_DEF = r"^(?P<indent>[ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+{name}\b"
_JS_DEF = (
    r"^(?P<indent>[ \t]*)(?:export[ \t]+)?(?:default[ \t]+)?(?:async[ \t]+)?"
    r"(?:function\*?[ \t]+{name}\b|(?:const|let|var)[ \t]+{name}[ \t]*=|{name}[ \t]*\([^)]*\)[ \t]*\{{)"
)
_PY_EXT = (".py",)
_JS_EXT = (".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx")
_IGNORED = frozenset(
    set(dir(builtins))
    | set(keyword.kwlist)
    | {
        "self",
        "cls",
        "super",
        "raises",
        "approx",
        "fixture",
        "mark",
        "parametrize",
        "skip",
        "xfail",
        "describe",
        "it",
        "test",
        "expect",
        "require",
        "equal",
        "deepEqual",
        "strictEqual",
        "deepStrictEqual",
        "ok",
        "throws",
        "main",
        "subTest",
        "patch",
        "Mock",
        "MagicMock",
    }
)


@dataclass(frozen=True, slots=True)
class _Def:
    path: str
    start: int
    end: int
    name: str


def _language_exts(path: str) -> tuple[str, ...]:
    return _JS_EXT if path.endswith(_JS_EXT) else _PY_EXT


def block_end(lines: Sequence[str], start: int, indent: str) -> int:
    """1-based last line of the block opened at line ``start`` (braces for JS, else indentation)."""
    if lines[start - 1].rstrip().endswith(("{", ") {", "=> {")) or (
        "{" in lines[start - 1] and not lines[start - 1].rstrip().endswith(":")
    ):
        depth = 0
        opened = False
        for i in range(start - 1, len(lines)):
            depth += lines[i].count("{") - lines[i].count("}")
            opened = opened or "{" in lines[i]
            if opened and depth <= 0:
                return i + 1
        return len(lines)
    end = start
    for i in range(start, len(lines)):
        text = lines[i]
        if not text.strip():
            continue
        if len(text) - len(text.lstrip()) <= len(indent) and not text.lstrip().startswith((")", "]", "}")):
            break
        end = i + 1
    return end


def enclosing_def(lines: Sequence[str], line: int) -> int:
    """1-based line of the ``def``/``function`` that encloses ``line`` (indentation), or 0."""
    if not 1 <= line <= len(lines):
        return 0
    target = lines[line - 1]
    width = len(target) - len(target.lstrip()) if target.strip() else 1 << 30
    for i in range(line - 1, -1, -1):
        text = lines[i]
        stripped = text.lstrip()
        if not stripped:
            continue
        indent = len(text) - len(stripped)
        if indent < width and re.match(r"(?:async\s+)?(?:def|function)\b|\w+\s*\([^)]*\)\s*\{", stripped):
            return i + 1
        if indent < width:
            width = indent
    return 0


def function_window(
    lines: Sequence[str], line: int, *, max_lines: int = 150, before: int = 60, after: int = 20
) -> tuple[int, int]:
    """1-based ``(start, end)`` to show for a failing ``line`` in code: its whole enclosing function
    when that has at most ``max_lines`` lines, else the region before and after the line inside it
    (the cause usually precedes where it fails); ``(0, 0)`` outside any function."""
    start = enclosing_def(lines, line)
    if not start:
        return (0, 0)
    text = lines[start - 1]
    end = block_end(lines, start, text[: len(text) - len(text.lstrip())])
    if end < line:
        return (0, 0)
    if end - start + 1 <= max_lines:
        return (start, end)
    return (max(start, line - before), min(end, line + after))


def called_names(lines: Sequence[str], line: int, *, up: int = SCAN_UP) -> list[str]:
    """Names called in the test function that holds ``line`` (up to ``line`` + 3), nearest first."""
    if not 1 <= line <= len(lines):
        return []
    first = max(enclosing_def(lines, line) + 1, line - up, 1)
    last = min(len(lines), line + 3)
    order = [line, *range(line + 1, last + 1), *range(line - 1, first - 1, -1)]
    return _names_in(lines[n - 1] for n in order)


def _test_calls(lines: Sequence[str], line: int) -> list[tuple[str, bool]]:
    """:func:`called_names` with whether each is a method call."""
    if not 1 <= line <= len(lines):
        return []
    first = max(enclosing_def(lines, line) + 1, line - SCAN_UP, 1)
    last = min(len(lines), line + 3)
    order = [line, *range(line + 1, last + 1), *range(line - 1, first - 1, -1)]
    return _calls_in(lines[n - 1] for n in order)


def _names_in(texts: Iterable[str]) -> list[str]:
    return [name for name, _ in _calls_in(texts)]


def _calls_in(texts: Iterable[str]) -> list[tuple[str, bool]]:
    """``(name, is a method call)`` of the calls in ``texts``, first occurrence first."""
    out: list[tuple[str, bool]] = []
    seen: set[str] = set()
    for text in texts:
        for m in _CALL.finditer(text):
            name = m.group(2)
            if name in _IGNORED or name.startswith(("assert", "test", "_assert")) or name in seen:
                continue
            seen.add(name)
            out.append((name, m.group(1) == "."))
    return out


class _Files:
    """The non-test source files of one language, read once per :func:`callee_context` call."""

    def __init__(self, source: SourceView) -> None:
        self.source = source
        self._texts: dict[tuple[str, ...], list[tuple[str, str]]] = {}

    def of(self, exts: tuple[str, ...], *, tests: bool = False) -> list[tuple[str, str]]:
        """``(path, text)`` of the source files (``tests``: of the test files instead)."""
        key = (*exts, "tests") if tests else exts
        if key not in self._texts:
            texts: list[tuple[str, str]] = []
            for path in self.source.files():
                if (
                    path.endswith(exts)
                    and is_test_path(path) == tests
                    and not _NOT_SOURCE.search(path)
                    and not path.endswith(".pyi")
                ):
                    text = self.source.read(path)
                    if text is not None:
                        texts.append((path, text))
            self._texts[key] = texts
        return self._texts[key]


def _definitions(
    files: _Files,
    name: str,
    exts: tuple[str, ...],
    limit: int = 2,
    *,
    method: bool = False,
    tests: bool = False,
) -> list[_Def]:
    """Where ``name`` is defined; for a method call (``x.name(``) methods first, else top-level
    definitions first (``tests``: in test files, where helpers live)."""
    pattern = re.compile((_JS_DEF if exts == _JS_EXT else _PY_DEF).format(name=re.escape(name)), re.M)
    found: list[tuple[bool, _Def]] = []
    for path, text in files.of(exts, tests=tests):
        if name not in text:
            continue
        lines = text.splitlines()
        for m in pattern.finditer(text):
            start = text.count("\n", 0, m.start()) + 1
            end = block_end(lines, start, m.group("indent"))
            # Calling a class runs its constructor: show that rather than the whole class.
            if lines[start - 1].lstrip().startswith("class "):
                start, end = _constructor(lines, start, end)
            found.append((bool(m.group("indent")) != method, _Def(path, start, end, name)))
    found.sort(key=lambda item: item[0])  # stable: file order within each kind
    return [d for _, d in found[:limit]]


def _constructor(lines: Sequence[str], start: int, end: int) -> tuple[int, int]:
    """The ``__init__``/``__new__``/``__post_init__`` block of the class at ``start``..``end``, or
    the class's head (one part) when it defines none."""
    for i in range(start, end):
        m = re.match(r"([ \t]*)def[ \t]+(?:__init__|__new__|__post_init__)\b", lines[i])
        if m:
            return i + 1, block_end(lines, i + 1, m.group(1))
    return start, min(end, start + PART_LINES - 1)


def _parts(source: SourceView, d: _Def, max_parts: int) -> list[tuple[int, int, str]]:
    text = source.read(d.path) or ""
    lines = text.splitlines()
    out: list[tuple[int, int, str]] = []
    start = d.start
    while start <= d.end and len(out) < max_parts:
        end = min(d.end, start + PART_LINES - 1)
        out.append((start, end, "\n".join(lines[start - 1 : end])))
        start = end + 1
    return out


def _test_sites(failures: Iterable[Failure]) -> list[tuple[str, int]]:
    """The failing lines inside test files: each failure's test-function frame (the outermost
    test frame: what the test itself called) first, then helper frames and failure sites."""
    tests: list[tuple[str, int]] = []
    helpers: list[tuple[str, int]] = []
    for f in failures:
        frames = [fr for fr in f.frames if is_test_path(fr.path)]
        if frames:
            outer = next(
                (fr for fr in frames if fr.function.rsplit(".", 1)[-1].startswith("test")), frames[0]
            )
            tests.append((outer.path, outer.line))
            helpers.extend((fr.path, fr.line) for fr in reversed(frames) if fr is not outer)
        if f.path and is_test_path(f.path):
            (helpers if frames else tests).append((f.path, f.line))
    return list(dict.fromkeys(h for h in [*tests, *helpers] if h[1] > 0))


MAX_HELPERS = 3
"""Test-file helpers looked through per call (their calls count as the test's)."""
MAX_CONSTRUCTORS = 3
"""Constructors shown of the classes of called methods."""
MAX_HOPS = 5
"""Deepest call hop followed (from the fourth round of a tier on)."""


def _first_hop(
    source: SourceView, files: _Files, failures: Sequence[Failure], max_names: int, max_sites: int
) -> tuple[list[_Def], set[str]]:
    """The definitions the failing test lines call (through test helpers), and the names tried."""
    queue: list[tuple[str, bool, tuple[str, ...]]] = []
    for path, line in _test_sites(failures)[:max_sites]:
        text = source.read(path)
        if text is not None:
            exts = _language_exts(path)
            queue.extend((name, method, exts) for name, method in _test_calls(text.splitlines(), line))
    seen: set[tuple[str, int]] = set()
    first: list[_Def] = []
    names_done: set[str] = set()
    tried = helpers = 0
    for name, method, exts in queue:  # the queue grows while it is read (helpers' calls)
        if tried >= max_names:
            break
        if name in names_done:
            continue
        names_done.add(name)
        defs = _definitions(files, name, exts, method=method)
        if not defs and helpers < MAX_HELPERS:
            for h in _definitions(files, name, exts, limit=1, method=method, tests=True):
                helpers += 1
                body = (source.read(h.path) or "").splitlines()[h.start : h.end]
                queue.extend((n, m, exts) for n, m in _calls_in(body))
            continue
        tried += 1
        for d in defs:
            if (d.path, d.start) not in seen:
                seen.add((d.path, d.start))
                first.append(d)
    return first, names_done


def _class_constructor(source: SourceView, d: _Def) -> _Def | None:
    """The constructor (or head) of the class whose method ``d`` is; None for a function."""
    lines = (source.read(d.path) or "").splitlines()
    if not 1 <= d.start <= len(lines) or d.path.endswith(_JS_EXT):
        return None
    text = lines[d.start - 1]
    width = len(text) - len(text.lstrip())
    for i in range(d.start - 2, -1, -1):
        stripped = lines[i].lstrip()
        indent = len(lines[i]) - len(stripped)
        if not stripped or indent >= width:
            continue
        if stripped.startswith("class "):
            name = re.match(r"class\s+(\w+)", stripped)
            start, end = _constructor(lines, i + 1, block_end(lines, i + 1, lines[i][:indent]))
            return _Def(d.path, start, end, name.group(1) if name else "")
        if re.match(r"(?:async\s+)?def\b", stripped):
            return None
        width = indent
    return None


def _code_lines(lines: Sequence[str]) -> list[str]:
    """``lines`` without docstrings, comments and doctest examples (their calls are not calls)."""
    out: list[str] = []
    quote = ""
    for line in lines:
        stripped = line.strip()
        if quote:
            if quote in stripped:
                quote = ""
            continue
        opener = next((q for q in ('"""', "'''") if stripped.lstrip("rbuRBU").startswith(q)), "")
        if opener:
            if stripped.count(opener) == 1:
                quote = opener
            continue
        if not stripped.startswith(("#", "//", ">>>", "...")):
            out.append(line)
    return out


def _next_hop(
    source: SourceView,
    files: _Files,
    defs: Sequence[_Def],
    names_done: set[str],
    seen: set[tuple[str, int]],
    limit: int,
) -> list[_Def]:
    """Definitions of the names the (first parts of) ``defs`` call, in call order, up to ``limit``."""
    out: list[_Def] = []
    tries = 0
    for d in defs:
        body = _code_lines((source.read(d.path) or "").splitlines()[d.start : d.end])
        exts = _language_exts(d.path)
        for name, method in _calls_in(body):
            if len(out) >= limit or tries >= 4 * limit:
                return out
            if name in names_done:
                continue
            names_done.add(name)
            tries += 1
            for d2 in _definitions(files, name, exts, limit=1, method=method):
                if (d2.path, d2.start) not in seen:
                    seen.add((d2.path, d2.start))
                    out.append(d2)
    return out


def callee_context(
    source: SourceView,
    failures: Sequence[Failure],
    *,
    max_names: int = 6,
    max_second_hop: int = 6,
    max_sites: int = 3,
    explore: int = 0,
) -> list[Evidence]:
    """Definitions the failing test lines call, one hop and then two, and ``explore`` hops more
    (at most :data:`MAX_HOPS` in all); see the module docstring. ``explore``: earlier rounds of
    this tier that found no fix."""
    files = _Files(source)
    first, names_done = _first_hop(source, files, failures, max_names, max_sites)
    seen = {(d.path, d.start) for d in first}
    out: list[Evidence] = []
    for rank, d in enumerate(first):
        for start, end, body in _parts(source, d, MAX_PARTS + 2 * explore):
            out.append(
                _evidence(d, start, end, body, score=1.9 - rank * 0.01, why="called by the failing test")
            )
    second = _next_hop(source, files, first, names_done, seen, max_second_hop + 4 * explore)
    for rank, d in enumerate(second):
        for start, end, body in _parts(source, d, 1):
            out.append(
                _evidence(d, start, end, body, score=1.2 - rank * 0.01, why="called by code the test calls")
            )
    ctors: list[_Def] = []
    for d in [*first, *second]:  # the methods' classes: their constructors set the state read
        c = _class_constructor(source, d)
        if c is not None and (c.path, c.start) not in seen:
            seen.add((c.path, c.start))
            ctors.append(c)
    for rank, d in enumerate(ctors[:MAX_CONSTRUCTORS]):
        for start, end, body in _parts(source, d, 1):
            why = "constructor of the class of a called method"
            out.append(_evidence(d, start, end, body, score=1.25 - rank * 0.01, why=why))
    deeper = second
    for hop in range(3, 3 + min(explore, MAX_HOPS - 2)):  # later rounds: one hop more each
        deeper = _next_hop(source, files, deeper, names_done, seen, 4 * explore)
        for rank, d in enumerate(deeper):
            for start, end, body in _parts(source, d, 1):
                why = f"{hop - 1} calls below the test (later round)"
                out.append(_evidence(d, start, end, body, score=1.0 - hop / 10 - rank * 0.01, why=why))
    return out


def _evidence(d: _Def, start: int, end: int, body: str, *, score: float, why: str) -> Evidence:
    return Evidence(
        id=f"callee:{d.path}:{start}-{end}",
        source="code",
        path=d.path,
        start_line=start,
        end_line=end,
        text=body,
        symbol=d.name,
        score=round(score, 4),
        why=why,
    )


__all__ = [
    "PART_LINES",
    "block_end",
    "called_names",
    "callee_context",
    "enclosing_def",
    "function_window",
]
