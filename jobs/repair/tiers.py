"""Controller tiers: strict projections of the full ARCS controller (seed 000, Sec. 3.4), and auto.

=========  =====================  ==========  ============  ==================================  ==========
tier       retrieval k            plan        rounds B      candidates per round                tool calls
=========  =====================  ==========  ============  ==================================  ==========
``0``      0                      off         budget        8 (templates; no LLM, zero cost)    0
small      0                      off         1             1                                   0
medium     0                      on (gated)  1             1                                   3
large      10 (plan-conditioned)  on, K <= 4  5             2 (diversified prompting)           4
=========  =====================  ==========  ============  ==================================  ==========

Small is the subset of controllers with (k=0, s=∅, B=1); medium adds planning; large adds
retrieval with refresh and multi-round repair (Lemma 1: attainable success is non-decreasing).
``auto`` escalates small -> large while budget remains; without an LLM it is tier 0 alone.
Every tier is further capped by the budget (``B <= Budget.iterations``).

*Tool calls* (issue #15, :mod:`jobs.repair.tools`): how many active-retrieval calls (``open``,
``search``, ``symbol``, ``run_tests``) the model may make per round, shared by the round's
candidates, before ``propose_patch`` is forced. Off for tier 0 (no model) and small (one cheap
call: the point of small is its price); on for medium and large, where a missed line costs a
whole round. ``LoopConfig.tools`` switches them off everywhere.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

TierName = Literal["0", "small", "medium", "large"]
TierRequest = Literal["0", "small", "medium", "large", "auto"]
TIER_REQUESTS: tuple[TierRequest, ...] = ("0", "small", "medium", "large", "auto")


class TierUnavailable(ValueError):
    """The requested tier needs an LLM and none is configured."""


@dataclass(frozen=True, slots=True)
class TierConfig:
    """One projection of the controller."""

    name: TierName
    k: int
    """Retrieval budget per round (0: no retrieval)."""
    plan: bool
    """Planning enabled (still gated off for short specifications)."""
    max_subgoals: int
    """K: at most this many subgoals (retrieval sub-queries)."""
    rounds: int | None
    """B: rounds of this tier; None means 'as many as the budget allows' (tier 0)."""
    candidates: int
    """Candidates asked of the proposer per round (diversified prompting when > 1)."""
    llm: bool
    """Needs an LLM proposer."""
    exhaust_round: bool
    """Execute every candidate of a round before halting (to select among several submittable
    ones); tier 0 halts at the first submittable candidate instead."""
    tool_calls: int = 0
    """Active-retrieval tool calls per round (shared by its candidates); 0: no tools offered."""

    def rounds_within(self, iterations_left: int) -> int:
        """B for this tier given what the budget still allows."""
        return iterations_left if self.rounds is None else min(self.rounds, iterations_left)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return asdict(self)


TIER0 = TierConfig(
    "0", k=0, plan=False, max_subgoals=0, rounds=None, candidates=8, llm=False, exhaust_round=False
)
SMALL = TierConfig(
    "small", k=0, plan=False, max_subgoals=0, rounds=1, candidates=1, llm=True, exhaust_round=True
)
MEDIUM = TierConfig(
    "medium",
    k=0,
    plan=True,
    max_subgoals=4,
    rounds=1,
    candidates=1,
    llm=True,
    exhaust_round=True,
    tool_calls=3,
)
LARGE = TierConfig(
    "large",
    k=10,
    plan=True,
    max_subgoals=4,
    rounds=5,
    candidates=2,
    llm=True,
    exhaust_round=True,
    tool_calls=4,
)
TIERS: dict[TierName, TierConfig] = {"0": TIER0, "small": SMALL, "medium": MEDIUM, "large": LARGE}
AUTO_WITH_LLM: tuple[TierName, ...] = ("small", "large")

NO_LLM_NOTICE = "no ANTHROPIC_API_KEY configured: --tier auto uses tier 0 only (templates, no LLM, no cost)"


def parse_tier(text: str) -> TierRequest:
    """``"0"``/``"small"``/``"medium"``/``"large"``/``"auto"`` (case-insensitive); ValueError otherwise."""
    value = text.strip().lower()
    for name in TIER_REQUESTS:
        if value == name:
            return name
    raise ValueError(f"unknown tier {text!r} (expected one of: {', '.join(TIER_REQUESTS)})")


@dataclass(frozen=True, slots=True)
class TierPlan:
    """The tiers a run goes through, in escalation order, and what the user should be told."""

    requested: TierRequest
    tiers: tuple[TierConfig, ...]
    notices: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """Tier names in order."""
        return tuple(t.name for t in self.tiers)


def resolve_tiers(requested: TierRequest, *, has_llm: bool) -> TierPlan:
    """The escalation plan for ``requested``.

    ``auto`` is small -> large with an LLM and tier 0 alone (with a notice) without one. An LLM
    tier requested without an LLM raises :class:`TierUnavailable`.
    """
    if requested == "auto":
        if not has_llm:
            return TierPlan(requested, (TIER0,), (NO_LLM_NOTICE,))
        return TierPlan(requested, tuple(TIERS[n] for n in AUTO_WITH_LLM))
    tier = TIERS[requested]
    if tier.llm and not has_llm:
        raise TierUnavailable(f"--tier {requested} needs an LLM: set ANTHROPIC_API_KEY, or use --tier 0")
    return TierPlan(requested, (tier,))


def is_projection(smaller: TierConfig, larger: TierConfig) -> bool:
    """``smaller``'s controller set is contained in ``larger``'s (Lemma 1 of seed 000)."""
    if smaller.llm != larger.llm:
        return False
    rounds_ok = larger.rounds is None or (smaller.rounds is not None and smaller.rounds <= larger.rounds)
    return (
        smaller.k <= larger.k
        and (not smaller.plan or larger.plan)
        and smaller.max_subgoals <= larger.max_subgoals
        and rounds_ok
        and smaller.candidates <= larger.candidates
        and smaller.tool_calls <= larger.tool_calls
    )


__all__ = [
    "AUTO_WITH_LLM",
    "LARGE",
    "MEDIUM",
    "NO_LLM_NOTICE",
    "SMALL",
    "TIER0",
    "TIERS",
    "TIER_REQUESTS",
    "TierConfig",
    "TierName",
    "TierPlan",
    "TierRequest",
    "TierUnavailable",
    "is_projection",
    "parse_tier",
    "resolve_tiers",
]
