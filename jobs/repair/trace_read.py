"""One reader of trace JSON: tolerant, version-aware, with bounded strings (pure).

A trace (``Trace.to_json``) and the result stored with an attempt (:mod:`jobs.repair.report`)
come back as plain JSON from disk or the database, written by an older or newer ARCS, or cut
short. :meth:`TraceDoc.read` never raises: a missing or mistyped field reads as its default and
long texts are cut (:data:`MAX_TEXT`), so one document cannot make a page of megabytes. The
dashboard shows a :class:`TraceDoc`; :func:`jobs.repair.trace.load_trace` (strict, for replay)
checks the header with :func:`check_header` before parsing every record; the small values here
(:class:`TestTally`, :class:`GateRecord`, :class:`Verification`, :class:`Commands`,
:class:`Interruption`) are also the fields of :class:`jobs.repair.report.RepairReport`. A round's
tool calls and the trace's change since the last green run are read by :mod:`jobs.repair.trace_parts`;
the tolerant primitives (:func:`text`, :func:`integer`, …) live in :mod:`jobs.repair.trace_values`
and are re-exported here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobs.repair.trace_parts import ChangeDoc, ToolCallDoc
from jobs.repair.trace_values import MAX_ITEMS, MAX_TEXT, integer, items, mapping, maps, number, text, texts

if TYPE_CHECKING:
    from jobs.repair.workbench import TestOutcome

FORMAT = "arcs-trace"
TRACE_VERSION = 1
"""Bumped when a field of the trace changes meaning; :func:`check_header` refuses newer ones."""
MAX_LISTED_TESTS = 50
"""Failing test ids a :class:`TestTally` built from a test run keeps."""

# --- strict header (replay) ----------------------------------------------------------------------


def parse_json(document: str) -> Any:
    """``json.loads`` with the trace's error message (ValueError)."""
    try:
        return json.loads(document)
    except json.JSONDecodeError as exc:
        raise ValueError(f"trace is not JSON: {exc}") from exc


def check_header(data: object) -> int:
    """The version of a trace document; ValueError for another format or a newer version."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise ValueError("not an ARCS trace (missing format: arcs-trace)")
    version = data.get("version")
    if not isinstance(version, int) or version < 1 or version > TRACE_VERSION:
        raise ValueError(f"unsupported trace version {version!r} (this ARCS reads up to {TRACE_VERSION})")
    return version


# --- small values ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TestTally:
    """A test run in numbers: counts, the failing ids, and (when known) the command and its exit."""

    __test__ = False  # not a pytest class

    passed: int
    failed: int
    errors: int
    failing: tuple[str, ...] = ()
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

    @classmethod
    def of(cls, outcome: TestOutcome | None) -> TestTally | None:
        """The tally of a test run (the first :data:`MAX_LISTED_TESTS` failing ids)."""
        if outcome is None:
            return None
        return cls(
            passed=len(outcome.passed),
            failed=len(outcome.failed),
            errors=len(outcome.errors),
            failing=(*outcome.failed, *outcome.errors)[:MAX_LISTED_TESTS],
            command=outcome.command,
            exit_code=outcome.exit_code,
            timed_out=outcome.timed_out,
        )

    @classmethod
    def read(cls, data: object) -> TestTally | None:
        """A tally from a full trace's run (lists of ids) or a summary (counts + ``failing``)."""
        d = mapping(data)
        if not d:
            return None

        def count(key: str) -> int:
            value = d.get(key)
            if isinstance(value, list | tuple):
                return len(value)
            return integer(value) or 0

        failing = texts(d.get("failing")) or (texts(d.get("failed")) + texts(d.get("errors")))
        return cls(
            passed=count("passed"),
            failed=count("failed"),
            errors=count("errors"),
            failing=failing[:MAX_ITEMS],
            command=text(d.get("command"), 500),
            exit_code=integer(d.get("exit_code")),
            timed_out=bool(d.get("timed_out")),
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping (read back by :meth:`read`)."""
        return {
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "failing": list(self.failing),
            "command": self.command,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
        }


@dataclass(frozen=True, slots=True)
class GateRecord:
    """One quality gate's result."""

    gate: str
    passed: bool
    detail: str = ""

    @classmethod
    def read_all(cls, data: object) -> tuple[GateRecord, ...]:
        """Gate results (``[{gate, passed, detail}]``)."""
        return tuple(
            cls(text(g.get("gate"), 100), bool(g.get("passed")), text(g.get("detail"), 2_000))
            for g in maps(data)
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {"gate": self.gate, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Verification:
    """The final verification run of the returned candidate: the exact test command on the
    patched tree (recorded by the loop in the trace's outcome)."""

    command: str
    exit_code: int | None = None
    duration_s: float = 0.0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    timed_out: bool = False
    passed_verification: bool = False
    candidate: str = ""
    timeout_s: float | None = None
    pre_existing: tuple[str, ...] = ()
    new_failures: tuple[str, ...] = ()

    @classmethod
    def read(cls, data: object) -> Verification | None:
        """The record, or None when there is none (no mapping, or no command)."""
        d = mapping(data)
        if not d or not d.get("command"):
            return None

        def count(key: str) -> int:
            value = d.get(key)
            return len(value) if isinstance(value, list | tuple) else integer(value) or 0

        return cls(
            command=text(d.get("command"), 2_000),
            exit_code=integer(d.get("exit_code")),
            duration_s=number(d.get("duration_s")) or 0.0,
            passed=count("passed"),
            failed=count("failed"),
            errors=count("errors"),
            timed_out=bool(d.get("timed_out")),
            passed_verification=bool(d.get("passed_verification")),
            candidate=text(d.get("candidate"), 100),
            timeout_s=number(d.get("timeout_s")),
            pre_existing=texts(d.get("pre_existing")),
            new_failures=texts(d.get("new_failures")),
        )

    def line(self) -> str:
        """``\\`python -m pytest -x\\` exit 0 in 1.2s (5 passed, 0 failed)``."""
        counts = f"{self.passed} passed, {self.failed} failed"
        if self.errors:
            counts += f", {self.errors} errors"
        if self.timed_out:
            counts += ", timed out"
        code = "?" if self.exit_code is None else self.exit_code
        return f"`{self.command}` exit {code} in {self.duration_s:.1f}s ({counts})"

    def to_json(self) -> dict[str, Any]:
        """The loop's record shape."""
        return {
            "candidate": self.candidate,
            "command": self.command,
            "exit_code": self.exit_code,
            "duration_s": self.duration_s,
            "timeout_s": self.timeout_s,
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "timed_out": self.timed_out,
            "passed_verification": self.passed_verification,
            "pre_existing": list(self.pre_existing),
            "new_failures": list(self.new_failures),
        }


def verification_line(record: Mapping[str, Any]) -> str:
    """:meth:`Verification.line` of a raw verification record ('' when it names no command)."""
    v = Verification.read(record)
    return v.line() if v is not None else ""


@dataclass(frozen=True, slots=True)
class Commands:
    """Which command diagnosed (fail-fast flags removed) and which verified (the exact one)."""

    diagnosis: str = ""
    verification: str = ""
    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    complete: bool = True
    note: str = ""
    toolchain: str = ""

    @classmethod
    def read(cls, data: object) -> Commands | None:
        """The record, or None when there is none."""
        d = mapping(data)
        if not d:
            return None
        return cls(
            diagnosis=text(d.get("diagnosis"), 2_000),
            verification=text(d.get("verification"), 2_000),
            removed=texts(d.get("removed"), 200),
            added=texts(d.get("added"), 200),
            complete=bool(d.get("complete", True)),
            note=text(d.get("note"), 2_000),
            toolchain=text(d.get("toolchain"), 1_000),
        )

    def to_json(self) -> dict[str, Any]:
        """The trace's ``commands`` shape."""
        return {
            "diagnosis": self.diagnosis,
            "verification": self.verification,
            "removed": list(self.removed),
            "added": list(self.added),
            "complete": self.complete,
            "note": self.note,
            "toolchain": self.toolchain,
        }


@dataclass(frozen=True, slots=True)
class Interruption:
    """What stopped a run before its end (``/arcs stop``, a pause): at which check, where, why."""

    check: int = 0
    where: str = ""
    reason: str = ""

    @classmethod
    def read(cls, data: object) -> Interruption | None:
        """The record, or None when the run was not interrupted."""
        d = mapping(data)
        if not d:
            return None
        return cls(integer(d.get("check")) or 0, text(d.get("where"), 200), text(d.get("reason"), 2_000))

    def to_json(self) -> dict[str, Any]:
        """The trace's ``interrupt`` shape."""
        return {"check": self.check, "where": self.where, "reason": self.reason}


# --- the trace's parts -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvidenceDoc:
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
        end = self.end_line if self.end_line is not None else self.start_line
        return f"{self.path}:{self.start_line}-{end}"

    @classmethod
    def read(cls, e: Mapping[str, Any]) -> EvidenceDoc:
        """From an evidence item (``why``) or a search hit (``reasons``, ``kind``)."""
        why = text(e.get("why"), 500) or ", ".join(texts(e.get("reasons")))
        return cls(
            id=text(e.get("id"), 300),
            source=text(e.get("source") or e.get("kind"), 50),
            path=text(e.get("path"), 500),
            start_line=integer(e.get("start_line")),
            end_line=integer(e.get("end_line")),
            symbol=text(e.get("symbol") or e.get("qualified_name"), 300),
            score=number(e.get("score")),
            why=why,
        )


@dataclass(frozen=True, slots=True)
class QueryDoc:
    """One retrieval query and its hits."""

    formulation: str
    text: str
    hits: tuple[EvidenceDoc, ...]
    error: str


def _usage(data: object) -> tuple[int, float]:
    u = mapping(data)
    tokens = sum(
        integer(u.get(k)) or 0
        for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    )
    return tokens, number(u.get("usd")) or 0.0


@dataclass(frozen=True, slots=True)
class CandidateDoc:
    """One candidate patch of a round."""

    id: str
    proposer: str
    variant: str
    explanation: str
    diff: str
    gates: tuple[GateRecord, ...]
    tests_passed: int | None
    submittable: bool
    duplicate_of: str
    error: str
    tokens: int
    usd: float
    targets: TestTally | None
    full: TestTally | None

    @property
    def status(self) -> str:
        """``submittable``, ``rejected by …``, the error, ``same patch as …`` or ``not run``."""
        if self.duplicate_of:
            return f"same patch as {self.duplicate_of}"
        if self.submittable:
            return "submittable"
        rejected = [g.gate for g in self.gates if not g.passed]
        if rejected:
            return "rejected by " + ", ".join(rejected)
        return self.error or "not run"

    @classmethod
    def read(cls, c: Mapping[str, Any]) -> CandidateDoc:
        """From ``CandidateRecord.to_json``."""
        tokens, usd = _usage(c.get("usage"))
        run = mapping(c.get("run"))
        targets = TestTally.read(run.get("targets"))
        full_raw = run.get("full")
        return cls(
            id=text(c.get("id"), 100),
            proposer=text(c.get("proposer"), 100),
            variant=text(c.get("variant"), 100),
            explanation=text(c.get("explanation"), 5_000),
            diff=text(c.get("diff")),
            gates=GateRecord.read_all(c.get("gates")),
            tests_passed=integer(c.get("tests_passed")),
            submittable=bool(c.get("submittable")),
            duplicate_of=text(c.get("duplicate_of"), 100),
            error=text(c.get("error"), 2_000),
            tokens=tokens,
            usd=usd,
            targets=targets,
            full=targets if full_raw == "targets" else TestTally.read(full_raw),
        )


@dataclass(frozen=True, slots=True)
class RoundDoc:
    """One round of the loop."""

    number: int
    """1-based."""
    tier: str
    phase: str
    plan_source: str
    subgoals: tuple[str, ...]
    evidence: tuple[EvidenceDoc, ...]
    queries: tuple[QueryDoc, ...]
    candidates: tuple[CandidateDoc, ...]
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
    tool_calls: tuple[ToolCallDoc, ...] = ()
    """The model's tool calls (``()`` for a round without them, or a trace from before #15)."""

    @classmethod
    def read(cls, position: int, r: Mapping[str, Any]) -> RoundDoc:
        """From ``RoundRecord.to_json`` (``position``: 0-based, when the record has no index)."""
        plan = mapping(r.get("plan"))
        queries = tuple(
            QueryDoc(
                formulation=text(q.get("formulation"), 100),
                text=text(q.get("text"), 2_000),
                hits=tuple(EvidenceDoc.read(h) for h in maps(q.get("hits"))),
                error=text(q.get("error"), 2_000),
            )
            for q in maps(mapping(r.get("retrieval")).get("queries"))
        )
        tokens, usd = _usage(r.get("usage"))
        spend = mapping(r.get("spend_after"))
        index = integer(r.get("index"))
        return cls(
            number=(index if index is not None else position) + 1,
            tier=text(r.get("tier"), 50),
            phase=text(r.get("phase"), 50) or "repair",
            plan_source=text(plan.get("source"), 50),
            subgoals=texts(plan.get("subgoals")),
            evidence=tuple(EvidenceDoc.read(e) for e in maps(r.get("evidence"))),
            queries=queries,
            candidates=tuple(CandidateDoc.read(c) for c in maps(r.get("candidates"))),
            proposer_errors=texts(r.get("proposer_errors")),
            feedback=text(mapping(r.get("feedback")).get("summary"), 5_000),
            tokens=tokens,
            usd=usd,
            spent_tokens=integer(spend.get("tokens")),
            spent_usd=number(spend.get("usd")),
            best_tests_passed=integer(r.get("best_tests_passed")),
            best_candidate=text(r.get("best_candidate"), 100),
            events=texts(r.get("events")),
            prompt=text(r.get("prompt")),
            tool_calls=ToolCallDoc.read_all(r.get("tool_calls")),
        )


@dataclass(frozen=True, slots=True)
class BoundDoc:
    """One budget dimension: bound, spend, held (as recorded, in words)."""

    name: str
    budget: str
    spent: str
    held: bool


@dataclass(frozen=True, slots=True)
class ReproductionDoc:
    """The reproduce-first step: its verdict, the baseline run, the targets."""

    verdict: str = ""
    reason: str = ""
    baseline: TestTally | None = None
    targets: tuple[str, ...] = ()
    flaky: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class OutcomeDoc:
    """How the run ended."""

    verdict: str = ""
    reason: str = ""
    fixed: bool = False
    candidate: str = ""
    patch: str = ""
    explanation: str = ""
    gates: tuple[GateRecord, ...] = ()
    tests_after: TestTally | None = None
    verification: Verification | None = None
    pre_existing: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SpendDoc:
    """The recorded spend (None: not recorded)."""

    iterations: int | None = None
    tokens: int | None = None
    usd: float | None = None
    wall_s: float | None = None
    executions: int | None = None


@dataclass(frozen=True, slots=True)
class TraceDoc:
    """What a reader needs of a trace document, read tolerantly (see the module docstring)."""

    format: str = ""
    version: int | None = None
    id: str = ""
    created: str = ""
    model: str = ""
    proposer: str = ""
    tier_requested: str = ""
    tiers: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    index_snapshot: str = ""
    reproduction: ReproductionDoc = ReproductionDoc()
    rounds: tuple[RoundDoc, ...] = ()
    outcome: OutcomeDoc = OutcomeDoc()
    spend: SpendDoc = SpendDoc()
    bound: tuple[BoundDoc, ...] = ()
    commands: Commands | None = None
    interrupt: Interruption | None = None
    changes: ChangeDoc | None = None
    """The change since the last green run and its culprit (``repo["changes"]``; None: none recorded)."""
    failures: tuple[Mapping[str, Any], ...] = ()
    """The located failures as recorded: the reproduction's baseline run's, else the task's
    (``failure_to_json`` mappings; :func:`jobs.repair.report.failure_spots` reads them)."""

    @property
    def is_trace(self) -> bool:
        """The document says it is an ARCS trace."""
        return self.format == FORMAT

    @property
    def supported(self) -> bool:
        """An ARCS trace of a version this code reads strictly (what replay needs)."""
        return self.is_trace and self.version is not None and 1 <= self.version <= TRACE_VERSION

    @classmethod
    def read(cls, data: object) -> TraceDoc:
        """A :class:`TraceDoc` of a ``Trace.to_json`` document; never raises (missing parts are empty)."""
        d = mapping(data)
        rep = mapping(d.get("reproduction"))
        out = mapping(d.get("outcome"))
        spend = mapping(d.get("spend"))
        bound = tuple(
            BoundDoc(
                text(name, 50),
                text(mapping(row).get("budget"), 50),
                text(mapping(row).get("spent"), 50),
                bool(mapping(row).get("held")),
            )
            for name, row in list(mapping(d.get("bound")).items())[:20]
        )
        version = d.get("version")
        return cls(
            format=text(d.get("format"), 50),
            version=version if isinstance(version, int) and not isinstance(version, bool) else None,
            id=text(d.get("id"), 200),
            created=text(d.get("created"), 100),
            model=text(d.get("model"), 200),
            proposer=text(d.get("proposer"), 200),
            tier_requested=text(d.get("tier_requested"), 50),
            tiers=texts(d.get("tiers")),
            notices=texts(d.get("notices")),
            index_snapshot=text(d.get("index_snapshot"), 300),
            reproduction=ReproductionDoc(
                verdict=text(rep.get("verdict"), 100),
                reason=text(rep.get("reason"), 5_000),
                baseline=TestTally.read(rep.get("baseline")),
                targets=texts(rep.get("targets")),
                flaky=texts(rep.get("flaky")),
            ),
            rounds=tuple(RoundDoc.read(i, r) for i, r in enumerate(maps(d.get("rounds")))),
            outcome=OutcomeDoc(
                verdict=text(out.get("verdict"), 100),
                reason=text(out.get("reason"), 5_000),
                fixed=bool(out.get("fixed")),
                candidate=text(out.get("candidate"), 100),
                patch=text(out.get("patch")),
                explanation=text(out.get("explanation"), 5_000),
                gates=GateRecord.read_all(out.get("gates")),
                tests_after=TestTally.read(out.get("tests_after")),
                verification=Verification.read(out.get("verification")),
                pre_existing=texts(out.get("pre_existing")),
            ),
            spend=SpendDoc(
                iterations=integer(spend.get("iterations")),
                tokens=integer(spend.get("tokens")),
                usd=number(spend.get("usd")),
                wall_s=number(spend.get("wall_s")),
                executions=integer(spend.get("executions")),
            ),
            bound=bound,
            commands=Commands.read(d.get("commands")),
            interrupt=Interruption.read(d.get("interrupt")),
            changes=ChangeDoc.read(mapping(d.get("repo")).get("changes")),
            failures=tuple(maps(mapping(rep.get("baseline")).get("failures")))
            or tuple(maps(mapping(d.get("task")).get("failures"))),
        )


__all__ = [
    "FORMAT",
    "MAX_ITEMS",
    "MAX_LISTED_TESTS",
    "MAX_TEXT",
    "TRACE_VERSION",
    "BoundDoc",
    "CandidateDoc",
    "ChangeDoc",
    "Commands",
    "EvidenceDoc",
    "GateRecord",
    "Interruption",
    "OutcomeDoc",
    "QueryDoc",
    "ReproductionDoc",
    "RoundDoc",
    "SpendDoc",
    "TestTally",
    "ToolCallDoc",
    "TraceDoc",
    "Verification",
    "check_header",
    "integer",
    "items",
    "mapping",
    "maps",
    "number",
    "parse_json",
    "text",
    "texts",
    "verification_line",
]
