"""What the attempt page shows of a repair trace, read defensively from JSON.

The full trace (:meth:`jobs.repair.trace.Trace.to_json`) and the summary stored with the attempt
(``attempts.trace``, written by :func:`jobs.repair_service.outcome_from_report`) are both plain
JSON from disk or the database: every field may be missing or of another type (an older or newer
ARCS, a truncated file). These functions never raise on bad input; they keep what they can read.
Long texts are cut (:data:`MAX_TEXT`) so one trace cannot make a page of megabytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_TEXT = 60_000
"""Characters kept of one diff, prompt or log."""
MAX_ITEMS = 200
"""Items kept of one list (evidence, hits, candidates, failing tests)."""


def _s(value: object, limit: int = MAX_TEXT) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def _i(value: object) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _f(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value[:MAX_ITEMS])
    return []


def _maps(value: object) -> list[Mapping[str, Any]]:
    return [v for v in _list(value) if isinstance(v, Mapping)]


def _strs(value: object) -> tuple[str, ...]:
    return tuple(_s(v, 2_000) for v in _list(value) if v is not None)


@dataclass(frozen=True, slots=True)
class RunView:
    """A test run: counts and the failing test ids."""

    passed: int
    failed: int
    errors: int
    failing: tuple[str, ...]
    command: str = ""
    exit_code: int | None = None
    timed_out: bool = False

    @property
    def text(self) -> str:
        """``3 passed, 1 failed`` style."""
        parts = [f"{self.passed} passed", f"{self.failed} failed"]
        if self.errors:
            parts.append(f"{self.errors} errors")
        if self.timed_out:
            parts.append("timed out")
        return ", ".join(parts)


def run_view(data: object) -> RunView | None:
    """A test outcome from a full trace (lists of ids) or a summary (counts + ``failing``)."""
    d = _map(data)
    if not d:
        return None

    def count(key: str) -> int:
        value = d.get(key)
        if isinstance(value, list | tuple):
            return len(value)
        return _i(value) or 0

    failing = _strs(d.get("failing")) or (_strs(d.get("failed")) + _strs(d.get("errors")))
    return RunView(
        passed=count("passed"),
        failed=count("failed"),
        errors=count("errors"),
        failing=failing[:MAX_ITEMS],
        command=_s(d.get("command"), 500),
        exit_code=_i(d.get("exit_code")),
        timed_out=bool(d.get("timed_out")),
    )


@dataclass(frozen=True, slots=True)
class GateView:
    """One quality gate's result."""

    gate: str
    passed: bool
    detail: str


def gates_view(data: object) -> tuple[GateView, ...]:
    """Gate results (``{gate, passed, detail}``)."""
    return tuple(
        GateView(_s(g.get("gate"), 100), bool(g.get("passed")), _s(g.get("detail"), 2_000))
        for g in _maps(data)
    )


@dataclass(frozen=True, slots=True)
class EvidenceView:
    """One evidence item or retrieval hit."""

    id: str
    source: str
    path: str
    start_line: int | None
    end_line: int | None
    symbol: str
    score: float | None
    why: str

    @property
    def location(self) -> str:
        """``path:start-end``."""
        if self.start_line is None:
            return self.path
        return (
            f"{self.path}:{self.start_line}-{self.end_line if self.end_line is not None else self.start_line}"
        )


def _evidence(e: Mapping[str, Any]) -> EvidenceView:
    reasons = e.get("reasons")
    why = _s(e.get("why"), 500) or ", ".join(_strs(reasons))
    return EvidenceView(
        id=_s(e.get("id"), 300),
        source=_s(e.get("source") or e.get("kind"), 50),
        path=_s(e.get("path"), 500),
        start_line=_i(e.get("start_line")),
        end_line=_i(e.get("end_line")),
        symbol=_s(e.get("symbol") or e.get("qualified_name"), 300),
        score=_f(e.get("score")),
        why=why,
    )


@dataclass(frozen=True, slots=True)
class QueryView:
    """One retrieval query and its hits."""

    formulation: str
    text: str
    hits: tuple[EvidenceView, ...]
    error: str


@dataclass(frozen=True, slots=True)
class CandidateView:
    """One candidate patch of a round."""

    id: str
    proposer: str
    variant: str
    explanation: str
    diff: str
    gates: tuple[GateView, ...]
    tests_passed: int | None
    submittable: bool
    duplicate_of: str
    error: str
    tokens: int
    usd: float
    targets: RunView | None
    full: RunView | None

    @property
    def status(self) -> str:
        """``submittable``, ``rejected by …``, the error, ``duplicate of …`` or ``not run``."""
        if self.duplicate_of:
            return f"same patch as {self.duplicate_of}"
        if self.submittable:
            return "submittable"
        rejected = [g.gate for g in self.gates if not g.passed]
        if rejected:
            return "rejected by " + ", ".join(rejected)
        return self.error or "not run"


def _usage(data: object) -> tuple[int, float]:
    u = _map(data)
    tokens = sum(
        _i(u.get(k)) or 0
        for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    )
    return tokens, _f(u.get("usd")) or 0.0


def _candidate(c: Mapping[str, Any]) -> CandidateView:
    tokens, usd = _usage(c.get("usage"))
    run = _map(c.get("run"))
    targets = run_view(run.get("targets"))
    full_raw = run.get("full")
    full = targets if full_raw == "targets" else run_view(full_raw)
    return CandidateView(
        id=_s(c.get("id"), 100),
        proposer=_s(c.get("proposer"), 100),
        variant=_s(c.get("variant"), 100),
        explanation=_s(c.get("explanation"), 5_000),
        diff=_s(c.get("diff")),
        gates=gates_view(c.get("gates")),
        tests_passed=_i(c.get("tests_passed")),
        submittable=bool(c.get("submittable")),
        duplicate_of=_s(c.get("duplicate_of"), 100),
        error=_s(c.get("error"), 2_000),
        tokens=tokens,
        usd=usd,
        targets=targets,
        full=full,
    )


@dataclass(frozen=True, slots=True)
class RoundView:
    """One round of the loop."""

    number: int
    """1-based."""
    tier: str
    phase: str
    plan_source: str
    subgoals: tuple[str, ...]
    evidence: tuple[EvidenceView, ...]
    queries: tuple[QueryView, ...]
    candidates: tuple[CandidateView, ...]
    proposer_errors: tuple[str, ...]
    feedback: str
    tokens: int
    usd: float
    spent_tokens: int | None
    spent_usd: float | None
    best_tests_passed: int | None
    best_candidate: str
    events: tuple[str, ...]
    prompt: str


def _round(i: int, r: Mapping[str, Any]) -> RoundView:
    plan = _map(r.get("plan"))
    retrieval = _map(r.get("retrieval"))
    queries = tuple(
        QueryView(
            formulation=_s(q.get("formulation"), 100),
            text=_s(q.get("text"), 2_000),
            hits=tuple(_evidence(h) for h in _maps(q.get("hits"))),
            error=_s(q.get("error"), 2_000),
        )
        for q in _maps(retrieval.get("queries"))
    )
    tokens, usd = _usage(r.get("usage"))
    spend = _map(r.get("spend_after"))
    index = _i(r.get("index"))
    return RoundView(
        number=(index if index is not None else i) + 1,
        tier=_s(r.get("tier"), 50),
        phase=_s(r.get("phase"), 50) or "repair",
        plan_source=_s(plan.get("source"), 50),
        subgoals=_strs(plan.get("subgoals")),
        evidence=tuple(_evidence(e) for e in _maps(r.get("evidence"))),
        queries=queries,
        candidates=tuple(_candidate(c) for c in _maps(r.get("candidates"))),
        proposer_errors=_strs(r.get("proposer_errors")),
        feedback=_s(_map(r.get("feedback")).get("summary"), 5_000),
        tokens=tokens,
        usd=usd,
        spent_tokens=_i(spend.get("tokens")),
        spent_usd=_f(spend.get("usd")),
        best_tests_passed=_i(r.get("best_tests_passed")),
        best_candidate=_s(r.get("best_candidate"), 100),
        events=_strs(r.get("events")),
        prompt=_s(r.get("prompt")),
    )


@dataclass(frozen=True, slots=True)
class BoundRow:
    """One budget dimension: bound, spend, held."""

    name: str
    budget: str
    spent: str
    held: bool


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


def trace_view(data: Mapping[str, Any]) -> TraceView:
    """A :class:`TraceView` of a ``Trace.to_json`` document (missing parts are empty)."""
    rep = _map(data.get("reproduction"))
    out = _map(data.get("outcome"))
    spend = _map(data.get("spend"))
    bound = tuple(
        BoundRow(
            _s(name, 50),
            _s(_map(row).get("budget"), 50),
            _s(_map(row).get("spent"), 50),
            bool(_map(row).get("held")),
        )
        for name, row in list(_map(data.get("bound")).items())[:20]
    )
    return TraceView(
        id=_s(data.get("id"), 200),
        created=_s(data.get("created"), 100),
        model=_s(data.get("model"), 200),
        proposer=_s(data.get("proposer"), 200),
        tier_requested=_s(data.get("tier_requested"), 50),
        tiers=_strs(data.get("tiers")),
        notices=_strs(data.get("notices")),
        reproduction_verdict=_s(rep.get("verdict"), 100),
        reproduction_reason=_s(rep.get("reason"), 5_000),
        tests_before=run_view(rep.get("baseline")),
        targets=_strs(rep.get("targets")),
        flaky=_strs(rep.get("flaky")),
        rounds=tuple(_round(i, r) for i, r in enumerate(_maps(data.get("rounds")))),
        verdict=_s(out.get("verdict"), 100),
        reason=_s(out.get("reason"), 5_000),
        fixed=bool(out.get("fixed")),
        chosen=_s(out.get("candidate"), 100),
        tests_after=run_view(out.get("tests_after")),
        gates=gates_view(out.get("gates")),
        tokens=_i(spend.get("tokens")),
        usd=_f(spend.get("usd")),
        executions=_i(spend.get("executions")),
        wall_s=_f(spend.get("wall_s")),
        bound=bound,
        verification=_verification(out.get("verification")),
        pre_existing=_strs(out.get("pre_existing")),
        diagnosis_command=_s(_map(data.get("commands")).get("diagnosis"), 2_000),
        verification_command=_s(_map(data.get("commands")).get("verification"), 2_000),
        toolchain=_s(_map(data.get("commands")).get("toolchain"), 1_000),
    )


def _verification(record: object) -> str:
    from jobs.repair.trace import verification_line

    data = _map(record)
    return _s(verification_line(data), 2_000) if data.get("command") else ""


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


def summary_view(data: Mapping[str, Any] | None) -> SummaryView | None:
    """A :class:`SummaryView` of ``attempts.trace`` (None when there is none)."""
    if not data:
        return None
    return SummaryView(
        trace_id=_s(data.get("trace_id"), 200),
        tests_before=run_view(data.get("tests_before")),
        tests_after=run_view(data.get("tests_after")),
        gates=gates_view(data.get("gates")),
        target_tests=_strs(data.get("target_tests")),
        tiers=_strs(data.get("tiers")),
        notices=_strs(data.get("notices")),
        candidates=_i(data.get("candidates")),
        executions=_i(data.get("executions")),
        duration_s=_f(data.get("duration_s")),
        failure_log=_s(data.get("failure_log"), 20_000),
    )


def first_lines(text: str, n: int = 1) -> str:
    """The first ``n`` non-empty lines of ``text``."""
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[:n])


__all__ = [
    "BoundRow",
    "CandidateView",
    "EvidenceView",
    "GateView",
    "QueryView",
    "RoundView",
    "RunView",
    "SummaryView",
    "TraceView",
    "first_lines",
    "run_view",
    "summary_view",
    "trace_view",
]
