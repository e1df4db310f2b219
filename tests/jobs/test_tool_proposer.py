"""The proposer with tools, through the real ``anthropic`` SDK against the local server (issue #15).

The scripted server calls every tool (``open``, ``search``, ``symbol``, ``run_tests``), makes
malformed calls (an unknown tool, bad arguments, a path outside the repository) and is cut off by
the round's tool limit and by the budget (tokens, executions). Before the tools existed the
proposer sent one forced ``propose_patch`` request and ``ProposalRequest`` had no ``tools``: every
test here fails there (a TypeError building the request, or a single request with no tools).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from indexing.model import Chunk, Query, SearchHit
from jobs.llm_anthropic import AnthropicLLM
from jobs.repair.budget import Budget
from jobs.repair.fakes import InMemorySource
from jobs.repair.model import Failure, Frame
from jobs.repair.ports import ProposalRequest
from jobs.repair.proposers.anthropic import NO_EDITS, AnthropicProposer
from jobs.repair.task import RepairTask
from jobs.repair.tools import RepoToolBox
from jobs.repair.tools_session import ToolSession
from jobs.repair.workbench import TestOutcome
from tests.fakes.anthropic_server import FakeAnthropicServer, RecordedRequest, Reply, ToolUse, serving

MODEL = "claude-sonnet-4-6"
CALC = "def add(a: int, b: int) -> int:\n    return a + b + 1\n\n\ndef total(xs):\n    return sum(add(x, 0) for x in xs)\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
FAILURE = Failure(
    "tests/test_calc.py::test_add", "AssertionError", "assert 5 == 4", "tests/test_calc.py", 5,
    frames=(Frame("tests/test_calc.py", 5, "test_add"),),
)  # fmt: skip
TASK = RepairTask(kind="ci", test_command="pytest -q", failures=(FAILURE,))
PATCH = {
    "explanation": "add() adds a stray 1.",
    "edits": [{"path": "calc.py", "kind": "replace", "old": "return a + b + 1", "new": "return a + b"}],
}
BUDGET = Budget(tokens=400_000, usd=2.0, executions=10)


class Index:
    def search(self, query: Query) -> list[SearchHit]:
        chunk = Chunk(path="calc.py", language="python", kind="function", symbol="add", qualified_name="add", start_line=1, end_line=2,
                      text="def add(a: int, b: int) -> int:\n    return a + b + 1")  # fmt: skip
        return [SearchHit(chunk=chunk, score=1.0)]


class Suite:
    def __init__(self) -> None:
        self.runs: list[tuple[str, ...]] = []

    def __call__(self, selection: tuple[str, ...]) -> TestOutcome:
        self.runs.append(selection)
        return TestOutcome(failed=selection, failures=(FAILURE,), selected=True)


def session(
    max_calls: int = 8, executions_left: list[int] | None = None, tests: Suite | None = None
) -> ToolSession:
    left = executions_left if executions_left is not None else [10]

    def count(n: int) -> None:
        left[0] -= n

    box = RepoToolBox(
        InMemorySource({"calc.py": CALC, "tests/test_calc.py": TEST}),
        retriever=Index(),
        run_tests=tests or Suite(),
    )
    return ToolSession(
        box, max_calls=max_calls, execution_stop=lambda: "" if left[0] > 0 else "executions", count_runs=count
    )


def request(tools: ToolSession | None, n: int = 1) -> ProposalRequest:
    return ProposalRequest(task=TASK, source=InMemorySource({}), round=0, n=n, tools=tools)


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with serving() as srv:
        yield srv


@pytest.fixture
def proposer(server: FakeAnthropicServer) -> Iterator[AnthropicProposer]:
    with AnthropicLLM("sk-test", MODEL, base_url=server.base_url, sleep=lambda s: None) as llm:
        yield AnthropicProposer(llm)


def results(req: RecordedRequest) -> list[tuple[str, bool]]:
    """(content, is_error) of the tool results the request answers with."""
    return [(str(r["content"]), bool(r.get("is_error", False))) for r in req.tool_results]


def test_every_tool_and_every_malformed_call_through_the_real_sdk(
    server: FakeAnthropicServer, proposer: AnthropicProposer
) -> None:
    tests = Suite()
    tools = session(tests=tests)
    server.enqueue(
        Reply(text="Let me look.", tool_uses=(ToolUse("open", {"path": "calc.py", "start": 1, "end": 2}),
                                              ToolUse("search", {"query": "add stray one"}))),
        Reply(tool_uses=(ToolUse("symbol", {"name": "add"}), ToolUse("run_tests", {"selection": [FAILURE.test_id]}))),
        Reply(tool_uses=(ToolUse("delete_repo", {"path": "."}), ToolUse("open", {"path": "../../etc/passwd"}),
                         ToolUse("open", {"path": "calc.py", "start": "first"}))),
        Reply.tool("propose_patch", PATCH),
    )  # fmt: skip
    proposals = proposer.propose(request(tools), BUDGET)

    reqs = server.message_requests
    assert len(reqs) == 4
    # tools offered next to propose_patch; the model chooses (any) until it proposes
    assert [t["name"] for t in reqs[0].body["tools"]] == [
        "propose_patch",
        "open",
        "search",
        "symbol",
        "run_tests",
    ]
    assert all(r.tool_choice == "any" for r in reqs)
    assert (
        "`open`, `search`, `symbol`, `run_tests`" in reqs[0].user_text and "8 tool calls" in reqs[0].user_text
    )
    first = results(reqs[1])
    assert first[0] == ("calc.py lines 1-2 of 6 (more: open with start=3)\n    1| def add(a: int, b: int) -> int:\n    2|     return a + b + 1", False)  # fmt: skip
    assert "calc.py:1-2 (add)" in first[1][0] and not first[1][1]
    second = results(reqs[2])
    assert "definition add at calc.py:1-2" in second[0][0] and "calc.py:6 in total" in second[0][0]
    assert "0 passed, 1 failed" in second[1][0] and tests.runs == [(FAILURE.test_id,)]
    third = results(reqs[3])
    assert [err for _, err in third] == [True, True, True]
    assert "unknown tool 'delete_repo'" in third[0][0] and "not a repository-relative path" in third[1][0]
    assert "not a line number" in third[2][0]
    # the echoed assistant turn carries the text and the tool uses as they came
    assert reqs[1].body["messages"][1]["content"][0] == {"type": "text", "text": "Let me look."}

    assert len(proposals) == 1 and proposals[0].edits[0].new == "return a + b"
    assert proposals[0].usage.calls == 4  # the whole conversation is charged
    assert [(c["name"], c["ok"]) for c in tools.log] == [
        ("open", True), ("search", True), ("symbol", True), ("run_tests", True),
        ("delete_repo", False), ("open", False), ("open", False),
    ]  # fmt: skip
    assert tools.executions == 1 and sum(c["executions"] for c in tools.log) == 1


def test_the_round_limit_forces_propose_patch_and_is_shared_by_the_candidates(
    server: FakeAnthropicServer, proposer: AnthropicProposer
) -> None:
    tools = session(max_calls=2)
    server.enqueue(
        Reply(tool_uses=(ToolUse("open", {"path": "calc.py"}), ToolUse("symbol", {"name": "add"}),
                         ToolUse("open", {"path": "tests/test_calc.py"}))),
        Reply.tool("propose_patch", PATCH),
        Reply.tool("propose_patch", PATCH),
    )  # fmt: skip
    proposals = proposer.propose(request(tools, n=2), BUDGET)
    reqs = server.message_requests
    assert [r.tool_choice for r in reqs] == ["any", "propose_patch", "propose_patch"]
    assert [err for _, err in results(reqs[1])] == [False, False, True]
    assert "limit reached" in results(reqs[1])[2][0]
    # the second candidate starts with the round's calls used up: one forced call, no tools
    assert "tools" in reqs[2].body and [t["name"] for t in reqs[2].body["tools"]] == ["propose_patch"]
    assert len(proposals) == 2 and all(p.edits for p in proposals)


def test_no_execution_left_refuses_run_tests(
    server: FakeAnthropicServer, proposer: AnthropicProposer
) -> None:
    tests = Suite()
    tools = session(executions_left=[0], tests=tests)
    server.enqueue(Reply.tool("run_tests", {"selection": ["t"]}), Reply.tool("propose_patch", PATCH))
    proposer.propose(request(tools), BUDGET)
    assert tests.runs == [] and tools.log[0]["refused"] == "executions"
    assert results(server.message_requests[1]) == [
        ("no test execution left in the budget (executions); call propose_patch now", True)
    ]


def test_a_budget_too_small_for_a_tool_turn_forces_propose_patch_at_once(
    server: FakeAnthropicServer, proposer: AnthropicProposer
) -> None:
    # enough for one call of this size, not for a tool turn plus the forced call after it
    server.enqueue(Reply.tool("propose_patch", PATCH))
    proposals = proposer.propose(request(session()), Budget(tokens=6_000, usd=2.0))
    assert [r.tool_choice for r in server.message_requests] == ["propose_patch"]
    assert proposals[0].edits


def test_a_conversation_cut_by_the_budget_still_charges_its_turns(
    server: FakeAnthropicServer, proposer: AnthropicProposer
) -> None:
    tools = session()

    def bloat(body: Any) -> Reply:  # a tool turn that (as billed) eats what the forced call needed
        return Reply(tool_uses=(ToolUse("search", {"query": "add"}),), input_tokens=28_000)

    server.enqueue(bloat)
    proposals = proposer.propose(request(tools), Budget(tokens=30_000, usd=2.0))
    assert len(server.message_requests) == 1
    assert proposer.last_budget_stop == "tokens"
    assert len(proposals) == 1 and not proposals[0].edits
    assert proposals[0].explanation.startswith(f"{NO_EDITS}: the conversation ended before propose_patch")
    assert proposals[0].usage.input_tokens == 28_000


def test_without_tools_the_request_is_the_single_forced_call_it_always_was(
    server: FakeAnthropicServer, proposer: AnthropicProposer
) -> None:
    server.enqueue(Reply.tool("propose_patch", PATCH))
    proposer.propose(request(None), BUDGET)
    (req,) = server.message_requests
    assert req.tool_choice == "propose_patch" and [t["name"] for t in req.body["tools"]] == ["propose_patch"]
    assert "tool calls" not in req.user_text
