"""Tool conversations within the context budget, and tool finds carried to later rounds (#15).

Through the real ``anthropic`` SDK against the local server where a conversation is involved.
Before this change the conversation appended every tool result uncapped (a model asking for many
big ``open`` windows pushed the request past the proposer's 60k-character context budget), and
what a tool showed was gone in the next round (no :func:`explored_evidence`/:func:`tool_evidence`,
no ``ToolSession.context_chars``): every test here fails there (stated per test).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from jobs.llm_anthropic import AnthropicLLM
from jobs.repair.budget import Budget
from jobs.repair.fakes import InMemorySource
from jobs.repair.model import Evidence, Failure, Frame
from jobs.repair.ports import ProposalRequest
from jobs.repair.proposers.anthropic import AnthropicProposer
from jobs.repair.task import RepairTask
from jobs.repair.tools import RepoToolBox
from jobs.repair.tools_session import ToolSession
from tests.fakes.anthropic_server import FakeAnthropicServer, Reply, ToolUse, serving

MODEL = "claude-sonnet-4-6"
BIG = "".join(f"value_{i:05d} = compute('{'padding ' * 5}', {i})\n" for i in range(1, 4001))
CALC = "def add(a, b):\n    return a + b + 1\n"
FAILURE = Failure("tests/test_calc.py::test_add", "AssertionError", "assert 5 == 4", "tests/test_calc.py", 5,
                  frames=(Frame("tests/test_calc.py", 5, "test_add"),))  # fmt: skip
TASK = RepairTask(kind="ci", test_command="pytest -q", failures=(FAILURE,))
PATCH = {"explanation": "stray 1", "edits": [{"path": "calc.py", "kind": "replace", "old": "return a + b + 1", "new": "return a + b"}]}  # fmt: skip
BUDGET = Budget(tokens=2_000_000, usd=50.0, executions=10)
CONTEXT = 60_000


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def request_chars(body: Any) -> int:
    """What ``LLMRequest.chars`` counts, read back from the wire body (system, messages: text,
    tool inputs and results; tool specs)."""
    system = body.get("system")
    total = len(system) if isinstance(system, str) else sum(len(b.get("text", "")) for b in system or ())
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, str):
            total += len(content)
            continue
        for b in content:
            if b["type"] == "text":
                total += len(b["text"])
            elif b["type"] == "tool_use":
                total += len(b["name"]) + len(_canonical(b["input"]))
            elif b["type"] == "tool_result":
                c = b["content"]
                total += len(c) if isinstance(c, str) else sum(len(x.get("text", "")) for x in c)
    total += sum(
        len(t["name"]) + len(t.get("description", "")) + len(_canonical(t["input_schema"]))
        for t in body.get("tools", ())
    )
    return total


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with serving() as srv:
        yield srv


@pytest.fixture
def proposer(server: FakeAnthropicServer) -> Iterator[AnthropicProposer]:
    with AnthropicLLM("sk-test", MODEL, base_url=server.base_url, sleep=lambda s: None) as llm:
        yield AnthropicProposer(llm)


def big_session(max_calls: int) -> ToolSession:
    box = RepoToolBox(InMemorySource({"big.py": BIG, "calc.py": CALC}))
    tools = ToolSession(box, max_calls=max_calls, result_chars=8_000)
    tools.context_chars = CONTEXT  # set after construction: the old session took no such argument
    return tools


def greedy_opener(body: Any) -> Reply:
    """Three 200-line ``open`` windows per turn, further down the file each turn, while allowed."""
    if (body.get("tool_choice") or {}).get("type") != "any":
        return Reply.tool("propose_patch", PATCH)
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    starts = [1 + 200 * (3 * turn + k) for k in range(3)]
    return Reply(
        tool_uses=tuple(ToolUse("open", {"path": "big.py", "start": s, "end": s + 199}) for s in starts)
    )


def test_many_big_opens_keep_every_request_within_the_context_budget(
    server: FakeAnthropicServer, proposer: AnthropicProposer
) -> None:
    # Old code: the results were appended uncapped (30 x ~8k characters asked for): far past 60k.
    server.dynamic = greedy_opener
    tools = big_session(max_calls=30)
    proposals = proposer.propose(
        ProposalRequest(task=TASK, source=InMemorySource({}), round=0, n=1, tools=tools), BUDGET
    )
    reqs = server.message_requests
    sizes = [request_chars(r.body) for r in reqs]
    assert len(reqs) >= 3 and max(sizes) <= CONTEXT, sizes
    assert sizes[-1] > CONTEXT - 12_000  # the room was used, not left empty
    assert reqs[-1].tool_choice == "propose_patch" and proposals[0].edits
    # the tools stopped being offered before the call limit: the budget, not the limit, ended them
    assert tools.used < tools.max_calls
    # what the model was sent is what the trace records (clipped results included)
    sent = [str(b["content"]) for r in reqs for b in r.tool_results]
    assert [c["result"] for c in tools.log] == sent
    assert any("clipped: the request's context budget" in c["result"] for c in tools.log)


def test_a_turn_asking_for_more_than_the_room_left_is_answered_clipped_never_over_budget(
    server: FakeAnthropicServer, proposer: AnthropicProposer
) -> None:
    # Old code: 8 full windows in one turn (~64k of results) went into the next request.
    def many(body: Any) -> Reply:
        if (body.get("tool_choice") or {}).get("type") != "any":
            return Reply.tool("propose_patch", PATCH)
        return Reply(
            tool_uses=tuple(
                ToolUse("open", {"path": "big.py", "start": 1 + 200 * k, "end": 200 * (k + 1)})
                for k in range(8)
            )
        )

    server.dynamic = many
    tools = big_session(max_calls=8)
    proposer.propose(ProposalRequest(task=TASK, source=InMemorySource({}), round=0, n=1, tools=tools), BUDGET)
    reqs = server.message_requests
    assert [r.tool_choice for r in reqs] == ["any", "propose_patch"]
    assert request_chars(reqs[1].body) <= CONTEXT
    assert len(tools.log) == 8 and all(c["result_chars"] < 8_000 for c in tools.log)


def _logged(name: str, text: str, ok: bool = True) -> dict[str, Any]:
    return {"name": name, "result": text, "ok": ok, "refused": ""}


def test_open_and_symbol_results_become_evidence_merged_per_file() -> None:
    # Old code: no explored_evidence (ImportError): a tool's finds were not carried.
    from jobs.repair.tools_session import TOOL_SCORE, explored_evidence

    box = RepoToolBox(
        InMemorySource(
            {"big.py": BIG, "calc.py": CALC + "\n\ndef total(xs):\n    return sum(add(x, 0) for x in xs)\n"}
        )
    )
    log = [
        _logged("open", box.open("big.py", 10, 14).text),
        _logged("symbol", box.symbol("add").text),
        _logged("open", box.open("big.py", 13, 16).text),  # overlaps the first window
        _logged("search", "big.py:1-3\n    1| value_00001 = ..."),  # retrieval's chunks: not carried
        _logged("open", "nope.py: no such (text) file in the repository", ok=False),
    ]
    items = explored_evidence(log, round_index=1)
    assert [(e.id, e.start_line, e.end_line) for e in items] == [
        ("tool:big.py:10-16", 10, 16),
        ("tool:calc.py:1-2", 1, 2),
    ]
    assert items[0].text == "\n".join(BIG.splitlines()[9:16]) and items[1].text == CALC.rstrip("\n")
    assert all(e.score == TOOL_SCORE and e.source == "code" for e in items)
    assert explored_evidence(log, round_index=1) == items  # deterministic in the recorded log


def test_carried_finds_rank_between_the_failure_code_and_carried_retrieval_and_skip_shown_lines() -> None:
    # Old code: no tool_evidence (ImportError).
    from jobs.repair.feedback import carried_evidence, fit_evidence
    from jobs.repair.tools_session import explored_evidence, merge_explored, tool_evidence

    box = RepoToolBox(InMemorySource({"big.py": BIG}))
    found = explored_evidence([_logged("open", box.open("big.py", 100, 139).text)], round_index=1)
    found = merge_explored([], found)
    lines = BIG.splitlines()
    frame = Evidence("frame:big.py:95-110", "code", "big.py", 95, 110, "\n".join(lines[94:110]), score=2.0)
    retrieved = Evidence("big.py:300-340", "code", "big.py", 300, 340, "\n".join(lines[299:340]), score=0.9)
    shown_before = Evidence(
        "big.py:500-540", "code", "big.py", 500, 540, "\n".join(lines[499:540]), score=0.9
    )
    union = [frame, retrieved]
    carried_tools = tool_evidence(found, union, budget_chars=20_000)
    # the lines the frame shows whole are left out; the rest is one item
    assert [(e.start_line, e.end_line) for e in carried_tools] == [(111, 139)]
    union += carried_tools
    union += carried_evidence([shown_before], union)
    # a budget for the frame and one more item: the tool find stays, retrieval goes first
    budget = len(frame.text) + len(carried_tools[0].text) + 10
    kept, dropped = fit_evidence(union, budget_chars=budget, pinned=[frame.id])
    assert [e.id for e in kept] == [frame.id, carried_tools[0].id]
    assert dropped[0] == shown_before.id
    # within its own budget: the newest finds are kept
    assert tool_evidence(found, [], budget_chars=10) == []


def test_a_turn_whose_calls_cannot_fit_is_dropped_and_propose_patch_forced(
    server: FakeAnthropicServer, proposer: AnthropicProposer
) -> None:
    # Old code: all 70 calls were answered (refusals past the limit, ~8k per answered open) and
    # the request that followed was far past the budget.
    def flood(body: Any) -> Reply:
        if (body.get("tool_choice") or {}).get("type") != "any":
            return Reply.tool("propose_patch", PATCH)
        return Reply(
            tool_uses=tuple(ToolUse("open", {"path": "big.py", "start": 1 + 50 * k}) for k in range(70))
        )

    server.dynamic = flood
    tools = big_session(max_calls=70)
    proposals = proposer.propose(
        ProposalRequest(task=TASK, source=InMemorySource({}), round=0, n=1, tools=tools), BUDGET
    )
    reqs = server.message_requests
    # the calls were never answered (nor recorded): the forced request repeats the first one's turns
    assert [r.tool_choice for r in reqs] == ["any", "propose_patch"] and tools.log == []
    assert reqs[1].body["messages"] == reqs[0].body["messages"] and proposals[0].edits


def test_a_fitted_result_fits_again_unchanged() -> None:
    # Old code: no fit_result (ImportError); replay re-fits recorded results, which must not change.
    from jobs.repair.tools_session import fit_result

    text = RepoToolBox(InMemorySource({"big.py": BIG})).open("big.py", 1, 200).text
    fitted = fit_result(text, 3_000)
    assert (
        len(fitted) <= 3_000 and fitted.startswith("big.py lines 1-") and fitted.endswith("nearly used up)")
    )
    assert fit_result(fitted, 3_000) == fitted and fit_result(text, 10**6) == text


def test_a_request_full_of_evidence_stays_within_the_limit_system_and_tool_specs_included(
    server: FakeAnthropicServer, proposer: AnthropicProposer
) -> None:
    # Old code: the context block alone was packed to 60k, then the system prompt, the instructions
    # and the tool specs came on top (61.8k characters measured on markdown in the context bench).
    server.dynamic = lambda body: Reply.tool("propose_patch", PATCH)
    lines = BIG.splitlines(keepends=True)
    evidence = tuple(
        Evidence(
            f"e{i}",
            "code",
            "big.py",
            40 * i + 1,
            40 * i + 40,
            "".join(lines[40 * i : 40 * i + 40]),
            score=1.0,
        )
        for i in range(40)
    )
    for tools in (None, big_session(max_calls=3)):
        request = ProposalRequest(
            task=TASK, source=InMemorySource({}), round=0, n=1, evidence=evidence, tools=tools
        )
        proposer.propose(request, BUDGET)
    sizes = [request_chars(r.body) for r in server.message_requests]
    assert len(sizes) == 2 and max(sizes) <= CONTEXT, sizes
    assert min(sizes) > CONTEXT - 8_000  # the room was used
