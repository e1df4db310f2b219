"""The exploring stand-in of the context bench (issue #15): tool results count as shown, the
policy never reads the targets, and a smoke through the real SDK and the local server.

Before this file's change ``bench.context.explorer`` did not exist, ``visibility`` counted evidence
blocks only (a tool result showed nothing) and the oracle answered the planner's ``tool_choice:
any`` request with a 400 (it only knew ``propose_patch`` there): every test here fails on that code.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from bench.context.explorer import ExplorerModel, candidates, failures, is_test_path, next_calls
from bench.context.oracle_server import OracleModel
from bench.context.report import render_tools
from bench.context.visibility import TargetLine, tool_blocks, visibility
from indexing.model import Chunk, Query, SearchHit
from jobs.llm_anthropic import AnthropicLLM
from jobs.repair.budget import Budget
from jobs.repair.fakes import InMemorySource
from jobs.repair.model import Failure, Frame
from jobs.repair.ports import ProposalRequest
from jobs.repair.proposers.anthropic import AnthropicProposer
from jobs.repair.task import RepairTask
from jobs.repair.tools import RepoToolBox
from jobs.repair.tools_session import ToolSession
from tests.fakes.anthropic_server import FakeAnthropicServer, serving

MODEL = "claude-sonnet-4-6"
CALC = (
    "def add(a, b):\n    return a + b + 1\n\n\n"
    "def total(xs):\n    return sum(add(x, 0) for x in xs)\n"
)  # fmt: skip
TEST = "from calc import total\n\n\ndef test_total():\n    assert total([2, 2]) == 4\n"
FILES = {"calc.py": CALC, "tests/test_calc.py": TEST}
TARGET = TargetLine("calc.py", 2, "    return a + b + 1")
FIX = [{"path": "calc.py", "kind": "replace", "old": "return a + b + 1", "new": "return a + b"}]


class Index:
    def search(self, query: Query) -> list[SearchHit]:
        chunk = Chunk(path="calc.py", language="python", kind="function", symbol="total", qualified_name="total",
                      start_line=5, end_line=6, text="def total(xs):\n    return sum(add(x, 0) for x in xs)")  # fmt: skip
        return [SearchHit(chunk=chunk, score=1.0)]


def box() -> RepoToolBox:
    return RepoToolBox(InMemorySource(FILES), retriever=Index())


def test_tool_results_count_as_shown_in_the_tools_own_format() -> None:
    tools = box()
    opened = tools.open("calc.py", 1, 2).text
    symbol = tools.symbol("add").text  # definition of add (lines 1-2) and its caller row (line 6)
    found = tools.search("total").text  # lines 5-6 only
    assert visibility([TARGET], [opened]).all_shown
    assert visibility([TARGET], [symbol]).all_shown
    assert not visibility([TARGET], [found]).all_shown
    assert not visibility([TARGET], [opened], tools=False).all_shown  # evidence blocks only
    caller = TargetLine("calc.py", 6, "    return sum(add(x, 0) for x in xs)")
    assert visibility([caller], [symbol]).all_shown and visibility([caller], [found]).all_shown
    # a numbered line counts as the line its number names, not as its neighbours
    assert not visibility([TargetLine("calc.py", 3, "")], [tools.open("calc.py", 1, 1).text]).all_shown
    assert [(b.path, b.start, b.end) for b in tool_blocks(opened + "\n\n" + found)] == [
        ("calc.py", 1, 2),
        ("calc.py", 5, 6),
    ]


def test_the_policy_reads_the_request_only_never_the_targets() -> None:
    for fn in (next_calls, candidates, failures):
        assert list(inspect.signature(fn).parameters) in (["body"], ["text"])
    body = _propose_body(_task(frames=True), calls_left=True)
    near = ExplorerModel([TARGET], FIX)
    far = ExplorerModel([TargetLine("elsewhere.py", 99, "nothing")], [])
    a, b = near(body), far(body)
    assert a.tool_uses == b.tool_uses and a.tool_uses  # type: ignore[union-attr]
    assert [(u.name, u.input) for u in a.tool_uses] == [  # type: ignore[union-attr]
        ("symbol", {"name": "add"}),
        ("symbol", {"name": "total"}),
    ]


def test_candidates_frames_then_callees_then_search() -> None:
    text = (
        _task(frames=True, message="ValueError: bad total 5")
        + "\n# Repository evidence\n\n"
        + "### tests/test_calc.py:1-5 [test]\n```\n"
        + TEST
        + "```\n\n### calc.py:5-6 [code total]\n```\n"
        + "def total(xs):\n    return sum(add(x, 0) for x in xs)  # helper(1) in a comment\n```\n"
    )
    got = candidates(text)
    # the unshown frame (calc.py:2 in add) first; total is shown, sum is a builtin, helper a comment
    assert got == [("symbol", {"name": "add"}), ("search", {"query": "ValueError: bad total 5"})]
    assert (
        is_test_path("tests/test_calc.py") and is_test_path("pkg/test_x.py") and not is_test_path("calc.py")
    )
    clipped = text.replace("    return sum(", "    [... lines 6-6 not shown ...]\n    return sum(")
    assert ("open", {"path": "calc.py", "start": 5, "end": 6}) in candidates(clipped)


def test_the_oracle_plans_when_the_planner_is_offered_tools() -> None:
    body = {
        "messages": [{"role": "user", "content": _task(frames=False)}],
        "tools": [{"name": "submit_plan"}, {"name": "open"}],
        "tool_choice": {"type": "any"},
    }
    for model in (OracleModel([TARGET], FIX), ExplorerModel([TARGET], FIX)):
        reply = model(body)
        assert reply.tool_uses[0].name == "submit_plan"  # type: ignore[union-attr]
        assert [r.answer for r in model.log] == ["plan"]


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with serving() as srv:
        yield srv


@pytest.mark.parametrize("target", [TARGET, TargetLine("tests/test_calc.py", 1, "from calc import total")])
def test_smoke_through_the_real_sdk_and_the_local_server(
    server: FakeAnthropicServer, target: TargetLine
) -> None:
    failure = Failure(
        "tests/test_calc.py::test_total", "AssertionError", "assert 5 == 4", "tests/test_calc.py", 5,
        frames=(Frame("tests/test_calc.py", 5, "test_total"), Frame("calc.py", 6, "total"), Frame("calc.py", 2, "add")),
    )  # fmt: skip
    task = RepairTask(kind="ci", test_command="pytest -q", failures=(failure,))
    session = ToolSession(box(), max_calls=4)
    model = ExplorerModel([target], FIX)
    server.dynamic = model
    with AnthropicLLM("sk-test", MODEL, base_url=server.base_url, sleep=lambda s: None) as llm:
        request = ProposalRequest(task=task, source=InMemorySource(FILES), round=0, n=1, tools=session)
        AnthropicProposer(llm).propose(request, Budget(tokens=400_000, usd=2.0, executions=10))
    # symbol(add), symbol(total) in one turn (the frames, innermost first), then search(message)
    assert [(c["name"], c["input"]) for c in session.log] == [
        ("symbol", {"name": "add"}),
        ("symbol", {"name": "total"}),
        ("search", {"query": "assert 5 == 4"}),
    ]
    answer = "fix" if target == TARGET else "wrong"
    assert [r.answer for r in model.log] == ["tools:symbol,symbol", "tools:search", answer]
    final = model.proposals[0]
    assert final.visibility is not None and final.visibility.all_shown == (target == TARGET)
    assert not visibility([target], [final.text], tools=False).all_shown  # only the tools showed it
    assert len(server.message_requests) == 3


def test_render_tools_puts_passive_and_explorer_side_by_side() -> None:
    def rec(split: str, last: bool, context: bool, calls: int) -> dict[str, Any]:
        return {
            "id": f"{split}-{last}-{context}", "split": split, "project": "x", "round1_all": context,
            "context_round1_all": context, "last_all": last, "context_last_all": context, "fixed": last,
            "turns": 2 + calls, "turn_chars_median": 1000, "turn_chars_max": 2000, "tokens": 5000,
            "tool_calls": calls, "tool_calls_by_name": {"symbol": calls} if calls else {},
            "requests": [{"chars": 1000}],
        }  # fmt: skip

    run = {"date": "d", "code": {}, "elapsed_s": 1, "records": []}
    results = {
        "passive": run | {"records": [rec("held_out", False, False, 0), rec("tuned", True, True, 0)]},
        "explorer": run | {"records": [rec("held_out", True, False, 2), rec("tuned", True, True, 1)]},
    }
    text = render_tools(results)
    assert "| held_out | explorer | 1 | 0/1 (0%) | 0/1 (0%) | 1/1 (100%) | 0/1 (0%) |" in text
    assert "| held_out | passive | 1 | 0/1 (0%) | 0/1 (0%) | 0/1 (0%) |" in text
    assert "only a tool result showed: 1 (held_out-True-False)" in text
    assert render_tools({"after": run}) == ""


def _task(*, frames: bool, message: str = "AssertionError") -> str:
    stack = (
        "    stack (innermost last):\n      tests/test_calc.py:5 in test_total\n"
        "      calc.py:6 in total\n      calc.py:2 in add\n"
        if frames
        else ""
    )
    return (
        "# Task\n\nObserved failures:\n- tests/test_calc.py::test_total: "
        + message.split(":")[0]
        + f"\n    {message}\n    at tests/test_calc.py:5\n{stack}\n# Plan\n\n(none)\n"
    )


def _propose_body(text: str, *, calls_left: bool) -> dict[str, Any]:
    return {
        "messages": [{"role": "user", "content": text + "\nThe round allows 4 tool calls in all."}],
        "tools": [{"name": "propose_patch"}, {"name": "open"}, {"name": "symbol"}],
        "tool_choice": {"type": "any"} if calls_left else {"type": "tool", "name": "propose_patch"},
    }
