"""Flakiness triage, test execution (run_tests) and the FakeRunner port double."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from runners.base import Execution, Runner
from runners.commands import JUNIT_PATH, ResolvedCommand
from runners.execute import default_workspace, go_packages, list_repo_files, run_in_workspace, run_tests
from runners.fake import FakeCall, FakeRunner, fake_execution
from runners.triage import triage
from tests.conftest import write_tree

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

PYTEST = ResolvedCommand(command="python -m pytest -q", source="convention", framework="pytest")
A = "tests/test_a.py::test_a"
B = "tests/test_a.py::test_b"


def junit(**outcomes: str) -> str:
    cases = []
    for name, outcome in outcomes.items():
        body = (
            '<failure message="assert False">tests/test_a.py:3: AssertionError</failure>'
            if outcome == "failed"
            else ""
        )
        cases.append(
            f'<testcase classname="tests.test_a" name="{name}" file="tests/test_a.py" line="1">{body}</testcase>'
        )
    return (
        f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{"".join(cases)}</testsuite></testsuites>'
    )


def pytest_run(**outcomes: str) -> Execution:
    failed = any(o == "failed" for o in outcomes.values())
    return fake_execution(exit_code=1 if failed else 0, artifacts={JUNIT_PATH: junit(**outcomes)})


@pytest.fixture
def src(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    write_tree(root, {"tests/test_a.py": "def test_a():\n    assert False\n", "pkg/mod.py": "X = 1\n"})
    return root


class RecordingWorkspaces:
    """A workspace factory that makes real private copies and remembers where."""

    def __init__(self, root: Path) -> None:
        self.made: list[Path] = []
        self._inner = default_workspace(root)

    def __call__(self, src: Path) -> AbstractContextManager[Path]:
        @contextmanager
        def cm() -> Iterator[Path]:
            with self._inner(src) as ws:
                self.made.append(ws)
                yield ws

        return cm()


# --------------------------------------------------------------------------- FakeRunner


def test_fake_runner_is_a_runner_and_scripts_in_order(tmp_path: Path) -> None:
    runner = FakeRunner().on("pytest", fake_execution(exit_code=1), fake_execution(exit_code=0))
    assert isinstance(runner, Runner)
    codes = [runner.run(tmp_path, "python -m pytest", env={"A": "1"}).exit_code for _ in range(3)]
    assert codes == [1, 0, 0]  # the last response repeats
    assert runner.calls[0].env == {"A": "1"}
    assert runner.run(tmp_path, "python -m pytest").command == "python -m pytest"
    with pytest.raises(LookupError, match="no scripted result"):
        runner.run(tmp_path, "make")


def test_fake_runner_callable_response_and_regex(tmp_path: Path) -> None:
    def respond(call: FakeCall) -> Execution:
        return fake_execution(stdout=str(sorted(p.name for p in call.workspace.iterdir())))

    runner = FakeRunner(default=fake_execution(exit_code=7)).on(r"^go test", respond, regex=True)
    (tmp_path / "go.mod").write_text("module m\n")
    assert runner.run(tmp_path, "go test ./...").stdout == "['go.mod']"
    assert runner.run(tmp_path, "cargo test").exit_code == 7
    assert runner.commands() == ["go test ./...", "cargo test"]


# --------------------------------------------------------------------------- run_tests


def test_run_tests_in_a_private_copy_with_junit(src: Path, tmp_path: Path) -> None:
    seen: list[Path] = []

    def respond(call: FakeCall) -> Execution:
        seen.append(call.workspace)
        (call.workspace / "scribble.txt").write_text("the sandbox may write here")
        return pytest_run(test_a="failed", test_b="passed")

    runner = FakeRunner().on("pytest", respond)
    workspaces = RecordingWorkspaces(tmp_path / "ws")
    run = run_tests(
        runner, src, PYTEST, timeout_s=30, memory_mb=512, env={"EXTRA": "1"}, workspace=workspaces
    )
    call = runner.calls[0]
    assert call.workspace == workspaces.made[0] != src
    assert (call.timeout_s, call.memory_mb, call.collect, call.network) == (30, 512, (JUNIT_PATH,), False)
    assert call.env["CI"] == "true" and call.env["EXTRA"] == "1"
    assert "--junitxml" in call.command
    assert not (src / "scribble.txt").exists()  # the repository itself is never written
    assert not workspaces.made[0].exists()  # and the copy is gone
    assert run.command == "python -m pytest -q" and run.source == "junit"
    assert run.failed_ids == [A] and run.passed_ids == [B]
    assert run.failures[0].file == "tests/test_a.py"


def test_setup_failure_is_reported_not_hidden(src: Path, tmp_path: Path) -> None:
    runner = FakeRunner().on("pip install", fake_execution(exit_code=1, stderr="ERROR: ResolutionImpossible"))
    cmd = ResolvedCommand(command="pytest", source="config", framework="pytest", setup="pip install -e .")
    run = run_tests(runner, src, cmd, workspace=default_workspace(tmp_path / "ws"))
    # The user's setup runs last, after the workspace environment is made (#23).
    assert len(runner.commands()) == 1 and runner.commands()[0].endswith("\npip install -e .")
    assert runner.calls[0].network is True  # setup may install dependencies; tests never get the network
    assert [e.id for e in run.errors] == ["<setup>"]
    assert "ResolutionImpossible" in run.errors[0].message
    assert not run.ok


def test_sandbox_paths_are_made_repository_relative(src: Path) -> None:
    text = (FIXTURES / "outputs" / "pytest_native.txt").read_text(encoding="utf-8")
    text = text.replace("/home/runner/work/calc/calc", "/workspace")
    write_tree(src, {"src/calc/__init__.py": "", "tests/test_calc.py": ""})
    runner = FakeRunner().on("pytest", fake_execution(exit_code=1, stdout=text))
    cmd = ResolvedCommand(command="pytest", source="flag", framework="pytest", junit=False)
    run = run_in_workspace(runner, src, cmd)
    divide = next(f for f in run.failures if f.id.endswith("test_divide"))
    assert (divide.file, divide.line) == ("src/calc/__init__.py", 13)
    assert all(not f.file.startswith("/") for f in divide.frames)


def test_go_packages_map_import_paths_to_folders(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "go.mod": "module example.com/calc\n",
            "calc.go": "",
            "internal/mathx/mathx.go": "",
            "tools/go.mod": "module example.com/tools\n",
            "tools/gen/main.go": "",
            "node_modules/x/y.go": "",
        },
    )
    files = list_repo_files(tmp_path)
    assert "node_modules/x/y.go" not in files
    assert go_packages(tmp_path, files) == {
        "example.com/calc": "",
        "example.com/calc/internal/mathx": "internal/mathx",
        "example.com/tools/gen": "tools/gen",
    }


# --------------------------------------------------------------------------- triage


def test_reproducible_failure(src: Path, tmp_path: Path) -> None:
    runner = FakeRunner().on("pytest", pytest_run(test_a="failed"))
    workspaces = RecordingWorkspaces(tmp_path / "ws")
    verdict = triage(runner, src, PYTEST, [A], workspace=workspaces)
    assert verdict.verdict == "reproducible" and verdict.repairable
    assert verdict.reproducible == (A,) and verdict.outcomes[A] == ("failed", "failed", "failed")
    assert len(runner.calls) == 3
    # Each run in its own fresh copy.
    assert len(set(workspaces.made)) == 3
    # Only the failing test was selected.
    assert verdict.selected
    assert all(A in c.command and "tests/ " not in c.command for c in runner.calls)


def test_flaky_failure_is_not_repaired(src: Path, tmp_path: Path) -> None:
    runner = FakeRunner().on(
        "pytest", pytest_run(test_a="failed"), pytest_run(test_a="passed"), pytest_run(test_a="failed")
    )
    verdict = triage(runner, src, PYTEST, [A], workspace=default_workspace(tmp_path / "ws"))
    assert verdict.verdict == "flaky" and not verdict.repairable
    assert verdict.flaky == (A,)
    assert verdict.outcomes[A] == ("failed", "passed", "failed")
    assert "flaky" in verdict.reason


def test_failure_that_does_not_reproduce(src: Path, tmp_path: Path) -> None:
    runner = FakeRunner().on("pytest", pytest_run(test_a="passed"))
    verdict = triage(runner, src, PYTEST, [A], runs=2, workspace=default_workspace(tmp_path / "ws"))
    assert verdict.verdict == "passes" and verdict.passing == (A,) and verdict.runs == 2
    assert len(runner.calls) == 2


def test_mixed_failures_repair_only_the_reproducible_ones(src: Path, tmp_path: Path) -> None:
    runner = FakeRunner().on(
        "pytest",
        pytest_run(test_a="failed", test_b="failed"),
        pytest_run(test_a="failed", test_b="passed"),
    )
    verdict = triage(runner, src, PYTEST, [A, B, A], workspace=default_workspace(tmp_path / "ws"))
    assert verdict.verdict == "reproducible"
    assert verdict.reproducible == (A,) and verdict.flaky == (B,)
    assert set(verdict.to_dict()) >= {"verdict", "reproducible", "flaky", "passing", "outcomes"}


def test_a_crashing_run_counts_as_a_failure(src: Path, tmp_path: Path) -> None:
    runner = FakeRunner().on(
        "pytest",
        pytest_run(test_a="failed"),
        fake_execution(exit_code=-9, killed_by="timeout", stdout="tests/test_a.py "),
        pytest_run(test_a="failed"),
    )
    verdict = triage(runner, src, PYTEST, [A], workspace=default_workspace(tmp_path / "ws"))
    assert verdict.verdict == "reproducible"


def test_selection_that_matches_nothing_falls_back_to_the_full_command(src: Path, tmp_path: Path) -> None:
    not_found = fake_execution(exit_code=4, stderr="ERROR: not found: tests/test_a.py::test_a\n")
    runner = (
        FakeRunner()
        .on("pytest -q tests/test_a.py::test_a", not_found)
        .on("pytest", pytest_run(test_a="failed"))
    )
    verdict = triage(runner, src, PYTEST, [A], runs=2, workspace=default_workspace(tmp_path / "ws"))
    assert verdict.verdict == "reproducible"
    assert not verdict.selected
    assert len(runner.calls) == 3  # the selected attempt, then two full runs


def test_frameworks_without_selection_run_the_whole_command(src: Path, tmp_path: Path) -> None:
    make = ResolvedCommand(command="make test", source="config")
    runner = FakeRunner().on("make test", fake_execution(exit_code=0))
    verdict = triage(runner, src, make, ["x"], runs=1, workspace=default_workspace(tmp_path / "ws"))
    assert runner.commands() == ["make test"]
    assert verdict.verdict == "passes" and not verdict.selected


def test_triage_arguments(src: Path) -> None:
    runner = FakeRunner()
    assert triage(runner, src, PYTEST, []).verdict == "passes"
    assert runner.calls == []
    with pytest.raises(ValueError):
        triage(runner, src, PYTEST, [A], runs=0)


def test_triage_with_go_selects_by_run_pattern(tmp_path: Path) -> None:
    src = tmp_path / "go"
    write_tree(src, {"go.mod": "module example.com/calc\n", "calc_test.go": ""})
    output = (FIXTURES / "outputs" / "go_test.json").read_text(encoding="utf-8")
    runner = FakeRunner().on("go test", fake_execution(exit_code=1, stdout=output))
    cmd = ResolvedCommand(command="go test ./...", source="convention", framework="go")
    verdict = triage(
        runner, src, cmd, ["example.com/calc::TestAdd"], runs=1, workspace=default_workspace(tmp_path / "ws")
    )
    assert verdict.verdict == "reproducible"
    assert runner.calls[0].command == "go test -json -count=1 -run '^(TestAdd)$' example.com/calc"
