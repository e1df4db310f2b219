"""The planner with tools, through the real ``anthropic`` SDK against the local server (issue #15).

The planner shares the round's :class:`~jobs.repair.tools_session.ToolSession` with the proposer:
it may ``open``/``search``/``symbol`` (never ``run_tests``) before ``submit_plan``, its calls count
in the round's limit and its turns in the budget, and the session records them with
``role: "planner"``. Before this, ``roles.plan`` took no ``tools`` (a TypeError here), sent one
forced ``submit_plan`` request, and a trace's tool calls had no role.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from jobs.llm_anthropic import AnthropicLLM
from jobs.repair import roles
from jobs.repair.budget import Budget
from jobs.repair.llm import LLMError
from jobs.repair.meter import BudgetMeter
from jobs.repair.plan import make_plan
from jobs.repair.proposers.tooluse import RoleTools
from jobs.repair.trace_parts import ToolCallDoc, turn_totals
from tests.fakes.anthropic_server import FakeAnthropicServer, Reply, ToolUse, serving
from tests.jobs.test_tool_proposer import FAILURE, MODEL, PATCH, TASK, Suite, request, results, session

BUDGET = Budget(tokens=400_000, usd=2.0, executions=10)
PLAN = {"contract": "add(a, b) == a + b", "sketch": "drop the + 1", "subgoals": ["add returns a + b"]}
LONG_TASK = TASK.__class__(
    kind="ci", test_command="pytest -q " + "-k add " * 80, failures=(FAILURE,)
)  # long enough for the planner gate


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with serving() as srv:
        yield srv


@pytest.fixture
def llm(server: FakeAnthropicServer) -> Iterator[AnthropicLLM]:
    with AnthropicLLM("sk-test", MODEL, base_url=server.base_url, sleep=lambda s: None) as model:
        yield model


def offered(body: Any) -> list[str]:
    return [t["name"] for t in body.get("tools", [])]


def located_plan(body: Any) -> Reply:
    """``submit_plan`` built from what the last ``symbol`` result said (``definition X at P:a-b``)."""
    answers = [
        b.get("content")
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    where = [m.group(1) for a in answers if (m := re.search(r"definition \w+ at (\S+)", str(a)))]
    subgoals = [f"fix add at {where[-1]}"] if where else ["somewhere"]
    return Reply.tool("submit_plan", {**PLAN, "subgoals": subgoals}, input_tokens=700, output_tokens=60)


def test_the_planner_looks_up_a_symbol_and_plans_from_what_it_found(
    server: FakeAnthropicServer, llm: AnthropicLLM
) -> None:
    tools = session()
    meter = BudgetMeter(BUDGET)
    server.enqueue(Reply.tool("symbol", {"name": "add"}, input_tokens=600), located_plan)
    plan = roles.plan(llm, TASK, tools=RoleTools(tools, llm, meter))

    first, second = server.message_requests
    # the read-only tools next to submit_plan, the model picks: no run_tests for the planner
    assert offered(first.body) == ["submit_plan", "open", "search", "symbol"]
    assert [first.tool_choice, second.tool_choice] == ["any", "any"]
    assert "`open`, `search`, `symbol`" in first.user_text and "8 more tool calls" in first.user_text
    ((answer, is_error),) = results(second)
    assert "definition add at calc.py:1-2" in answer and not is_error
    # the plan names what the tool found
    assert plan.ok and plan.subgoals == ("fix add at calc.py:1-2",)
    assert plan.usage.calls == 2 and plan.usage.input_tokens == 1300  # the whole conversation
    assert meter.usage.calls == 2 and meter.usage.input_tokens == 1300  # charged once, every turn
    assert [(c["role"], c["variant"], c["name"], c["ok"], c["turn"]) for c in tools.log] == [
        ("planner", "plan", "symbol", True, 1)
    ]
    assert tools.used == 1 and tools.calls_left == 7


def test_malformed_and_unoffered_planner_calls_get_error_results(
    server: FakeAnthropicServer, llm: AnthropicLLM
) -> None:
    suite = Suite()
    tools = session(tests=suite)
    server.enqueue(
        Reply(tool_uses=(ToolUse("run_tests", {"selection": [FAILURE.test_id]}), ToolUse("open", {"path": "../x"}),
                         ToolUse("open", {"path": "calc.py", "start": "first"}), ToolUse("symbol", {"name": 5}))),
        Reply.tool("submit_plan", PLAN),
    )  # fmt: skip
    plan = roles.plan(llm, TASK, tools=RoleTools(tools, llm, BudgetMeter(BUDGET)))
    answers = results(server.message_requests[1])
    assert [err for _, err in answers] == [True, True, True, True]
    assert answers[0][0] == "unknown tool 'run_tests'; available: open, search, symbol, submit_plan"
    assert "not a repository-relative path" in answers[1][0] and "not a line number" in answers[2][0]
    assert suite.runs == [] and tools.executions == 0  # nothing was executed
    assert [c["ok"] for c in tools.log] == [False] * 4 and tools.used == 4  # malformed calls count
    assert plan.ok and plan.subgoals == ("add returns a + b",)


def test_the_round_limit_is_shared_with_the_proposer(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    from jobs.repair.proposers.anthropic import AnthropicProposer

    tools = session(max_calls=2)
    server.enqueue(
        Reply(tool_uses=(ToolUse("open", {"path": "calc.py"}), ToolUse("symbol", {"name": "add"}),
                         ToolUse("search", {"query": "add"}))),
        located_plan,
        Reply.tool("propose_patch", PATCH),
    )  # fmt: skip
    plan = roles.plan(llm, TASK, tools=RoleTools(tools, llm, BudgetMeter(BUDGET)))
    proposals = AnthropicProposer(llm).propose(request(tools), BUDGET)

    reqs = server.message_requests
    # the planner's third call is past the limit, so its next turn is the forced submit_plan
    assert [r.tool_choice for r in reqs] == ["any", "submit_plan", "propose_patch"]
    assert results(reqs[1])[2] == ("tool call limit reached (2 per round): call submit_plan now", True)
    assert plan.subgoals == ("fix add at calc.py:1-2",)
    # the proposer of the same round finds the calls used up: one forced call, no tools offered
    assert offered(reqs[2].body) == ["propose_patch"] and "tool calls" not in reqs[2].user_text
    assert proposals[0].edits
    assert [(c["role"], c["refused"]) for c in tools.log] == [
        ("planner", ""), ("planner", ""), ("planner", "limit")
    ]  # fmt: skip


def test_a_budget_spent_by_a_tool_turn_forces_submit_plan(
    server: FakeAnthropicServer, llm: AnthropicLLM
) -> None:
    tools = session()
    meter = BudgetMeter(Budget(tokens=40_000, usd=2.0))

    def bloat(body: Any) -> Reply:  # billed as if the turn had read a lot: no room for another free turn
        return Reply(tool_uses=(ToolUse("symbol", {"name": "add"}),), input_tokens=36_000)

    server.enqueue(bloat, located_plan)
    plan = roles.plan(llm, TASK, tools=RoleTools(tools, llm, meter))
    assert [r.tool_choice for r in server.message_requests] == ["any", "submit_plan"]
    assert plan.ok and plan.subgoals == ("fix add at calc.py:1-2",)
    assert meter.usage.input_tokens == 36_700


def test_a_budget_too_small_for_any_tool_turn_asks_for_the_plan_at_once(
    server: FakeAnthropicServer, llm: AnthropicLLM
) -> None:
    tools = session()
    server.enqueue(Reply.tool("submit_plan", PLAN))
    plan = roles.plan(llm, TASK, tools=RoleTools(tools, llm, BudgetMeter(Budget(tokens=5_000, usd=2.0))))
    assert [r.tool_choice for r in server.message_requests] == ["submit_plan"]
    assert plan.ok and tools.log == []


def test_no_budget_left_for_submit_plan_after_a_tool_turn_falls_back_with_the_turn_charged(
    server: FakeAnthropicServer, llm: AnthropicLLM
) -> None:
    tools = session()
    meter = BudgetMeter(Budget(tokens=40_000, usd=2.0))
    server.enqueue(lambda body: Reply.tool("symbol", {"name": "add"}, input_tokens=39_000))
    outcome = make_plan(LONG_TASK, enabled=True, max_subgoals=4, llm=llm, tools=RoleTools(tools, llm, meter))
    assert len(server.message_requests) == 1
    assert outcome.source == "structural" and outcome.error == "budget: not enough tokens left for plan"
    assert outcome.usage.input_tokens == 39_000 and meter.usage.input_tokens == 39_000


def test_a_failed_first_planner_call_still_raises(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    from tests.fakes.anthropic_server import bad_request

    server.enqueue(bad_request())
    with pytest.raises(LLMError):
        roles.plan(llm, TASK, tools=RoleTools(session(), llm, BudgetMeter(BUDGET)))


def test_tool_calls_read_with_their_role_and_old_traces_read_as_the_proposers() -> None:
    old = {"variant": "minimal", "turn": 1, "name": "open", "input": {"path": "a"}, "turn_tokens": 100}
    new = {**old, "role": "planner", "variant": "plan", "turn_tokens": 40}
    calls = ToolCallDoc.read_all([old, new, {**new, "name": "symbol"}, {**old, "role": 7}])
    assert [c.role for c in calls] == ["proposer", "planner", "planner", "proposer"]
    # each model turn counted once, the planner's apart from the proposer's
    assert turn_totals(calls) == (140, 0.0)
