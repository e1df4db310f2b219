"""Active retrieval tools (issue #15 item 3): the ToolBox, the round's session, replay, the port.

Everything here is new with the tools: on the code before them ``jobs.repair.tools`` and
``jobs.repair.tools_session`` do not exist and ``Message`` carries plain text only, so each test
fails there at import or on the block assertions.
"""

from __future__ import annotations

import pytest

from indexing.model import Chunk, Query, SearchHit
from jobs.repair.fakes import FakeToolBox, InMemorySource
from jobs.repair.llm import (
    ANY_TOOL,
    LLMRequest,
    Message,
    TextBlock,
    ToolResult,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    request_fingerprint,
    scripted_response,
    wire_params,
)
from jobs.repair.model import Failure, Frame, Usage
from jobs.repair.tools import RepoToolBox
from jobs.repair.tools_session import RecordedTools, ToolReplayMismatch, ToolSession
from jobs.repair.workbench import TestOutcome

RULES = '''"""Rules."""

ADULT_AGE = 18


def is_adult(age: int) -> bool:
    return age > ADULT_AGE


def can_vote(age: int) -> bool:
    return is_adult(age)
'''
TEST = "from ages.rules import is_adult\n\n\ndef test_eighteen():\n    assert is_adult(18)\n"


def source() -> InMemorySource:
    big = "\n".join(f"x{i} = {i}" for i in range(1, 1001)) + "\n"
    return InMemorySource({"ages/rules.py": RULES, "tests/test_rules.py": TEST, "big.py": big})


class Index:
    def __init__(self) -> None:
        self.queries: list[Query] = []

    def search(self, query: Query) -> list[SearchHit]:
        self.queries.append(query)
        chunk = Chunk(
            path="ages/rules.py", language="python", kind="function", symbol="is_adult",
            qualified_name="is_adult", start_line=6, end_line=7, text="def is_adult(age: int) -> bool:\n    return age > ADULT_AGE",
        )  # fmt: skip
        return [SearchHit(chunk=chunk, score=0.9)]


def box(**kwargs: object) -> RepoToolBox:
    return RepoToolBox(source(), retriever=Index(), **kwargs)  # type: ignore[arg-type]


# -- open ------------------------------------------------------------------------------------


def test_open_is_numbered_clipped_and_normalized() -> None:
    result = box().call("open", {"path": "./ages//rules.py", "start": 6, "end": 7})
    assert not result.is_error
    assert result.text.splitlines() == [
        "ages/rules.py lines 6-7 of 11 (more: open with start=8)",
        "    6| def is_adult(age: int) -> bool:",
        "    7|     return age > ADULT_AGE",
    ]
    long = RepoToolBox(source(), max_lines=50).call("open", {"path": "big.py", "start": 990, "end": 5000})
    assert long.text.splitlines()[0] == "big.py lines 990-1000 of 1000"
    clipped = RepoToolBox(source(), max_lines=400, max_chars=300).call("open", {"path": "big.py"})
    assert "more: open with start=" in clipped.text.splitlines()[0] and len(clipped.text) < 400
    # string line numbers (a common slip) are accepted, start past the end is an error
    assert "x3 = 3" in box().call("open", '{"path": "big.py", "start": "3", "end": "3"}').text
    assert box().call("open", {"path": "big.py", "start": 2000}).is_error


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "../outside.py", "ages/../../x.py", "C:/x.py", ".git/config", "", 7, "nope.py"]
)
def test_open_refuses_paths_outside_the_repository_with_an_error_result(path: object) -> None:
    result = box().call("open", {"path": path})
    assert result.is_error and result.executions == 0


# -- search, symbol, run_tests, malformed calls ------------------------------------------------


def test_search_goes_through_the_retriever() -> None:
    index = Index()
    result = RepoToolBox(source(), retriever=index).call("search", {"query": "adult age comparison"})
    assert [q.text for q in index.queries] == ["adult age comparison"]
    assert (
        "ages/rules.py:6-7 (is_adult)" in result.text and "    7|     return age > ADULT_AGE" in result.text
    )
    assert "search" not in [s.name for s in RepoToolBox(source()).specs()]  # no index, no search


def test_symbol_gives_the_definition_and_its_callers() -> None:
    result = box().call("symbol", {"name": "is_adult"})
    assert "definition is_adult at ages/rules.py:6-7" in result.text
    assert "    7|     return age > ADULT_AGE" in result.text
    assert "ages/rules.py:11 in can_vote: return is_adult(age)" in result.text
    assert "tests/test_rules.py:5 in test_eighteen" in result.text
    missing = box().call("symbol", {"name": "is_adlt"})
    assert missing.is_error and "is_adult" in missing.text  # the closest names are suggested


def test_run_tests_runs_the_selection_and_costs_one_execution() -> None:
    seen: list[tuple[str, ...]] = []

    def run(selection: tuple[str, ...]) -> TestOutcome:
        seen.append(selection)
        failure = Failure(
            "t::a",
            "AssertionError",
            "assert False",
            "tests/t.py",
            5,
            (Frame("ages/rules.py", 7, "is_adult"),),
        )
        return TestOutcome(failed=("t::a",), failures=(failure,), selected=True)

    tools = RepoToolBox(source(), run_tests=run)
    result = tools.call("run_tests", {"selection": ["t::a"]})
    assert seen == [("t::a",)] and result.executions == 1
    assert "0 passed, 1 failed" in result.text and "ages/rules.py:7 in is_adult" in result.text
    bad = tools.call("run_tests", {"selection": []})
    assert bad.is_error and bad.executions == 0 and seen == [("t::a",)]


@pytest.mark.parametrize(
    ("name", "args", "needle"),
    [
        ("rm_rf", {"path": "x"}, "unknown tool"),
        ("run_tests", {"selection": ["t"]}, "unknown tool"),  # no runner given: not offered
        ("open", ["ages/rules.py"], "must be an object"),
        ("open", "{not json", "not JSON"),
        ("open", {"path": "ages/rules.py", "start": "one"}, "not a line number"),
        ("search", {"query": ""}, "non-empty"),
        ("symbol", {"name": "x; rm"}, "not an identifier"),
    ],
)
def test_malformed_calls_are_error_results_not_crashes(name: str, args: object, needle: str) -> None:
    result = box().call(name, args)
    assert result.is_error and needle in result.text


# -- the session: limit, executions, log; replay ----------------------------------------------


def test_the_session_enforces_the_limit_and_the_execution_budget_and_logs_every_call() -> None:
    counted: list[int] = []
    stop = [""]
    fake = FakeToolBox({"open": ToolResult("the code"), "run_tests": ToolResult("1 failed", executions=1)})
    session = ToolSession(fake, max_calls=3, execution_stop=lambda: stop[0], count_runs=counted.append)
    assert [s.name for s in session.specs] == ["open", "run_tests"]
    assert session.call("a", "open", {"path": "x"}, usage=Usage(input_tokens=10, calls=1)).text == "the code"
    assert session.call("b", "run_tests", {"selection": ["t"]}).executions == 1
    stop[0] = "executions"
    refused = session.call("c", "run_tests", {"selection": ["t"]})
    assert refused.is_error and "no test execution left" in refused.text
    assert session.call("d", "nope", {}).is_error  # unknown: answered by the box, counted
    limited = session.call("e", "open", {"path": "x"})
    assert limited.is_error and "limit reached" in limited.text
    assert counted == [1] and session.executions == 1 and session.calls_left == 0
    assert fake.calls == [("open", {"path": "x"}), ("run_tests", {"selection": ["t"]}), ("nope", {})]
    assert [(r["name"], r["ok"], r["refused"]) for r in session.log] == [
        ("open", True, ""), ("run_tests", True, ""), ("run_tests", False, "executions"),
        ("nope", False, ""), ("open", False, "limit"),
    ]  # fmt: skip
    assert session.log[0]["turn_tokens"] == 10 and session.log[0]["result_chars"] == len("the code")


def test_recorded_tools_serve_the_recorded_results_and_check_each_call() -> None:
    live = ToolSession(
        FakeToolBox({"open": ToolResult("v1"), "symbol": ToolResult("no", is_error=True)}), max_calls=1
    )
    live.call("a", "open", {"path": "x"})
    live.call("b", "open", {"path": "y"})  # refused by the limit: never reaches a tool
    recorded = RecordedTools(live.log)
    never = FakeToolBox({"open": ToolResult("v2 (would differ)")})
    replay = ToolSession(recorded.over(never), max_calls=1)
    assert replay.call("a", "open", {"path": "x"}).text == "v1" and never.calls == []
    assert recorded.exhausted
    other = RecordedTools(live.log)
    with pytest.raises(ToolReplayMismatch, match="differs"):
        ToolSession(other.over(never), max_calls=1).call("a", "open", {"path": "z"})


# -- the port: content blocks, stable fingerprints ---------------------------------------------


def test_plain_text_requests_keep_their_recorded_fingerprint() -> None:
    request = LLMRequest(
        system="sys",
        context="ctx",
        messages=(Message("user", "hello"), Message("assistant", "hi"), Message("user", "again")),
        tools=(ToolSpec("t", "d", {"type": "object"}),),
        tool_choice="t",
    )
    # computed with the code before content blocks existed (a base worktree of this session)
    assert (
        request_fingerprint("m", request)
        == "c2c9c4749cdeca73f14239a461739b232e96fbafbf51d3f4352f619e115bdaea"
    )


def test_tool_blocks_on_the_wire_and_an_answer_as_the_next_assistant_turn() -> None:
    answer = scripted_response(text="looking", tools=(("open", {"path": "a.py"}), ("symbol", {"name": "f"})))
    turn = answer.as_message()
    assert turn.content == (
        TextBlock("looking"),
        ToolUseBlock("toolu_scripted_0", "open", {"path": "a.py"}),
        ToolUseBlock("toolu_scripted_1", "symbol", {"name": "f"}),
    )
    results = Message(
        "user", (ToolResultBlock("toolu_scripted_0", "code"), ToolResultBlock("toolu_scripted_1", "?", True))
    )
    request = LLMRequest(
        system="s", messages=(Message("user", "go"), turn, results), tools=(ToolSpec("open", "", {"type": "object"}),),
        tool_choice=ANY_TOOL,
    )  # fmt: skip
    wire = wire_params("m", request)
    assert wire["tool_choice"] == {"type": "any", "disable_parallel_tool_use": False}
    assert wire["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_scripted_0",
        "name": "open",
        "input": {"path": "a.py"},
    }
    assert wire["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_scripted_0", "content": "code"},
        {"type": "tool_result", "tool_use_id": "toolu_scripted_1", "content": "?", "is_error": True},
    ]
    assert request.chars == 1 + 2 + len("looking") + len("open") + len('{"path":"a.py"}') + len("symbol") + len('{"name":"f"}') + len("code") + len("?") + len("open") + len('{"type":"object"}')  # fmt: skip


def test_tools_are_on_by_default_and_off_for_traces_recorded_before_them() -> None:
    from jobs.repair.loop_config import LoopConfig
    from jobs.repair.tiers import LARGE, MEDIUM, SMALL, TIER0

    assert LoopConfig().tools and LoopConfig.from_json(LoopConfig().to_json()).tools
    old = LoopConfig().to_json()
    del old["tools"]
    assert LoopConfig.from_json(old).tools is False
    assert (TIER0.tool_calls, SMALL.tool_calls, MEDIUM.tool_calls, LARGE.tool_calls) == (0, 0, 3, 4)
