"""Verdicts as the README defines them (issue #23), driven through the loop with fakes.

``partial`` only when every target passes and the command fails only on tests proven failing at
a known-good baseline (the last green commit); without one, a candidate that fixes some targets is
not fixed: the report names it ("best: k of n targets") and it is never the returned patch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from bot.settings import Settings
from jobs.repair.budget import Budget
from jobs.repair.changes import ChangeSet
from jobs.repair.diffing import parse_patch, unified_diff
from jobs.repair.fakes import FakeClock, FakeWorkbench, ScriptedProposer, outcome, replace_proposal
from jobs.repair.judge import KnownGood, Standing, best_of, decide
from jobs.repair.loop import LoopConfig, RepairLoop
from jobs.repair.report import RepairReport
from jobs.repair.select import CandidateScore, best_so_far
from jobs.repair.task import RepairTask
from jobs.repair.trace import dump_trace, load_trace, render_markdown
from jobs.repair.workbench import TestOutcome
from tests.conftest import MakeRepo, git, sandbox_works

CORE = "calc/core.py"
RED = "def is_adult(age):\n    return age > 18\n\n\ndef label(total):\n    return str(total)\n"
A, B, C = "tests/test_core.py::test_adult", "tests/test_core.py::test_label", "tests/test_core.py::test_other"
FIX_A = replace_proposal(CORE, "return age > 18", "return age >= 18")


def judge(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
    core = files[CORE]
    ok = {A: "age >= 18" in core, B: ":.2f" in core, C: True}
    ids = [t for t in (A, B, C) if select is None or t in select]
    return outcome([t for t in ids if ok[t]], [t for t in ids if not ok[t]])


def changes_from(green: str) -> ChangeSet:
    """The change from a green ``calc/core.py`` to the red one."""
    return ChangeSet(
        base="a1b2c3d4e5", head="f6e7d8c9b0", files=parse_patch(unified_diff({CORE: green}, {CORE: RED}))
    )


def run(task: RepairTask, script: Sequence[Sequence[object]]) -> tuple[object, FakeWorkbench]:
    clock = FakeClock()
    bench = FakeWorkbench({CORE: RED}, base=outcome([C], [A, B]), judge=judge, clock=clock)
    loop = RepairLoop(None, ScriptedProposer(script), bench, clock, config=LoopConfig(pairs=0))  # type: ignore[arg-type]
    return loop.run(task, Budget(iterations=1), "0"), bench


def ci(targets: Sequence[str] = (), changes: ChangeSet | None = None) -> RepairTask:
    return RepairTask(kind="ci", test_command="pytest", ci_tests=tuple(targets), changes=changes)


def test_a_candidate_fixing_some_targets_is_not_fixed_and_is_named_as_the_best() -> None:
    result, _ = run(ci(), [[FIX_A]])
    assert result.verdict != "partial" and not result.fixed  # type: ignore[attr-defined]
    assert "best: 1 of 2 targets (r1c1)" in result.reason  # type: ignore[attr-defined]
    # The candidate is in the report, never the returned patch (publishers read `patch`).
    assert result.patch == "" and "age >= 18" in result.best["patch"]  # type: ignore[attr-defined]
    assert result.trace.outcome.best["fixed"] == 1 and result.trace.outcome.best["targets"] == 2  # type: ignore[attr-defined]
    assert load_trace(dump_trace(result.trace)).outcome.best == result.trace.outcome.best  # type: ignore[attr-defined]


def test_without_a_known_good_baseline_partial_is_impossible() -> None:
    # CI named test_adult; test_label fails here too, but nothing proves it failed before the change.
    result, _ = run(ci([A]), [[FIX_A]])
    assert result.verdict != "partial" and not result.fixed and result.patch == ""  # type: ignore[attr-defined]
    assert "not proven failing before the change: no known-good baseline" in result.reason  # type: ignore[attr-defined]
    assert "best: 1 of 1 target (r1c1)" in result.reason  # type: ignore[attr-defined]


def test_a_failure_proven_at_the_last_green_commit_is_no_target_and_allows_partial() -> None:
    # Green had `>=` (the change broke test_adult); test_label failed at green as well.
    green = RED.replace("age > 18", "age >= 18")
    result, bench = run(ci(changes=changes_from(green)), [[FIX_A]])
    assert result.trace.reproduction.targets == [A]  # type: ignore[attr-defined]
    known = KnownGood.from_json(result.trace.reproduction.known_good)  # type: ignore[attr-defined]
    assert known is not None and known.failing == {B} and known.source == "the last green commit a1b2c3d"
    assert result.verdict == "partial" and result.pre_existing == (B,)  # type: ignore[attr-defined]
    assert "fails at the last green commit a1b2c3d as well" in result.reason  # type: ignore[attr-defined]
    assert "makes the 1 target test pass" in result.reason  # type: ignore[attr-defined]
    # One run of the failing tests on the green tree, narrowed to them.
    assert any(c.select is not None and set(c.select) == {A, B} for c in bench.calls)


def test_a_failure_that_passes_at_the_last_green_commit_stays_a_target() -> None:
    green = RED.replace("age > 18", "age >= 18").replace("str(total)", "f'{total:.2f}'")
    result, _ = run(ci(changes=changes_from(green)), [[FIX_A]])
    assert set(result.trace.reproduction.targets) == {A, B}  # type: ignore[attr-defined]
    assert result.verdict != "partial" and "best: 1 of 2 targets" in result.reason  # type: ignore[attr-defined]


def test_a_best_candidate_is_never_in_the_report_publishers_read() -> None:
    result, _ = run(ci(), [[FIX_A]])
    markdown = render_markdown(result.trace)  # type: ignore[attr-defined]
    report = RepairReport.from_result(result, trace_path="t.json", trace_markdown=markdown)  # type: ignore[arg-type]
    assert report.patch == "" and not report.files and report.verdict != "partial"
    assert "best: 1 of 2 targets (r1c1)" in report.reason
    assert "### Best candidate r1c1: not a fix" in markdown and "age >= 18" in markdown


# --------------------------------------------------------------------------- the pure decision


def test_decide_follows_the_definitions() -> None:
    known = KnownGood("the last green commit abc1234", failing=frozenset({B}), checked=frozenset({A, B}))
    assert (
        decide(exit_ok=True, targets=[A], passing_targets=[A], failing=[], known_good=None).decision
        == "fixed"
    )
    # Every target passes, the rest proven at the known-good baseline: partial.
    assert decide(
        exit_ok=False, targets=[A], passing_targets=[A], failing=[B], known_good=known
    ).pre_existing == (B,)
    # No known-good baseline: never partial.
    no_base = decide(exit_ok=False, targets=[A], passing_targets=[A], failing=[B], known_good=None)
    assert no_base.decision == "not_fixed" and no_base.unproven == (B,)
    # A target still failing: never partial, even with the rest proven.
    some = decide(exit_ok=False, targets=[A, C], passing_targets=[A], failing=[B, C], known_good=known)
    assert some.decision == "not_fixed" and some.failing_targets == (C,)
    # A parametrized member of a proven test is proven too; an unknown failure is not.
    param = decide(exit_ok=False, targets=[A], passing_targets=[A], failing=[B + "[x]"], known_good=known)
    assert param.decision == "partial"
    other = decide(exit_ok=False, targets=[A], passing_targets=[A], failing=[B, C], known_good=known)
    assert other.decision == "not_fixed" and other.unproven == (C,)


def test_a_candidate_fixing_every_target_ranks_above_one_fixing_some() -> None:
    every = Standing("r1c2", targets=4, fixed=4, new_failures=11, tests_passed=620, diff_lines=2, order=1)
    some = Standing("r2c3", targets=4, fixed=1, new_failures=0, tests_passed=628, diff_lines=2, order=0)
    assert best_of([some, every]) == every
    assert best_of([Standing("r1c1", targets=2, fixed=0)]) is None
    assert every.line() == "best: 4 of 4 targets (r1c2), but 11 tests that passed before fail with it"
    # Best-so-far tracking: more targets fixed wins over more tests passed (a whole-suite run).
    whole_suite = CandidateScore(
        "k1", submittable=False, tests_passed=200, diff_lines=1, order=0, targets_fixed=1
    )
    more_targets = CandidateScore(
        "k2", submittable=False, tests_passed=150, diff_lines=1, order=1, targets_fixed=2
    )
    assert best_so_far(whole_suite, more_targets) is more_targets
    assert best_so_far(more_targets, whole_suite) is more_targets


# --------------------------------------------------------------------------- the real sandbox

CALC = "def is_adult(age):\n    return age >= 18\n"
CALC_TESTS = (
    "import os\nfrom calc import is_adult\n\n\n"
    "def test_adult():\n    assert is_adult(18)\n\n\n"
    "def test_needs_service():\n    assert os.environ.get('SERVICE_URL'), 'no service configured'\n"
)


@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
def test_since_the_last_green_commit_a_failure_proven_there_leaves_partial(
    settings: Settings, make_repo: MakeRepo, tmp_path: Path
) -> None:
    import sys

    from jobs.fix import FixRequest, fix
    from jobs.history import read_changeset

    repo = make_repo({"calc.py": CALC, "tests/test_calc.py": CALC_TESTS})
    (repo / "calc.py").write_text(CALC.replace(">=", ">"), encoding="utf-8")
    git(repo, "commit", "-qam", "a change")
    request = FixRequest(
        repo=repo,
        test_command="python -m pytest -q",
        tier="0",
        use_index=False,
        toolchain_paths=(Path(sys.prefix),),
        trace_out=tmp_path / "trace.json",
        config=LoopConfig(parallel=2),
        changes=read_changeset(repo, "HEAD~1"),
    )
    result = fix(settings, request).result
    assert result.trace.reproduction.targets == ["tests/test_calc.py::test_adult"]
    known = result.trace.reproduction.known_good
    assert known is not None and known["failing"] == ["tests/test_calc.py::test_needs_service"]
    assert result.verdict == "partial" and result.pre_existing == ("tests/test_calc.py::test_needs_service",)
    assert "age >= 18" in result.patch and "at the last green commit" in result.reason


# --------------------------------------------------------------------------- what `arcs fix` prints


def test_arcs_fix_prints_the_best_candidate_as_not_a_fix_and_suggests_since(settings: Settings) -> None:
    import io
    from types import SimpleNamespace

    from bot.cli.context import Context, Output
    from bot.cli.fix_cmd import emit_fix, since_hint

    result, _ = run(ci(), [[FIX_A]])
    stream, err = io.StringIO(), io.StringIO()
    report = SimpleNamespace(result=result, trace_path=Path("t.json"), applied=False, repo=Path("/src/calc"))
    code = emit_fix(report, Context(settings, Output(json_mode=False, stream=stream, err=err)))  # type: ignore[arg-type]
    text = stream.getvalue()
    assert code == 1
    assert "best: 1 of 2 targets (r1c1)" in text
    assert (
        "best candidate r1c1 (not a fix: not applied, never published):" in text
        and "+    return age >= 18" in text
    )
    assert "`arcs fix /src/calc --since <that commit>`" in text
    # Not suggested once the change since green is known, nor for a fix.
    green = RED.replace("age > 18", "age >= 18")
    known, _ = run(ci(changes=changes_from(green)), [[FIX_A]])
    assert since_hint(known, "/src/calc") == ""  # type: ignore[arg-type]
