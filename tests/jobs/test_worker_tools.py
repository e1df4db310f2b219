"""A tool-using LLM repair through the worker's wiring (issue #15 item 3).

The large tier's model, behind the local Anthropic-compatible server and the real SDK, calls
``search`` (answered by the repository's own index, as the worker opens it), ``symbol`` and
``open`` before proposing. Before the tools existed the proposer sent one forced
``propose_patch`` request per candidate and the trace had no tool calls: the assertions on the
requests and on ``tool_calls`` fail there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.settings import Settings
from tests.bot.test_cli_fix import RULES
from tests.fakes.anthropic_server import FakeAnthropicServer, Reply, ToolUse
from tests.jobs import test_worker_index as base
from tests.jobs.test_worker_index import PATCH, PLAN, checkout, request, run_plan

# the worker's fixtures (its wiring, the local server, the origin repository)
deps = base.deps
origin = base.origin
server = base.server
worker_settings = base.worker_settings


def explorer(body: Any) -> Reply:
    choice = body.get("tool_choice") or {}
    if choice.get("name") == "submit_plan":
        return Reply.tool("submit_plan", PLAN, input_tokens=900, output_tokens=60)
    turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if choice.get("type") == "any" and turns == 0:
        return Reply(
            tool_uses=(
                ToolUse("search", {"query": "is_adult ADULT_AGE"}),
                ToolUse("symbol", {"name": "is_adult"}),
            )
        )
    if choice.get("type") == "any" and turns == 1:
        return Reply(tool_uses=(ToolUse("open", {"path": RULES}),))
    return Reply.tool("propose_patch", PATCH, input_tokens=1200, output_tokens=80)


def test_a_worker_repair_whose_model_uses_the_tools(
    deps: Any,
    worker_settings: Settings,
    server: FakeAnthropicServer,
    origin: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server.dynamic = explorer
    workdir, sha = checkout(origin, worker_settings.home, 1)
    outcome = run_plan(deps, request(workdir, sha, 1, tmp_path / "traces"))
    assert outcome.fixed and outcome.tier == "large", outcome.reason

    proposing = [r for r in server.message_requests if r.tool_choice != "submit_plan"]
    assert [t["name"] for t in proposing[0].body["tools"]] == [
        "propose_patch",
        "open",
        "search",
        "symbol",
        "run_tests",
    ]
    search, symbol = (str(r["content"]) for r in proposing[1].tool_results)
    assert RULES in search and "return age > ADULT_AGE" in search  # the repository's index answered
    assert f"definition is_adult at {RULES}" in symbol and "can_vote" in symbol

    trace = json.loads(Path(str(outcome.trace_path)).read_text(encoding="utf-8"))
    calls = [c for r in trace["rounds"] for c in r.get("tool_calls", [])]
    assert [(c["name"], c["ok"], c["refused"]) for c in calls][:3] == [
        ("search", True, ""), ("symbol", True, ""), ("open", True, ""),
    ]  # fmt: skip
    # the large tier's 4 calls per round are shared: the second candidate gets the last one
    assert sum(1 for c in calls if not c["refused"]) == 4 and calls[4]["refused"] == "limit"
    assert trace["usage"]["calls"] == len(server.message_requests)

    # and `arcs replay` reproduces it from the trace alone (recorded model, retrieval, tool results)
    asked = len(server.message_requests)
    capsys.readouterr()
    code = main(["replay", str(outcome.trace_path), "--json"], settings=worker_settings)
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out)["reproduced"] is True, out
    assert len(server.message_requests) == asked
