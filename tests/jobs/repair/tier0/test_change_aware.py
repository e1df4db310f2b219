"""Tier 0's change-aware first offers (autofix, then reverts) inside the real repair loop."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jobs.repair.budget import Budget
from jobs.repair.changes import ChangeSet, changeset_from_git
from jobs.repair.fakes import FakeClock, FakeWorkbench, ScriptedProposer, outcome
from jobs.repair.fakes_change import FakeCommandBench
from jobs.repair.loop import LoopConfig, RepairLoop
from jobs.repair.model import Failure, Frame
from jobs.repair.task import RepairTask
from jobs.repair.tier0.change_aware import ChangeAwareProposer
from jobs.repair.workbench import TestOutcome

CHECK = "black --check ."
CHECK_ID = "<run>"


def black(args: Sequence[str], files: dict[str, str]) -> int:
    dirty = [p for p in files if p.endswith(".py") and files[p] != _clean(files[p])]
    if "--check" in args:
        return 1 if dirty else 0
    for p in dirty:
        files[p] = _clean(files[p])
    return 0


def _clean(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.split("\n"))


def lint_judge(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
    """The check as the workbench sees it: one run-level error while a file is unformatted."""
    if any(files[p] != _clean(files[p]) for p in files if p.endswith(".py")):
        return outcome(errors=[CHECK_ID])
    return outcome(["check"])


def test_formatter_failure_fixed_at_tier0_with_no_llm_and_no_template() -> None:
    files = {"a.py": "x = 1   \n", "b.py": "y = 2\n"}
    wb = FakeWorkbench(files, base=outcome(errors=[CHECK_ID]), judge=lint_judge)
    bench = FakeCommandBench(files, {"black": black})
    inner = ScriptedProposer([])
    proposer = ChangeAwareProposer(inner, check=CHECK, bench=bench)
    loop = RepairLoop(None, proposer, wb, FakeClock(), config=LoopConfig())

    result = loop.run(RepairTask(kind="ci", test_command=CHECK, failure_class="lint"), Budget(), "0")

    assert result.fixed, result.reason
    assert "a.py" in result.patch and "-x = 1   " in result.patch
    assert result.usage.usd == 0
    assert proposer.autofix_result is not None and proposer.autofix_result.fixed
    assert bench.calls == ["black .", CHECK]


def test_no_autofix_for_a_test_failure_or_an_unknown_check() -> None:
    files = {"a.py": "x = 1   \n"}
    bench = FakeCommandBench(files, {"black": black})
    for task, check in (
        (RepairTask(kind="ci", test_command=CHECK, failure_class="test"), CHECK),
        (RepairTask(kind="ci", test_command="pytest", failure_class="lint"), "pytest"),
    ):
        wb = FakeWorkbench(files, base=outcome(errors=[CHECK_ID]), judge=lint_judge)
        proposer = ChangeAwareProposer(ScriptedProposer([]), check=check, bench=bench)
        RepairLoop(None, proposer, wb, FakeClock(), config=LoopConfig()).run(task, Budget(), "0")
        assert proposer.autofix_result is None
    assert bench.calls == []


CORE = "def is_adult(age):\n    return age > 18\n"
BROKEN = "def is_adult(age):\n    return age >= 180\n"
DIFF = (
    "diff --git a/core.py b/core.py\n--- a/core.py\n+++ b/core.py\n@@ -1,2 +1,2 @@\n"
    " def is_adult(age):\n-    return age > 18\n+    return age >= 180\n"
)
SHA = "c" * 40


def changes() -> ChangeSet:
    log = f"{SHA}\x1fBob\x1fbob@example.com\x1fcore: stricter adult check\x1e"
    return changeset_from_git("a" * 40, SHA, log=log, diff=DIFF, commit_diffs={SHA: DIFF})


def test_a_revert_of_the_change_since_green_is_offered_and_verified() -> None:
    failure = Failure("t::test_adult", "AssertionError", frames=(Frame("core.py", 2, "is_adult"),))

    def judge(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
        if files["core.py"] == CORE:
            return outcome(["t::test_adult"])
        return outcome([], {"t::test_adult": failure})

    wb = FakeWorkbench({"core.py": BROKEN}, base=outcome([], {"t::test_adult": failure}), judge=judge)
    proposer = ChangeAwareProposer(ScriptedProposer([]), check="pytest", changes=changes())
    result = RepairLoop(None, proposer, wb, FakeClock(), config=LoopConfig()).run(
        RepairTask(kind="ci", test_command="pytest", failure_class="test"), Budget(), "0"
    )
    assert result.fixed, result.reason
    assert "+    return age > 18" in result.patch
    # the only commit is the culprit: its revert (here its one hunk) is offered under its name
    assert [c.label for c in proposer.revert_offers] == ["commit ccccccc (core: stricter adult check, Bob)"]
    assert (
        changes()
        .introduced_by(proposer.revert_offers[0].sha[:7])
        .endswith("(core: stricter adult check, Bob)")
    )


def test_the_wrapped_proposers_errors_and_budget_stop_reach_the_loop() -> None:
    inner = ScriptedProposer([])
    inner.last_errors = ["model overloaded"]  # type: ignore[attr-defined]
    inner.last_budget_stop = "usd"
    proposer = ChangeAwareProposer(inner, check="pytest")
    assert proposer.last_errors == ["model overloaded"] and proposer.last_budget_stop == "usd"
    assert ChangeAwareProposer(ScriptedProposer([]), check="pytest").last_errors == []


# --- culprit first (session 5) ---------------------------------------------------------------------

OLD, NEW = "b" * 40, "d" * 40
TWO = {
    OLD: "diff --git a/k.py b/k.py\n--- a/k.py\n+++ b/k.py\n@@ -1,3 +1,3 @@\n A = 1\n-B = 2\n+B = 20\n C = 3\n",
    NEW: "diff --git a/k.py b/k.py\n--- a/k.py\n+++ b/k.py\n@@ -1,3 +1,3 @@\n-A = 1\n+A = 10\n B = 20\n C = 3\n",
}
CUMULATIVE = "diff --git a/k.py b/k.py\n--- a/k.py\n+++ b/k.py\n@@ -1,3 +1,3 @@\n-A = 1\n-B = 2\n+A = 10\n+B = 20\n C = 3\n"


def two_commits() -> ChangeSet:
    log = f"{OLD}\x1fAda\x1fa@x\x1fB: bigger\x1e{NEW}\x1fBob\x1fb@x\x1ffeature: A\x1e"
    return changeset_from_git("a" * 40, NEW, log=log, diff=CUMULATIVE, commit_diffs=TWO)


def test_the_culprit_found_first_is_reverted_first_and_keeps_the_others_lines() -> None:
    cs = two_commits()
    assert [c.sha for c in cs.commits] == [OLD, NEW]
    failure = Failure("t::test_b", "AssertionError", path="tests/t.py", line=3)

    def judge(files: Mapping[str, str], select: Sequence[str] | None) -> TestOutcome:
        if "B = 2\n" in files["k.py"]:
            return outcome(["t::test_b"])
        return outcome([], {"t::test_b": failure})

    asked: list[tuple[str, ...]] = []

    def find(targets: tuple[str, ...]) -> str | None:
        asked.append(targets)
        return OLD

    wb = FakeWorkbench(
        {"k.py": "A = 10\nB = 20\nC = 3\n"}, base=outcome([], {"t::test_b": failure}), judge=judge
    )
    proposer = ChangeAwareProposer(ScriptedProposer([]), check="pytest", changes=cs, find_culprit=find)
    result = RepairLoop(None, proposer, wb, FakeClock(), config=LoopConfig()).run(
        RepairTask(kind="ci", test_command="pytest", failure_class="test"), Budget(), "0"
    )
    assert asked == [("t::test_b",)] and proposer.culprit == OLD
    assert proposer.revert_offers[0].label == "commit bbbbbbb (B: bigger, Ada)"
    assert result.fixed, result.reason
    assert "-B = 20\n+B = 2\n" in result.patch and "-A = 10" not in result.patch


def test_no_bisection_for_one_commit_or_when_the_autofix_fixed_the_check() -> None:
    asked: list[tuple[str, ...]] = []

    def find(targets: tuple[str, ...]) -> str | None:
        asked.append(targets)
        return None

    failure = Failure("t::test_adult", "AssertionError", frames=(Frame("core.py", 2, "is_adult"),))
    wb = FakeWorkbench({"core.py": BROKEN}, base=outcome([], {"t::test_adult": failure}))
    proposer = ChangeAwareProposer(ScriptedProposer([]), check="pytest", changes=changes(), find_culprit=find)
    RepairLoop(None, proposer, wb, FakeClock(), config=LoopConfig()).run(
        RepairTask(kind="ci", test_command="pytest", failure_class="test"), Budget(), "0"
    )
    assert asked == []  # one commit: it is the culprit

    files = {"k.py": "A = 10\nB = 20  \nC = 3\n"}
    bench = FakeCommandBench(files, {"black": black})
    wb = FakeWorkbench(dict(files), base=outcome(errors=[CHECK_ID]), judge=lint_judge)
    proposer = ChangeAwareProposer(
        ScriptedProposer([]), check=CHECK, bench=bench, changes=two_commits(), find_culprit=find
    )
    result = RepairLoop(None, proposer, wb, FakeClock(), config=LoopConfig()).run(
        RepairTask(kind="ci", test_command=CHECK, failure_class="lint"), Budget(), "0"
    )
    assert result.fixed and proposer.autofix_result is not None and proposer.autofix_result.fixed
    assert asked == []  # the autofix fixed it: no runs spent on a bisection
