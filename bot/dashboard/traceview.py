"""What the attempt page shows of a repair trace and of the result stored with the attempt.

Reading is :mod:`jobs.repair.trace_read` (tolerant, version-aware, bounded strings: it never
raises on bad input and keeps what it can read) and :meth:`jobs.repair.report.RepairReport.from_json`
(both stored shapes of ``attempts.trace``); this module only arranges what the page shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobs.repair import trace_read
from jobs.repair.report import RepairReport
from jobs.repair.trace_parts import ChangeDoc, ToolCallDoc, turn_totals
from jobs.repair.trace_read import MAX_ITEMS, MAX_TEXT, TraceDoc

RunView = trace_read.TestTally
"""A test run: counts, the failing test ids, the command (``.text``: ``3 passed, 1 failed``)."""
GateView = trace_read.GateRecord
EvidenceView = trace_read.EvidenceDoc
QueryView = trace_read.QueryDoc
CandidateView = trace_read.CandidateDoc
RoundView = trace_read.RoundDoc
"""A round; ``.tool_calls`` are the model's tool calls (:func:`tool_totals` sums their turns)."""
ToolCallView = ToolCallDoc
BoundRow = trace_read.BoundDoc


def run_view(data: object) -> RunView | None:
    """A test outcome from a full trace (lists of ids) or a summary (counts + ``failing``)."""
    return trace_read.TestTally.read(data)


@dataclass(frozen=True, slots=True)
class TraceView:
    """The parts of a full trace the attempt page shows."""

    id: str
    created: str
    model: str
    proposer: str
    tier_requested: str
    tiers: tuple[str, ...]
    notices: tuple[str, ...]
    reproduction_verdict: str
    reproduction_reason: str
    tests_before: RunView | None
    targets: tuple[str, ...]
    flaky: tuple[str, ...]
    rounds: tuple[RoundView, ...]
    verdict: str
    reason: str
    fixed: bool
    chosen: str
    tests_after: RunView | None
    gates: tuple[GateView, ...]
    tokens: int | None
    usd: float | None
    executions: int | None
    wall_s: float | None
    bound: tuple[BoundRow, ...]
    verification: str = ""
    """The final run of the exact test command, in words ('' when none ran)."""
    pre_existing: tuple[str, ...] = ()
    """``partial``: the tests that still fail and already failed before the change."""
    diagnosis_command: str = ""
    verification_command: str = ""
    toolchain: str = ""
    changes: ChangeDoc | None = None
    """The change since the last green run (``repo["changes"]``), None when not recorded."""


@dataclass(frozen=True, slots=True)
class ToolTotals:
    """A round's tool calls in numbers: calls, refused, test runs, and the model turns' tokens/cost."""

    calls: int
    refused: int
    executions: int
    result_chars: int
    tokens: int
    usd: float


def tool_totals(calls: tuple[ToolCallView, ...]) -> ToolTotals:
    """The totals of a round's tool calls (each model turn's tokens and cost counted once)."""
    tokens, usd = turn_totals(calls)
    return ToolTotals(
        calls=len(calls),
        refused=sum(1 for c in calls if c.refused),
        executions=sum(c.executions for c in calls),
        result_chars=sum(c.result_chars for c in calls),
        tokens=tokens,
        usd=usd,
    )


def trace_view(data: Mapping[str, Any]) -> TraceView:
    """A :class:`TraceView` of a ``Trace.to_json`` document (missing parts are empty)."""
    doc = TraceDoc.read(data)
    rep, out, spend = doc.reproduction, doc.outcome, doc.spend
    commands = doc.commands or trace_read.Commands()
    return TraceView(
        id=doc.id,
        created=doc.created,
        model=doc.model,
        proposer=doc.proposer,
        tier_requested=doc.tier_requested,
        tiers=doc.tiers,
        notices=doc.notices,
        reproduction_verdict=rep.verdict,
        reproduction_reason=rep.reason,
        tests_before=rep.baseline,
        targets=rep.targets,
        flaky=rep.flaky,
        rounds=doc.rounds,
        verdict=out.verdict,
        reason=out.reason,
        fixed=out.fixed,
        chosen=out.candidate,
        tests_after=out.tests_after,
        gates=out.gates,
        tokens=spend.tokens,
        usd=spend.usd,
        executions=spend.executions,
        wall_s=spend.wall_s,
        bound=doc.bound,
        verification=out.verification.line() if out.verification is not None else "",
        pre_existing=out.pre_existing,
        diagnosis_command=commands.diagnosis,
        verification_command=commands.verification,
        toolchain=commands.toolchain,
        changes=doc.changes,
    )


@dataclass(frozen=True, slots=True)
class SummaryView:
    """The trace summary stored with the attempt (shown when the full trace cannot be read)."""

    trace_id: str
    tests_before: RunView | None
    tests_after: RunView | None
    gates: tuple[GateView, ...]
    target_tests: tuple[str, ...]
    tiers: tuple[str, ...]
    notices: tuple[str, ...]
    candidates: int | None
    executions: int | None
    duration_s: float | None
    failure_log: str


def stored_report(data: Mapping[str, Any] | None) -> RepairReport | None:
    """The result stored with the attempt (``attempts.trace``), None when absent or unreadable."""
    if not data:
        return None
    try:
        return RepairReport.from_json(data)
    except ValueError:
        return None


def summary_view(data: Mapping[str, Any] | RepairReport | None) -> SummaryView | None:
    """A :class:`SummaryView` of ``attempts.trace`` or of its report already read (None when
    there is none or it is unreadable)."""
    report = data if isinstance(data, RepairReport) else stored_report(data)
    if report is None:
        return None
    return SummaryView(
        trace_id=report.trace_id,
        tests_before=report.tests_before,
        tests_after=report.tests_after,
        gates=report.gates,
        target_tests=report.target_tests,
        tiers=report.tiers,
        notices=report.notices,
        candidates=report.candidates,
        executions=report.spend.executions,
        duration_s=report.spend.wall_s,
        failure_log=report.failure_log,
    )


def first_lines(text: str, n: int = 1) -> str:
    """The first ``n`` non-empty lines of ``text``."""
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[:n])


__all__ = [
    "MAX_ITEMS",
    "MAX_TEXT",
    "BoundRow",
    "CandidateView",
    "EvidenceView",
    "GateView",
    "QueryView",
    "RoundView",
    "RunView",
    "SummaryView",
    "ToolCallView",
    "ToolTotals",
    "TraceView",
    "first_lines",
    "run_view",
    "stored_report",
    "summary_view",
    "tool_totals",
    "trace_view",
]
