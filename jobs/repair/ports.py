"""The ports of the repair core. Each has a real implementation and an in-repo fake.

- :class:`Retriever` (``indexing.retriever.HybridRetriever``; fake: tests)
- :class:`Proposer` (``proposers.anthropic``, ``tier0.templates``, ``proposers.replay``)
- ``Runner`` (``runners.base.Runner``: ``runners.sandbox.LocalSandbox``; fake: ``runners.fake.FakeRunner``)
- ``Gate`` (``jobs.repair.gates``)
- :class:`Clock` (wall time is read only through it, so replays are exact)
- :class:`Interrupt` (optional: someone outside asks the repair to stop; the pipeline answers
  from the store, a replay answers from the trace)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from jobs.repair.budget import Budget
from jobs.repair.model import Evidence, Feedback, Proposal
from jobs.repair.task import RepairTask

if TYPE_CHECKING:
    from jobs.repair.tools_session import ToolSession


@runtime_checkable
class SourceView(Protocol):
    """Read-only view of the candidate's base source tree (repository-relative POSIX paths)."""

    def read(self, path: str) -> str | None:
        """File content, or None when missing/unreadable/binary."""
        ...

    def files(self) -> Sequence[str]:
        """All indexable files, sorted."""
        ...


@dataclass(frozen=True, slots=True)
class ProposalRequest:
    """Everything a proposer may look at for one round."""

    task: RepairTask
    source: SourceView
    round: int
    """0-based round index."""
    evidence: tuple[Evidence, ...] = ()
    plan: tuple[str, ...] = ()
    """Subgoals (medium/large tiers); empty when planning is off."""
    feedback: tuple[Feedback, ...] = ()
    """Encoded feedback of earlier rounds, oldest first."""
    n: int = 1
    """How many candidates the controller would like (diversified prompting)."""
    tried: frozenset[str] = frozenset()
    """Normalized-patch keys already executed; proposers should not repeat them."""
    tools: ToolSession | None = None
    """The round's active-retrieval tools (``open``, ``search``, ``symbol``, ``run_tests``) with
    their call limit and budget; None when the tier allows none (:mod:`jobs.repair.tools_session`)."""


@runtime_checkable
class Proposer(Protocol):
    """Produces candidate patches. Must never raise for model/template trouble: return [] and
    describe the problem in the trace instead (errors are data in the loop)."""

    name: str

    def propose(self, request: ProposalRequest, remaining: Budget) -> list[Proposal]:
        """Up to ``request.n`` proposals, spending at most ``remaining`` (tokens, USD)."""
        ...


@runtime_checkable
class Clock(Protocol):
    """Monotonic seconds; the only way the core learns about time."""

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin."""
        ...


@runtime_checkable
class Interrupt(Protocol):
    """Asked by the controller before reproduction and before every round: should it stop?

    The answer is a reason a maintainer understands ("stopped by @alice", "ARCS is paused for
    octo by an org admin"), or None to go on. The loop stops cleanly on a reason: verdict
    ``interrupted``, the reason in the trace, no patch. Implementations must be cheap (one
    store read) and must not raise for a transient problem: answer None and let the next check
    try again.
    """

    def check(self) -> str | None:
        """A reason to stop now, or None."""
        ...
