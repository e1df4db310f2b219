"""The planner P_phi: LLM subgoals when an LLM is available, a structural fallback otherwise.

Seed 000: an optional CoT planner emits at most K <= 4 named subgoals, canonicalized and
deduplicated, used directly as retrieval sub-queries; a gate disables planning for short
specifications (:func:`jobs.repair.roles.should_plan`). Without an LLM (or when the LLM call
fails) the structural planner derives subgoals from what was observed: the functions on the
failing stacks, the failure sites and the symbols the error messages name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from indexing.languages import is_test_path
from jobs.repair import roles
from jobs.repair.llm import LLM, LLMError
from jobs.repair.model import Evidence, Failure, Feedback, Usage
from jobs.repair.task import RepairTask

if TYPE_CHECKING:
    from jobs.repair.proposers.tooluse import RoleTools

PlanSource = Literal["off", "gated", "llm", "structural"]

# `name`, 'name', "name" or CamelCase/dotted identifiers in an error message.
_QUOTED = re.compile(r"[`'\"]([A-Za-z_][\w.]*)[`'\"]")
_CAMEL = re.compile(r"\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)\b")


@dataclass(frozen=True, slots=True)
class PlanOutcome:
    """What the planner produced for a round (empty subgoals: s_t = ∅)."""

    subgoals: tuple[str, ...] = ()
    source: PlanSource = "off"
    contract: str = ""
    sketch: str = ""
    usage: Usage = field(default_factory=Usage)
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {
            "subgoals": list(self.subgoals),
            "source": self.source,
            "contract": self.contract,
            "sketch": self.sketch,
            "error": self.error,
            "usage": _usage_json(self.usage),
        }


def _usage_json(u: Usage) -> dict[str, Any]:
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cache_read_tokens": u.cache_read_tokens,
        "cache_write_tokens": u.cache_write_tokens,
        "usd": u.usd,
        "calls": u.calls,
    }


def _first_line(text: str, limit: int = 100) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:limit]


def _subgoal_for(failure: Failure) -> str | None:
    code_frames = [fr for fr in failure.frames if not is_test_path(fr.path)]
    what = " ".join(p for p in (failure.type, _first_line(failure.message)) if p)
    test = failure.test_id.rsplit("::", 1)[-1] or failure.test_id
    if code_frames:
        fr = code_frames[-1]
        where = f"`{fr.function}` in {fr.path}" if fr.function else f"{fr.path}:{fr.line}"
        return f"fix {where} so that {test} passes" + (f" ({what})" if what else "")
    if failure.frames:
        fr = failure.frames[-1]
        return f"code under test called by {test} at {fr.path}:{fr.line}" + (f" ({what})" if what else "")
    if failure.path:
        return f"fix {failure.path}:{failure.line}" + (f" ({what})" if what else "")
    return None


def structural_plan(
    task: RepairTask, feedback: Sequence[Feedback] = (), *, max_subgoals: int = roles.PLAN_MAX_SUBGOALS
) -> tuple[str, ...]:
    """Subgoals from the failure frames and the symbols named by the errors (no LLM)."""
    failures: list[Failure] = list(feedback[-1].failures) if feedback else []
    failures.extend(task.failures)
    goals: list[str] = []
    for failure in failures:
        goal = _subgoal_for(failure)
        if goal:
            goals.append(goal)
    for failure in failures:
        for pattern in (_QUOTED, _CAMEL):
            for m in pattern.finditer(failure.message):
                goals.append(f"definition and uses of `{m.group(1)}`")
    if not goals and task.kind != "ci":
        title = " ".join(task.title.split())
        if title:
            goals.append(title)
    return roles.canonical_subgoals(goals, limit=max_subgoals)


def make_plan(
    task: RepairTask,
    *,
    enabled: bool,
    max_subgoals: int,
    llm: LLM | None,
    evidence: Sequence[Evidence] = (),
    feedback: Sequence[Feedback] = (),
    previous: PlanOutcome | None = None,
    tools: RoleTools | None = None,
) -> PlanOutcome:
    """Plan for one round.

    Off when the tier has no planning; gated off for short specs. An LLM plan is made once per
    tier run (``previous`` carries it to later rounds); later rounds refresh it with the newest
    structural subgoal from the feedback, so retrieval follows the failures (seed 000, Eq. 16).
    A failed LLM call (:class:`LLMError`) falls back to the structural planner, with the error kept.
    ``tools``: the round's tools the LLM planner may call first (:func:`jobs.repair.roles.plan`).
    """
    if not enabled or max_subgoals <= 0:
        return PlanOutcome(source="off")
    if not roles.should_plan(task):
        return PlanOutcome(source="gated")
    if previous is not None and previous.source == "llm":
        fresh = structural_plan(task, feedback, max_subgoals=1) if feedback else ()
        merged = roles.canonical_subgoals([*fresh, *previous.subgoals], limit=max_subgoals)
        return PlanOutcome(merged, "llm", previous.contract, previous.sketch)
    if llm is not None and previous is None:
        try:
            result = roles.plan(llm, task, evidence, tools=tools)
        except LLMError as exc:
            return PlanOutcome(
                structural_plan(task, feedback, max_subgoals=max_subgoals), "structural", error=str(exc)
            )
        if result.ok:
            return PlanOutcome(
                result.subgoals[:max_subgoals], "llm", result.contract, result.sketch, result.usage
            )
        return PlanOutcome(
            structural_plan(task, feedback, max_subgoals=max_subgoals),
            "structural",
            usage=result.usage,
            error=result.error,
        )
    return PlanOutcome(structural_plan(task, feedback, max_subgoals=max_subgoals), "structural")


__all__ = ["PlanOutcome", "PlanSource", "make_plan", "structural_plan"]
