"""Tokens per repair with and without the model's tools (issue #15 item 3, target: ≤ +30% median).

Six generated Python repositories (a test calls ``api.entry``, which calls a chain of helpers in
other modules, each module padded with ~35 small functions, each helper 40-120 lines long; the bug
is a wrong operator on the last line of the helper at call depth ``d``): three with the bug near
the test (d = 1: the loop's own context shows it) and three far from it (d = 3, 5, 7: it does not).
"Shown" is measured, not assumed: a case is *near* when it is fixed in round 1 without tools. Each case is repaired with the ``large`` tier by
:class:`jobs.repair.loop.RepairLoop` over an in-memory workbench (the fixed line decides the test),
through the real ``anthropic`` SDK against ``tests/fakes/anthropic_server.py`` — tokens are what the
server bills: ``len(request body) // 4`` input, plus output.

The stand-in model answers ``propose_patch`` with the true fix exactly when the buggy line is in
the request, else with an edit that cannot apply. With tools offered it acts by one of two policies:

* ``needed``: looks only when the buggy line is not in the request — ``symbol(<buggy function>)``
  (a model reading the chain of calls would ask for it), then proposes;
* ``greedy``: uses every tool call the round allows (``symbol`` on the buggy function, then on
  the helpers from the top, one call per turn) before proposing — the worst case for tokens.

    .venv/bin/python -m bench.tools.run        # prints the table; writes bench/results/tools.json
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from dataclasses import dataclass
from typing import Any

from bench.common import RESULTS_DIR
from jobs.llm_anthropic import AnthropicLLM
from jobs.repair.budget import Budget
from jobs.repair.fakes import FakeClock, FakeWorkbench
from jobs.repair.loop import RepairLoop
from jobs.repair.loop_config import LoopConfig
from jobs.repair.model import Failure, Frame
from jobs.repair.proposers.anthropic import AnthropicProposer
from jobs.repair.spec import RepairSpec
from jobs.repair.task import RepairTask
from jobs.repair.workbench import TestOutcome
from tests.fakes.anthropic_server import FakeAnthropicServer, Reply, ToolUse

TEST_ID = "tests/test_api.py::test_entry"
PAD = 140


@dataclass(frozen=True)
class Case:
    depth: int
    body: int = 80
    """Lines of each helper before its return (so what the loop shows has a realistic size)."""

    @property
    def id(self) -> str:
        return f"chain-d{self.depth}-b{self.body}"

    @property
    def buggy(self) -> str:
        return f"    return value + {self.depth} > limit\n"

    @property
    def fixed(self) -> str:
        return f"    return value + {self.depth} >= limit\n"

    @property
    def function(self) -> str:
        return f"step{self.depth}"

    def files(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for i in range(1, self.depth + 1):
            body = (
                self.buggy
                if i == self.depth
                else f"    from pkg.mod{i + 1} import step{i + 1}\n\n    return step{i + 1}(value + 1, limit + 1)\n"
            )
            pad = "".join(
                f"def unrelated_{i}_{j}(x):\n    return x * {j} - {i}\n\n\n" for j in range(PAD // 4)
            )
            work = "".join(
                f"    note_{k} = (value * {k} + limit) % {k + 7}  # bookkeeping {k}\n"
                for k in range(self.body)
            )
            out[f"pkg/mod{i}.py"] = f'"""Module {i}."""\n\n\n{pad}def step{i}(value, limit):\n{work}{body}'
        out["pkg/api.py"] = (
            "from pkg.mod1 import step1\n\n\ndef entry(value, limit):\n    return step1(value, limit)\n"
        )
        out["tests/test_api.py"] = (
            f"from pkg.api import entry\n\n\ndef test_entry():\n    assert entry(0, {2 * self.depth - 1})\n"
        )
        return out


CASES = (Case(1, 40), Case(1, 80), Case(1, 120), Case(3, 60), Case(5, 80), Case(7, 100))


class StandIn:
    """The stand-in model (see the module docstring)."""

    def __init__(self, case: Case, policy: str) -> None:
        self.case = case
        self.policy = policy

    def __call__(self, body: dict[str, Any]) -> Reply:
        choice = body.get("tool_choice") or {}
        if choice.get("name") == "submit_plan":
            plan = {
                "contract": "The test passes.",
                "sketch": "Fix the code.",
                "subgoals": ["the entry point"],
            }
            return Reply.tool("submit_plan", plan, output_tokens=60)
        text = json.dumps(body)
        visible = json.dumps(self.case.buggy.strip())[1:-1] in text
        turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if choice.get("type") == "any" and (self.policy == "greedy" or not visible):
            # the buggy function first, then the rest of it when the definition was clipped;
            # greedy then looks at the chain of helpers from the top
            more = re.findall(r"open (\S+) with start=(\d+)", text)
            if turns == 0:
                use = ToolUse("symbol", {"name": self.case.function})
            elif more and turns == 1:
                use = ToolUse("open", {"path": more[-1][0], "start": int(more[-1][1])})
            else:
                use = ToolUse("symbol", {"name": f"step{min(turns, self.case.depth)}"})
            return Reply(tool_uses=(use,), output_tokens=30)
        if visible:
            edit = {"path": f"pkg/mod{self.case.depth}.py", "kind": "replace", "old": self.case.buggy.strip(),
                    "new": self.case.fixed.strip()}  # fmt: skip
        else:
            edit = {"path": "pkg/api.py", "kind": "replace", "old": "<not shown>", "new": "pass"}
        return Reply.tool("propose_patch", {"explanation": "stand-in", "edits": [edit]}, output_tokens=80)


def judge(case: Case) -> Any:
    def run(files: Any, select: Any) -> TestOutcome:
        ok = case.fixed.strip() in files.get(f"pkg/mod{case.depth}.py", "")
        return TestOutcome(passed=(TEST_ID,)) if ok else TestOutcome(failed=(TEST_ID,), failures=(FAILURE,))

    return run


FAILURE = Failure(TEST_ID, "AssertionError", "assert False", "tests/test_api.py", 5, (Frame("tests/test_api.py", 5, "test_entry"),))  # fmt: skip


def repair(case: Case, tools: bool, policy: str) -> dict[str, Any]:
    with FakeAnthropicServer() as server:
        server.dynamic = StandIn(case, policy)
        files = case.files()
        bench = FakeWorkbench(
            files, base=TestOutcome(failed=(TEST_ID,), failures=(FAILURE,)), judge=judge(case)
        )
        with AnthropicLLM(
            "sk-bench", "claude-sonnet-4-6", base_url=server.base_url, sleep=lambda s: None
        ) as llm:
            task = RepairTask(kind="ci", test_command="pytest -q", ci_tests=(TEST_ID,))
            loop = RepairLoop(None, AnthropicProposer(llm), bench, FakeClock(), llm=llm)
            config = LoopConfig(tools=tools, triage_runs=0)
            budget = Budget(iterations=5, tokens=2_000_000, usd=20.0, executions=40, wall_s=3600)
            result = loop.run(RepairSpec(task=task, budget=budget, tier="large", loop=config))
        tool_calls = sum(len(r.tool_calls) for r in result.trace.rounds)
        return {
            "case": case.id,
            "tools": tools,
            "policy": policy,
            "fixed": result.verdict == "fixed",
            "rounds": len(result.trace.rounds),
            "requests": len(server.message_requests),
            "tool_calls": tool_calls,
            "tokens": result.trace.usage.tokens,
        }


def main() -> int:
    rows = [repair(c, False, "-") for c in CASES]
    for policy in ("needed", "greedy"):
        rows += [repair(c, True, policy) for c in CASES]
    off = statistics.median(r["tokens"] for r in rows if not r["tools"])
    summary: dict[str, Any] = {"median_tokens_without_tools": off}
    print("| case | tools | policy | fixed | rounds | requests | tool calls | tokens |")
    print("| :-- | :-- | :-- | :-- | --: | --: | --: | --: |")
    for r in rows:
        print(f"| {r['case']} | {'on' if r['tools'] else 'off'} | {r['policy']} | {r['fixed']} | {r['rounds']} | "
              f"{r['requests']} | {r['tool_calls']} | {r['tokens']} |")  # fmt: skip
    for policy in ("needed", "greedy"):
        on = statistics.median(r["tokens"] for r in rows if r["policy"] == policy)
        near_ids = {r["case"] for r in rows if not r["tools"] and r["fixed"] and r["rounds"] == 1}
        group: dict[str, float] = {}
        for name, ids in (("near", near_ids), ("far", {c.id for c in CASES} - near_ids)):
            a = [r["tokens"] for r in rows if r["case"] in ids and not r["tools"]]
            b = [r["tokens"] for r in rows if r["case"] in ids and r["policy"] == policy]
            group[f"{name}_ratio"] = round(statistics.median(b) / statistics.median(a), 3) if a else 0.0
        summary[policy] = {
            "median_tokens": on,
            "ratio": round(on / off, 3),
            **group,
            "fixed": sum(r["fixed"] for r in rows if r["policy"] == policy),
        }
    summary["fixed_without_tools"] = sum(r["fixed"] for r in rows if not r["tools"])
    print(json.dumps(summary, indent=1))
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "tools.json").write_text(json.dumps({"rows": rows, "summary": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
