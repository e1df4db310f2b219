"""The budget meter: what a repair has spent, what is left, and what the next step may cost.

One :class:`BudgetMeter` per repair run owns the spend (model usage, test executions, rounds,
wall time read through the :class:`~jobs.repair.ports.Clock` port) and every budget check the
loop makes. :meth:`BudgetMeter.affordable_output` is the one answer to "how many output tokens can
the next model call have": the loop's role calls and :class:`~jobs.repair.proposers.anthropic.
AnthropicProposer` both use it, with the same input estimate (chars/3 + 128: code tokenizes
denser than prose, plus the request's wire overhead) and one price table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from jobs.repair.budget import Budget, Spend
from jobs.repair.model import Usage
from jobs.repair.pricing import PriceTable, price_for

if TYPE_CHECKING:
    from jobs.repair.llm import LLMRequest
    from jobs.repair.ports import Clock

# Input tokens are estimated at chars/3 (code tokenizes denser than prose) plus the request's
# overhead beyond its text (JSON keys, tool schema framing).
OVERHEAD_TOKENS = 128


def input_tokens(chars: int) -> int:
    """The input token estimate of a request of ``chars`` characters (chars/3, rounded up, + 128)."""
    # ceil(ceil(chars*4/3 floor) / 4): the estimate the loop's guard has always used.
    return (max(0, chars * 4 // 3) + 3) // 4 + OVERHEAD_TOKENS


@dataclass(frozen=True, slots=True)
class Affordable:
    """The output a model call may have: ``max_tokens``, or the dimension it is ``short`` of."""

    max_tokens: int
    short: Literal["tokens", "usd"] | None = None
    """Set when fewer than the caller's minimum output tokens are affordable (make no call)."""


def affordable_output(
    request: LLMRequest,
    model: str,
    *,
    tokens_left: int,
    usd_left: float,
    minimum: int,
    price_table: PriceTable | None = None,
    then_chars: int = 0,
) -> Affordable:
    """Output tokens affordable for ``request`` within ``tokens_left``/``usd_left``.

    The input is priced as a cache write (the dearer case). ``max_tokens`` is at most the
    request's own; fewer than ``minimum`` (capped at the request's ``max_tokens``) affordable
    gives ``short``, tokens checked first. ``then_chars`` > 0 keeps back what one more call of
    that many input characters and ``minimum`` output tokens would cost (a tool turn must leave
    room for the ``propose_patch`` call that follows it).
    """
    estimate = input_tokens(request.chars)
    price = price_for(model, price_table)
    per_output = price.output / 1_000_000
    if then_chars > 0:
        later = input_tokens(then_chars)
        tokens_left -= later + minimum
        usd_left -= later * max(price.input, price.cache_write) / 1_000_000 + minimum * per_output
    by_tokens = tokens_left - estimate
    input_usd = estimate * max(price.input, price.cache_write) / 1_000_000
    by_usd = int((usd_left - input_usd) / per_output) if per_output > 0 else by_tokens
    floor = min(minimum, request.max_tokens)
    if by_tokens < floor:
        return Affordable(max(0, by_tokens), "tokens")
    if by_usd < floor:
        return Affordable(max(0, by_usd), "usd")
    return Affordable(min(request.max_tokens, by_tokens, by_usd))


class BudgetMeter:
    """Spend and budget checks of one repair run.

    ``clock`` (None: no wall time is measured, as for a proposer metering what it was offered)
    starts at construction, or at :meth:`start` when ``started`` is False (a repair wires its
    meter before it runs). ``reserve_s`` is the wall time kept for the bookkeeping after a test
    run: a run starts only with twice that much left. :meth:`window` is a view for one stage
    that may spend only part of the executions (the search, while change-first keeps a reserve).
    """

    def __init__(
        self,
        budget: Budget,
        clock: Clock | None = None,
        *,
        price_table: PriceTable | None = None,
        reserve_s: float = 1.0,
        started: bool = True,
    ) -> None:
        self.budget = budget
        self.clock = clock
        self.price_table = price_table
        self.reserve_s = reserve_s
        self.started = clock.monotonic() if clock is not None and started else 0.0
        self.usage = Usage()
        self.executions = 0
        self.iterations = 0

    def start(self) -> None:
        """Start the wall clock now (a meter made with ``started=False``)."""
        self.started = self.clock.monotonic() if self.clock is not None else 0.0

    def window(self, *, executions: int) -> BudgetMeter:
        """A view of this meter in which at most ``executions`` more test runs may start: its
        checks use ``min(executions - runs made through the view, what this meter has left)``;
        everything it counts (runs, rounds, usage) is counted here too, on one clock."""
        return MeterWindow(self, executions)

    # -- spend -------------------------------------------------------------------------------------

    def spend(self) -> Spend:
        """Everything spent so far (reads the clock once)."""
        wall = max(0.0, self.clock.monotonic() - self.started) if self.clock is not None else 0.0
        return Spend(
            iterations=self.iterations,
            tokens=self.usage.tokens,
            usd=self.usage.usd,
            wall_s=wall,
            executions=self.executions,
        )

    def remaining(self) -> Budget:
        """What is left (never negative)."""
        return self.budget.remaining(self.spend())

    def charge(self, usage: Usage) -> None:
        """Account a model call's (or a proposal's) usage."""
        self.usage = self.usage + usage

    def count_round(self) -> None:
        """A round started."""
        self.iterations += 1

    def count_runs(self, n: int) -> None:
        """``n`` test executions are about to start."""
        self.executions += n

    # -- checks ------------------------------------------------------------------------------------

    def would_exceed(self, extra: Spend) -> str | None:
        """The first dimension that spending ``extra`` now would push past its bound."""
        return self.budget.would_exceed(self.spend(), extra)

    def execution_stop(self) -> str:
        """The dimension (``executions``, ``wall_s``) that forbids another test run, or ''."""
        spend = self.spend()
        if self.budget.would_exceed(spend, Spend(executions=1)):
            return "executions"
        # A run gets the wall budget left minus a reserve for the bookkeeping after it.
        if self.budget.wall_s - spend.wall_s < 2 * self.reserve_s:
            return "wall_s"
        return ""

    def can_execute(self) -> bool:
        """Whether another test run may start."""
        return self.execution_stop() == ""

    def runs_allowed(self, n: int) -> int:
        """How many of ``n`` test runs may start now (decided up front, so deterministically)."""
        allowed = 0
        for _ in range(n):
            if not self.can_execute() or self.would_exceed(Spend(executions=allowed + 1)):
                break
            allowed += 1
        return allowed

    def rounds_left(self) -> int:
        """Rounds the iteration budget still allows."""
        return max(0, self.budget.iterations - self.iterations)

    def round_stop(self, *, llm: bool) -> str:
        """The dimension that forbids another round (model tokens/USD only for an ``llm`` tier), or ''."""
        spend = self.spend()
        if self.budget.would_exceed(spend, Spend(iterations=1)):
            return "iterations"
        if llm:
            for dim in ("tokens", "usd"):
                if getattr(spend, dim) >= getattr(self.budget, dim):
                    return dim
        if not self.can_execute():
            return self.execution_stop()
        return ""

    def wall_left(self) -> float:
        """Wall seconds left (may be negative once overrun)."""
        return self.budget.wall_s - self.spend().wall_s

    def offered(self, safety: float) -> Budget:
        """What is left with ``tokens``/``usd`` scaled by ``safety`` (what a model proposer is offered)."""
        remaining = self.remaining()
        return remaining.with_(tokens=int(remaining.tokens * safety), usd=remaining.usd * safety)

    # -- model calls -------------------------------------------------------------------------------

    def affordable_output(
        self, request: LLMRequest, model: str, *, minimum: int, then_chars: int = 0
    ) -> Affordable:
        """:func:`affordable_output` within what is left of this meter's budget."""
        remaining = self.remaining()
        return affordable_output(
            request,
            model,
            tokens_left=remaining.tokens,
            usd_left=remaining.usd,
            minimum=minimum,
            price_table=self.price_table,
            then_chars=then_chars,
        )


class MeterWindow(BudgetMeter):
    """:meth:`BudgetMeter.window`: the runs made through it are its own ``executions`` (and the
    parent's); rounds, usage and the clock are the parent's. Its ``budget`` is the parent's with
    ``executions`` = its own runs + ``min(cap - own runs, parent's executions left)``, so every
    check of :class:`BudgetMeter` holds the window and the whole budget at once."""

    def __init__(self, parent: BudgetMeter, cap: int) -> None:
        # No super().__init__: every value but the window's own runs lives in the parent.
        self.parent = parent
        self.cap = cap
        self.own = 0
        self.clock = parent.clock
        self.price_table = parent.price_table
        self.reserve_s = parent.reserve_s
        self.started = parent.started

    @property
    def budget(self) -> Budget:
        """The parent's budget, executions bounded by the window (see the class docstring)."""
        whole = self.parent.budget
        left = max(0, whole.executions - self.parent.executions)
        return whole.with_(executions=self.own + max(0, min(self.cap - self.own, left)))

    @budget.setter
    def budget(self, value: Budget) -> None:
        raise AttributeError("a meter window's budget is its parent's")

    @property
    def executions(self) -> int:
        """Runs made through the window."""
        return self.own

    @executions.setter
    def executions(self, value: int) -> None:
        self.parent.executions += value - self.own
        self.own = value

    @property
    def usage(self) -> Usage:
        """The parent's usage."""
        return self.parent.usage

    @usage.setter
    def usage(self, value: Usage) -> None:
        self.parent.usage = value

    @property
    def iterations(self) -> int:
        """The parent's rounds."""
        return self.parent.iterations

    @iterations.setter
    def iterations(self, value: int) -> None:
        self.parent.iterations = value


__all__ = [
    "OVERHEAD_TOKENS",
    "Affordable",
    "BudgetMeter",
    "MeterWindow",
    "affordable_output",
    "input_tokens",
]
