"""Active retrieval tools for the model (issue #15, seed 003 ARKS): look around before proposing.

The :class:`ToolBox` port answers one tool call at a time; :class:`RepoToolBox` is the real one,
pure over the loop's own ports:

* ``open(path, start, end)`` — a line-numbered window of a repository file (clipped to
  ``max_lines`` lines and ``max_chars`` characters; the path is normalized and refused when it
  is absolute, escapes the repository or names ``.git``);
* ``search(query)`` — the repository's index through the loop's :class:`Retriever` port;
* ``symbol(name)`` — definitions (tree-sitter, :mod:`jobs.repair.tier0.symbols`) and call sites;
* ``run_tests(selection)`` — the selected tests on the base tree through the
  :class:`~jobs.repair.workbench.Workbench` (the sandbox); one ``Budget.executions`` each.

A tool never raises for bad input: unknown tools, bad arguments and refused paths are a
:class:`ToolResult` with ``is_error`` (sent back to the model as an error ``tool_result``). The
budget, the call limit, the trace record and replay live in :mod:`jobs.repair.tools_session`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from jobs.repair.llm import ToolResult, ToolSpec
from jobs.repair.model import normalize_repo_path
from jobs.repair.ports import SourceView
from jobs.repair.task import sanitize_untrusted

if TYPE_CHECKING:
    from indexing.model import Query, SearchHit
    from jobs.repair.tier0.symbols import SymbolTable
    from jobs.repair.workbench import TestOutcome

EXECUTING_TOOLS = frozenset({"run_tests"})
"""Tools that run the sandbox (each call costs ``Budget.executions``)."""
DEFAULT_LINES = 150
MAX_CALLERS = 15
MAX_SELECTION = 20


@runtime_checkable
class ToolBox(Protocol):
    """The tools offered to the model next to ``propose_patch``."""

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools available (their JSON schemas are sent with every request)."""
        ...

    def call(self, name: str, args: object) -> ToolResult:
        """Answer one call; never raises for the model's mistakes (an error result instead)."""
        ...


class Searcher(Protocol):
    """The retrieval port (``jobs.repair.loop.Retriever`` conforms)."""

    def search(self, query: Query) -> list[SearchHit]:
        """Flat ranked search over chunks."""
        ...


TestsFn = Callable[[tuple[str, ...]], "TestOutcome"]
"""Runs the selected test ids on the base tree (one sandboxed execution)."""

OPEN = ToolSpec(
    name="open",
    description=(
        "Show lines start..end of a repository file, numbered (the numbers and the '| ' are not part "
        "of the file; quote file text exactly in propose_patch). Long ranges are clipped."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Repository-relative path, forward slashes."},
            "start": {"type": "integer", "minimum": 1, "description": "First line (1-based; default 1)."},
            "end": {"type": "integer", "minimum": 1, "description": "Last line (inclusive)."},
        },
        "required": ["path"],
    },
)
SEARCH = ToolSpec(
    name="search",
    description="Search the repository's code index (identifiers, error text, behaviour); ranked snippets.",
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What to look for."}},
        "required": ["query"],
    },
)
SYMBOL = ToolSpec(
    name="symbol",
    description="Where a function, method or class is defined (its code) and where it is called.",
    input_schema={
        "type": "object",
        "properties": {"name": {"type": "string", "description": "Simple name, e.g. parse_date."}},
        "required": ["name"],
    },
)
RUN_TESTS = ToolSpec(
    name="run_tests",
    description=(
        "Run the selected tests on the current (unpatched) code in the sandbox and show the outcome. "
        "Costs one test execution of the repair budget."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "selection": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": MAX_SELECTION,
                "description": "Test ids as the failure output names them.",
            }
        },
        "required": ["selection"],
    },
)


def error(text: str) -> ToolResult:
    """An error result (sent as ``is_error``)."""
    return ToolResult(text, is_error=True)


def numbered(lines: Sequence[str], first: int) -> list[str]:
    """``  12| text`` lines starting at line ``first``."""
    return [f"{first + i:>5}| {line}" for i, line in enumerate(lines)]


def clip(lines: Sequence[str], max_chars: int) -> tuple[list[str], int]:
    """Whole lines while they fit ``max_chars``; (kept, how many were dropped)."""
    kept: list[str] = []
    size = 0
    for line in lines:
        size += len(line) + 1
        if size > max_chars and kept:
            break
        kept.append(line[:max_chars])
    return kept, len(lines) - len(kept)


def _args(args: object, tool: str) -> tuple[Mapping[str, object] | None, str]:
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return None, f"{tool}: the arguments are a string that is not JSON"
    if not isinstance(args, Mapping):
        return None, f"{tool}: the arguments must be an object, got {type(args).__name__}"
    return args, ""


def _line(value: object, default: int) -> int | None:
    if value is None:
        return default
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


class RepoToolBox:
    """The real :class:`ToolBox` over a :class:`SourceView`, the retrieval port (optional: no
    ``search`` without it) and a test runner (optional: no ``run_tests`` without it)."""

    def __init__(
        self,
        source: SourceView,
        *,
        retriever: Searcher | None = None,
        run_tests: TestsFn | None = None,
        max_chars: int = 8_000,
        max_lines: int = 200,
        k: int = 5,
    ) -> None:
        self.source = source
        self.retriever = retriever
        self.run_tests = run_tests
        self.max_chars = max_chars
        self.max_lines = max_lines
        self.k = k
        self._table: SymbolTable | None = None

    def specs(self) -> tuple[ToolSpec, ...]:
        """``open`` and ``symbol`` always; ``search`` with a retriever; ``run_tests`` with a runner."""
        out = [OPEN]
        if self.retriever is not None:
            out.append(SEARCH)
        out.append(SYMBOL)
        if self.run_tests is not None:
            out.append(RUN_TESTS)
        return tuple(out)

    def call(self, name: str, args: object) -> ToolResult:
        """Dispatch one call (see the module docstring)."""
        available = [s.name for s in self.specs()]
        if name not in available:
            return error(f"unknown tool {name!r}; available: {', '.join(available)}, propose_patch")
        data, problem = _args(args, name)
        if data is None:
            return error(problem)
        if name == "open":
            return self.open(data.get("path"), data.get("start"), data.get("end"))
        if name == "search":
            return self.search(data.get("query"))
        if name == "symbol":
            return self.symbol(data.get("name"))
        return self.tests(data.get("selection"))

    # -- the tools ---------------------------------------------------------------------------

    def read(self, raw: object) -> tuple[str, list[str]] | ToolResult:
        """The normalized path and its lines, or the error result."""
        path = normalize_repo_path(raw)
        if path is None:
            return error(f"path {raw!r} is not a repository-relative path (no absolute paths, no '..')")
        if path == ".git" or path.startswith(".git/"):
            return error(f"{path}: the .git folder is not readable")
        text = self.source.read(path)
        if text is None:
            return error(f"{path}: no such (text) file in the repository")
        return path, text.splitlines()

    def open(self, raw_path: object, raw_start: object = None, raw_end: object = None) -> ToolResult:
        """A numbered window of a file."""
        got = self.read(raw_path)
        if isinstance(got, ToolResult):
            return got
        path, lines = got
        start = _line(raw_start, 1)
        if start is None:
            return error(f"open: start {raw_start!r} is not a line number")
        start = max(1, start)
        end = _line(raw_end, start + DEFAULT_LINES - 1)
        if end is None:
            return error(f"open: end {raw_end!r} is not a line number")
        if not lines:
            return ToolResult(f"{path}: empty file")
        if start > len(lines):
            return error(f"{path} has {len(lines)} lines; start {start} is past the end")
        end = min(max(start, end), len(lines), start + self.max_lines - 1)
        shown, dropped = clip(numbered(lines[start - 1 : end], start), self.max_chars)
        last = start + len(shown) - 1
        head = f"{path} lines {start}-{last} of {len(lines)}"
        if dropped or last < len(lines):
            head += f" (more: open with start={last + 1})"
        return ToolResult(head + "\n" + "\n".join(shown))

    def search(self, raw: object) -> ToolResult:
        """Ranked snippets from the index."""
        from indexing.model import Query

        if not isinstance(raw, str) or not raw.strip():
            return error("search: query must be a non-empty string")
        assert self.retriever is not None
        try:
            hits = self.retriever.search(Query(text=raw.strip()[:1000], k=self.k))
        except Exception as exc:  # the index's trouble is the model's information, not a crash
            return error(f"search failed: {type(exc).__name__}: {exc}")
        if not hits:
            return ToolResult(f"no results for {raw.strip()[:80]!r}")
        parts: list[str] = []
        budget = self.max_chars
        for hit in hits[: self.k]:
            c = hit.chunk
            symbol = f" ({c.qualified_name or c.symbol})" if (c.qualified_name or c.symbol) else ""
            body, _ = clip(numbered(c.text.splitlines(), c.start_line), max(200, budget // 2))
            part = f"{c.path}:{c.start_line}-{c.end_line}{symbol}\n" + "\n".join(body)
            if len(part) > budget and parts:
                break
            parts.append(part)
            budget -= len(part)
        return ToolResult("\n\n".join(parts))

    def symbol(self, raw: object) -> ToolResult:
        """Definitions (code) and callers of a name."""
        from jobs.repair.tier0.symbols import SymbolTable, closest

        if not isinstance(raw, str) or not raw.strip() or not raw.strip().replace(".", "_").isidentifier():
            return error(f"symbol: name {raw!r} is not an identifier")
        name = raw.strip().rsplit(".", 1)[-1]
        if self._table is None:
            self._table = SymbolTable.build(self.source)
        table = self._table
        spans = [(f.path, f.start_line, f.end_line, f.qualname) for f in table.functions_named(name)]
        spans += [(c.path, c.start_line, c.end_line, c.name) for c in table.classes_named(name)]
        callers = [
            (fn.path, call.line, fn.qualname)
            for fs in table.files.values()
            for fn in fs.functions
            for call in fn.calls
            if call.name == name
        ]
        if not spans and not callers:
            known = {fn.name for fs in table.files.values() for fn in fs.functions if fn.name}
            known |= {c.name for fs in table.files.values() for c in fs.classes}
            similar = closest(name, sorted(known))
            hint = f"; similar names: {', '.join(similar)}" if similar else ""
            return error(f"symbol: no definition or call of {name!r} found{hint}")
        out: list[str] = []
        budget = self.max_chars
        for path, start, end, qual in spans[:3]:
            lines = (self.source.read(path) or "").splitlines()
            stop = min(end, start + self.max_lines - 1)
            body, _ = clip(numbered(lines[start - 1 : stop], start), max(200, budget // 2))
            shown_to = start + len(body) - 1
            more = f" (clipped: open {path} with start={shown_to + 1} for the rest)" if shown_to < end else ""
            part = f"definition {qual} at {path}:{start}-{end}{more}\n" + "\n".join(body)
            budget -= len(part)
            out.append(part)
        if len(spans) > 3:
            out.append(f"({len(spans) - 3} more definitions not shown)")
        if callers:
            rows = []
            for path, line, qual in sorted(set(callers))[:MAX_CALLERS]:
                text = (self.source.read(path) or "").splitlines()
                code = text[line - 1].strip() if 0 < line <= len(text) else ""
                rows.append(f"  {path}:{line} in {qual}: {code[:160]}")
            extra = (
                f" (first {MAX_CALLERS} of {len(set(callers))})" if len(set(callers)) > MAX_CALLERS else ""
            )
            out.append(f"called from{extra}:\n" + "\n".join(rows))
        else:
            out.append("no call sites found")
        text, _ = clip("\n\n".join(out).splitlines(), self.max_chars)
        return ToolResult("\n".join(text))

    def tests(self, raw: object) -> ToolResult:
        """Run the selected tests on the base tree (one execution)."""
        assert self.run_tests is not None
        if isinstance(raw, str):
            raw = [raw]
        if (
            not isinstance(raw, list)
            or not raw
            or len(raw) > MAX_SELECTION
            or not all(isinstance(x, str) and x.strip() for x in raw)
        ):
            return error(f"run_tests: selection must be a list of 1 to {MAX_SELECTION} test ids")
        selection = tuple(str(x).strip() for x in raw)
        try:
            outcome = self.run_tests(selection)
        except Exception as exc:  # a crashed run is an observed result, and it was an execution
            return ToolResult(f"the test run crashed: {type(exc).__name__}: {exc}", True, executions=1)
        return ToolResult(render_outcome(outcome, self.max_chars), executions=1)


def render_outcome(outcome: TestOutcome, max_chars: int) -> str:
    """A test outcome as the model reads it: the summary, then each failure with its frames."""
    lines = [f"{outcome.summary()}" + ("" if outcome.selected else " (the whole suite ran)")]
    if outcome.environment:
        lines.append(f"environment: {outcome.environment}")
    for f in outcome.failures:
        where = f" at {f.path}:{f.line}" if f.path else ""
        message = sanitize_untrusted(f.message, limit=max_chars)  # test output: plain text
        lines.append(f"FAILED {f.test_id}{where}: {f.type}: {message}".rstrip(": "))
        lines += [f"    {fr.path}:{fr.line} in {fr.function}" for fr in f.frames]
    kept, dropped = clip(lines, max_chars)
    return "\n".join(kept) + (f"\n({dropped} more lines)" if dropped else "")


__all__ = [
    "EXECUTING_TOOLS",
    "OPEN",
    "RUN_TESTS",
    "SEARCH",
    "SYMBOL",
    "RepoToolBox",
    "Searcher",
    "TestsFn",
    "ToolBox",
    "clip",
    "error",
    "numbered",
    "render_outcome",
]
