"""The exploring stand-in: a fixed, generic policy that uses the proposer's tools, then answers as the oracle.

:class:`ExplorerModel` is a ``dynamic`` reply function for :class:`tests.fakes.anthropic_server.
FakeAnthropicServer`, like :class:`bench.context.oracle_server.OracleModel`, for the tool-using
proposer of #15 (``jobs/repair/proposers/tooluse.py``). It measures what the active-retrieval tools
(``open``, ``search``, ``symbol``) *can* add to the passive context under a simple, fixed policy:

* **Looking** (:func:`next_calls`, a pure function of the request body — it is given no target
  lines and no fix, and :class:`ExplorerModel` calls it before it looks at them): while the
  request leaves the choice open (``tool_choice: any`` with ``propose_patch`` offered), it asks for
  the next :data:`PER_TURN` calls of :func:`candidates` not yet made in this conversation (at most
  the round's stated limit, ``The round allows N tool calls``); when none is left it proposes.
* **Answering**: ``propose_patch`` gets the true fix exactly when every target line is visible in
  the whole conversation — the loop's evidence blocks *and* the tool results
  (:func:`bench.context.visibility.visibility`) —, else the oracle's wrong edit. ``submit_plan``
  (also when offered with tools: the planner gets ``tool_choice: any``) gets the oracle's generic
  plan at once: the planner does not explore, the round's calls are left to the proposer.

The candidate order (:func:`candidates`; all from the request text, nothing else):

1. **Frames**: for each failure in order, its non-test stack frames innermost first, then its
   ``at path:line`` when not a test file; a frame whose line no evidence block or tool result shows
   gets ``symbol(function)`` when the function is named and its ``def`` is not visible, else
   ``open(path, line-40, line+40)``.
2. **Clipped definitions the tests call**: a visible non-test block that defines a name the failing
   tests' code calls and carries a condensing marker (``[... lines a-b not shown ...]``, ``[... n
   characters cut ...]``) gets ``open(path, end-149, end)``, its last :data:`TAIL` lines.
3. **Callees**: names called in the visible code of the failing tests (the test file's shown lines
   from the enclosing ``def`` to the frame line), then in the code of the functions those call
   (their blocks, and tool results inside their ranges), then in every other visible non-test
   block, in the order the blocks appear (the loop's ranking first, tool results after it), in
   textual order; bare and ``self.``/``cls.`` calls before other attribute calls; strings,
   docstrings and comments removed. A name counts only when its ``def``/``class``/``function`` is
   not visible, it is no Python builtin, keyword, dunder or method of the builtin containers; each
   becomes ``symbol(name)``.
4. **Search**: ``search(<the first failure's message>)`` when the message is more than the
   exception's type.

It never calls ``run_tests`` (it would spend an execution and shows no code).
"""

from __future__ import annotations

import builtins
import json
import keyword
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.context.oracle_server import LoggedRequest, OracleModel, request_text
from bench.context.visibility import Block, evidence_blocks, tool_blocks

if TYPE_CHECKING:
    from tests.fakes.anthropic_server import ErrorReply, Reply

PER_TURN = 2
"""Tool calls asked for in one turn (the results come back together)."""
WINDOW = 40
"""Lines either side of a frame line that ``open`` asks for."""

_FRAME = re.compile(r"^\s+(?P<path>[\w./-]+\.\w+):(?P<line>\d+) in (?P<func>[\w<>.]+)\s*$", re.M)
_AT = re.compile(r"^\s+at (?P<path>[\w./-]+\.\w+):(?P<line>\d+)\s*$", re.M)
_FAILURE = re.compile(r"^- (?P<test>\S+?): (?P<type>[\w.]+)\s*$", re.M)
_LIMIT = re.compile(r"The round allows (\d+) tool calls")
_DEF = re.compile(r"^\s*(?:async\s+def|def|class)\s+(\w+)|\bfunction\s+(\w+)", re.M)
_BARE_CALL = re.compile(r"(?:(?<![\w.])|\b(?:self|cls)\.)([A-Za-z_]\w*)\(")
_ATTR_CALL = re.compile(r"\.([A-Za-z_]\w*)\(")
_STRINGS = re.compile(r"(\"\"\"|\'\'\')[\s\S]*?\1|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|#[^\n]*")
_SKIP = (
    frozenset(dir(builtins))
    | frozenset(keyword.kwlist)
    | {n for t in (str, bytes, list, dict, set, tuple) for n in dir(t)}
    | {"self", "cls"}
)
"""Builtins, keywords and the methods of the builtin containers: never the repository's code."""
_CLIPPED = re.compile(r"^\s*\[\.\.\. (?:lines \d+-\d+ not shown|\d+ characters cut) \.\.\.\]", re.M)
"""The markers of a condensed evidence item (``jobs/repair/prompts``)."""
TAIL = 150
"""Lines of a clipped definition's tail that ``open`` asks for (about what one result shows)."""


def is_test_path(path: str) -> bool:
    """A test file by its name alone (``test``/``tests`` folders, ``test_*``, ``*_test``, ``conftest``,
    ``*.test.*``/``*.spec.*``)."""
    parts = path.lower().split("/")
    name = parts[-1]
    return (
        any(p in ("test", "tests", "testing", "__tests__") for p in parts[:-1])
        or name.startswith("test_")
        or name.rsplit(".", 1)[0].endswith("_test")
        or name == "conftest.py"
        or ".test." in name
        or ".spec." in name
    )


@dataclass(frozen=True)
class Failure:
    """One observed failure as the task lists it."""

    test: str
    type: str
    message: str
    frames: tuple[tuple[str, int, str], ...]
    """``(path, line, function)``, innermost last, as rendered."""
    at: tuple[str, int] | None


def failures(text: str) -> list[Failure]:
    """The failures of the task's ``Observed failures`` list (up to the next heading)."""
    start = text.find("Observed failures:")
    if start < 0:
        return []
    stop = text.find("\n# ", start)
    section = text[start : stop if stop > 0 else len(text)]
    heads = list(_FAILURE.finditer(section))
    out: list[Failure] = []
    for i, h in enumerate(heads):
        body = section[h.end() : heads[i + 1].start() if i + 1 < len(heads) else len(section)]
        lines = [ln.strip() for ln in body.split("\n") if ln.strip()]
        message = lines[0] if lines and not lines[0].startswith(("at ", "stack ")) else ""
        frames = tuple((m["path"], int(m["line"]), m["func"]) for m in _FRAME.finditer(body))
        at = _AT.search(body)
        out.append(
            Failure(h["test"], h["type"], message, frames, (at["path"], int(at["line"])) if at else None)
        )
    return out


def visible_blocks(text: str) -> list[Block]:
    """Evidence blocks, then tool-result blocks, in the order the request shows them."""
    return evidence_blocks(text) + tool_blocks(text)


def _covered(blocks: Sequence[Block], path: str, line: int) -> bool:
    return any(b.path == path and b.start <= line <= b.end for b in blocks)


def _defined(blocks: Sequence[Block]) -> set[str]:
    return {a or b for blk in blocks for a, b in _DEF.findall(blk.text)}


def _calls(text: str) -> list[str]:
    """Called names, bare and ``self.``/``cls.`` first (strings, docstrings and comments removed)."""
    text = _STRINGS.sub(" ", text)
    bare = [m.group(1) for m in _BARE_CALL.finditer(text)]
    attr = [m.group(1) for m in _ATTR_CALL.finditer(text)]
    return bare + [a for a in attr if a not in bare]


def _test_code(blocks: Sequence[Block], path: str, line: int) -> str:
    """The shown lines of a test frame's function: from the enclosing ``def`` to the frame line."""
    for b in blocks:
        if b.path == path and b.start <= line <= b.end:
            lines = b.text.split("\n")[: line - b.start + 1]
            starts = [i for i, ln in enumerate(lines) if re.match(r"\s*(?:async\s+)?def\s", ln)]
            return "\n".join(lines[starts[-1] if starts else 0 :])
    return ""


def candidates(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Every call the policy would make on this request, best first (see the module docstring)."""
    blocks = visible_blocks(text)
    defined = _defined(blocks)
    out: list[tuple[str, dict[str, Any]]] = []
    fails = failures(text)
    for f in fails:  # 1. frames
        spots = [(p, n, fn) for p, n, fn in reversed(f.frames) if not is_test_path(p)]
        if f.at and not is_test_path(f.at[0]):
            spots.append((f.at[0], f.at[1], ""))
        for path, line, func in spots:
            if _covered(blocks, path, line):
                continue
            name = func.rsplit(".", 1)[-1]
            if name.isidentifier() and name not in defined:
                out.append(("symbol", {"name": name}))
            else:
                out.append(("open", {"path": path, "start": max(1, line - WINDOW), "end": line + WINDOW}))
    names: list[str] = []  # 2. callees: of the tests, of what the tests call, of the rest
    for f in fails:
        for path, line, _ in f.frames:
            if is_test_path(path):
                names += _calls(_test_code(blocks, path, line))
    direct = set(names)
    spans = [
        (b.path, b.start, b.end)
        for b in blocks
        if not is_test_path(b.path) and direct & {x or y for x, y in _DEF.findall(b.text)}
    ]
    inner = [b for b in blocks if any(b.path == p and a <= b.start and b.end <= z for p, a, z in spans)]
    for b in inner:  # 1b. the unseen tail of a clipped definition the tests call
        if _CLIPPED.search(b.text) and any(b.path == p and (b.start, b.end) == (a, z) for p, a, z in spans):
            out.append(("open", {"path": b.path, "start": max(b.start, b.end - TAIL + 1), "end": b.end}))
    for b in inner:
        names += _calls(b.text)
    for b in blocks:
        if not is_test_path(b.path):
            names += _calls(b.text)
    for name in names:
        if name in _SKIP or name in defined or (name.startswith("__") and name.endswith("__")):
            continue
        out.append(("symbol", {"name": name}))
    if fails:  # 3. search
        first = fails[0]
        if first.message.strip() not in ("", first.type, first.type.rsplit(".", 1)[-1]):
            out.append(("search", {"query": first.message[:300]}))
    seen: set[str] = set()
    unique = []
    for name, args in out:
        key = name + json.dumps(args, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append((name, args))
    return unique


def _made(body: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls the assistant already made in this conversation."""
    made = []
    for message in body.get("messages") or ():
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for b in message.get("content") or ():
            if isinstance(b, dict) and b.get("type") == "tool_use":
                made.append((str(b.get("name")), dict(b.get("input") or {})))
    return made


def next_calls(body: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The calls to make on this request (empty: propose now). Reads the request body only."""
    offered = {str(t.get("name")) for t in body.get("tools") or () if isinstance(t, dict)}
    choice = body.get("tool_choice") or {}
    if not isinstance(choice, dict) or choice.get("type") != "any" or "propose_patch" not in offered:
        return []
    text = request_text(body)
    made = _made(body)
    limit = _LIMIT.search(text)
    left = (int(limit.group(1)) if limit else PER_TURN) - len(made)
    done = {n + json.dumps(a, sort_keys=True) for n, a in made}
    todo = [
        (n, a) for n, a in candidates(text) if n in offered and n + json.dumps(a, sort_keys=True) not in done
    ]
    return todo[: max(0, min(PER_TURN, left))]


@dataclass
class ExplorerModel(OracleModel):
    """Dynamic replies for one case (see the module docstring): the calls :func:`next_calls`
    decides, then the oracle's answer over the whole conversation."""

    def __call__(self, body: dict[str, Any]) -> Reply | ErrorReply:
        from tests.fakes.anthropic_server import Reply, ToolUse

        calls = next_calls(body)  # decided before the targets are looked at
        text = request_text(body)
        if calls:
            names = ",".join(n for n, _ in calls)
            self._log(LoggedRequest("explore", len(text), text, None, f"tools:{names}"))
            uses = tuple(ToolUse(n, a) for n, a in calls)
            return Reply(tool_uses=uses, output_tokens=20 * len(calls))
        return self.answer(body, text, who="explorer")


__all__ = [
    "PER_TURN",
    "WINDOW",
    "ExplorerModel",
    "Failure",
    "candidates",
    "failures",
    "is_test_path",
    "next_calls",
]
