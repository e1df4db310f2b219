"""One round's tool use: the call limit, the execution budget, the trace record, and replay.

The loop opens a :class:`ToolSession` per round when the tier allows tools
(:func:`round_tools`) and hands it to the proposer in
:attr:`~jobs.repair.ports.ProposalRequest.tools`. Every call the model makes goes through
:meth:`ToolSession.call`, which

* refuses calls past the round's limit (``TierConfig.tool_calls``, shared by the round's
  candidates) and ``run_tests`` when the budget has no execution left — with an error result the
  model can read, never an exception;
* counts executions on the run's :class:`~jobs.repair.meter.BudgetMeter` (the same
  ``Budget.executions`` candidates spend);
* appends one JSON record per call to :attr:`ToolSession.log` (the role that asked — ``planner``
  or ``proposer`` —, name, input, result text and size, executions, and the usage of the model
  turn that asked), which the loop stores in the round's ``tool_calls``.

The planner and the proposer of a round share its session (:class:`~jobs.repair.proposers.tooluse.
RoleTools`): the planner's calls come first and count in the same limit.

A call may be answered under a ``limit`` (the room the conversation has left in the proposer's
context budget, :func:`~jobs.repair.proposers.tooluse.converse`): the result is clipped to it
(whole lines, :func:`fit_result`) *before* it is recorded, so the log holds what the model read.

**Finds carry forward** (:func:`explored_evidence`): the code an ``open`` or ``symbol`` call
returned (path, line range, text, parsed back from the numbered result) becomes
:class:`~jobs.repair.model.Evidence` for the round's later rounds — the model's own exploration
says it matters. :func:`tool_evidence` ranks it at :data:`TOOL_SCORE` (above items carried for
having been shown, below the failure's own code) and leaves out lines the context already shows.
Both are pure functions of the recorded results, so a replay carries the same evidence.

Replay (``arcs replay``) serves the **recorded results, without re-executing** anything:
:class:`RecordedTools` answers each call that reached a tool with the recorded text, after
checking that the tool name and input are the recorded ones (else :class:`ToolReplayMismatch`).
The model requests that follow carry those results, so the LLM replay's fingerprints check the
rest of the conversation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from indexing.languages import is_test_path
from jobs.repair.llm import ToolResult, ToolSpec
from jobs.repair.model import Evidence, Usage
from jobs.repair.prompts import MAX_EVIDENCE_ITEM_CHARS
from jobs.repair.tools import EXECUTING_TOOLS, RepoToolBox, Searcher, ToolBox, clip, error
from jobs.repair.trace import ReplayMismatch

if TYPE_CHECKING:
    from jobs.repair.ports import SourceView
    from jobs.repair.state import RunState
    from jobs.repair.testruns import TestRuns
    from jobs.repair.trace import Trace
    from jobs.repair.workbench import TestOutcome, Workbench


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


class ToolSession:
    """The tools of one round, with their limit and budget (see the module docstring)."""

    def __init__(
        self,
        box: ToolBox,
        *,
        max_calls: int,
        execution_stop: Callable[[], str] = lambda: "",
        count_runs: Callable[[int], None] = lambda _n: None,
        result_chars: int = 8_000,
        context_chars: int | None = None,
    ) -> None:
        self.box = box
        self.result_chars = result_chars
        """The longest result a tool sends (what a turn keeps budget for)."""
        self.context_chars = context_chars
        """The largest request the conversation may send (the proposer's context budget; None:
        no cap). :func:`~jobs.repair.proposers.tooluse.converse` keeps every request under it."""
        self.max_calls = max_calls
        self.execution_stop = execution_stop
        self.count_runs = count_runs
        self._specs = box.specs()
        self.used = 0
        """Calls answered by a tool (refused ones are not counted)."""
        self.executions = 0
        self.log: list[dict[str, Any]] = []

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools offered."""
        return self._specs

    @property
    def calls_left(self) -> int:
        """Calls the round may still make."""
        return max(0, self.max_calls - self.used)

    def call(
        self,
        call_id: str,
        name: str,
        args: object,
        *,
        variant: str = "",
        turn: int = 0,
        usage: Usage | None = None,
        role: str = "proposer",
        final: str = "propose_patch",
        offered: frozenset[str] | None = None,
        limit: int | None = None,
    ) -> ToolResult:
        """Answer one call, or refuse it (limit, executions), and record it.

        ``role`` (``proposer``, ``planner``) is recorded with the call; ``final`` is the tool the
        refusals tell the model to call instead; ``offered`` (None: every tool of the box) are
        the tools ``role`` was offered — another name is answered as an unknown tool (a counted
        call, like any malformed one) without reaching the box. ``limit`` clips the result
        (:func:`fit_result`) before it is recorded."""
        refused = ""
        if self.calls_left <= 0:
            refused = "limit"
            result = error(
                f"tool call limit reached ({self.max_calls} per round): call {final} now"
                + (" with your patch" if final == "propose_patch" else "")
            )
        elif offered is not None and name not in offered:
            self.used += 1
            available = [s.name for s in self._specs if s.name in offered]
            result = error(f"unknown tool {name!r}; available: {', '.join([*available, final])}")
        elif (
            name in EXECUTING_TOOLS
            and any(s.name == name for s in self._specs)
            and (stop := self.execution_stop())
        ):
            refused = "executions"
            result = error(f"no test execution left in the budget ({stop}); call {final} now")
        else:
            self.used += 1
            result = self.box.call(name, args)
            if result.executions:
                self.count_runs(result.executions)
                self.executions += result.executions
        if limit is not None:
            result = replace(result, text=fit_result(result.text, limit))
        turn_usage = usage or Usage()
        self.log.append(
            {
                "role": role,
                "variant": variant,
                "turn": turn,
                "id": call_id,
                "name": name,
                "input": args,
                "ok": not result.is_error,
                "refused": refused,
                "result": result.text,
                "result_chars": len(result.text),
                "executions": result.executions,
                "turn_tokens": turn_usage.tokens,
                "turn_usd": turn_usage.usd,
            }
        )
        return result


class ToolReplayMismatch(ReplayMismatch):
    """A replayed run called a tool other than (or with other input than) the recorded call."""


class RecordedTools:
    """The recorded tool results of a trace, served in order (see the module docstring)."""

    def __init__(self, records: Iterable[Mapping[str, Any]]) -> None:
        self.records = [r for r in records if not r.get("refused")]
        self.position = 0

    @classmethod
    def of(cls, trace: Trace) -> RecordedTools:
        """Every round's answered tool calls, in order."""
        return cls(c for r in trace.rounds for c in r.tool_calls)

    @property
    def exhausted(self) -> bool:
        """Every recorded call was served."""
        return self.position >= len(self.records)

    def over(self, live: ToolBox) -> ToolBox:
        """A box offering ``live``'s tools that answers from the recording."""
        return _Recorded(live.specs(), self)

    def answer(self, name: str, args: object) -> ToolResult:
        """The next recorded result, if ``name``/``args`` are the recorded call."""
        index = self.position
        if index >= len(self.records):
            raise ToolReplayMismatch(f"tool call {index + 1} ({name}) was not recorded")
        record = self.records[index]
        if record.get("name") != name or _canonical(record.get("input")) != _canonical(args):
            raise ToolReplayMismatch(
                f"tool call {index + 1} differs: recorded {record.get('name')}({_canonical(record.get('input'))[:60]}), "
                f"replay asked {name}({_canonical(args)[:60]})"
            )
        self.position += 1
        return ToolResult(
            str(record.get("result", "")), not bool(record.get("ok", True)), int(record.get("executions", 0))
        )


class _Recorded:
    def __init__(self, specs: tuple[ToolSpec, ...], owner: RecordedTools) -> None:
        self._specs = specs
        self.owner = owner

    def specs(self) -> tuple[ToolSpec, ...]:
        return self._specs

    def call(self, name: str, args: object) -> ToolResult:
        return self.owner.answer(name, args)


def round_tools(
    *,
    calls: int,
    source: SourceView,
    retriever: Searcher | None,
    workbench: Workbench,
    runs: TestRuns,
    st: RunState,
    max_chars: int,
    replay: RecordedTools | None = None,
    context_chars: int | None = None,
) -> ToolSession | None:
    """The loop's session for one round (None when the tier allows no tool call): the real
    :class:`~jobs.repair.tools.RepoToolBox` over the loop's ports, or the recording on replay.
    ``context_chars`` caps every request of the conversation (:attr:`ToolSession.context_chars`)."""
    if calls <= 0:
        return None

    def run(selection: tuple[str, ...]) -> TestOutcome:
        return workbench.run_tests(None, select=list(selection), timeout_s=runs.timeout(st))

    box: ToolBox = RepoToolBox(source, retriever=retriever, run_tests=run, max_chars=max_chars)
    if replay is not None:
        box = replay.over(box)
    return ToolSession(
        box,
        max_calls=calls,
        execution_stop=st.meter.execution_stop,
        count_runs=st.meter.count_runs,
        result_chars=max_chars,
        context_chars=context_chars,
    )


CLIPPED_NOTE = "\n(clipped: the request's context budget is nearly used up)"


def fit_result(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: unchanged when it fits, else its first whole lines
    and a note (idempotent: a fitted text fits again, so replayed results are not clipped twice)."""
    if len(text) <= limit:
        return text
    room = limit - len(CLIPPED_NOTE)
    if room <= 0:
        return text[: max(0, limit)]
    kept, _ = clip(text.splitlines(), room)
    body = "\n".join(kept)[:room]
    return body + CLIPPED_NOTE


# --- finds carried forward ---------------------------------------------------------------------

TOOL_SCORE = 1.5
"""Score of code a tool call showed, in later rounds: above evidence carried only because it was
shown (at most ``feedback.CARRIED_SCORE``) and the second-hop callees, below the failure's own code
(``frame_context``: 2.0) and the direct callees of the failing test (1.9)."""
CARRIED_TOOLS = ("open", "symbol")
"""The tools whose results are code (``search`` snippets are retrieval's own chunks)."""

_OPEN_HEAD = re.compile(r"^(?P<path>\S+) lines \d+-\d+ of \d+")
_SYMBOL_HEAD = re.compile(r"^definition \S+ at (?P<path>\S+):\d+-\d+")
_NUMBERED = re.compile(r"^ *(?P<n>\d+)\| ?(?P<text>.*)$")


def shown_lines(name: str, text: str) -> list[tuple[str, int, str]]:
    """The (path, line, text) triples a successful ``open``/``symbol`` result shows, parsed back
    from its numbered lines (other tools, and the call sites ``symbol`` lists, show none)."""
    if name not in CARRIED_TOOLS:
        return []
    out: list[tuple[str, int, str]] = []
    path = ""
    for line in text.splitlines():
        head = _OPEN_HEAD.match(line) if name == "open" else _SYMBOL_HEAD.match(line)
        if head:
            path = head.group("path")
            continue
        numbered = _NUMBERED.match(line) if path else None
        if numbered is None:
            path = "" if name == "symbol" and not line.strip() else path
            continue
        out.append((path, int(numbered.group("n")), numbered.group("text")))
    return out


def explored_evidence(log: Iterable[Mapping[str, Any]], *, round_index: int) -> list[Evidence]:
    """The code the answered ``open``/``symbol`` calls of ``log`` showed, as evidence: per file,
    the shown lines merged into contiguous runs (split to at most ``MAX_EVIDENCE_ITEM_CHARS``),
    scored :data:`TOOL_SCORE`, in the order the calls found them. Deterministic in the log."""
    lines: dict[str, dict[int, str]] = {}
    for call in log:
        if call.get("refused") or not call.get("ok", True):
            continue
        for path, n, text in shown_lines(str(call.get("name", "")), str(call.get("result", ""))):
            lines.setdefault(path, {}).setdefault(n, text)
    return [
        item
        for path, shown in lines.items()
        for item in _runs(path, shown, why=f"the model opened it with a tool in round {round_index}")
    ]


def _runs(path: str, shown: Mapping[int, str], *, why: str) -> list[Evidence]:
    out: list[Evidence] = []
    run: list[int] = []
    size = 0
    for n in sorted(shown):
        cost = len(shown[n]) + 1
        if run and (n != run[-1] + 1 or size + cost > MAX_EVIDENCE_ITEM_CHARS):
            out.append(_item(path, run, shown, why))
            run, size = [], 0
        run.append(n)
        size += cost
    if run:
        out.append(_item(path, run, shown, why))
    return out


def _item(path: str, run: Sequence[int], shown: Mapping[int, str], why: str) -> Evidence:
    start, end = run[0], run[-1]
    return Evidence(
        id=f"tool:{path}:{start}-{end}",
        source="test" if is_test_path(path) else "code",
        path=path,
        start_line=start,
        end_line=end,
        text="\n".join(shown[n] for n in run),
        score=TOOL_SCORE,
        why=why,
    )


def merge_explored(old: Sequence[Evidence], new: Sequence[Evidence]) -> list[Evidence]:
    """The finds of every round so far: ``old`` then ``new``, their lines merged per file (a line
    keeps the text of its first find; a run keeps the ``why`` of its first line's find)."""
    lines: dict[str, dict[int, str]] = {}
    whys: dict[tuple[str, int], str] = {}
    for e in (*old, *new):
        for i, text in enumerate(e.text.split("\n")):
            n = e.start_line + i
            if n <= e.end_line and n not in lines.setdefault(e.path, {}):
                lines[e.path][n] = text
                whys[(e.path, n)] = e.why
    out: list[Evidence] = []
    for path, shown in lines.items():
        for item in _runs(path, shown, why=""):
            out.append(replace(item, why=whys[(path, item.start_line)]))
    return out


def tool_evidence(
    explored: Iterable[Evidence], current: Sequence[Evidence], *, budget_chars: int, floor: float = TOOL_SCORE
) -> list[Evidence]:
    """The earlier rounds' finds to show next to ``current``: the lines not already shown whole by
    an item of ``current`` that ranks at least ``floor`` (one that would be dropped before a find
    cannot stand in for it), newest finds first within ``budget_chars``, in discovery order."""
    covered: dict[str, set[int]] = {}
    for c in current:
        if c.score >= floor and len(c.text) <= MAX_EVIDENCE_ITEM_CHARS:
            covered.setdefault(c.path, set()).update(range(c.start_line, c.end_line + 1))
    pieces: list[Evidence] = []
    for e in explored:
        rows = e.text.split("\n")
        left = {
            e.start_line + i: t for i, t in enumerate(rows) if e.start_line + i not in covered.get(e.path, ())
        }
        pieces += [replace(p, score=e.score, why=e.why) for p in _runs(e.path, left, why=e.why)]
    kept: list[Evidence] = []
    size = 0
    for p in reversed(pieces):
        if size + len(p.text) > budget_chars:
            break
        kept.append(p)
        size += len(p.text)
    return kept[::-1]


__all__ = [
    "CARRIED_TOOLS",
    "TOOL_SCORE",
    "RecordedTools",
    "ToolReplayMismatch",
    "ToolSession",
    "explored_evidence",
    "fit_result",
    "merge_explored",
    "round_tools",
    "shown_lines",
    "tool_evidence",
]
