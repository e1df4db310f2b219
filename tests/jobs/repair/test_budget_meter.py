"""BudgetMeter: one affordability estimate for the loop's role calls and the model proposer, and
the loop's budget checks."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from jobs.repair.budget import Budget, Spend
from jobs.repair.fakes import FakeClock, ScriptedLLM
from jobs.repair.llm import LLMError, LLMRequest, Message
from jobs.repair.llm_guard import BudgetRefused, GuardedLLM
from jobs.repair.meter import BudgetMeter, input_tokens
from jobs.repair.model import Usage
from jobs.repair.ports import ProposalRequest
from jobs.repair.pricing import PriceTable, parse_price_table
from jobs.repair.proposers.anthropic import AnthropicProposer
from jobs.repair.task import RepairTask

MODEL = "claude-sonnet-4-6"
CHEAP = parse_price_table(
    {
        "default": {"input": 1.0, "output": 2.0, "cache_write": 1.25, "cache_read": 0.1},
        "families": {MODEL: {"input": 1.0, "output": 2.0, "cache_write": 1.25, "cache_read": 0.1}},
    }
)


class _Source:
    def read(self, path: str) -> str | None:
        return None

    def files(self) -> Sequence[str]:
        return ()


def _overloaded() -> LLMError:
    return LLMError("overloaded", "scripted", retryable=False)


def _proposal_request() -> ProposalRequest:
    task = RepairTask(kind="issue", title="add() is off by one", body="add(2, 2) returns 5 " * 200)
    return ProposalRequest(task=task, source=_Source(), round=0, n=1)


def _both_max_tokens(budget: Budget, table: PriceTable | None) -> tuple[int, int, LLMRequest]:
    """``max_tokens`` the proposer and the loop's guard send for the same request and budget."""
    proposer_llm = ScriptedLLM([_overloaded()], model=MODEL)
    proposer = AnthropicProposer(proposer_llm, price_table=table)
    proposer.propose(_proposal_request(), budget)
    (sent,) = proposer_llm.requests
    request = proposer.build_request(
        _proposal_request(), "minimal", proposer.context_for(_proposal_request())
    )
    guard_llm = ScriptedLLM([_overloaded()], model=MODEL)
    guard = GuardedLLM(guard_llm, BudgetMeter(budget, price_table=table))
    with pytest.raises(LLMError):
        guard.complete(request)
    (guarded,) = guard_llm.requests
    return sent.max_tokens, guarded.max_tokens, request


@pytest.mark.parametrize(
    ("budget", "table"),
    [
        (Budget(tokens=6_000), None),  # tokens bind
        (Budget(usd=0.05), None),  # USD binds, packaged prices
        (Budget(usd=0.01), CHEAP),  # USD binds, the caller's price table
    ],
)
def test_proposer_and_role_guard_give_the_same_max_tokens(budget: Budget, table: PriceTable | None) -> None:
    by_proposer, by_guard, request = _both_max_tokens(budget, table)
    assert by_proposer == by_guard
    assert 1_024 <= by_proposer < request.max_tokens  # the budget, not the request, set it


def test_the_estimate_is_chars_over_three_plus_overhead() -> None:
    request = LLMRequest(system="s" * 300, messages=(Message("user", "u" * 300),), max_tokens=4_000)
    assert input_tokens(request.chars) == 200 + 128
    fit = BudgetMeter(Budget(tokens=328 + 1_000)).affordable_output(request, MODEL, minimum=256)
    assert (fit.max_tokens, fit.short) == (1_000, None)


def test_guard_refuses_what_does_not_fit_and_charges_what_was_spent() -> None:
    meter = BudgetMeter(Budget(tokens=400))
    request = LLMRequest(system="s" * 3_000, messages=(), max_tokens=4_000)
    with pytest.raises(BudgetRefused, match="not enough tokens"):
        GuardedLLM(ScriptedLLM([], model=MODEL), meter).complete(request)
    meter.charge(Usage(input_tokens=100, output_tokens=50, usd=0.01))
    assert meter.spend() == Spend(tokens=150, usd=0.01)
    assert meter.remaining().tokens == 250


def test_execution_checks_count_runs_and_keep_a_wall_reserve() -> None:
    clock = FakeClock()
    meter = BudgetMeter(Budget(executions=3, wall_s=10.0), clock, reserve_s=2.0)
    assert meter.runs_allowed(5) == 3
    meter.count_runs(2)
    assert meter.runs_allowed(5) == 1 and meter.can_execute()
    clock.advance(6.5)  # 3.5 s left < 2 * reserve
    assert meter.execution_stop() == "wall_s" and meter.runs_allowed(1) == 0
    meter.count_runs(1)
    assert meter.execution_stop() == "executions"


def test_round_stop_checks_model_spend_only_for_llm_tiers() -> None:
    meter = BudgetMeter(Budget(iterations=2, tokens=100), FakeClock())
    meter.charge(Usage(input_tokens=100))
    assert meter.round_stop(llm=True) == "tokens"
    assert meter.round_stop(llm=False) == ""
    meter.count_round()
    meter.count_round()
    assert meter.round_stop(llm=False) == "iterations" and meter.rounds_left() == 0


# -- one meter per repair (#25): the search spends in a window of it ------------------------------


def test_a_window_bounds_its_own_runs_and_counts_everything_in_the_meter() -> None:
    clock = FakeClock()
    meter = BudgetMeter(Budget(executions=10, iterations=5), clock, started=False)
    clock.advance(100.0)  # wiring time is not spent: the clock starts with start()
    meter.start()
    window = meter.window(executions=6)
    meter.count_runs(3)  # change-first, outside the window: not the window's runs
    assert window.runs_allowed(10) == 6 and window.executions == 0
    window.count_runs(4)
    window.count_round()
    window.charge(Usage(input_tokens=10, output_tokens=5, usd=0.01))
    assert meter.executions == 7 and meter.iterations == 1 and meter.usage.tokens == 15
    assert window.spend().executions == 4 and window.rounds_left() == 4
    assert window.runs_allowed(5) == 2 and window.execution_stop() == ""
    window.count_runs(2)
    assert window.execution_stop() == "executions" and window.round_stop(llm=False) == "executions"
    assert window.budget.executions == 6 and meter.remaining().executions == 1  # what the culprit gets
    clock.advance(2.5)
    assert window.spend().wall_s == meter.spend().wall_s == 2.5  # one clock


def test_a_window_never_lets_the_search_past_what_the_whole_budget_has_left() -> None:
    meter = BudgetMeter(Budget(executions=5))
    window = meter.window(executions=4)
    meter.count_runs(3)  # more drawn outside than the window leaves: min(4 - 0, 5 - 3) = 2
    assert window.runs_allowed(4) == 2 and window.budget.executions == 2
    window.count_runs(2)
    assert not window.can_execute() and meter.remaining().executions == 0
    with pytest.raises(AttributeError):
        window.budget = Budget()
