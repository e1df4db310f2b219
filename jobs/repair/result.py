"""What one run of the loop returns: :class:`RepairResult` and its :data:`Verdict`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from jobs.repair.budget import Budget, Spend
from jobs.repair.model import Edit, GateResult, Usage
from jobs.repair.trace import Trace
from jobs.repair.workbench import TestOutcome

Verdict = Literal[
    "fixed",
    "partial",
    "environment",
    "not_reproducible",
    "flaky",
    "budget_exhausted",
    "gates_rejected",
    "no_candidates",
    "reverted",
    "proposer_failed",
    "interrupted",
]


def _tests_json(outcome: TestOutcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {
        "passed": len(outcome.passed),
        "failed": len(outcome.failed),
        "errors": len(outcome.errors),
        "failing": [*outcome.failed, *outcome.errors][:50],
    }


@dataclass(frozen=True, slots=True)
class RepairResult:
    """What a repair attempt produced; ``trace`` holds the full record."""

    verdict: Verdict
    reason: str
    fixed: bool
    patch: str
    """The unified diff of the returned candidate ('' when none); for ``reverted`` it is the best
    verified candidate, which the quality checker did not accept."""
    edits: tuple[Edit, ...]
    explanation: str
    tiers: tuple[str, ...]
    rounds: int
    candidates: int
    tests_before: TestOutcome | None
    tests_after: TestOutcome | None
    gates: tuple[GateResult, ...]
    usage: Usage
    spend: Spend
    budget: Budget
    notices: tuple[str, ...]
    trace: Trace
    stopped_by: str = ""
    """What ended the search when no candidate was accepted: a budget dimension (``usd``,
    ``tokens``, ``iterations``, ``wall_s``, ``executions``), ``rounds``, ``candidates``, or ''."""
    verification: Mapping[str, Any] = field(default_factory=dict)
    """The final verification run of the returned candidate (the exact command): ``{candidate,
    command, exit_code, duration_s, passed, failed, errors, timed_out, passed_verification,
    pre_existing, new_failures}``; empty when nothing was verified."""
    pre_existing: tuple[str, ...] = ()
    """``partial``: the tests that still fail, each proven failing at the known-good baseline."""
    best: Mapping[str, Any] = field(default_factory=dict)
    """Not fixed: the best candidate ("best: k of n targets", :class:`jobs.repair.judge.
    BestCandidate`) with its patch — for the reader only, never applied or published; {} else."""

    def to_json(self, *, trace_path: str = "") -> dict[str, Any]:
        """The ``arcs fix --json`` document."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "fixed": self.fixed,
            "patch": self.patch,
            "tier": self.tiers[-1] if self.tiers else self.trace.tier_requested,
            "tiers": list(self.tiers),
            "rounds": self.rounds,
            "candidates": self.candidates,
            "tests_before": _tests_json(self.tests_before),
            "tests_after": _tests_json(self.tests_after),
            "gates": [{"gate": g.gate, "passed": g.passed, "detail": g.detail} for g in self.gates],
            "tokens": self.spend.tokens,
            "cost_usd": round(self.spend.usd, 6),
            "executions": self.spend.executions,
            "duration_s": round(self.spend.wall_s, 3),
            "budget_held": self.trace.bound_held,
            "notices": list(self.notices),
            "verification": dict(self.verification) or None,
            "pre_existing_failures": list(self.pre_existing),
            "best": dict(self.best) or None,
            "commands": dict(self.trace.commands) or None,
            "trace_path": trace_path,
        }


__all__ = ["RepairResult", "Verdict"]
