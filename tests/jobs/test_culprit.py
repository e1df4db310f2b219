"""Culprit finding, the revert fallback and the run accounting of change-aware repair (#14), on a
local git history with the scripted pytest runner; the worker's change signal with the fake
gateway; the plan's ``on_no_fix`` rule."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from bot.settings import Settings
from jobs.config import ArcsConfig
from jobs.culprit import changes_line, judge
from jobs.engine import EngineConfig, EnginePorts, execute, run
from jobs.fakes import FakeGitHubGateway
from jobs.green import change_signal
from jobs.history import read_changeset, reverted, tree_at
from jobs.plan import PlanDefaults, RepairPlan, RepairRequest, for_cli, on_no_fix_for, plan_for
from jobs.ports import WorkflowRunRef
from jobs.repair.budget import Budget
from jobs.repair.flaky import TestRun
from jobs.repair.report import RepairReport
from jobs.repair.workbench import TestOutcome
from runners.base import Execution
from runners.config import RepoConfig
from runners.fake import FakeCall, FakeRunner, fake_execution
from tests.bot.test_cli_fix import FIXTURES, RULES, TARGET, scripted_pytest

BROKEN = "    return age > ADULT_AGE\n"
FIXED = "    return age >= ADULT_AGE\n"
CHILD = "tests/test_rules.py::test_child_is_not_adult"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=Ada", "-c", "user.email=ada@example.com", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def commit(repo: Path, files: dict[str, str], title: str) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", title)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, list[str]]:
    """green c0, then c1 (docs), c2 (breaks the 18-year-old test), c3 (docs): HEAD is c3."""
    repo = tmp_path / "ages"
    shutil.copytree(FIXTURES / "boundary", repo)
    rules = (repo / RULES).read_text().replace(BROKEN, FIXED)
    git(repo, "init", "-q")
    c0 = commit(repo, {RULES: rules}, "green")
    c1 = commit(repo, {"notes.md": "a\n"}, "docs: a note")
    c2 = commit(repo, {RULES: rules.replace(FIXED, BROKEN)}, "rules: adults are older")
    c3 = commit(repo, {"notes.md": "b\n"}, "docs: another note")
    return repo, [c0, c1, c2, c3]


def plan_of(repo: Path, tmp_path: Path, base: str, **changes: object) -> RepairPlan:
    plan = for_cli(
        repo,
        repo_config=RepoConfig(),
        test_command="pytest -q",
        tier="0",
        use_index=False,
        trace_out=tmp_path / "trace.json",
        changes=read_changeset(repo, base, "HEAD"),
        ci_tests=(TARGET,),
        budget=Budget(iterations=0),  # no forward fix: the loop stops before its first round
    )
    return dataclasses.replace(plan, **changes)  # type: ignore[arg-type]


def ports(settings: Settings, runner: FakeRunner) -> EnginePorts:
    return EnginePorts(config=EngineConfig.of(settings), runner=runner)


# --- git trees ------------------------------------------------------------------------------------


def test_tree_at_an_earlier_commit_and_a_revert(history: tuple[Path, list[str]]) -> None:
    repo, (c0, c1, c2, _c3) = history
    at_c1 = tree_at(repo, c1)
    assert at_c1 is not None and set(at_c1) == {RULES, "notes.md"}
    assert FIXED in str(at_c1[RULES]) and at_c1["notes.md"] == "a\n"
    assert tree_at(repo, c0) == {RULES: at_c1[RULES], "notes.md": None}  # absent at the green commit
    undo = reverted(repo, c2)
    assert undo is not None and set(undo) == {RULES} and FIXED in str(undo[RULES])
    assert reverted(repo, c1) is None  # c3 changed the same line since: no clean revert
    assert git(repo, "status", "--porcelain") == ""  # work tree and index untouched


def test_a_three_way_revert_when_a_later_commit_edited_the_context(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, {"x.txt": "a\nb\nc\nd\ne\nf\ng\n"}, "green")
    culprit = commit(repo, {"x.txt": "a\nb\nc\nd\nE\nf\ng\n"}, "culprit")
    commit(repo, {"x.txt": "a\nB\nc\nd\nE\nf\ng\n"}, "later: b is in the culprit's context")
    assert reverted(repo, culprit) is None  # the context changed: the plain revert does not apply
    assert reverted(repo, culprit, three_way=True) == {"x.txt": "a\nB\nc\nd\ne\nf\ng\n"}
    assert git(repo, "status", "--porcelain") == ""


# --- the engine: culprit, revert fallback, counted runs -------------------------------------------


def test_the_revert_fallback_verifies_the_culprits_revert(
    history: tuple[Path, list[str]], tmp_path: Path, settings: Settings
) -> None:
    repo, (c0, _c1, c2, c3) = history
    runner = FakeRunner().on("pytest", scripted_pytest)
    report = run(plan_of(repo, tmp_path, c0, on_no_fix="revert"), ports(settings, runner))
    assert not report.fixed and report.verdict == "budget_exhausted"
    assert report.culprit is not None and (report.culprit.sha, report.culprit.found_by) == (c2, "bisect")
    assert report.changes == f"{c0[:7]}..{c3[:7]}, 3 commits, 2 files"
    revert = report.revert
    assert revert is not None and revert.sha == c2 and set(revert.files) == {RULES}
    assert "-    return age > ADULT_AGE\n+    return age >= ADULT_AGE" in revert.patch
    assert revert.verification is not None and revert.verification.passed_verification
    assert revert.verification.command == "pytest -q"  # the exact command, not a narrowed one
    assert report.on_no_fix == "revert" and report.revert_skipped == ""
    # Two bisection probes (targets only) and one verification: counted, within the budget.
    bisect_runs = [c.command for c in runner.calls if TARGET in c.command]
    assert len(bisect_runs) >= 2 and report.spend.executions <= report.budget.executions  # type: ignore[union-attr]
    assert RepairReport.from_json(report.to_json()).revert == revert
    assert git(repo, "status", "--porcelain") == ""


def test_no_revert_under_on_no_fix_report(
    history: tuple[Path, list[str]], tmp_path: Path, settings: Settings
) -> None:
    repo, (c0, _c1, c2, _c3) = history
    report = run(plan_of(repo, tmp_path, c0), ports(settings, FakeRunner().on("pytest", scripted_pytest)))
    assert report.culprit is not None and report.culprit.sha == c2
    assert report.revert is None and report.on_no_fix == "report" and report.revert_skipped == ""


def test_a_revert_that_fails_the_final_verification_is_not_offered(
    history: tuple[Path, list[str]], tmp_path: Path, settings: Settings
) -> None:
    repo, (c0, _c1, c2, _c3) = history
    rules = (repo / RULES).read_text()
    # A fourth commit breaks a second test: undoing c2 alone leaves the build red.
    commit(
        repo,
        {RULES: rules.replace('"""Adults may vote."""', '"""Adults may vote."""\n    return True')},
        "oops",
    )
    report = run(
        plan_of(repo, tmp_path, c0, on_no_fix="revert"),
        ports(settings, FakeRunner().on("pytest", scripted_pytest)),
    )
    assert report.culprit is not None and report.culprit.sha == c2
    assert report.revert is None
    assert report.revert_skipped.startswith("the revert did not pass `pytest -q` (exit 1)")


@pytest.mark.parametrize("executions", [Budget().executions, 8])
def test_autofix_runs_count_in_the_budgets_executions(
    executions: int, tmp_path: Path, settings: Settings
) -> None:
    repo = tmp_path / "fmt"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, {"geo.py": "def area( w,h ):\n  return w*h\n"}, "ugly")
    clean = "def area(w, h):\n    return w * h\n"

    def check(call: FakeCall) -> Execution:
        ok = (call.workspace / "geo.py").read_text() == clean
        return fake_execution(exit_code=0 if ok else 1, stdout="" if ok else "Would reformat: geo.py\n")

    def fix(call: FakeCall) -> Execution:
        (call.workspace / "geo.py").write_text(clean)
        return fake_execution(exit_code=0, stdout="1 file reformatted\n")

    runner = FakeRunner().on("ruff format --check", check).on("ruff format", fix)
    plan = for_cli(
        repo,
        repo_config=RepoConfig(),
        test_command="ruff format --check .",
        tier="0",
        use_index=False,
        trace_out=tmp_path / "trace.json",
        budget=Budget(executions=executions),
    )
    result = execute(plan, ports(settings, runner)).result
    assert result.fixed
    fix_runs = [c for c in runner.commands() if c.startswith("ruff format") and "--check" not in c]
    assert fix_runs  # autofix ran the tool's fix mode in the sandbox
    # Every sandboxed run is counted except the final verification (as the loop counts them).
    assert result.spend.executions == len(runner.calls) - len(result.trace.verifications)
    assert result.trace.bound_held and result.trace.budget == plan.budget
    assert result.spend.executions <= executions


def test_judge() -> None:
    t = (TARGET,)
    assert judge(TestOutcome(failed=t, exit_code=1), t) == "fail"
    assert judge(TestOutcome(passed=t), t) == "pass"
    assert judge(TestOutcome(timed_out=True, exit_code=-9), t) == "skip"
    assert judge(TestOutcome(errors=("collection",), exit_code=2), t) == "skip"
    assert judge(TestOutcome(exit_code=1, environment="setup failed"), t) == "skip"
    assert judge(TestOutcome(exit_code=1), ()) == "fail" and judge(TestOutcome(), ()) == "pass"


# --- the worker's change signal (fake gateway, local history) -------------------------------------


def test_the_change_signal_from_the_last_green_run(history: tuple[Path, list[str]]) -> None:
    repo, (c0, _c1, c2, c3) = history
    gh = FakeGitHubGateway()
    gh.green_runs[(7, "main")] = WorkflowRunRef(41, c0, "main")
    signal = change_signal(gh, "o/r", repo, head_sha=c3, head_branch="main", workflow_id=7)
    assert signal.changes is not None and [c.sha for c in signal.changes.commits][1] == c2
    assert signal.note == f"change signal from the last green run 41 of workflow 7 on main at {c0[:7]}"
    assert changes_line(signal.changes) == f"{c0[:7]}..{c3[:7]}, 3 commits, 2 files"
    (fetched,) = gh.calls_to("fetch_history")
    assert fetched["shas"] == (c3, c0) and fetched["depth"] >= 50


def test_the_change_signal_of_a_pull_request_is_its_merge_base(history: tuple[Path, list[str]]) -> None:
    repo, (_c0, c1, _c2, c3) = history
    gh = FakeGitHubGateway()
    gh.heads["main"] = c1
    signal = change_signal(gh, "o/r", repo, head_sha=c3, head_branch="feature", workflow_id=7, pull_request=5)
    assert signal.changes is not None and signal.changes.base == c1 and len(signal.changes.commits) == 2
    assert "merge base" in signal.note and gh.calls_to("last_successful_run") == []


@pytest.mark.parametrize("case", ["none", "same_commit", "error", "not_an_ancestor", "no_git"])
def test_no_change_signal_is_never_fatal(case: str, history: tuple[Path, list[str]], tmp_path: Path) -> None:
    repo, (c0, _c1, _c2, c3) = history
    gh = FakeGitHubGateway()
    workdir = repo
    if case == "same_commit":
        gh.green_runs[(7, "main")] = WorkflowRunRef(1, c3)
    elif case == "error":
        gh.fail["last_successful_run"] = PermissionError("403: Resource not accessible by integration")
    elif case == "not_an_ancestor":
        git(repo, "checkout", "-q", "-b", "side", c0)
        side = commit(repo, {"side.md": "x\n"}, "side")
        git(repo, "checkout", "-q", c3)
        gh.green_runs[(7, "main")] = WorkflowRunRef(1, side)
    elif case == "no_git":
        gh.green_runs[(7, "main")] = WorkflowRunRef(1, c0)
        workdir = tmp_path / "plain"
        workdir.mkdir()
    signal = change_signal(gh, "o/r", workdir, head_sha=c3, head_branch="main", workflow_id=7)
    assert signal.changes is None and signal.note.startswith("no change signal: ")
    expected = {
        "none": "no successful run",
        "same_commit": "at this commit",
        "error": "403",
        "not_an_ancestor": "not an ancestor",
        "no_git": "GitChangeError",
    }[case]
    assert expected in signal.note


# --- the plan ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wanted", "default_branch", "kind", "expected"),
    [
        ("revert", True, "ci", "revert"),
        ("revert", False, "ci", "report"),
        ("revert", True, "issue", "report"),
        ("report", True, "ci", "report"),
    ],
)
def test_on_no_fix_is_revert_only_on_the_default_branch(
    wanted: str, default_branch: bool, kind: str, expected: str, tmp_path: Path
) -> None:
    request = RepairRequest(
        kind=kind,  # type: ignore[arg-type]
        repo="o/r",
        workdir=tmp_path,
        head_sha="a" * 40,
        attempt_id=1,
        trace_dir=tmp_path,
        on_default_branch=default_branch,
    )
    config = ArcsConfig(on_no_fix=wanted)  # type: ignore[arg-type]
    assert on_no_fix_for(request, config) == expected
    plan = plan_for(request, config, PlanDefaults())
    assert plan.on_no_fix == expected
    assert bool(plan.revert_skipped) == (wanted == "revert" and expected == "report" and kind == "ci")


# --- culprit first: the bisection before tier 0's reverts (session 5) ------------------------------

DOC = '    """True for people aged ADULT_AGE or more."""\n'
FEATURE_DOC = '    """True for people aged ADULT_AGE or more (the age of majority)."""\n'


def test_the_culprit_is_bisected_before_the_reverts_and_its_own_revert_wins(
    history: tuple[Path, list[str]], tmp_path: Path, settings: Settings
) -> None:
    repo, (c0, _c1, c2, _c3) = history
    # a later feature rewrites the culprit's context: the cumulative hunk mixes both changes, and
    # the culprit's own hunk no longer matches the head tree as it is
    rules = (repo / RULES).read_text()
    c4 = commit(repo, {RULES: rules.replace(DOC, FEATURE_DOC)}, "docs: the age of majority")
    runner = FakeRunner().on("pytest", scripted_pytest)
    plan = plan_of(repo, tmp_path, c0, budget=Budget(executions=10))

    done = execute(plan, ports(settings, runner))
    result, change = done.result, done.change

    assert result.fixed, result.reason
    assert result.explanation.startswith(f"Revert commit {c2[:7]}")  # the culprit's, not a hunk
    assert "+    return age >= ADULT_AGE" in result.patch
    assert "-" + FEATURE_DOC.rstrip("\n") not in result.patch  # the feature is kept
    trace = json.loads(done.trace_path.read_text())
    record = trace["repo"]["changes"]
    assert record["culprit"]["sha"] == c2 and record["culprit"]["found_by"] == "bisect"
    probes = record["bisect"]["probes"]
    assert change.culprit is not None and change.culprit.runs == len(probes) == 2  # ceil(log2 4)
    # bisected once (before the loop): every probe is a targets-only run, before the candidate's
    targeted = [c for c in runner.calls if TARGET in c.command]
    assert len(targeted) >= len(probes) and c4 != c2
    assert result.spend.executions == len(runner.calls) - len(result.trace.verifications)
    assert result.spend.executions <= plan.budget.executions


def test_a_run_with_an_early_bisection_replays_and_an_old_traces_loop_budget_is_checked(
    history: tuple[Path, list[str]], tmp_path: Path, settings: Settings
) -> None:
    from jobs.replay import replay

    repo, (c0, _c1, _c2, _c3) = history
    plan = plan_of(repo, tmp_path, c0, budget=Budget(executions=10))
    done = execute(plan, ports(settings, FakeRunner().on("pytest", scripted_pytest)))
    data = json.loads(done.trace_path.read_text())
    assert data["budget"]["executions"] == 10 and "loop_budget" not in data["repo"]
    # One wiring: replay rebuilds the same reserve (2 bisection runs) and runs the early
    # bisection in its own workbench, as the engine did.
    again = replay(settings, done.trace_path, runner=FakeRunner().on("pytest", scripted_pytest))
    assert again.divergence is None, again.divergence
    # A trace recorded before #25 kept the loop's own budget; replay checks it against the reserve.
    for executions, diverges in ((8, False), (3, True)):
        old = tmp_path / f"old-{executions}.json"
        data["repo"]["loop_budget"] = {**data["budget"], "executions": executions}
        old.write_text(json.dumps(data))
        got = replay(settings, old, runner=FakeRunner().on("pytest", scripted_pytest))
        assert (got.divergence is not None) == diverges, got.divergence
        if diverges:
            assert got.divergence is not None and got.divergence.where == "budget"


def test_no_early_bisection_when_the_budget_would_leave_the_loop_too_little(
    history: tuple[Path, list[str]], tmp_path: Path, settings: Settings
) -> None:
    repo, (c0, _c1, _c2, _c3) = history
    runner = FakeRunner().on("pytest", scripted_pytest)
    plan = plan_of(repo, tmp_path, c0, budget=Budget(executions=5))  # 5 - 2 < MIN_LOOP_RUNS
    done = execute(plan, ports(settings, runner))
    assert done.result.fixed  # the undo of the culprit's hunk, ranked by score as before
    assert done.result.explanation.startswith("Undo hunk ages/rules.py")
    # no bisection before the loop; after it, none either here (the loop spent the rest)
    record = json.loads(done.trace_path.read_text())["repo"]["changes"]
    assert "bisect" not in record and done.change.culprit is None
    assert "culprit: no bisection (no test runs or time left in the budget)" in done.change.notices
    assert done.result.spend.executions == plan.budget.executions


def test_a_probe_selects_only_the_targets_that_exist_at_the_commit() -> None:
    from jobs.culprit import targets_at

    tree = {"tests/test_a.py": "def test_old():\n    pass\n", "tests/test_b.py": None}
    targets = (
        "tests/test_a.py::test_old[1-2]",
        "tests/test_a.py::test_new",  # added by a later commit
        "tests/test_b.py::test_x",  # a file added later
        "<run>",
    )
    assert targets_at(targets, tree.get) == ("tests/test_a.py::test_old[1-2]", "<run>")
    assert targets_at(targets[1:3], tree.get) == ()  # none left: the whole command runs


# --- flake-aware culprit bisect (#26) -------------------------------------------------------------


class _History:
    """A test history port in memory: the target failed and passed at one commit (flaky)."""

    def __init__(self, runs: Sequence[TestRun]) -> None:
        self.runs = list(runs)

    def record_test_runs(self, repo: str, runs: Sequence[TestRun], *, attempt_id: int | None = None) -> int:
        return 0

    def test_runs(self, repo: str, test_ids: Sequence[str], *, limit: int = 200) -> list[TestRun]:
        return list(self.runs)


def _flaky_pytest(every: int) -> object:
    """The scripted pytest, but a passing run of the target fails every ``every``-th time."""
    from runners.commands import JUNIT_PATH
    from tests.bot.test_cli_fix import junit

    seen = {"passes": 0}

    def run(call: FakeCall) -> Execution:
        done = scripted_pytest(call)
        if done.exit_code == 0 and TARGET in call.command:
            seen["passes"] += 1
            if seen["passes"] % every == 1:  # the first pass of each cycle lies
                return fake_execution(exit_code=1, artifacts={JUNIT_PATH: junit({TARGET: (4, False)})})
        return done

    return run


def test_a_flaky_target_gets_a_flake_aware_bisect_with_its_probability(
    history: tuple[Path, list[str]], tmp_path: Path, settings: Settings
) -> None:
    from jobs.render_change import culprit_line

    repo, (c0, _c1, c2, _c3) = history
    rows = [TestRun(TARGET, "f" * 40, "ci:CI", "ci", i % 3 == 0, run_key=f"ci:{i}") for i in range(9)]
    store = _History(rows)
    plan = plan_of(repo, tmp_path, c0, budget=Budget(iterations=0, executions=40))
    runner = FakeRunner().on("pytest", _flaky_pytest(3))  # type: ignore[arg-type]
    ports = EnginePorts(config=EngineConfig.of(settings), runner=runner, history=store)
    done = execute(plan, ports)

    culprit = done.change.culprit
    assert culprit is not None and culprit.sha == c2, done.change.notices
    assert culprit.probability is not None and culprit.probability >= 0.95
    assert culprit.runs > 2  # a one-run probe per step would have spent ceil(log2 4) = 2
    record = json.loads(done.trace_path.read_text())["repo"]["changes"]
    assert record["culprit"]["probability"] == culprit.probability
    line = culprit_line(culprit)
    assert f"flake-aware bisect in {culprit.runs} runs (probability" in line
    report = run(plan, ports)
    assert report.culprit is not None and report.culprit.probability is not None
    assert RepairReport.from_json(report.to_json()).culprit == report.culprit


def test_without_a_history_the_bisect_probes_once_per_step(
    history: tuple[Path, list[str]], tmp_path: Path, settings: Settings
) -> None:
    repo, (c0, _c1, c2, _c3) = history
    plan = plan_of(repo, tmp_path, c0, budget=Budget(iterations=0, executions=40))
    done = execute(plan, ports(settings, FakeRunner().on("pytest", scripted_pytest)))
    culprit = done.change.culprit
    assert culprit is not None and culprit.sha == c2 and culprit.probability is None and culprit.runs == 2
