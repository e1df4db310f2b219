"""``arcs fix`` with a tool-using model, end to end through the real ``anthropic`` SDK and the local
server, then ``arcs replay`` of its trace (issue #15 item 3).

Before the tools existed the medium tier sent one forced ``propose_patch`` request: the scripted
model's ``open``/``symbol``/``run_tests`` calls would never be asked for (the server fails the
test at teardown: its replies to tool results are never requested), and the trace has no
``tool_calls`` to replay.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.settings import Settings
from jobs.repair.trace import load_trace
from runners.base import Runner
from runners.fake import FakeRunner
from tests.bot import test_cli_fix as base
from tests.bot.test_cli_fix import RULES, TARGET, fixture_repo, run_cli, scripted_pytest
from tests.fakes.anthropic_server import Reply, ToolUse, serving

# the CLI tests' fixtures: the fix command registered, the fake sandbox
_registered = base._registered
fake_sandbox = base.fake_sandbox

PATCH = {
    "explanation": "18-year-olds are adults: the comparison must include ADULT_AGE.",
    "edits": [
        {"path": RULES, "kind": "replace", "old": "return age > ADULT_AGE", "new": "return age >= ADULT_AGE"}
    ],
}
PLAN = {
    "contract": "The failing test passes.",
    "sketch": "Fix is_adult.",
    "subgoals": ["is_adult(18) is True"],
}


def explorer(body: Any) -> Reply:
    """A model that looks around before proposing: two tool turns (``open`` and an unknown tool,
    then ``run_tests`` and ``symbol`` — one call past the medium tier's 3), then the patch."""
    choice = body.get("tool_choice") or {}
    if choice.get("name") == "submit_plan":
        return Reply.tool("submit_plan", PLAN, input_tokens=900, output_tokens=60)
    turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if choice.get("type") == "any" and turns == 0:
        return Reply(
            tool_uses=(ToolUse("open", {"path": RULES, "start": 1, "end": 20}), ToolUse("grep", {"q": "x"})),
            input_tokens=1500,
        )
    if choice.get("type") == "any" and turns == 1:
        return Reply(
            tool_uses=(ToolUse("run_tests", {"selection": [TARGET]}), ToolUse("symbol", {"name": "is_adult"})),
            input_tokens=1800,
        )  # fmt: skip
    return Reply.tool("propose_patch", PATCH, input_tokens=2000, output_tokens=80)


@pytest.fixture
def runner(fake_sandbox: Callable[[Runner], None]) -> FakeRunner:
    fake = FakeRunner().on("pytest", scripted_pytest)
    fake_sandbox(fake)
    return fake


def test_a_tool_using_repair_through_the_cli_and_its_exact_replay(
    runner: FakeRunner, settings: Settings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    trace_path = tmp_path / "tools.json"
    with serving(api_key="sk-test") as server:
        server.dynamic = explorer
        with_llm = settings.model_copy(
            update={"anthropic_api_key": SecretStr("sk-test"), "anthropic_base_url": server.base_url, "model": "claude-haiku-4-5"}
        )  # fmt: skip
        code, out, err = run_cli(
            ["fix", str(repo), "--tier", "medium", "--json", "--trace-out", str(trace_path)], with_llm, capsys
        )
        proposing = [r for r in server.message_requests if r.tool_choice != "submit_plan"]
    assert code == 0, err
    data = json.loads(out)
    assert data["fixed"] and data["tier"] == "medium"
    # two free turns, then the round's 3 calls are used up: propose_patch is forced
    assert [r.tool_choice for r in proposing] == ["any", "any", "propose_patch"]
    # what the tools answered reached the model: the file, the test run, the refusals
    sent = proposing[2].user_text
    assert "    8|     return age > ADULT_AGE" in sent and "unknown tool 'grep'" in sent
    assert "0 passed, 1 failed" in sent and "tool call limit reached (3 per round)" in sent

    trace = load_trace(trace_path.read_text(encoding="utf-8"))
    (tool_round,) = [r for r in trace.rounds if r.tool_calls]
    calls = tool_round.tool_calls
    assert [(c["name"], c["ok"], c["refused"]) for c in calls] == [
        ("open", True, ""), ("grep", False, ""), ("run_tests", True, ""), ("symbol", False, "limit"),
    ]  # fmt: skip
    assert [c["turn"] for c in calls] == [1, 1, 2, 2] and calls[0]["turn_tokens"] == 1525
    assert calls[2]["executions"] == 1 and all(c["result_chars"] == len(c["result"]) for c in calls)
    tool_runs = [c for c in runner.calls if TARGET in c.command]
    # the tool's run counts in Budget.executions (the final verification run is outside the budget)
    assert tool_runs and trace.spend.executions == len(runner.calls) - len(trace.verifications)
    assert trace.config["tools"] is True and trace.tier_configs[0]["tool_calls"] == 3

    # replay: no server, recorded tool results, nothing re-executed for the tools
    before = len(runner.calls)
    code, out, _ = run_cli(["replay", str(trace_path), "--json"], settings, capsys)
    assert code == 0 and json.loads(out)["reproduced"] is True, out
    assert len(runner.calls) - before == len(runner.calls[:before]) - 1  # every run but the tool's

    # a recorded tool result that differs from what the model was sent: the next request diverges
    doc = json.loads(trace_path.read_text(encoding="utf-8"))
    (recorded,) = [r for r in doc["rounds"] if r.get("tool_calls")]
    recorded["tool_calls"][0]["result"] = "something else"
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(doc), encoding="utf-8")
    code, out, _ = run_cli(["replay", str(tampered), "--json"], settings, capsys)
    report = json.loads(out)
    assert code != 0 and report["reproduced"] is False and "model call" in json.dumps(report)
