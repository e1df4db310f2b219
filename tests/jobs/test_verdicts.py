"""Trustworthy verdicts (issue #10): final verification with the exact command, ``partial``,
fail-fast commands diagnosed without their flags, hangs, ``environment``, true reasons.

The first half drives the loop with in-repo fakes; the second runs ``jobs.fix.fix`` with tier 0
in the real bubblewrap sandbox on small repositories.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from bot.settings import Settings
from jobs.fix import FixRequest, fix
from jobs.repair.budget import Budget
from jobs.repair.fakes import (
    FakeClock,
    FakeWorkbench,
    ScriptedLLM,
    ScriptedProposer,
    outcome,
    replace_proposal,
)
from jobs.repair.loop import LoopConfig, RepairLoop
from jobs.repair.task import RepairTask
from jobs.repair.trace import dump_trace, load_trace
from jobs.repair.workbench import TestOutcome
from tests.conftest import MakeRepo, sandbox_works

CORE = "calc/core.py"
FILES = {CORE: "def is_adult(age):\n    return age > 18\n\n\ndef label(total):\n    return str(total)\n"}
A, B, C = "tests/test_core.py::test_adult", "tests/test_core.py::test_label", "tests/test_core.py::test_other"
FIX_A = replace_proposal(CORE, "return age > 18", "return age >= 18")
FIX_B = replace_proposal(CORE, "return str(total)", "return f'{total:.2f}'")
BREAK_C = replace_proposal(CORE, "return age > 18", "return age == 18")


def judge(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
    core = files[CORE]
    a_ok = "age >= 18" in core or "age == 18" in core
    c_ok = "age == 18" not in core
    b_ok = ":.2f" in core
    passed = [t for t, ok in ((A, a_ok), (B, b_ok), (C, c_ok)) if ok]
    return outcome(passed, [t for t in (A, B, C) if t not in passed])


def label_ok(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
    """Like :func:`judge`, with test_label passing whatever the candidate."""
    result = judge({CORE: files[CORE] + "\n# :.2f"}, select)
    return result


def loop_with(
    script: Sequence[Sequence[object]],
    *,
    base: TestOutcome,
    config: LoopConfig | None = None,
    suite: object = judge,
    **wb: object,
) -> tuple[RepairLoop, FakeWorkbench, ScriptedProposer]:
    clock = FakeClock()
    bench = FakeWorkbench(FILES, base=base, judge=suite, clock=clock, **wb)  # type: ignore[arg-type]
    proposer = ScriptedProposer(script)  # type: ignore[arg-type]
    return RepairLoop(None, proposer, bench, clock, config=config or LoopConfig()), bench, proposer


def ci(targets: Sequence[str] = ()) -> RepairTask:
    return RepairTask(kind="ci", test_command="pytest -x", ci_tests=tuple(targets))


# --------------------------------------------------------------------------- fakes


def test_fixed_needs_the_exact_command_to_exit_0_else_the_search_goes_on() -> None:
    base = outcome([B, C], [A])
    # The exact command fails on the first candidate although its diagnosis run was clean.
    second = replace_proposal(CORE, "return age > 18", "return age >= 18  # inclusive")
    loop, bench, _ = loop_with([[FIX_A], [second]], base=base, suite=label_ok)
    first_key = _key(bench, FIX_A)
    bench.verify_outcomes[first_key] = outcome([A], [C])
    result = loop.run(ci(), Budget(), "0")
    assert result.verdict == "fixed" and result.trace.outcome.candidate == "r2c1"
    first = result.trace.find_candidate("r1c1")
    assert first is not None and not first.submittable
    assert [(g.gate, g.passed) for g in first.gates][-1] == ("verification", False)
    assert [v["passed_verification"] for v in result.trace.verifications] == [False, True]
    assert result.verification["exit_code"] == 0 and result.verification["candidate"] == "r2c1"
    assert "exited 0" in result.reason
    # The record survives the JSON round trip (arcs replay reads it back).
    assert load_trace(dump_trace(result.trace)).verifications == result.trace.verifications


def test_targets_pass_but_an_unproven_failure_remains_is_not_partial() -> None:
    # CI named test_adult; test_label already failed on the base tree, but with no known-good
    # baseline nothing proves it failed before the change (#23: `partial` is impossible there).
    base = outcome([C], [A, B])
    loop, bench, _ = loop_with([[FIX_A]], base=base, fail_fast=True)
    result = loop.run(ci([A]), Budget(), "0")
    assert result.verdict != "partial" and not result.fixed and result.patch == ""
    assert result.pre_existing == () and B in result.reason
    assert "not proven failing before the change: no known-good baseline" in result.reason
    assert result.trace.verifications[-1]["exit_code"] == 1 and bench.verifications


def test_a_candidate_fixing_only_some_targets_is_never_fixed() -> None:
    base = outcome([C], [A, B])
    loop, _, _ = loop_with([[FIX_A]], base=base, fail_fast=True)
    result = loop.run(ci(), Budget(), "0")
    assert not result.fixed and result.verdict != "partial" and result.patch == ""
    assert result.pre_existing == () and "best: 1 of 2 targets (r1c1)" in result.reason


def test_a_failure_not_seen_before_is_a_regression_not_a_pass() -> None:
    # The baseline never observed test_other (as after `pytest -x`): it failing now is a regression.
    base = outcome([], [A])
    loop, _, _ = loop_with([[BREAK_C]], base=base)
    result = loop.run(ci(), Budget(iterations=1), "0")
    assert not result.fixed
    cand = result.trace.find_candidate("r1c1")
    assert cand is not None and cand.gate("regressions") is not None
    gate = cand.gate("regressions")
    assert gate is not None and not gate.passed and C in gate.data["unproven"]


def test_tier0_combines_candidates_that_fixed_different_targets() -> None:
    base = outcome([C], [A, B])
    loop, _, _ = loop_with([[FIX_A, FIX_B]], base=base, config=LoopConfig(pairs=2))
    result = loop.run(ci(), Budget(), "0")
    assert result.verdict == "fixed" and "age >= 18" in result.patch and ":.2f" in result.patch
    assert any(c.proposer == "pair" for c in result.trace.candidates)


def test_environment_stops_before_any_candidate() -> None:
    base = TestOutcome(errors=("<run>",), exit_code=127, environment="`nosuchcmd` was not found; set `test:`")
    loop, bench, proposer = loop_with([[FIX_A]], base=base)
    result = loop.run(ci(), Budget(), "0")
    assert result.verdict == "environment" and result.candidates == 0 and not proposer.requests
    assert result.reason == "`nosuchcmd` was not found; set `test:`" and bench.executions == 1


def test_later_runs_get_a_timeout_derived_from_the_baseline() -> None:
    base = outcome([B, C], [A], duration_s=0.5)
    config = LoopConfig(test_timeout_s=600, timeout_factor=4, timeout_floor_s=3)
    loop, bench, _ = loop_with([[FIX_A]], base=base, config=config, suite=label_ok)
    result = loop.run(ci(), Budget(), "0")
    assert result.fixed
    assert bench.calls[0].timeout_s == 600  # reproduction: the configured timeout
    assert {c.timeout_s for c in bench.calls[1:]} == {3.0}  # max(floor, 4 x 0.5 s)
    assert result.trace.reproduction.timings["candidate_timeout_s"] == 3.0


def test_proposals_that_do_not_apply_say_so() -> None:
    wrong = [replace_proposal(CORE, f"return age > {n}", "return age >= 18") for n in (17, 19)]
    loop, _, _ = loop_with([wrong], base=outcome([C], [A]))
    result = loop.run(ci(), Budget(iterations=1), "0")
    assert result.verdict == "no_candidates"
    assert result.reason == f"2 proposals, none applied: old text not found in {CORE}"


def _key(bench: FakeWorkbench, proposal: object) -> str:
    from jobs.repair.diffing import patch_key

    return patch_key(bench.preview(proposal.edits).diff())  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- the real sandbox


sandboxed = pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")

CALC = "def is_adult(age):\n    return age > 18\n\n\ndef label(total):\n    return 'Total: %s' % total\n"
CALC_TESTS = (
    "from calc import is_adult, label\n\n\n"
    "def test_adult():\n    assert is_adult(18)\n\n\n"
    "def test_label():\n    assert label(90) == 'Total: 90.00'\n\n\n"
    "def test_other():\n    assert is_adult(30)\n"
)


def _fix(settings: Settings, repo: Path, command: str, **changes: object) -> object:
    import sys

    request = FixRequest(
        repo=repo,
        test_command=command,
        tier=changes.pop("tier", "0"),  # type: ignore[arg-type]
        use_index=False,
        toolchain_paths=(Path(sys.prefix),),
        trace_out=repo.parent / f"{repo.name}-trace.json",
        config=changes.pop("config", LoopConfig(parallel=2)),  # type: ignore[arg-type]
    )
    return fix(settings, request, **changes)  # type: ignore[arg-type]


@sandboxed
def test_pytest_x_with_two_failures_is_not_fixed_by_moving_the_first(
    settings: Settings, make_repo: MakeRepo
) -> None:
    repo = make_repo({"calc.py": CALC, "tests/test_calc.py": CALC_TESTS})
    command = "python -m pytest -q -x tests/test_calc.py"
    report = _fix(settings, repo, command)
    result = report.result  # type: ignore[attr-defined]
    # Moving past the first failure fixes 1 of 2 targets: not fixed, and never `partial` (#23).
    assert not result.fixed and result.verdict != "partial" and result.patch == ""
    assert "best: 1 of 2 targets" in result.reason and "age >= 18" in result.best["patch"]
    trace = result.trace
    assert trace.commands["verification"] == command
    assert trace.commands["diagnosis"] == "python -m pytest -q tests/test_calc.py"
    assert trace.reproduction.baseline.failed == (
        "tests/test_calc.py::test_adult",
        "tests/test_calc.py::test_label",
    )


@sandboxed
def test_a_pre_existing_unrelated_failure_without_a_known_good_baseline_is_a_target(
    settings: Settings, make_repo: MakeRepo
) -> None:
    tests = (
        "import os\nfrom calc import is_adult\n\n\n"
        "def test_adult():\n    assert is_adult(18)\n\n\n"
        "def test_needs_service():\n    assert os.environ.get('SERVICE_URL'), 'no service configured'\n"
    )
    repo = make_repo({"calc.py": CALC, "tests/test_calc.py": tests})
    result = _fix(settings, repo, "python -m pytest -q").result  # type: ignore[attr-defined]
    assert result.verdict != "partial" and not result.fixed and result.patch == ""
    assert "best: 1 of 2 targets" in result.reason and "age >= 18" in result.best["patch"]


@sandboxed
def test_an_infinite_loop_times_out_with_frames_and_is_repaired(
    settings: Settings, make_repo: MakeRepo
) -> None:
    source = "def countdown(n):\n    steps = 0\n    while n > 0:\n        n += 1\n        steps += 1\n    return steps\n"
    tests = "from count import countdown\n\n\ndef test_three():\n    assert countdown(3) == 3\n"
    repo = make_repo({"count.py": source, "tests/test_count.py": tests})
    config = LoopConfig(parallel=2, test_timeout_s=8, timeout_floor_s=4, hang_probe_s=4)
    result = _fix(settings, repo, "python -m pytest -q", config=config).result  # type: ignore[attr-defined]
    baseline = result.trace.reproduction.baseline
    assert baseline.timed_out
    (hang,) = [f for f in baseline.failures if f.type == "timeout"]
    assert ("count.py", "countdown") in {(f.path, f.function) for f in hang.frames}
    assert hang.path == "count.py" and hang.line in (3, 4, 5)
    # Stopped by the hang probe: the part that did not hang sets the candidates' timeout; killed at
    # the deadline: the hang probe (runners.hang, jobs.repair.testruns).
    rest = baseline.duration_s - baseline.hang_s
    expected = min(8, max(4, 5 * rest)) if baseline.hang_s else 4
    assert result.trace.reproduction.timings["candidate_timeout_s"] == pytest.approx(expected, abs=0.01)
    assert result.verdict == "fixed" and "n -= 1" in result.patch


@sandboxed
@pytest.mark.parametrize(
    ("command", "files", "needle"),
    [
        ("nosuchcmd", {"a.py": "x = 1\n"}, "`nosuchcmd` was not found"),
        ("python -m nosuchrunner", {"a.py": "x = 1\n"}, "`nosuchrunner` is not installed"),
        (
            "python -m pytest -q",
            {
                "tests/test_a.py": "import left_pad_missing_pkg\n\n\ndef test_a():\n    assert left_pad_missing_pkg\n"
            },
            "`left_pad_missing_pkg` is not installed",
        ),
    ],
)
def test_environment_problems_cost_no_candidates_and_no_model_call(
    settings: Settings, make_repo: MakeRepo, command: str, files: dict[str, str], needle: str
) -> None:
    repo = make_repo(files)
    llm = ScriptedLLM([])
    result = _fix(settings, repo, command, tier="small", llm=llm).result  # type: ignore[attr-defined]
    assert result.verdict == "environment" and result.candidates == 0 and result.rounds == 0
    assert llm.requests == [] and result.spend.usd == 0
    assert needle in result.reason and ".arcs.yml" in result.reason and "\n" not in result.reason
