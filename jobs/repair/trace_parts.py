"""The model's tool calls and the change since the last green run, read tolerantly from a trace (pure).

Parts of :class:`jobs.repair.trace_read.TraceDoc`: a round's ``tool_calls`` (the
:class:`jobs.repair.tools_session.ToolSession` log, issue #15) as :class:`ToolCallDoc`, and the
trace's ``repo["changes"]`` record (:func:`jobs.culprit.after_loop`, issue #14: the range, its
commits, the bisection's probes, the culprit and the revert) as :class:`ChangeDoc`. Like the rest
of the reader they never raise: traces written before these fields existed read as ``()`` / None,
malformed entries are skipped or read as their defaults, and every string is bounded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobs.repair.trace_values import integer, items, mapping, maps, number, text, texts

MAX_TOOL_INPUT = 2_000
"""Characters kept of one tool call's input (as compact JSON)."""
MAX_TOOL_RESULT = 8_000
"""Characters kept of one tool call's result (the session's default result bound)."""
ARGUMENTS_CHARS = 160
"""Characters of :attr:`ToolCallDoc.arguments` (the one-line form a table shows)."""


def _compact(value: object) -> str:
    """``value`` as one line of JSON (sorted keys), a string as itself."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # a mapping with mixed key types
        return str(value)


def _sha(value: object) -> str:
    return text(value, 64).strip()


@dataclass(frozen=True, slots=True)
class ToolCallDoc:
    """One tool call the model made in a round, as the tool session logged it."""

    name: str
    input: str
    """The call's input as compact JSON (at most :data:`MAX_TOOL_INPUT` characters)."""
    ok: bool = True
    refused: str = ""
    """Why the session refused the call without running it (``limit``, ``executions``), else ''."""
    result: str = ""
    result_chars: int = 0
    """The size of the whole result the model got (the text here may be cut)."""
    executions: int = 0
    """Test runs the call made."""
    variant: str = ""
    turn: int | None = None
    id: str = ""
    turn_tokens: int = 0
    """Tokens of the model turn that asked for the call (shared by the calls of one turn)."""
    turn_usd: float = 0.0
    role: str = "proposer"
    """The role whose conversation made the call: ``proposer`` or ``planner`` (traces from
    before the planner had tools record none: their calls are the proposer's)."""

    @property
    def arguments(self) -> str:
        """The input on one line, cut to :data:`ARGUMENTS_CHARS` characters."""
        line = " ".join(self.input.split())
        return line if len(line) <= ARGUMENTS_CHARS else line[: ARGUMENTS_CHARS - 1] + "…"

    @property
    def status(self) -> str:
        """``ok``, ``error`` or ``refused (<why>)``."""
        if self.refused:
            return f"refused ({self.refused})"
        return "ok" if self.ok else "error"

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> ToolCallDoc:
        """From one entry of a round's ``tool_calls``."""
        refused = d.get("refused")
        refused_text = text(refused, 100) if isinstance(refused, str) else ("refused" if refused else "")
        result = d.get("result")
        result_chars = integer(d.get("result_chars"))
        return cls(
            name=text(d.get("name"), 100),
            input=text(_compact(d.get("input", "")), MAX_TOOL_INPUT),
            ok=bool(d.get("ok", not refused_text)),
            refused=refused_text,
            result=text(result, MAX_TOOL_RESULT),
            result_chars=max(result_chars if result_chars is not None else len(text(result)), 0),
            executions=max(integer(d.get("executions")) or 0, 0),
            variant=text(d.get("variant"), 100),
            turn=integer(d.get("turn")),
            id=text(d.get("id"), 200),
            turn_tokens=max(integer(d.get("turn_tokens")) or 0, 0),
            turn_usd=max(number(d.get("turn_usd")) or 0.0, 0.0),
            role=(text(role, 40).strip() if isinstance(role := d.get("role"), str) else "") or "proposer",
        )

    @classmethod
    def read_all(cls, data: object) -> tuple[ToolCallDoc, ...]:
        """The calls of a round's ``tool_calls`` (entries that are not mappings are skipped)."""
        return tuple(cls.read(c) for c in maps(data))


def turn_totals(calls: tuple[ToolCallDoc, ...]) -> tuple[int, float]:
    """Tokens and USD of the model turns that made ``calls`` (each turn once)."""
    seen: dict[tuple[str, str, int | None], tuple[int, float]] = {}
    for c in calls:
        seen.setdefault((c.role, c.variant, c.turn), (c.turn_tokens, c.turn_usd))
    return sum(t for t, _ in seen.values()), sum(u for _, u in seen.values())


@dataclass(frozen=True, slots=True)
class CommitDoc:
    """One commit of the range."""

    sha: str
    title: str = ""
    author: str = ""

    @property
    def short(self) -> str:
        """The abbreviated sha (7 characters)."""
        return self.sha[:7]


@dataclass(frozen=True, slots=True)
class CulpritDoc:
    """The first bad commit, as recorded (see :class:`jobs.repair.report.Culprit`)."""

    sha: str
    title: str = ""
    author: str = ""
    found_by: str = ""
    """``bisect`` or ``single_commit``."""
    runs: int = 0
    """Test runs the bisection spent."""

    @property
    def short(self) -> str:
        """The abbreviated sha (7 characters)."""
        return self.sha[:7]

    @classmethod
    def read(cls, data: object) -> CulpritDoc | None:
        """The record, or None (no mapping, or no sha)."""
        d = mapping(data)
        sha = _sha(d.get("sha"))
        if not sha:
            return None
        return cls(
            sha=sha,
            title=text(d.get("title"), 500),
            author=text(d.get("author"), 200),
            found_by=text(d.get("found_by"), 50),
            runs=max(integer(d.get("runs")) or 0, 0),
        )


@dataclass(frozen=True, slots=True)
class BisectDoc:
    """The bisection over the range: its status, the probed commits and their answers."""

    status: str
    culprit: str = ""
    suspects: tuple[str, ...] = ()
    probes: tuple[tuple[str, str], ...] = ()
    """``(sha, pass|fail|flaky|skip)`` in the order they ran."""

    @classmethod
    def read(cls, data: object) -> BisectDoc | None:
        """The record, or None when there is none."""
        d = mapping(data)
        if not d:
            return None
        probes: list[tuple[str, str]] = []
        for p in items(d.get("probes")):
            if isinstance(p, Mapping):
                sha, outcome = p.get("sha"), p.get("outcome")
            elif isinstance(p, list | tuple) and len(p) >= 2:
                sha, outcome = p[0], p[1]
            else:
                continue
            if _sha(sha):
                probes.append((_sha(sha), text(outcome, 20)))
        return cls(
            status=text(d.get("status"), 50),
            culprit=_sha(d.get("culprit")),
            suspects=texts(d.get("suspects"), 64),
            probes=tuple(probes),
        )


@dataclass(frozen=True, slots=True)
class RevertDoc:
    """The revert of the culprit the run tried: which commit, and whether it passed verification."""

    sha: str
    passed: bool = False


@dataclass(frozen=True, slots=True)
class ChangeDoc:
    """The change since the last green run (``repo["changes"]``) and what was found in it."""

    base: str = ""
    head: str = ""
    commits: tuple[CommitDoc, ...] = ()
    files: tuple[str, ...] = ()
    truncated: bool = False
    source: str = ""
    """Where the range came from (the plan's change note), in words."""
    bisect: BisectDoc | None = None
    culprit: CulpritDoc | None = None
    revert: RevertDoc | None = None

    @property
    def line(self) -> str:
        """``abc1234..def5678, 3 commits, 4 files`` (as :func:`jobs.culprit.changes_line`)."""

        def n(count: int, word: str) -> str:
            return f"{count} {word}" + ("" if count == 1 else "s")

        line = f"{self.base[:7]}..{self.head[:7]}, {n(len(self.commits), 'commit')}, {n(len(self.files), 'file')}"
        return line + (" (truncated)" if self.truncated else "")

    @classmethod
    def read(cls, data: object) -> ChangeDoc | None:
        """The record, or None when the trace has none (no mapping, or neither range nor commits)."""
        d = mapping(data)
        commits = tuple(
            CommitDoc(_sha(c.get("sha")), text(c.get("title"), 500), text(c.get("author"), 200))
            for c in maps(d.get("commits"))
            if _sha(c.get("sha"))
        )
        base, head = _sha(d.get("base")), _sha(d.get("head"))
        if not (base or head or commits):
            return None
        revert = mapping(d.get("revert"))
        return cls(
            base=base,
            head=head,
            commits=commits,
            files=texts(d.get("files"), 500),
            truncated=bool(d.get("truncated")),
            source=text(d.get("source"), 1_000),
            bisect=BisectDoc.read(d.get("bisect")),
            culprit=CulpritDoc.read(d.get("culprit")),
            revert=RevertDoc(_sha(revert.get("sha")), bool(revert.get("passed")))
            if _sha(revert.get("sha"))
            else None,
        )


__all__ = [
    "ARGUMENTS_CHARS",
    "MAX_TOOL_INPUT",
    "MAX_TOOL_RESULT",
    "BisectDoc",
    "ChangeDoc",
    "CommitDoc",
    "CulpritDoc",
    "RevertDoc",
    "ToolCallDoc",
    "turn_totals",
]
