"""What a tool showed in one round is evidence in the next, end to end (``arcs fix`` through the
real ``anthropic`` SDK and the local server), and ``arcs replay`` carries the same (issue #15).

Before this change each round started exploring from scratch: round 2's request did not carry
the file the model opened in round 1 (its text appeared in round 1's tool result only), and the
trace had no ``tool_evidence`` — the assertions on round 2's request and on the trace fail there.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.settings import Settings
from jobs.repair.trace import load_trace, render_markdown
from runners.base import Runner
from runners.fake import FakeRunner
from tests.bot import test_cli_fix as base
from tests.bot.test_cli_fix import RULES, fixture_repo, run_cli, scripted_pytest
from tests.fakes.anthropic_server import Reply, ToolUse, serving

_registered = base._registered
fake_sandbox = base.fake_sandbox

PLAN = {
    "contract": "The failing test passes.",
    "sketch": "Fix is_adult.",
    "subgoals": ["is_adult(18) is True"],
}
WRONG = [
    {"explanation": "try 1", "edits": [{"path": RULES, "kind": "replace", "old": "return is_adult(age)", "new": "return bool(is_adult(age))"}]},
    {"explanation": "try 2", "edits": [{"path": RULES, "kind": "replace", "old": "return age > ADULT_AGE", "new": "return (age > ADULT_AGE)"}]},
]  # fmt: skip
PATCH = {"explanation": "18 counts.", "edits": [{"path": RULES, "kind": "replace", "old": "return age > ADULT_AGE", "new": "return age >= ADULT_AGE"}]}  # fmt: skip
FOUND = "the model opened it with a tool in round 1"
"""The ``why`` of the carried find, in its evidence block's header."""


class Model:
    """Round 1: the first candidate opens ``pyproject.toml``, both candidates propose wrong
    patches; round 2: the fix."""

    def __init__(self) -> None:
        self.proposed = 0

    def __call__(self, body: Any) -> Reply:
        names = [t["name"] for t in body.get("tools", ())]
        if "submit_plan" in names:
            return Reply.tool("submit_plan", PLAN, input_tokens=900, output_tokens=60)
        turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if (body.get("tool_choice") or {}).get("type") == "any" and self.proposed == 0 and turns == 0:
            return Reply(tool_uses=(ToolUse("open", {"path": "pyproject.toml"}),), input_tokens=1500)
        patch = WRONG[self.proposed] if self.proposed < len(WRONG) else PATCH
        self.proposed += 1
        return Reply.tool("propose_patch", patch, input_tokens=2000, output_tokens=80)


@pytest.fixture
def runner(fake_sandbox: Callable[[Runner], None]) -> FakeRunner:
    fake = FakeRunner().on("pytest", scripted_pytest)
    fake_sandbox(fake)
    return fake


def test_a_file_opened_in_round_1_is_evidence_in_round_2_and_replays(
    runner: FakeRunner, settings: Settings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    trace_path = tmp_path / "carry.json"
    with serving(api_key="sk-test") as server:
        server.dynamic = Model()
        with_llm = settings.model_copy(
            update={"anthropic_api_key": SecretStr("sk-test"), "anthropic_base_url": server.base_url, "model": "claude-haiku-4-5"}
        )  # fmt: skip
        code, out, err = run_cli(
            ["fix", str(repo), "--tier", "large", "--json", "--trace-out", str(trace_path)], with_llm, capsys
        )
        proposing = [
            r for r in server.message_requests if "submit_plan" not in r.body.get("tools", [{}])[0]["name"]
        ]
    assert code == 0, err
    assert json.loads(out)["fixed"]
    trace = load_trace(trace_path.read_text(encoding="utf-8"))
    llm_rounds = [r for r in trace.rounds if r.tool_calls or r.tool_evidence]
    first, second = llm_rounds[0], llm_rounds[1]
    assert [c["name"] for c in first.tool_calls] == ["open"] and not first.tool_evidence
    # round 2 carries the find: recorded (id, range, score, why), in its evidence and its prompt
    (carried,) = second.tool_evidence
    assert carried["id"] == "tool:pyproject.toml:1-6" and carried["score"] == 1.5
    assert carried["why"] == FOUND
    assert carried["id"] in [e["id"] for e in second.evidence]
    assert "**Tool finds carried**: `tool:pyproject.toml:1-6`" in render_markdown(trace)
    assert FOUND in second.prompt and FOUND not in first.prompt
    # the model's round-2 request shows the line outside any tool result (no tool was called)
    last = proposing[-1]
    assert FOUND in last.user_text + json.dumps(last.body.get("system", "")) and not last.tool_results

    # replay: the recorded tool results give the same carried evidence (else the request differs)
    code, out, _ = run_cli(["replay", str(trace_path), "--json"], settings, capsys)
    assert code == 0 and json.loads(out)["reproduced"] is True, out
