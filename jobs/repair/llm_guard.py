"""The loop's model guard: role calls go through it so none can overspend the budget.

:class:`GuardedLLM` wraps the :class:`~jobs.repair.llm.LLM` the roles (planner, checkers,
clarifier, test designer) use: it refuses a call the :class:`~jobs.repair.meter.BudgetMeter`
cannot afford (:class:`BudgetRefused`, nothing sent), lowers ``max_tokens`` to what is
affordable, and charges every answered call's usage to the meter.
"""

from __future__ import annotations

from dataclasses import replace

from jobs.repair.llm import LLM, LLMError, LLMRequest, LLMResponse
from jobs.repair.meter import BudgetMeter

MIN_OUTPUT_TOKENS = 256
"""A role call is refused when fewer output tokens than this (or its own ``max_tokens``) fit."""


class BudgetRefused(LLMError):
    """A role call that would not fit in what is left of the budget (nothing was sent)."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_request", message, retryable=False)


class GuardedLLM:
    """An :class:`~jobs.repair.llm.LLM` that spends only what ``meter`` can afford."""

    def __init__(self, inner: LLM, meter: BudgetMeter) -> None:
        self.inner = inner
        self.meter = meter

    @property
    def model(self) -> str:
        """The inner model id."""
        return self.inner.model

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Forward ``request`` if it fits the remaining budget; account its usage."""
        fit = self.meter.affordable_output(request, self.inner.model, minimum=MIN_OUTPUT_TOKENS)
        if fit.short is not None:
            raise BudgetRefused(
                f"budget: not enough {fit.short} left for {request.purpose or 'a model call'}"
            )
        response = self.inner.complete(replace(request, max_tokens=fit.max_tokens))
        self.meter.charge(response.usage)
        return response


__all__ = ["MIN_OUTPUT_TOKENS", "BudgetRefused", "GuardedLLM"]
