"""``arcs fix`` whose *planner* looks around before planning, then ``arcs replay`` of its trace
(issue #15 item 3), through the real ``anthropic`` SDK and the local server.

The failing test's message is long enough to pass the planner gate. The scripted planner calls
``symbol`` and plans from the definition it was shown; the proposer of the same round gets the
calls that are left of the medium tier's 3. Before the planner had tools it got one forced
``submit_plan`` request: its scripted ``any`` turn is never asked for, the round's calls are all
the proposer's, and the trace records no planner call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.settings import Settings
from jobs.repair.trace import load_trace
from runners.base import Execution, Runner
from runners.commands import JUNIT_PATH
from runners.fake import FakeCall, FakeRunner, fake_execution
from tests.bot import test_cli_fix as base
from tests.bot.test_cli_fix import RULES, fixture_repo, run_cli, scripted_pytest
from tests.bot.test_cli_fix_tools import PATCH
from tests.fakes.anthropic_server import Reply, ToolUse, serving

_registered = base._registered
fake_sandbox = base.fake_sandbox

WHY = "is_adult(18) returned False although ADULT_AGE is documented as inclusive; " * 6


def long_message_pytest(call: FakeCall) -> Execution:
    """The boundary fixture's scripted pytest, with a failure message long enough to plan."""
    run = scripted_pytest(call)
    junit = run.artifacts[JUNIT_PATH].replace('message="assert False"', f'message="assert False: {WHY}"')
    return fake_execution(exit_code=run.exit_code, artifacts={JUNIT_PATH: junit})


def _tool_results(body: Any) -> list[str]:
    return [
        str(b.get("content"))
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


def model(body: Any) -> Reply:
    """Planner: ``symbol`` first, then a plan naming the definition it was shown. Proposer: three
    calls in one turn (one past what the planner left), then the patch."""
    names = [t["name"] for t in body.get("tools", [])]
    choice = body.get("tool_choice") or {}
    turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if "submit_plan" in names:
        if choice.get("type") == "any" and turns == 0:
            return Reply.tool("symbol", {"name": "is_adult"}, input_tokens=1000)
        where = [
            m.group(1) for r in _tool_results(body) if (m := re.search(r"definition is_adult at (\S+)", r))
        ]
        plan = {
            "contract": "is_adult(age: int) -> bool, True from ADULT_AGE on",
            "sketch": "compare with >=",
            "subgoals": [f"is_adult boundary at {where[-1] if where else '?'}"],
        }
        return Reply.tool("submit_plan", plan, input_tokens=1200, output_tokens=60)
    if choice.get("type") == "any" and turns == 0:
        return Reply(
            tool_uses=(ToolUse("open", {"path": RULES}), ToolUse("symbol", {"name": "can_vote"}),
                       ToolUse("open", {"path": "tests/test_rules.py"})),
            input_tokens=1500,
        )  # fmt: skip
    return Reply.tool("propose_patch", PATCH, input_tokens=2000, output_tokens=80)


@pytest.fixture
def runner(fake_sandbox: Callable[[Runner], None]) -> FakeRunner:
    fake = FakeRunner().on("pytest", long_message_pytest)
    fake_sandbox(fake)
    return fake


def test_a_planner_that_uses_tools_through_the_cli_and_its_exact_replay(
    runner: FakeRunner, settings: Settings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    trace_path = tmp_path / "planner.json"
    with serving(api_key="sk-test") as server:
        server.dynamic = model
        with_llm = settings.model_copy(
            update={"anthropic_api_key": SecretStr("sk-test"), "anthropic_base_url": server.base_url, "model": "claude-haiku-4-5"}
        )  # fmt: skip
        code, out, err = run_cli(
            ["fix", str(repo), "--tier", "medium", "--json", "--trace-out", str(trace_path)], with_llm, capsys
        )
        reqs = list(server.message_requests)
    assert code == 0, err
    assert json.loads(out)["fixed"]
    planning = [r for r in reqs if "submit_plan" in [t["name"] for t in r.body["tools"]]]
    proposing = [r for r in reqs if r not in planning]
    # the planner chose a tool, then planned; run_tests is not offered to it
    assert [r.tool_choice for r in planning] == ["any", "any"]
    assert [t["name"] for t in planning[0].body["tools"]][-1] == "symbol"
    assert "run_tests" not in [t["name"] for t in planning[0].body["tools"]]
    assert f"definition is_adult at {RULES}" in planning[1].user_text
    # the plan reflects the tool result and reaches the proposer's context
    subgoal = f"is_adult boundary at {RULES}:6-8"
    assert subgoal in proposing[0].prompt_text
    # one call of the round's 3 went to the planner: the proposer's third is refused
    assert [r.tool_choice for r in proposing] == ["any", "propose_patch"]
    assert "tool call limit reached (3 per round): call propose_patch now" in proposing[1].user_text

    trace = load_trace(trace_path.read_text(encoding="utf-8"))
    first = trace.rounds[0]
    assert first.plan["source"] == "llm" and first.plan["subgoals"][0] == subgoal
    assert [(c["role"], c["name"], c["refused"]) for c in first.tool_calls] == [
        ("planner", "symbol", ""), ("proposer", "open", ""), ("proposer", "symbol", ""),
        ("proposer", "open", "limit"),
    ]  # fmt: skip
    assert first.tool_calls[0]["turn_tokens"] == 1025
    # every turn of both conversations is charged to the run
    assert trace.usage.calls == len(reqs) and first.usage.calls == 4
    assert trace.usage.input_tokens == 1000 + 1200 + 1500 + 2000

    # replay: no server; the planner's and the proposer's tool results come from the trace
    code, out, _ = run_cli(["replay", str(trace_path), "--json"], settings, capsys)
    assert code == 0 and json.loads(out)["reproduced"] is True, out

    # the planner's recorded result tampered with: its next request is not the recorded one
    doc = json.loads(trace_path.read_text(encoding="utf-8"))
    doc["rounds"][0]["tool_calls"][0]["result"] = "no such symbol"
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(doc), encoding="utf-8")
    code, out, _ = run_cli(["replay", str(tampered), "--json"], settings, capsys)
    report = json.loads(out)
    assert code != 0 and report["reproduced"] is False
    assert report["divergence"]["where"] == "model call 2 (plan:turn2)"
