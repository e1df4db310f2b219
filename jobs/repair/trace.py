"""The repair trace: a versioned JSON record of every round, its renderings, and replay checks.

A trace holds, per round: the composed prompt, the plan, the retrieval queries with their hits
(ids, paths, scores and the chunk text, so a replay can serve them without the index), every
candidate with its diff, gate results, execution summary, tokens, USD and timings; the encoded
feedback; the spend after the round and the best-so-far score. Around the rounds: the
reproduction (baseline run, triage, a synthesized test), the outcome, the budget bound check
(seed 000, Prop. 3) and the recorded LLM calls (for ``arcs replay``).

Schema stability: every record has explicit ``to_json``/``from_json``; :data:`TRACE_VERSION` is
bumped when a field changes meaning. :func:`load_trace` refuses newer versions. Timing fields
(``timings``, ``duration_s``, ``created``, ``id``) are ignored by :func:`compare_outcomes`.
"""

# Long (~1,000 lines): every trace record type with its to_json/from_json next to the others, so one
# schema version covers them all (reading tolerant JSON lives in trace_read.py).

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobs.repair import trace_values as tv
from jobs.repair.budget import Budget, Spend
from jobs.repair.changes import ChangeSet
from jobs.repair.diffing import diff_stats
from jobs.repair.gates import gate_summary
from jobs.repair.model import Edit, Evidence, Feedback, GateResult, Usage
from jobs.repair.task import RepairTask
from jobs.repair.trace_read import FORMAT, TRACE_VERSION, check_header, parse_json, verification_line
from jobs.repair.workbench import CandidateRun, TestOutcome, failure_from_json, failure_to_json

if TYPE_CHECKING:
    from indexing.model import Query, SearchHit


# --- small codecs --------------------------------------------------------------------------------


def usage_to_json(u: Usage) -> dict[str, Any]:
    """A :class:`Usage` as JSON."""
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cache_read_tokens": u.cache_read_tokens,
        "cache_write_tokens": u.cache_write_tokens,
        "usd": u.usd,
        "calls": u.calls,
    }


def usage_from_json(data: Mapping[str, Any] | None) -> Usage:
    """Inverse of :func:`usage_to_json`."""
    d = data or {}
    return Usage(
        input_tokens=int(d.get("input_tokens", 0)),
        output_tokens=int(d.get("output_tokens", 0)),
        cache_read_tokens=int(d.get("cache_read_tokens", 0)),
        cache_write_tokens=int(d.get("cache_write_tokens", 0)),
        usd=float(d.get("usd", 0.0)),
        calls=int(d.get("calls", 0)),
    )


def spend_from_json(data: Mapping[str, Any] | None) -> Spend:
    """A :class:`Spend` from ``Spend.as_dict()`` output."""
    d = data or {}
    return Spend(
        iterations=int(d.get("iterations", 0)),
        tokens=int(d.get("tokens", 0)),
        usd=float(d.get("usd", 0.0)),
        wall_s=float(d.get("wall_s", 0.0)),
        executions=int(d.get("executions", 0)),
    )


def gate_to_json(g: GateResult) -> dict[str, Any]:
    """A :class:`GateResult` as JSON (``data`` is already JSON-ready)."""
    return {"gate": g.gate, "passed": g.passed, "detail": g.detail, "data": _plain(g.data)}


def gate_from_json(data: Mapping[str, Any]) -> GateResult:
    """Inverse of :func:`gate_to_json`."""
    return GateResult(
        str(data["gate"]), bool(data["passed"]), str(data.get("detail", "")), dict(data.get("data", {}))
    )


def edit_to_json(e: Edit) -> dict[str, Any]:
    """An :class:`Edit` as JSON."""
    return {"path": e.path, "kind": e.kind, "old": e.old, "new": e.new, "line": e.line}


def edit_from_json(data: Mapping[str, Any]) -> Edit:
    """Inverse of :func:`edit_to_json`."""
    return Edit(
        path=str(data["path"]),
        kind=data.get("kind", "replace"),
        old=str(data.get("old", "")),
        new=str(data.get("new", "")),
        line=int(data.get("line", 0)),
    )


def feedback_to_json(f: Feedback) -> dict[str, Any]:
    """A :class:`Feedback` as JSON."""
    return {
        "round": f.round,
        "summary": f.summary,
        "failures": [failure_to_json(x) for x in f.failures],
        "edit_errors": list(f.edit_errors),
        "gate_failures": list(f.gate_failures),
    }


def feedback_from_json(data: Mapping[str, Any]) -> Feedback:
    """Inverse of :func:`feedback_to_json`."""
    return Feedback(
        round=int(data["round"]),
        summary=str(data.get("summary", "")),
        failures=tuple(failure_from_json(x) for x in data.get("failures", ())),
        edit_errors=tuple(str(x) for x in data.get("edit_errors", ())),
        gate_failures=tuple(str(x) for x in data.get("gate_failures", ())),
    )


def evidence_to_json(e: Evidence, *, with_text: bool = False) -> dict[str, Any]:
    """An :class:`Evidence` item as JSON (the text only when asked: it is stored with the hits)."""
    out: dict[str, Any] = {
        "id": e.id,
        "source": e.source,
        "path": e.path,
        "start_line": e.start_line,
        "end_line": e.end_line,
        "symbol": e.symbol,
        "score": round(e.score, 6),
        "why": e.why,
    }
    if with_text:
        out["text"] = e.text
    return out


def task_to_json(task: RepairTask) -> dict[str, Any]:
    """A :class:`RepairTask` as JSON."""
    return {
        "kind": task.kind,
        "test_command": task.test_command,
        "failures": [failure_to_json(f) for f in task.failures],
        "title": task.title,
        "body": task.body,
        "failure_class": task.failure_class,
        "target_tests": list(task.target_tests),
        "about_tests": task.about_tests,
        "hints": [[p, n] for p, n in task.hints],
        "ci_tests": list(task.ci_tests),
        **({"changes": task.changes.to_json()} if task.changes is not None else {}),
        **({"dependency_context": task.dependency_context} if task.dependency_context else {}),
    }


def task_from_json(data: Mapping[str, Any]) -> RepairTask:
    """Inverse of :func:`task_to_json` (text is stored sanitized already)."""
    return RepairTask(
        kind=data["kind"],
        test_command=str(data.get("test_command", "")),
        failures=tuple(failure_from_json(f) for f in data.get("failures", ())),
        title=str(data.get("title", "")),
        body=str(data.get("body", "")),
        failure_class=str(data.get("failure_class", "")),
        target_tests=tuple(str(t) for t in data.get("target_tests", ())),
        about_tests=bool(data.get("about_tests", False)),
        hints=tuple((str(p), int(n)) for p, n in data.get("hints", ())),
        ci_tests=tuple(str(t) for t in data.get("ci_tests", ())),
        changes=ChangeSet.from_json(data["changes"]) if isinstance(data.get("changes"), Mapping) else None,
        dependency_context=str(data.get("dependency_context", "")),
    )


def _plain(value: object) -> Any:
    """Mappings/sequences to dicts/lists (tuples become lists), for JSON."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


# --- records -------------------------------------------------------------------------------------


@dataclass
class CandidateRecord:
    """One candidate: the proposal, its change, the gates, the executions and the score."""

    id: str
    round: int
    proposer: str = ""
    variant: str = ""
    explanation: str = ""
    proposal_key: str = ""
    edits: list[Edit] = field(default_factory=list)
    patch_key: str = ""
    diff: str = ""
    gates: list[GateResult] = field(default_factory=list)
    run: CandidateRun | None = None
    tests_passed: int = 0
    submittable: bool = False
    duplicate_of: str = ""
    error: str = ""
    usage: Usage = field(default_factory=Usage)
    timings: dict[str, float] = field(default_factory=dict)

    def gate(self, name: str) -> GateResult | None:
        """The result of gate ``name``, if it ran."""
        return next((g for g in self.gates if g.gate == name), None)

    @property
    def rejected_by(self) -> list[str]:
        """Names of the gates that failed."""
        return [g.gate for g in self.gates if not g.passed]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "id": self.id,
            "round": self.round,
            "proposer": self.proposer,
            "variant": self.variant,
            "explanation": self.explanation,
            "proposal_key": self.proposal_key,
            "edits": [edit_to_json(e) for e in self.edits],
            "patch_key": self.patch_key,
            "diff": self.diff,
            "gates": [gate_to_json(g) for g in self.gates],
            "run": None if self.run is None else self.run.to_json(),
            "tests_passed": self.tests_passed,
            "submittable": self.submittable,
            "duplicate_of": self.duplicate_of,
            "error": self.error,
            "usage": usage_to_json(self.usage),
            "timings": {k: round(v, 4) for k, v in sorted(self.timings.items())},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CandidateRecord:
        """Inverse of :meth:`to_json`."""
        return cls(
            id=str(data["id"]),
            round=int(data["round"]),
            proposer=str(data.get("proposer", "")),
            variant=str(data.get("variant", "")),
            explanation=str(data.get("explanation", "")),
            proposal_key=str(data.get("proposal_key", "")),
            edits=[edit_from_json(e) for e in data.get("edits", ())],
            patch_key=str(data.get("patch_key", "")),
            diff=str(data.get("diff", "")),
            gates=[gate_from_json(g) for g in data.get("gates", ())],
            run=None if data.get("run") is None else CandidateRun.from_json(data["run"]),
            tests_passed=int(data.get("tests_passed", 0)),
            submittable=bool(data.get("submittable", False)),
            duplicate_of=str(data.get("duplicate_of", "")),
            error=str(data.get("error", "")),
            usage=usage_from_json(data.get("usage")),
            timings={str(k): float(v) for k, v in dict(data.get("timings", {})).items()},
        )


@dataclass
class RoundRecord:
    """One round of Algorithm 1: compose (plan, retrieval, prompt), propose, execute, repair."""

    index: int
    tier: str
    phase: str = "repair"
    """``repair``, or ``clarified`` for the Clarifier's regeneration round."""
    prompt: str = ""
    """The composed context q'_t (task, invariants, plan, evidence, feedback) as a proposer sees it."""
    plan: dict[str, Any] = field(default_factory=dict)
    retrieval: dict[str, Any] = field(default_factory=dict)
    """``{"queries": [{formulation, text, k, hints, hits: [...], error}], "dropped": [ids], "error"}``."""
    evidence: list[dict[str, Any]] = field(default_factory=list)
    """The evidence given to the proposer (ids, paths, scores; no text)."""
    feedback_rounds: int = 0
    """Earlier feedback rounds included in the request (after stable truncation)."""
    candidates: list[CandidateRecord] = field(default_factory=list)
    proposer_errors: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """The model's tool calls of this round (:class:`jobs.repair.tools_session.ToolSession` log):
    ``{role, variant, turn, id, name, input, ok, refused, result, result_chars, executions,
    turn_tokens, turn_usd}`` (``role``: ``planner`` or ``proposer``, absent before the planner had
    tools); replayed from here by ``arcs replay``, in this order."""
    tool_evidence: list[dict[str, Any]] = field(default_factory=list)
    """The earlier rounds' tool finds carried into this round's evidence (ids, ranges, scores; no
    text: it is derived from the earlier rounds' ``tool_calls`` results,
    :func:`jobs.repair.tools_session.explored_evidence`, so a replay carries the same)."""
    feedback: Feedback | None = None
    usage: Usage = field(default_factory=Usage)
    spend_after: Spend = field(default_factory=Spend)
    best_tests_passed: int | None = None
    best_candidate: str = ""
    events: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "index": self.index,
            "tier": self.tier,
            "phase": self.phase,
            "prompt": self.prompt,
            "plan": _plain(self.plan),
            "retrieval": _plain(self.retrieval),
            "evidence": _plain(self.evidence),
            "feedback_rounds": self.feedback_rounds,
            "candidates": [c.to_json() for c in self.candidates],
            "proposer_errors": list(self.proposer_errors),
            **({"tool_calls": _plain(self.tool_calls)} if self.tool_calls else {}),
            **({"tool_evidence": _plain(self.tool_evidence)} if self.tool_evidence else {}),
            "feedback": None if self.feedback is None else feedback_to_json(self.feedback),
            "usage": usage_to_json(self.usage),
            "spend_after": self.spend_after.as_dict(),
            "best_tests_passed": self.best_tests_passed,
            "best_candidate": self.best_candidate,
            "events": list(self.events),
            "timings": {k: round(v, 4) for k, v in sorted(self.timings.items())},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RoundRecord:
        """Inverse of :meth:`to_json`."""
        best = data.get("best_tests_passed")
        return cls(
            index=int(data["index"]),
            tier=str(data["tier"]),
            phase=str(data.get("phase", "repair")),
            prompt=str(data.get("prompt", "")),
            plan=dict(data.get("plan", {})),
            retrieval=dict(data.get("retrieval", {})),
            evidence=[dict(e) for e in data.get("evidence", ())],
            feedback_rounds=int(data.get("feedback_rounds", 0)),
            candidates=[CandidateRecord.from_json(c) for c in data.get("candidates", ())],
            proposer_errors=[str(e) for e in data.get("proposer_errors", ())],
            tool_calls=[dict(c) for c in data.get("tool_calls", ())],
            tool_evidence=[dict(e) for e in data.get("tool_evidence", ())],
            feedback=None if data.get("feedback") is None else feedback_from_json(data["feedback"]),
            usage=usage_from_json(data.get("usage")),
            spend_after=spend_from_json(data.get("spend_after")),
            best_tests_passed=None if best is None else int(best),
            best_candidate=str(data.get("best_candidate", "")),
            events=[str(e) for e in data.get("events", ())],
            timings={str(k): float(v) for k, v in dict(data.get("timings", {})).items()},
        )


@dataclass
class Reproduction:
    """Reproduce-first: the baseline run, the triage reruns, and a synthesized reproduction test."""

    verdict: str = ""
    """``reproduced``, ``not_reproducible`` or ``flaky``."""
    reason: str = ""
    baseline: TestOutcome | None = None
    reruns: list[TestOutcome] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    designed_test: dict[str, Any] | None = None
    """``{path, content, rationale, verdict, checks, reproduced, failing, error, usage}``."""
    retrieval: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    known_good: dict[str, Any] | None = None
    """The known-good baseline (:meth:`jobs.repair.judge.KnownGood.to_json`: the last green
    commit's run of the failing tests), or None when there is none (issue #23)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "known_good": _plain(self.known_good),
            "baseline": None if self.baseline is None else self.baseline.to_json(),
            "reruns": [r.to_json() for r in self.reruns],
            "targets": list(self.targets),
            "flaky": list(self.flaky),
            "designed_test": _plain(self.designed_test),
            "retrieval": _plain(self.retrieval),
            "timings": {k: round(v, 4) for k, v in sorted(self.timings.items())},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Reproduction:
        """Inverse of :meth:`to_json`."""
        return cls(
            verdict=str(data.get("verdict", "")),
            reason=str(data.get("reason", "")),
            baseline=None if data.get("baseline") is None else TestOutcome.from_json(data["baseline"]),
            reruns=[TestOutcome.from_json(r) for r in data.get("reruns", ())],
            targets=[str(t) for t in data.get("targets", ())],
            flaky=[str(t) for t in data.get("flaky", ())],
            designed_test=None if data.get("designed_test") is None else dict(data["designed_test"]),
            retrieval=dict(data.get("retrieval", {})),
            timings={str(k): float(v) for k, v in dict(data.get("timings", {})).items()},
            known_good=dict(data["known_good"]) if isinstance(data.get("known_good"), Mapping) else None,
        )


@dataclass
class Outcome:
    """How the run ended."""

    verdict: str = ""
    reason: str = ""
    fixed: bool = False
    candidate: str = ""
    """Id of the returned candidate ('' when none)."""
    patch: str = ""
    patch_key: str = ""
    explanation: str = ""
    edits: list[Edit] = field(default_factory=list)
    """The edits of the returned patch (a synthesized reproduction test first), for ``--apply``."""
    gates: list[GateResult] = field(default_factory=list)
    tests_after: TestOutcome | None = None
    verification: dict[str, Any] = field(default_factory=dict)
    """The final verification run (the exact command) behind ``fixed``/``partial``."""
    pre_existing: list[str] = field(default_factory=list)
    """``partial``: tests that still fail, each proven failing at the known-good baseline."""
    best: dict[str, Any] = field(default_factory=dict)
    """Not fixed: the best candidate (:meth:`jobs.repair.judge.BestCandidate.to_json`: "best: k of
    n targets", its patch, its behaviour probe); never applied or published. Empty otherwise."""
    behaviour: dict[str, Any] = field(default_factory=dict)
    """The behaviour probe of the returned candidate (:mod:`jobs.repair.behaviour`); {} when none ran."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "best": _plain(self.best),
            "behaviour": _plain(self.behaviour),
            "verdict": self.verdict,
            "reason": self.reason,
            "fixed": self.fixed,
            "candidate": self.candidate,
            "patch": self.patch,
            "patch_key": self.patch_key,
            "explanation": self.explanation,
            "edits": [edit_to_json(e) for e in self.edits],
            "gates": [gate_to_json(g) for g in self.gates],
            "tests_after": None if self.tests_after is None else self.tests_after.to_json(),
            "verification": _plain(self.verification),
            "pre_existing": list(self.pre_existing),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        """Inverse of :meth:`to_json`."""
        return cls(
            verdict=str(data.get("verdict", "")),
            reason=str(data.get("reason", "")),
            fixed=bool(data.get("fixed", False)),
            candidate=str(data.get("candidate", "")),
            patch=str(data.get("patch", "")),
            patch_key=str(data.get("patch_key", "")),
            explanation=str(data.get("explanation", "")),
            edits=[edit_from_json(e) for e in data.get("edits", ())],
            gates=[gate_from_json(g) for g in data.get("gates", ())],
            tests_after=None
            if data.get("tests_after") is None
            else TestOutcome.from_json(data["tests_after"]),
            verification=dict(data.get("verification") or {}),
            pre_existing=[str(t) for t in data.get("pre_existing", ())],
            best=dict(data.get("best") or {}),
            behaviour=dict(data.get("behaviour") or {}),
        )


@dataclass
class Trace:
    """Everything one repair attempt did (see the module docstring)."""

    id: str = ""
    created: str = ""
    repo: dict[str, Any] = field(default_factory=dict)
    """``{path, commit, source_digest, test_command, framework}``; set by the use case."""
    task: RepairTask | None = None
    tier_requested: str = ""
    tiers: list[str] = field(default_factory=list)
    tier_configs: list[dict[str, Any]] = field(default_factory=list)
    budget: Budget = field(default_factory=Budget)
    config: dict[str, Any] = field(default_factory=dict)
    model: str = ""
    proposer: str = ""
    index_snapshot: str = ""
    """Id of the frozen index snapshot retrieval ran against ('' when retrieval was off)."""
    notices: list[str] = field(default_factory=list)
    reproduction: Reproduction = field(default_factory=Reproduction)
    rounds: list[RoundRecord] = field(default_factory=list)
    roles: list[dict[str, Any]] = field(default_factory=list)
    """LLM role calls outside proposing: ``{round, role, ok, error, usage, detail}``."""
    outcome: Outcome = field(default_factory=Outcome)
    spend: Spend = field(default_factory=Spend)
    usage: Usage = field(default_factory=Usage)
    llm_calls: list[dict[str, Any]] = field(default_factory=list)
    """Recorded model calls (:class:`jobs.repair.proposers.replay.CallRecord` JSON), in order."""
    timings: dict[str, float] = field(default_factory=dict)
    interrupt: dict[str, Any] = field(default_factory=dict)
    """``{check, where, reason}`` when an interrupt stopped the run (a replay stops at the same
    check); empty otherwise."""
    commands: dict[str, Any] = field(default_factory=dict)
    """Which command diagnosed (fail-fast flags removed) and which verified (the exact one):
    ``{diagnosis, verification, removed, added, complete, note, toolchain}``."""
    verifications: list[dict[str, Any]] = field(default_factory=list)
    """Every final verification run of a selected candidate (a failed one sends the search on)."""
    spectrum: dict[str, Any] = field(default_factory=dict)
    """The failing tests' call path (:class:`jobs.repair.spectrum.Localization` JSON: scope, counts,
    duration, note, executions, the top suspects); empty when the run did not localize. A replay
    serves it instead of tracing again."""
    version: int = TRACE_VERSION

    # -- derived ---------------------------------------------------------------------------------

    @property
    def candidates(self) -> list[CandidateRecord]:
        """Every candidate of every round, in order."""
        return [c for r in self.rounds for c in r.candidates]

    def find_candidate(self, candidate_id: str) -> CandidateRecord | None:
        """The candidate with id ``candidate_id``."""
        return next((c for c in self.candidates if c.id == candidate_id), None)

    def bound(self) -> dict[str, dict[str, float | bool]]:
        """Per budget dimension: the bound, the spend and whether spend <= bound (Prop. 3)."""
        budget, spend = self.budget.as_dict(), self.spend.as_dict()
        return {
            name: {
                "budget": budget[name],
                "spent": round(spend[name], 6),
                "held": spend[name] <= budget[name],
            }
            for name in budget
        }

    @property
    def bound_held(self) -> bool:
        """Every dimension of the spend stayed within the budget."""
        return all(bool(v["held"]) for v in self.bound().values())

    def best_series(self) -> list[int | None]:
        """Best-so-far tests passed after each round (non-decreasing: Prop. 1)."""
        return [r.best_tests_passed for r in self.rounds]

    # -- JSON ------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The versioned JSON document."""
        return {
            "format": FORMAT,
            "version": self.version,
            "id": self.id,
            "created": self.created,
            "repo": _plain(self.repo),
            "task": None if self.task is None else task_to_json(self.task),
            "tier_requested": self.tier_requested,
            "tiers": list(self.tiers),
            "tier_configs": _plain(self.tier_configs),
            "budget": self.budget.as_dict(),
            "config": _plain(self.config),
            "model": self.model,
            "proposer": self.proposer,
            "index_snapshot": self.index_snapshot,
            "notices": list(self.notices),
            "reproduction": self.reproduction.to_json(),
            "rounds": [r.to_json() for r in self.rounds],
            "roles": _plain(self.roles),
            "outcome": self.outcome.to_json(),
            "spend": self.spend.as_dict(),
            "bound": self.bound(),
            "bound_held": self.bound_held,
            "best_so_far": self.best_series(),
            "usage": usage_to_json(self.usage),
            "llm_calls": _plain(self.llm_calls),
            "timings": {k: round(v, 4) for k, v in sorted(self.timings.items())},
            "interrupt": _plain(self.interrupt),
            "commands": _plain(self.commands),
            "verifications": _plain(self.verifications),
            **({"spectrum": _plain(self.spectrum)} if self.spectrum else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trace:
        """Parse a trace document; ValueError for another format or a newer version."""
        version = check_header(data)
        return cls(
            id=str(data.get("id", "")),
            created=str(data.get("created", "")),
            repo=dict(data.get("repo", {})),
            task=None if data.get("task") is None else task_from_json(data["task"]),
            tier_requested=str(data.get("tier_requested", "")),
            tiers=[str(t) for t in data.get("tiers", ())],
            tier_configs=[dict(t) for t in data.get("tier_configs", ())],
            budget=Budget(**dict(data.get("budget", {}))),
            config=dict(data.get("config", {})),
            model=str(data.get("model", "")),
            proposer=str(data.get("proposer", "")),
            index_snapshot=str(data.get("index_snapshot", "")),
            notices=[str(n) for n in data.get("notices", ())],
            reproduction=Reproduction.from_json(data.get("reproduction", {})),
            rounds=[RoundRecord.from_json(r) for r in data.get("rounds", ())],
            roles=[dict(r) for r in data.get("roles", ())],
            outcome=Outcome.from_json(data.get("outcome", {})),
            spend=spend_from_json(data.get("spend")),
            usage=usage_from_json(data.get("usage")),
            llm_calls=[dict(c) for c in data.get("llm_calls", ())],
            timings={str(k): float(v) for k, v in dict(data.get("timings", {})).items()},
            interrupt=dict(data.get("interrupt") or {}),
            commands=dict(data.get("commands") or {}),
            verifications=[dict(v) for v in data.get("verifications", ())],
            spectrum=dict(data.get("spectrum") or {}),
            version=version,
        )


def dump_trace(trace: Trace) -> str:
    """The trace as pretty, key-stable JSON text."""
    return json.dumps(trace.to_json(), indent=1, ensure_ascii=False) + "\n"


def load_trace(text: str) -> Trace:
    """Parse :func:`dump_trace` output (ValueError when it is not a readable trace): the header
    through :func:`jobs.repair.trace_read.check_header`, then every record strictly (replay needs
    all of it; the dashboard reads the tolerant :class:`jobs.repair.trace_read.TraceDoc`)."""
    data = parse_json(text)
    try:
        return Trace.from_json(data)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed trace: {exc!r}") from exc


# --- renderers -----------------------------------------------------------------------------------


def _fence(text: str, info: str = "") -> str:
    longest = 0
    run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def _tests_line(outcome: TestOutcome | None) -> str:
    return outcome.summary() if outcome is not None else "not run"


def _money(usd: float) -> str:
    return f"${usd:.4f}" if usd and usd < 0.01 else f"${usd:.2f}"


def _patch_files(diff: str) -> str:
    if not diff:
        return "none"
    stats = diff_stats(diff)
    from jobs.repair.diffing import parse_patch

    paths = ", ".join(p.path for p in parse_patch(diff)[:5])
    return f"{paths} (+{stats.added} -{stats.removed})"


def _gate_marks(gates: Sequence[GateResult]) -> str:
    return "  ".join(f"{g.gate} {'ok' if g.passed else 'FAILED'}" for g in gates) or "none ran"


VERDICT_TITLES: Mapping[str, str] = {
    "fixed": "FIXED",
    "partial": "PARTIAL",
    "environment": "ENVIRONMENT",
    "not_reproducible": "NOT REPRODUCIBLE",
    "flaky": "FLAKY",
    "budget_exhausted": "BUDGET EXHAUSTED",
    "gates_rejected": "GATES REJECTED",
    "no_candidates": "NO CANDIDATES",
    "reverted": "REVERTED",
    "proposer_failed": "PROPOSER FAILED",
    "interrupted": "INTERRUPTED",
}


def render_summary(trace: Trace, *, trace_path: str = "") -> str:
    """A one-screen plain-text summary (what ``arcs fix`` prints)."""
    o = trace.outcome
    title = VERDICT_TITLES.get(o.verdict, o.verdict.upper() or "UNKNOWN")
    n_cand = len([c for c in trace.candidates if not c.duplicate_of])
    tiers = " -> ".join(trace.tiers) or f"{trace.tier_requested or '-'} (not started)"
    lines = [
        f"ARCS: {title} — tier {tiers}, {len(trace.rounds)} round{'s' if len(trace.rounds) != 1 else ''}, "
        f"{n_cand} candidate{'s' if n_cand != 1 else ''}",
    ]
    if o.reason:
        lines.append(f"  {o.reason}")
    for notice in trace.notices:
        lines.append(f"  note: {notice}")
    before = trace.reproduction.baseline
    lines.append(f"tests:  before {_tests_line(before)}  ->  after {_tests_line(o.tests_after)}")
    if o.gates:
        lines.append(f"gates:  {_gate_marks(o.gates)}")
    if o.verification:
        lines.append(f"verify: {verification_line(o.verification)}")
    elif trace.commands.get("verification") and trace.commands.get("diagnosis") != trace.commands.get(
        "verification"
    ):
        lines.append(f"commands: diagnosis `{trace.commands['diagnosis']}`")
    if trace.commands.get("toolchain"):
        lines.append(f"toolchain: {trace.commands['toolchain']}")
    lines.append(f"patch:  {_patch_files(o.patch)}")
    if o.best.get("patch"):
        lines.append(
            f"best:   {o.best.get('candidate', '?')}, {o.best.get('fixed', '?')} of {o.best.get('targets', '?')} "
            f"targets: {_patch_files(str(o.best['patch']))} — not a fix: never applied or published"
        )
    s = trace.spend
    lines.append(
        f"spend:  {s.tokens} tokens, {_money(s.usd)}, {s.executions} test runs, "
        f"{s.iterations} iterations, {s.wall_s:.1f}s (budget {'held' if trace.bound_held else 'EXCEEDED'})"
    )
    if trace_path:
        lines.append(f"trace:  {trace_path}")
    return "\n".join(lines)


def _details(summary: str, body: str, *, open_: bool = False) -> str:
    return (
        f"<details{' open' if open_ else ''}>\n<summary>{summary}</summary>\n\n{body.rstrip()}\n\n</details>"
    )


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(trace: Trace, *, max_diff_chars: int = 20_000) -> str:
    """Markdown for a pull-request body or a report: outcome and patch first, then each round in a
    collapsible ``<details>`` section (prompt, plan, evidence, candidates with diffs and gates)."""
    o = trace.outcome
    title = VERDICT_TITLES.get(o.verdict, o.verdict.upper() or "UNKNOWN")
    out: list[str] = [f"## ARCS: {title}", ""]
    if o.reason:
        out += [o.reason, ""]
    if o.explanation:
        out += [o.explanation, ""]
    s = trace.spend
    out += [
        "| | |",
        "|---|---|",
        f"| Tier | {' → '.join(trace.tiers) or '-'} (requested: {trace.tier_requested or '-'}) |",
        f"| Rounds / candidates | {len(trace.rounds)} / {len([c for c in trace.candidates if not c.duplicate_of])} |",
        f"| Tests before | {_tests_line(trace.reproduction.baseline)} |",
        f"| Tests after | {_tests_line(o.tests_after)} |",
        *(
            [f"| Final verification | {_md_escape(verification_line(o.verification))} |"]
            if o.verification
            else []
        ),
        *(
            [f"| Diagnosis command | `{_md_escape(str(trace.commands['diagnosis']))}` |"]
            if trace.commands.get("diagnosis")
            and trace.commands.get("diagnosis") != trace.commands.get("verification")
            else []
        ),
        f"| Tokens / cost | {s.tokens} / {_money(s.usd)} |",
        f"| Test runs / time | {s.executions} / {s.wall_s:.1f}s |",
        "",
    ]
    for notice in trace.notices:
        out.append(f"> {notice}")
    if trace.notices:
        out.append("")
    if o.pre_existing:
        known = str((trace.reproduction.known_good or {}).get("source") or "the known-good baseline")
        out += [
            f"The test command still fails, only on tests that fail at {known} as well:",
            "",
            *(f"- `{t}`" for t in o.pre_existing[:30]),
            "",
        ]
    if o.patch:
        out += ["### Patch", "", _fence(o.patch[:max_diff_chars], "diff"), ""]
    if o.best.get("patch"):
        out += [
            f"### Best candidate {o.best.get('candidate', '')}: not a fix",
            "",
            f"It makes {o.best.get('fixed', '?')} of {o.best.get('targets', '?')} target tests pass; it was "
            "never applied or published.",
            "",
            _fence(str(o.best["patch"])[:max_diff_chars], "diff"),
            "",
        ]
    if o.gates:
        out += ["### Quality gates", "", gate_summary(o.gates), ""]
    rep = trace.reproduction
    rep_body = [f"**{rep.verdict or '-'}** {rep.reason}".rstrip(), ""]
    if rep.targets:
        rep_body.append("Target tests: " + ", ".join(f"`{t}`" for t in rep.targets[:20]))
    if rep.flaky:
        rep_body.append("Flaky (left out): " + ", ".join(f"`{t}`" for t in rep.flaky[:20]))
    if rep.designed_test:
        dt = rep.designed_test
        rep_body += [
            "",
            f"Synthesized test `{dt.get('path', '')}`: {dt.get('verdict', '')}"
            + (f" ({dt.get('error')})" if dt.get("error") else ""),
        ]
        if dt.get("content"):
            rep_body.append(
                _fence(str(dt["content"]), "python" if str(dt.get("path", "")).endswith(".py") else "")
            )
    out += [_details("Reproduction", "\n".join(rep_body)), ""]
    if trace.spectrum:
        out += [spectrum_line(trace.spectrum), ""]
    for r in trace.rounds:
        out += [_details(_round_summary(r), _round_body(r, max_diff_chars=max_diff_chars)), ""]
    bound_rows = ["| Dimension | Budget | Spent | Held |", "|---|---|---|---|"]
    for name, row in trace.bound().items():
        bound_rows.append(f"| {name} | {row['budget']} | {row['spent']} | {'yes' if row['held'] else 'NO'} |")
    series = ", ".join("-" if b is None else str(b) for b in trace.best_series())
    out += [
        _details(
            "Budget and best-so-far",
            "\n".join([*bound_rows, "", f"Best-so-far tests passed per round: {series}"]),
        ),
        "",
    ]
    out.append(f"<sub>ARCS trace v{trace.version} {trace.id}</sub>")
    return "\n".join(out).rstrip() + "\n"


def spectrum_line(entry: Mapping[str, Any], *, top: int = 5) -> str:
    """One line on the failing tests' call path (the trace's ``spectrum`` entry): scope, counts,
    duration and the best suspects, e.g. ``Call path (spectrum, suite, 4 failing / 704 passing,
    4.9 s): checker.py:1268 handleDoctests 1.00, ...``; tolerant of malformed entries."""
    note = tv.text(entry.get("note"), 300)
    if not tv.integer(entry.get("executions")):
        return f"**Call path** (spectrum): not traced{f' — {note}' if note else ''}"
    head = ", ".join(
        [
            tv.text(entry.get("scope"), 20) or "-",
            f"{tv.integer(entry.get('failed')) or 0} failing / {tv.integer(entry.get('passed')) or 0} passing",
            f"{tv.number(entry.get('duration_s')) or 0.0:.1f} s",
            *([] if entry.get("complete", True) else ["incomplete"]),
        ]
    )
    found = [
        f"`{tv.text(s.get('path'), 200)}:{tv.integer(s.get('start')) or 0}` {tv.text(s.get('name'), 120)} "
        f"{tv.number(s.get('score')) or 0.0:.2f}"
        for s in tv.maps(entry.get("suspects"))[:top]
    ]
    tail = ", ".join(found) or "no suspect outside the tests"
    return f"**Call path** (spectrum, {head}): {tail}{f' — {note}' if note else ''}"


def _round_summary(r: RoundRecord) -> str:
    n = len([c for c in r.candidates if not c.duplicate_of])
    best = "-" if r.best_tests_passed is None else str(r.best_tests_passed)
    phase = "" if r.phase == "repair" else f", {r.phase}"
    return f"Round {r.index + 1} (tier {r.tier}{phase}): {n} candidate{'s' if n != 1 else ''}, best-so-far {best} tests"


def _round_body(r: RoundRecord, *, max_diff_chars: int) -> str:
    body: list[str] = []
    subgoals = r.plan.get("subgoals") or []
    body.append(f"**Plan** ({r.plan.get('source', 'off')}): " + ("; ".join(subgoals) if subgoals else "none"))
    if r.evidence:
        body += ["", "**Evidence**", "", "| id | source | location | score |", "|---|---|---|---|"]
        for e in r.evidence[:30]:
            body.append(
                f"| {_md_escape(str(e.get('id', '')))} | {e.get('source', '')} | "
                f"{e.get('path', '')}:{e.get('start_line', '')}-{e.get('end_line', '')} | {e.get('score', '')} |"
            )
    queries = r.retrieval.get("queries") or []
    if queries:
        body += [
            "",
            "**Queries**: "
            + "; ".join(
                f"{q.get('formulation')}: `{_md_escape(str(q.get('text', ''))[:80])}`" for q in queries
            ),
        ]
    if r.tool_calls:
        body += ["", "**Tool calls**: " + "; ".join(_tool_line(c) for c in r.tool_calls)]
    if r.tool_evidence:
        body += ["", "**Tool finds carried**: " + ", ".join(f"`{e.get('id', '')}`" for e in r.tool_evidence)]
    for err in r.proposer_errors:
        body.append(f"\nProposer error: {err}")
    for c in r.candidates:
        head = f"**{c.id}** ({c.proposer}{'/' + c.variant if c.variant else ''})"
        if c.duplicate_of:
            body += ["", f"{head}: same patch as {c.duplicate_of}"]
            continue
        status = (
            "submittable"
            if c.submittable
            else ("rejected by " + ", ".join(c.rejected_by) if c.rejected_by else c.error or "not run")
        )
        body += ["", f"{head}: {status}; {c.tests_passed} tests passed"]
        if c.explanation:
            body.append(f"> {_md_escape(c.explanation[:400])}")
        if c.gates:
            body += ["", gate_summary(c.gates)]
        if c.diff:
            body += ["", _details("diff", _fence(c.diff[:max_diff_chars], "diff"))]
    if r.feedback is not None:
        body += ["", f"**Feedback**: {_md_escape(r.feedback.summary)}"]
    if r.prompt:
        body += ["", _details("prompt", _fence(r.prompt[:max_diff_chars]))]
    for ev in r.events:
        body.append(f"\n_{ev}_")
    return "\n".join(body)


def _tool_line(call: Mapping[str, Any]) -> str:
    """``open(ages/rules.py) 512 chars`` / ``run_tests([...]) error`` / ``symbol(x) refused: limit``."""
    args = call.get("input")
    shown = ", ".join(str(v) for v in args.values()) if isinstance(args, dict) else str(args)
    if call.get("refused"):
        outcome = f"refused: {call['refused']}"
    else:
        outcome = f"{call.get('result_chars', 0)} chars" + ("" if call.get("ok", True) else ", error")
    who = "planner " if call.get("role") == "planner" else ""
    return f"{who}`{_md_escape(str(call.get('name', '')))}({_md_escape(shown[:60])})` {outcome}"


# --- replay comparison ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first place where a replayed trace differs from the recorded one."""

    where: str
    """``reproduction``, ``round 2 candidate r2c1``, ``outcome``…"""
    field: str
    expected: str
    got: str

    def __str__(self) -> str:
        return f"diverged at {self.where}: {self.field} was {self.expected!r}, replay gave {self.got!r}"


def _short(value: object, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(_plain(value), sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


def compare_outcomes(recorded: Trace, replayed: Trace) -> Divergence | None:
    """None when ``replayed`` reproduces ``recorded`` (same reproduction, rounds, candidates, gates,
    final patch and verdict; timings, ids and dates ignored), else the first :class:`Divergence`."""

    def first(where: str, checks: Sequence[tuple[str, object, object]]) -> Divergence | None:
        for name, a, b in checks:
            if a != b:
                return Divergence(where, name, _short(a), _short(b))
        return None

    ra, rb = recorded.reproduction, replayed.reproduction
    d = first(
        "reproduction",
        [
            ("verdict", ra.verdict, rb.verdict),
            ("targets", ra.targets, rb.targets),
            ("flaky", ra.flaky, rb.flaky),
        ],
    )
    if d:
        return d
    for i, (x, y) in enumerate(zip(recorded.rounds, replayed.rounds, strict=False)):
        where = f"round {i + 1}"
        d = first(
            where,
            [
                ("tier", x.tier, y.tier),
                ("phase", x.phase, y.phase),
                ("plan", x.plan.get("subgoals", []), y.plan.get("subgoals", [])),
                ("evidence", [e.get("id") for e in x.evidence], [e.get("id") for e in y.evidence]),
                ("candidates", len(x.candidates), len(y.candidates)),
            ],
        )
        if d:
            return d
        for c, e in zip(x.candidates, y.candidates, strict=True):
            d = first(
                f"{where} candidate {c.id}",
                [
                    ("proposal", c.proposal_key, e.proposal_key),
                    ("patch", c.patch_key, e.patch_key),
                    ("gates", [(g.gate, g.passed) for g in c.gates], [(g.gate, g.passed) for g in e.gates]),
                    ("tests_passed", c.tests_passed, e.tests_passed),
                    ("submittable", c.submittable, e.submittable),
                ],
            )
            if d:
                return d
    oa, ob = recorded.outcome, replayed.outcome
    return first(
        "outcome",
        [
            ("rounds", len(recorded.rounds), len(replayed.rounds)),
            ("verdict", oa.verdict, ob.verdict),
            ("patch", oa.patch, ob.patch),
            ("fixed", oa.fixed, ob.fixed),
        ],
    )


# --- recorded retrieval --------------------------------------------------------------------------


def hit_to_json(hit: SearchHit) -> dict[str, Any]:
    """A search hit with its chunk (text included: a replay serves it without the index)."""
    c = hit.chunk
    return {
        "id": f"{c.path}:{c.start_line}-{c.end_line}",
        "path": c.path,
        "start_line": c.start_line,
        "end_line": c.end_line,
        "language": c.language,
        "kind": c.kind,
        "symbol": c.symbol,
        "qualified_name": c.qualified_name,
        "score": round(hit.score, 6),
        "reasons": list(hit.reasons),
        "text": c.text,
    }


def hit_from_json(data: Mapping[str, Any]) -> SearchHit:
    """Inverse of :func:`hit_to_json` (the chunk's derived fields are left empty)."""
    from indexing.model import Chunk, SearchHit

    chunk = Chunk(
        path=str(data["path"]),
        language=str(data.get("language", "")),
        kind=data.get("kind", "window"),
        symbol=str(data.get("symbol", "")),
        qualified_name=str(data.get("qualified_name", "")),
        start_line=int(data["start_line"]),
        end_line=int(data["end_line"]),
        text=str(data.get("text", "")),
    )
    return SearchHit(chunk=chunk, score=float(data.get("score", 0.0)), reasons=tuple(data.get("reasons", ())))


class ReplayMismatch(Exception):
    """A replayed run asked the retriever something other than what the trace recorded."""


class RecordedRetriever:
    """A retriever that serves the queries of a recorded trace, in order (the frozen snapshot).

    Each :meth:`search` must ask the recorded query text of the next recorded query, else
    :class:`ReplayMismatch` names the position; the hits are returned as recorded.
    """

    def __init__(self, trace: Trace) -> None:
        entries: list[Mapping[str, Any]] = list(trace.reproduction.retrieval.get("queries", ()))
        for r in trace.rounds:
            entries.extend(r.retrieval.get("queries", ()))
        self.entries = entries
        self.position = 0

    @property
    def exhausted(self) -> bool:
        """Every recorded query was asked."""
        return self.position >= len(self.entries)

    def search(self, query: Query) -> list[SearchHit]:
        """The recorded hits of the next query, if ``query`` is the recorded one."""
        if self.position >= len(self.entries):
            raise ReplayMismatch(f"retrieval query {self.position + 1} was not recorded: {query.text[:80]!r}")
        entry = self.entries[self.position]
        if str(entry.get("text", "")) != query.text:
            raise ReplayMismatch(
                f"retrieval query {self.position + 1} differs: recorded {str(entry.get('text', ''))[:60]!r}, "
                f"replay asked {query.text[:60]!r}"
            )
        self.position += 1
        if entry.get("error"):
            raise RuntimeError(str(entry["error"]))
        return [hit_from_json(h) for h in entry.get("hits", ())]

    def hierarchical(self, query: Query, depth: int = 3) -> list[SearchHit]:
        """Served like :meth:`search` (the loop only records flat searches)."""
        return self.search(query)


__all__ = [
    "FORMAT",
    "TRACE_VERSION",
    "VERDICT_TITLES",
    "CandidateRecord",
    "Divergence",
    "Outcome",
    "RecordedRetriever",
    "ReplayMismatch",
    "Reproduction",
    "RoundRecord",
    "Trace",
    "compare_outcomes",
    "dump_trace",
    "edit_from_json",
    "edit_to_json",
    "evidence_to_json",
    "feedback_from_json",
    "feedback_to_json",
    "gate_from_json",
    "gate_to_json",
    "hit_from_json",
    "hit_to_json",
    "load_trace",
    "render_markdown",
    "render_summary",
    "spectrum_line",
    "spend_from_json",
    "task_from_json",
    "task_to_json",
    "usage_from_json",
    "usage_to_json",
    "verification_line",
]
