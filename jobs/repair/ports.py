"""The ports of the repair core. Each has a real implementation and an in-repo fake.

- :class:`Retriever` (``indexing.retriever.HybridRetriever``; fake: tests)
- :class:`Proposer` (``proposers.anthropic``, ``tier0.templates``, ``proposers.replay``)
- ``Runner`` (``runners.base.Runner``: ``runners.sandbox.LocalSandbox``; fake: ``runners.fake.FakeRunner``)
- ``Gate`` (``jobs.repair.gates``)
- :class:`Clock` (wall time is read only through it, so replays are exact)
- :class:`Tools` (a round's tools for the proposer: ``tools_session.ToolSession``, over the live
  tool box or, on replay, over ``RecordedTools``; fake: ``FakeToolBox`` in a session)
- :class:`Interrupt` (optional: someone outside asks the repair to stop; the pipeline answers
  from the store, a replay answers from the trace)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from jobs.repair.budget import Budget
from jobs.repair.call_path import CallPath
from jobs.repair.llm import ToolResult, ToolSpec
from jobs.repair.model import Evidence, Feedback, Proposal, Usage
from jobs.repair.task import RepairTask


@runtime_checkable
class SourceView(Protocol):
    """Read-only view of the candidate's base source tree (repository-relative POSIX paths)."""

    def read(self, path: str) -> str | None:
        """File content, or None when missing/unreadable/binary."""
        ...

    def files(self) -> Sequence[str]:
        """All indexable files, sorted."""
        ...


class Tools(Protocol):
    """What :attr:`ProposalRequest.tools` is: one round's tools with their call limit and log
    (:class:`jobs.repair.tools_session.ToolSession` conforms). Declared here, on values only, so
    the ports import no session module."""

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools offered."""
        ...

    @property
    def calls_left(self) -> int:
        """Calls the round may still make."""
        ...

    @property
    def max_calls(self) -> int:
        """The round's call limit."""
        ...

    @property
    def result_chars(self) -> int:
        """The longest result a tool sends."""
        ...

    @property
    def context_chars(self) -> int | None:
        """The largest request the conversation may send (None: no cap)."""
        ...

    @property
    def log(self) -> list[dict[str, Any]]:
        """One record per call, in order (stored in the round's ``tool_calls``)."""
        ...

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
        """Answer one call, or refuse it (limit, executions), and record it."""
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
    tools: Tools | None = None
    """The round's active-retrieval tools (``open``, ``search``, ``symbol``, ``run_tests``) with
    their call limit and budget; None when the tier allows none (:mod:`jobs.repair.tools_session`)."""
    call_path: CallPath | None = None
    """The failing tests' call path (the run's one traced run, issue #29); None when not traced."""


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
