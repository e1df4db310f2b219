"""The LLM roles (planner, quality checkers, clarifier, test designer, explainer) through the local server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jobs.llm_anthropic import AnthropicLLM
from jobs.repair.llm import LLMError
from jobs.repair.model import Evidence, Failure, Feedback, normalize_repo_path
from jobs.repair.prompts import load_prompt
from jobs.repair.roles import (
    canonical_subgoals,
    check_quality,
    check_test,
    clarify,
    design_test,
    explain,
    plan,
    should_plan,
)
from jobs.repair.task import RepairTask
from tests.fakes.anthropic_server import FakeAnthropicServer, Reply, auth_error, serving

MODEL = "claude-haiku-4-5"
TASK = RepairTask(
    kind="ci",
    test_command="pytest -q",
    failures=(
        Failure("tests/test_calc.py::test_add", "AssertionError", "assert 5 == 4", "tests/test_calc.py", 5),
    ),
)
ISSUE = RepairTask.issue(
    "Dates parsed in local time", "parse_date('2024-01-01T00:00Z') returns a naive datetime."
)
EVIDENCE = (
    Evidence(
        "d#1",
        "code",
        "dates.py",
        1,
        3,
        "def parse_date(s):\n    return datetime.fromisoformat(s)",
        "parse_date",
        0.8,
    ),
)
DIFF = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b + 1\n+    return a + b\n"
TESTS = "def test_add():\n    assert add(2, 2) == 4\n"


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with serving() as srv:
        yield srv


@pytest.fixture
def llm(server: FakeAnthropicServer) -> Iterator[AnthropicLLM]:
    with AnthropicLLM("sk-test", MODEL, base_url=server.base_url, sleep=lambda s: None) as client:
        yield client


def forced_tool(server: FakeAnthropicServer, index: int = 0) -> str:
    body = server.requests[index].body
    assert body["tool_choice"]["type"] == "tool"
    assert [t["name"] for t in body["tools"]] == [body["tool_choice"]["name"]]
    assert body["system"][0]["text"] == load_prompt("system")
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    return str(body["tool_choice"]["name"])


# --- planner -------------------------------------------------------------------------------------


def test_should_plan() -> None:
    assert not should_plan(TASK)
    assert should_plan(RepairTask.issue("t", "x" * 500))
    spread = RepairTask(kind="ci", failures=(Failure("tests/a.py::t1"), Failure("tests/b.py::t2")))
    assert should_plan(spread)
    same_file = RepairTask(kind="ci", failures=(Failure("tests/a.py::t1"), Failure("tests/a.py::t2")))
    assert not should_plan(same_file)


def test_plan_parses_and_canonicalizes(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(
        Reply.tool(
            "submit_plan",
            {
                "contract": "parse_date(str) -> aware datetime",
                "sketch": "normalize Z to +00:00, then fromisoformat",
                "subgoals": [
                    "parse_date  timezone handling.",
                    "Parse_date timezone handling",
                    "callers",
                    "tests",
                    "x",
                    "y",
                ],
            },
            input_tokens=500,
            output_tokens=80,
        )
    )
    result = plan(llm, ISSUE, EVIDENCE)
    assert result.ok
    assert result.subgoals == ("parse_date timezone handling", "callers", "tests", "x")
    assert result.contract.startswith("parse_date(str)") and "fromisoformat" in result.sketch
    assert result.usage.input_tokens == 500 and result.usage.calls == 1
    assert forced_tool(server) == "submit_plan"
    context = server.requests[0].system_text
    assert "<untrusted-issue>" in context and "def parse_date(s):" in context


def test_plan_without_subgoals_is_an_error_not_an_exception(
    server: FakeAnthropicServer, llm: AnthropicLLM
) -> None:
    server.enqueue(Reply.tool("submit_plan", {"contract": "c", "sketch": "s", "subgoals": "not a list"}))
    result = plan(llm, ISSUE)
    assert not result.ok and result.subgoals == () and result.usage.calls == 1


def test_canonical_subgoals_cap() -> None:
    assert canonical_subgoals(["a", "b", "c", "d", "e"]) == ("a", "b", "c", "d")
    assert canonical_subgoals(["", "  ", "A", "a"]) == ("A",)


# --- code quality checker -------------------------------------------------------------------------


def test_check_quality_accepts(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(
        Reply.tool(
            "report_verdict",
            {
                "tests": [
                    {"test": "test_add", "expected": "4", "imagined": "add(2,2) returns 4", "passes": True}
                ],
                "verdict": "accept",
                "reasoning": "The stray +1 is gone.",
            },
        )
    )
    verdict = check_quality(llm, TASK, DIFF, TESTS)
    assert verdict.accept and verdict.ok and verdict.reasoning == "The stray +1 is gone."
    assert verdict.checks == ("PASS test_add: expected 4; got add(2,2) returns 4",)
    assert forced_tool(server) == "report_verdict"
    prompt = server.requests[0].user_text
    assert "-    return a + b + 1" in prompt and "assert add(2, 2) == 4" in prompt
    assert "emulate its execution" in prompt


def test_check_quality_rejects_an_accept_contradicted_by_its_own_checks(
    server: FakeAnthropicServer, llm: AnthropicLLM
) -> None:
    server.enqueue(
        Reply.tool(
            "report_verdict",
            {
                "tests": [{"test": "t", "expected": "4", "imagined": "5", "passes": False}],
                "verdict": "accept",
                "reasoning": "looks fine",
            },
        )
    )
    verdict = check_quality(llm, TASK, DIFF, TESTS)
    assert not verdict.accept and verdict.ok and "did not pass" in verdict.reasoning


@pytest.mark.parametrize(
    "reply",
    [Reply(text="accept"), Reply.tool("report_verdict", {"verdict": "maybe", "reasoning": "?", "tests": []})],
)
def test_check_quality_unusable_answers_reject(
    server: FakeAnthropicServer, llm: AnthropicLLM, reply: Reply
) -> None:
    server.enqueue(reply)
    verdict = check_quality(llm, TASK, DIFF, TESTS)
    assert not verdict.accept and not verdict.ok


def test_check_quality_explicit_reject(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(
        Reply.tool("report_verdict", {"tests": [], "verdict": "Reject", "reasoning": "wrong sign"})
    )
    verdict = check_quality(llm, TASK, DIFF, TESTS)
    assert not verdict.accept and verdict.ok and verdict.reasoning == "wrong sign"


# --- test quality checker -------------------------------------------------------------------------


def test_check_test_judges_against_the_task_only(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(
        Reply.tool(
            "report_test_verdict",
            {
                "checks": [{"assertion": "add(2, 2) == 4", "expected_by_spec": "4", "matches": True}],
                "verdict": "accept",
                "reasoning": "follows from the task",
            },
        )
    )
    verdict = check_test(llm, TASK, TESTS)
    assert verdict.accept and verdict.checks == ("PASS add(2, 2) == 4: spec says 4",)
    assert forced_tool(server) == "report_test_verdict"
    text = server.requests[0].prompt_text
    assert "assert add(2, 2) == 4" in text and "return a + b" not in text  # no candidate program shown


# --- clarifier ------------------------------------------------------------------------------------


def test_clarify(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(
        Reply.tool(
            "clarify_problem",
            {
                "clarified_spec": "Return an aware UTC datetime.",
                "misunderstandings": ["treated Z as local time"],
            },
        )
    )
    history = (
        Feedback(0, "still failing", failures=(Failure("t::tz", "AssertionError", "tzinfo is None"),)),
    )
    result = clarify(llm, ISSUE, history, attempts=("Replaced fromisoformat with strptime.",))
    assert result.ok and result.misunderstandings == ("treated Z as local time",)
    assert (
        result.text.startswith("Return an aware UTC datetime.") and "- treated Z as local time" in result.text
    )
    assert forced_tool(server) == "clarify_problem"
    prompt = server.requests[0].user_text
    assert "tzinfo is None" in prompt and "Replaced fromisoformat with strptime." in prompt


def test_clarify_empty_spec_is_an_error(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(Reply.tool("clarify_problem", {"clarified_spec": "  ", "misunderstandings": []}))
    result = clarify(llm, ISSUE, ())
    assert not result.ok and result.text == ""


# --- test designer --------------------------------------------------------------------------------


def test_design_test(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    content = (
        "from dates import parse_date\n\ndef test_utc():\n    assert parse_date('2024-01-01T00:00Z').tzinfo"
    )
    server.enqueue(
        Reply.tool(
            "write_test", {"path": "./tests/test_issue_tz.py", "content": content, "rationale": "naive now"}
        )
    )
    result = design_test(llm, ISSUE, EVIDENCE, language="Python", framework="pytest")
    assert result.ok and result.path == "tests/test_issue_tz.py" and result.content == content + "\n"
    assert result.rationale == "naive now"
    assert forced_tool(server) == "write_test"
    assert "in Python using pytest" in server.requests[0].user_text


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ({"path": "/tmp/t.py", "content": "x", "rationale": ""}, "unusable test path"),
        ({"path": "../t.py", "content": "x", "rationale": ""}, "unusable test path"),
        ({"path": "tests/t.py", "content": " ", "rationale": ""}, "empty test content"),
    ],
)
def test_design_test_rejects_bad_output(
    server: FakeAnthropicServer, llm: AnthropicLLM, payload: dict[str, str], error: str
) -> None:
    server.enqueue(Reply.tool("write_test", payload))
    result = design_test(llm, ISSUE, EVIDENCE, language="Python", framework="pytest")
    assert not result.ok and error in result.error and result.path == ""


def test_normalize_repo_path() -> None:
    assert normalize_repo_path("a/./b/../c.py") == "a/c.py"
    assert normalize_repo_path("C:/x.py") is None
    assert normalize_repo_path("..") is None
    assert normalize_repo_path(3) is None


# --- explainer ------------------------------------------------------------------------------------


def test_explain(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(
        Reply.tool(
            "explain_code", {"explanation": "Removes an off-by-one\n in integer addition."}, output_tokens=40
        )
    )
    result = explain(llm, DIFF)
    assert str(result) == "Removes an off-by-one in integer addition." and result.usage.output_tokens == 40
    assert forced_tool(server) == "explain_code"
    body = server.requests[0].body
    assert len(body["system"]) == 1  # no task context: the explanation is about the code alone
    assert "+    return a + b" in body["messages"][0]["content"]


def test_explain_without_tool_call(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(Reply(text="It fixes addition."))
    result = explain(llm, DIFF)
    assert not result.ok and "no explain_code tool call" in result.error


# --- errors ---------------------------------------------------------------------------------------


def test_llm_errors_propagate_typed(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(auth_error())
    with pytest.raises(LLMError) as exc_info:
        plan(llm, ISSUE)
    assert exc_info.value.kind == "auth"
