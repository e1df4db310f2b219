"""The behaviour probe (issue #23): old and new function on the tests' own inputs and their
neighbours, run in the sandbox; the humanize case (``% 100`` -> ``// 10`` breaks ``ordinal(121)``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from jobs.repair.behaviour import (
    BehaviourProbe,
    ProbePlan,
    Target,
    behaviour_line,
    call_inputs,
    changed_functions,
    compare,
    module_of,
    neighbours,
    plan_probe,
)
from jobs.repair.budget import Budget
from jobs.repair.fakes import FakeClock, InMemorySource, apply_in_memory
from jobs.repair.meter import BudgetMeter
from jobs.repair.model import Edit
from jobs.repair.state import RunState
from jobs.repair.task import RepairTask
from jobs.repair.trace import CandidateRecord, Trace
from tests.conftest import MakeRepo, sandbox_works

NUMBER = "src/numfmt/number.py"
ORDINAL = (
    "def ordinal(value):\n"
    "    value = int(value)\n"
    "    t = ('th', 'st', 'nd', 'rd', 'th', 'th', 'th', 'th', 'th', 'th')\n"
    "    if value % 10 in (11, 12, 13):  # special case\n"
    "        return f'{value}{t[0]}'\n"
    "    return f'{value}{t[value % 10]}'\n"
)
TESTS = (
    "import pytest\n\nimport numfmt\nfrom numfmt.number import ordinal\n\n\n"
    "@pytest.mark.parametrize('test_input, expected', [('1', '1st'), ('11', '11th'), ('101', '101st'), "
    "('111', '111th'), (None, 'None')])\n"
    "def test_ordinal(test_input, expected):\n    assert numfmt.number.ordinal(test_input) == expected\n\n\n"
    "def test_five():\n    assert ordinal(5) == '5th'\n"
)
WRONG = Edit(NUMBER, old="value % 10 in (11, 12, 13)", new="value // 10 in (11, 12, 13)")
RIGHT = Edit(NUMBER, old="value % 10 in (11, 12, 13)", new="value % 100 in (11, 12, 13)")
FILES = {
    "src/numfmt/__init__.py": "from numfmt import number\n",
    NUMBER: ORDINAL,
    "tests/test_number.py": TESTS,
}


def test_inputs_come_from_the_tests_calls_and_their_parametrize_rows() -> None:
    calls = call_inputs({"tests/test_number.py": TESTS}, "ordinal")
    assert [c[0] for c in calls] == [("1",), ("11",), ("101",), ("111",), (None,), (5,)]
    near = {c[0][0] for c in neighbours(calls)}
    assert {"121", "112", "110", "211", "12", 4, 6, 15} <= near
    assert None not in near and "11" not in near  # no step for None; the tests' own inputs stay theirs


def test_changed_functions_and_their_module() -> None:
    after = ORDINAL.replace("% 10 in", "// 10 in")
    assert changed_functions(ORDINAL, after) == ["ordinal"]
    assert changed_functions(ORDINAL, ORDINAL + "\n\ndef other():\n    return 1\n") == []
    assert module_of(NUMBER, InMemorySource(FILES)) == ("src", "numfmt.number")
    assert module_of("tool.py", InMemorySource({"tool.py": ""})) == ("", "tool")


def test_plan_probes_the_changed_function_with_test_inputs_first() -> None:
    applied = apply_in_memory(FILES, [WRONG])
    plan = plan_probe(applied, InMemorySource(FILES))
    (target,) = plan.targets
    assert (target.path, target.root, target.module, target.function) == (
        NUMBER,
        "src",
        "numfmt.number",
        "ordinal",
    )
    assert target.tested == 6 and len(target.calls) > 6
    assert plan_probe(
        apply_in_memory(FILES, [Edit("tests/test_number.py", old="'5th'", new="'5th' ")]),
        InMemorySource(FILES),
    ).note


def test_compare_counts_changes_on_inputs_no_test_uses() -> None:
    plan = ProbePlan(
        [Target(NUMBER, "numfmt.number", "src", "ordinal", ((("111",), ()), (("121",), ())), tested=1)]
    )
    old = [[("ok", "'111st'"), ("ok", "'121st'")]]
    new = [[("ok", "'111th'"), ("ok", "'121th'")]]
    record = compare(plan, old, new)
    assert record["changed"] == 2 and record["unchecked_changes"] == 1
    assert record["examples"] == ["ordinal('121'): '121st' -> '121th'"]
    assert (
        behaviour_line(record) == "changes 1 result no test checks, e.g. ordinal('121'): '121st' -> '121th'"
    )
    assert behaviour_line(compare(plan, old, old)) == ""


def test_a_workbench_that_cannot_probe_gives_no_record() -> None:
    from jobs.repair.fakes import FakeWorkbench, outcome

    bench = FakeWorkbench(FILES, base=outcome([], []))
    st = RunState(task=RepairTask(kind="ci"), trace=Trace(), meter=BudgetMeter(Budget(), FakeClock()))
    assert BehaviourProbe(bench).check(st, CandidateRecord(id="r1c1", round=0, edits=[WRONG])) == {}


@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
def test_the_sandboxed_probe_names_what_the_wrong_fix_breaks(make_repo: MakeRepo) -> None:
    from jobs.sandbox_workbench import SandboxWorkbench
    from runners.commands import resolve_test_command
    from runners.factory import make_runner

    repo = make_repo(FILES)
    runner = make_runner(toolchain_paths=[Path(sys.prefix)])
    command = resolve_test_command(repo, explicit="python -m pytest -q -o pythonpath=src")
    st = RunState(task=RepairTask(kind="ci"), trace=Trace(), meter=BudgetMeter(Budget(), FakeClock()))
    with SandboxWorkbench(repo, command, runner, env={"PATH": f"{sys.prefix}/bin:/usr/bin:/bin"}) as wb:
        probe = BehaviourProbe(wb)
        wrong = probe.check(st, CandidateRecord(id="r1c1", round=0, edits=[WRONG]))
        right = probe.check(st, CandidateRecord(id="r1c2", round=0, edits=[RIGHT]))
    assert wrong["executions"] == 2 and st.meter.spend().executions == 4
    # 121 is no test's input but 111's neighbour: the wrong fix turns it into '121th'.
    assert "ordinal('121'): '121st' -> '121th'" in wrong["examples"]
    # The right fix changes untested results too (the bug's own: 12, 112, 211), never 121: the
    # probe names the changes for a reviewer; counting them alone would not rank these two.
    assert right["unchecked_changes"] == len(right["examples"]) == 3
    assert not any("'121'" in e for e in right["examples"])
    assert (repo / NUMBER).read_text() == ORDINAL  # the work tree is only read


def test_only_literals_that_read_back_as_themselves_are_inputs() -> None:
    text = (
        "from m import f\n\n\ndef test_f():\n    f(1e999)\n    f('x' * 3)\n    f(2)\n    f("
        + repr("y" * 300)
        + ")\n"
    )
    assert [c[0] for c in call_inputs({"tests/test_m.py": text}, "f")] == [(2,)]


def test_inputs_from_loops_over_literal_pairs_and_assert_raises() -> None:
    text = (
        "import unittest\nimport webcolors\n\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_pairs(self):\n"
        "        test_pairs = (('#fff', 'white'), ('#000080', 'navy'))\n"
        "        for hex_value, name in test_pairs:\n"
        "            assert name == webcolors.hex_to_name(hex_value)\n"
        "        for spec in ('css2', 'css3'):\n"
        "            webcolors.hex_to_name('#ffffff', spec=spec)\n\n"
        "    def test_raises(self):\n"
        "        self.assertRaises(ValueError, webcolors.hex_to_name, '#123456')\n"
        "        self.assertRaises(ValueError, webcolors.hex_to_name, '#daa520', spec='html4')\n"
    )
    calls = call_inputs({"tests/test_c.py": text}, "hex_to_name")
    assert sorted(calls) == sorted(
        [
            (("#fff",), ()),
            (("#000080",), ()),
            (("#ffffff",), (("spec", "css2"),)),
            (("#ffffff",), (("spec", "css3"),)),
            (("#123456",), ()),
            (("#daa520",), (("spec", "html4"),)),
        ]
    )
