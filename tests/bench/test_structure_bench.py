"""bench/structure (issue #25's before/after numbers): the AST counters on small modules."""

from __future__ import annotations

import ast

from bench.structure import static
from bench.structure.static import Module


def _module(rel: str, text: str) -> Module:
    return Module(rel, ast.parse(text), text.splitlines())


TRACE = _module(
    "jobs/repair/trace.py",
    "class Trace:\n    id: str = ''\n    notices: list[str]\n    outcome: Outcome\n    budget: Budget\n",
)


def test_trace_writes_follow_the_trace_aliases_and_record_types() -> None:
    user = _module(
        "jobs/engine.py",
        "from jobs.repair.trace import RoundRecord\n"
        "def run(result, st):\n"
        "    trace = result.trace\n"
        "    trace.id = 'x'\n"  # a top-level field
        "    st.trace.notices.append('n')\n"  # a mutating call through st.trace
        "    out = st.trace.outcome\n"
        "    out.verdict = 'fixed'\n"  # through an alias of a field
        "    record = RoundRecord(index=0)\n"
        "    record.prompt = 'p'\n"  # a trace record made here
        "    other = {}\n"
        "    other.id = 1\n"  # not a trace
        "    result.id = 2\n",  # not a trace either
    )
    found = static.trace_writes([TRACE, user], static.trace_fields({TRACE.rel: TRACE}))
    assert found["by_field"] == {
        "id": ["jobs/engine.py:4"],
        "notices": ["jobs/engine.py:5"],
        "outcome": ["jobs/engine.py:7"],
        "rounds[]": ["jobs/engine.py:9"],
    }
    assert found["top_level_sites"] == 3


def test_budget_writes_name_the_changes_outside_the_meter() -> None:
    user = _module(
        "jobs/culprit.py",
        "from jobs.repair.budget import Budget, Spend\n"
        "def apply(result, budget, trace):\n"
        "    spend = result.spend + Spend(executions=1)\n"
        "    trace.budget = budget\n"
        "    trace.repo['loop_budget'] = budget.as_dict()\n"
        "    return budget.with_(executions=2)\n"
        "def from_json(d):\n"
        "    return Budget(**d)\n",
    )
    found = static.budget_writes([user])
    kinds = {k: v["count"] for k, v in found["by_kind"].items()}
    assert kinds == {
        "new Spend": 1,
        "assign .budget": 1,
        '"loop_budget" (the loop\'s own budget kept in trace.repo)': 1,
        "Budget.with_ (a changed budget)": 1,
        "read back from JSON (from_*)": 1,
    }
    assert found["writing_sites_outside"] == 4


def test_anchored_lists_flag_a_stale_entry() -> None:
    user = _module("jobs/plan.py", "def plan_for(r):\n    return RepairPlan(r)\n")
    out = static.anchored_lists(
        {user.rel: user},
        {
            "x": [
                {"file": "jobs/plan.py", "name": "plan_for", "needle": "RepairPlan("},
                {"file": "jobs/plan.py", "name": "plan_for", "needle": "RepairTask("},
                {"file": "jobs/plan.py", "name": "gone"},
            ]
        },
    )
    assert out["x"]["missing"] == ["jobs/plan.py::plan_for RepairTask(", "jobs/plan.py::gone"]
    assert out["x"]["files"] == 1


def test_controller_lines_count_spans_and_code_lines() -> None:
    user = _module(
        "jobs/engine.py",
        'def execute():\n    """Doc."""\n\n    # why\n    a = 1\n    return a\n',
    )
    out = static.controller_lines({user.rel: user}, [{"file": "jobs/engine.py", "name": "execute"}])
    assert (out["lines"], out["code_lines"], out["files"]) == (6, 3, 1)
