"""Test-command resolution (flag > config > CI step > conventions), report adaptation and test selection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.errors import UsageError
from runners.commands import JUNIT_PATH, ResolvedCommand, resolve_test_command
from runners.config import RepoConfig
from runners.execute import run_in_workspace
from runners.logs import FailedStep
from runners.results import parse_junit_xml, parse_text
from runners.sandbox import LocalSandbox, SandboxUnavailable
from tests.conftest import write_tree

WORKFLOW = """\
name: CI
on: [push, pull_request]
defaults:
  run:
    shell: bash
jobs:
  test:
    runs-on: ubuntu-latest
    defaults:
      run:
        working-directory: backend
    steps:
      - uses: actions/checkout@v4
      - name: Install
        run: pip install -e '.[dev]'
      - name: Tests
        run: python -m pytest -q --maxfail=${{ matrix.maxfail }}
      - name: Frontend
        working-directory: web
        run: |
          npm ci
          npm test
"""


def repo_with(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    root.mkdir(parents=True)
    write_tree(root, files)
    return root


# --------------------------------------------------------------------------- precedence


def test_flag_beats_config_beats_workflow_beats_convention(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"go.mod": "module example.com/x\n", ".github/workflows/ci.yml": WORKFLOW})
    cfg = RepoConfig(test="make test", setup="make deps")
    step = FailedStep(title="go vet ./...", command="go vet ./...")
    flag = resolve_test_command(repo, explicit="pytest -x", config=cfg, failed_step=step)
    assert (flag.command, flag.source, flag.setup) == ("pytest -x", "flag", "make deps")
    assert resolve_test_command(repo, config=cfg, failed_step=step).source == "config"
    wf = resolve_test_command(repo, failed_step=step)
    assert (wf.command, wf.source) == ("go vet ./...", "workflow")
    conv = resolve_test_command(repo)
    assert (conv.command, conv.source, conv.framework) == ("go test ./...", "convention", "go")


def test_blank_flag_is_ignored(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"Cargo.toml": "[package]\nname='x'\n"})
    assert resolve_test_command(repo, explicit="  ").command == "cargo test"


def test_nothing_found_is_a_usage_error(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"README.md": "hi"})
    with pytest.raises(UsageError, match="no test command found"):
        resolve_test_command(repo)


# --------------------------------------------------------------------------- CI workflow


def test_workflow_step_gets_its_working_directory(tmp_path: Path) -> None:
    repo = repo_with(
        tmp_path, {".github/workflows/ci.yml": WORKFLOW, "backend/x.py": "", "web/package.json": "{}"}
    )
    # The log shows the script with ${{ }} already expanded.
    step = FailedStep(title="python -m pytest -q --maxfail=3", command="python -m pytest -q --maxfail=3")
    got = resolve_test_command(repo, failed_step=step)
    assert (got.command, got.workdir, got.framework) == (
        "python -m pytest -q --maxfail=3",
        "backend",
        "pytest",
    )
    assert got.shell.split("; ")[-1].startswith("cd backend && python -m pytest -q --maxfail=3 --junitxml=")
    multi = resolve_test_command(repo, failed_step="npm ci\nnpm test")
    assert (multi.workdir, multi.command) == ("web", "npm ci\nnpm test")
    assert multi.shell.startswith("cd web && set -e\nnpm ci\nnpm test")


def test_step_not_in_any_workflow_still_uses_the_log_command(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"go.mod": "module m\n"})
    got = resolve_test_command(repo, failed_step="go test -run TestX ./pkg/...")
    assert (got.command, got.source, got.workdir) == ("go test -run TestX ./pkg/...", "workflow", "")


def test_action_step_falls_back_to_conventions(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"go.mod": "module m\n"})
    step = FailedStep(
        title="golangci/golangci-lint-action@v4", command="golangci/golangci-lint-action@v4", uses=True
    )
    got = resolve_test_command(repo, failed_step=step)
    assert got.source == "convention"


def test_working_directory_that_does_not_exist_is_ignored(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {".github/workflows/ci.yml": WORKFLOW})
    got = resolve_test_command(repo, failed_step="python -m pytest -q --maxfail=1")
    assert got.workdir == ""


def test_broken_workflow_files_are_skipped(tmp_path: Path) -> None:
    repo = repo_with(
        tmp_path, {".github/workflows/bad.yml": "jobs: [\n", ".github/workflows/ok.yaml": "on: push\n"}
    )
    assert resolve_test_command(repo, failed_step="pytest").command == "pytest"


# --------------------------------------------------------------------------- conventions


@pytest.mark.parametrize(
    ("files", "command", "framework"),
    [
        ({"pyproject.toml": "[tool.pytest.ini_options]\n"}, "python -m pytest", "pytest"),
        ({"setup.cfg": "[tool:pytest]\n"}, "python -m pytest", "pytest"),
        ({"src/pkg/tests/test_core.py": ""}, "python -m pytest", "pytest"),
        ({"package.json": json.dumps({"scripts": {"test": "jest"}})}, "npm test", "jest"),
        (
            {"package.json": json.dumps({"scripts": {"test": "vitest"}}), "yarn.lock": ""},
            "yarn test",
            "vitest",
        ),
        (
            {
                "package.json": json.dumps(
                    {"scripts": {"test": "run-tests"}, "devDependencies": {"vitest": "1"}}
                )
            },
            "npm test",
            "vitest",
        ),
        (
            {"package.json": json.dumps({"scripts": {"test": "mocha"}}), "pnpm-lock.yaml": ""},
            "pnpm test",
            "mocha",
        ),
        ({"go.mod": "module m\n"}, "go test ./...", "go"),
        ({"Cargo.toml": "[package]\n"}, "cargo test", "cargo"),
        ({"pom.xml": "<project/>"}, "mvn -q test", "maven"),
        ({"pom.xml": "<project/>", "mvnw": "#!/bin/sh"}, "./mvnw -q test", "maven"),
        ({"build.gradle.kts": ""}, "gradle test", "gradle"),
    ],
)
def test_conventions(tmp_path: Path, files: dict[str, str], command: str, framework: str | None) -> None:
    got = resolve_test_command(repo_with(tmp_path, files))
    assert (got.command, got.framework, got.source) == (command, framework, "convention")


def test_pytest_comes_first_and_placeholder_npm_script_is_skipped(tmp_path: Path) -> None:
    placeholder = json.dumps({"scripts": {"test": 'echo "Error: no test specified" && exit 1'}})
    repo = repo_with(tmp_path, {"package.json": placeholder, "go.mod": "module m\n"})
    assert resolve_test_command(repo).command == "go test ./..."
    both = repo_with(
        tmp_path / "b", {"tests/test_a.py": "", "package.json": json.dumps({"scripts": {"test": "jest"}})}
    )
    assert resolve_test_command(both).command == "python -m pytest"


def test_python_files_in_node_modules_do_not_make_a_pytest_project(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"node_modules/x/test_x.py": "", "Cargo.toml": ""})
    assert resolve_test_command(repo).command == "cargo test"


# --------------------------------------------------------------------------- report adaptation


def test_pytest_writes_junit_with_file_attributes(tmp_path: Path) -> None:
    got = resolve_test_command(repo_with(tmp_path, {"tests/test_a.py": ""}))
    assert got.report == "junit" and got.junit_path == JUNIT_PATH and got.collect == (JUNIT_PATH,)
    for part in ('--junitxml="$ARCS_OUT/junit.xml"', "-o junit_family=xunit1", "-p no:cacheprovider"):
        assert part in got.shell
    assert got.env["CI"] == "true"


def test_piped_commands_are_not_adapted() -> None:
    piped = ResolvedCommand(command="pytest -q | tee out.txt", source="flag", framework="pytest")
    assert piped.report == "text" and piped.shell == "pytest -q | tee out.txt"
    quoted = ResolvedCommand(command="pytest -k 'a or b' -q", source="flag", framework="pytest")
    assert quoted.report == "junit"


def test_go_gets_json_events() -> None:
    got = ResolvedCommand(command="go vet ./... && go test -race ./...", source="flag", framework="go")
    assert got.report == "go-json"
    assert got.shell == "go vet ./... && go test -json -race ./..."
    assert got.collect == ()


def test_jest_junit_only_when_installed(tmp_path: Path) -> None:
    pkg = {"scripts": {"test": "jest"}, "devDependencies": {"jest": "29"}}
    without = resolve_test_command(repo_with(tmp_path / "a", {"package.json": json.dumps(pkg)}))
    assert without.report == "text" and "jest-junit" in without.note
    assert "--reporters" not in without.shell
    pkg["devDependencies"]["jest-junit"] = "16"
    with_it = resolve_test_command(repo_with(tmp_path / "b", {"package.json": json.dumps(pkg)}))
    assert with_it.report == "junit"
    assert with_it.shell.endswith("npm test -- --ci --reporters=default --reporters=jest-junit")
    assert 'export JEST_JUNIT_OUTPUT_DIR="$ARCS_OUT"' in with_it.shell
    assert with_it.env["JEST_JUNIT_CLASSNAME"] == "{filepath}"


def test_vitest_and_maven_and_cargo_adaptation() -> None:
    vt = ResolvedCommand(command="npx vitest run", source="flag", framework="vitest")
    assert vt.shell.endswith(
        'npx vitest run --reporter=default --reporter=junit --outputFile.junit="$ARCS_OUT/junit.xml"'
    )
    mvn = ResolvedCommand(command="mvn -q test", source="flag", framework="maven")
    assert mvn.report == "junit"
    assert "( mvn -q test ); arcs_status=$?;" in mvn.shell and mvn.shell.endswith("exit $arcs_status")
    cargo = ResolvedCommand(command="cargo test --all-features", source="flag", framework="cargo")
    assert cargo.shell == "cargo test --no-fail-fast --all-features" and cargo.report == "text"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX sh")
def test_adapted_pytest_command_really_writes_the_junit_file(tmp_path: Path) -> None:
    repo = repo_with(
        tmp_path,
        {"tests/test_a.py": "def test_ok():\n    assert True\n\ndef test_bad():\n    assert 1 == 2\n"},
    )
    resolved = ResolvedCommand(command=f"{sys.executable} -m pytest -q", source="flag", framework="pytest")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    done = subprocess.run(
        ["sh", "-c", resolved.shell], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1, done.stdout + done.stderr
    parsed = parse_junit_xml((repo / JUNIT_PATH).read_text(encoding="utf-8"), framework="pytest")
    assert {r.id: r.outcome for r in parsed.results} == {
        "tests/test_a.py::test_ok": "passed",
        "tests/test_a.py::test_bad": "failed",
    }
    bad = next(r for r in parsed.results if r.failure is not None)
    assert bad.failure is not None and (bad.failure.file, bad.failure.line) == ("tests/test_a.py", 5)
    assert not (repo / ".pytest_cache").exists()


# --------------------------------------------------------------------------- node --test

NODE_REPO = {
    "package.json": json.dumps({"name": "calc", "scripts": {"test": "node --test"}}),
    "src/calc.js": (
        "'use strict';\n"
        "function divide(a, b) {\n"
        "  if (b === 0) {\n"
        "    throw new Error('division by zero');\n"
        "  }\n"
        "  return a / b;\n"
        "}\n"
        "module.exports = { divide };\n"
    ),
    "test/calc.test.js": (
        "'use strict';\n"
        "const { describe, it } = require('node:test');\n"
        "const assert = require('node:assert');\n"
        "const { divide } = require('../src/calc');\n"
        "describe('divide', () => {\n"
        "  it('halves', () => { assert.strictEqual(divide(4, 2), 2); });\n"
        "  it('rejects zero', () => { assert.strictEqual(divide(1, 0), Infinity); });\n"
        "  it('is wrong', () => { assert.strictEqual(divide(9, 3), 4); });\n"
        "});\n"
    ),
}
NODE_ARGS = (
    "--test-reporter=spec --test-reporter-destination=stdout "
    '--test-reporter=junit --test-reporter-destination="$ARCS_OUT/junit.xml"'
)


def test_node_test_gets_the_junit_reporter_right_after_dash_dash_test(tmp_path: Path) -> None:
    plain = resolve_test_command(tmp_path, explicit="node --test")
    assert (plain.framework, plain.report, plain.collect) == ("node", "junit", (JUNIT_PATH,))
    assert plain.shell == f'ARCS_OUT="$PWD/.arcs"; mkdir -p "$ARCS_OUT"; node --test {NODE_ARGS}'
    # node reads options only before the first file: the flags must not be appended after test/.
    files = resolve_test_command(tmp_path, explicit="npm ci && node --import tsx --test test/ spec/")
    assert files.shell.endswith(f"npm ci && node --import tsx --test {NODE_ARGS} test/ spec/")
    assert files.report == "junit"


@pytest.mark.parametrize(
    "command",
    ["node --test --test-reporter=dot", "node --test | tee out.log", "node --test-only x.js"],
)
def test_node_test_is_left_alone_when_flags_would_not_reach_it(tmp_path: Path, command: str) -> None:
    resolved = resolve_test_command(tmp_path, explicit=command)
    assert resolved.shell == command and resolved.report == "text"


def test_npm_test_with_a_plain_node_test_script(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"package.json": NODE_REPO["package.json"]})
    resolved = resolve_test_command(repo)
    assert (resolved.command, resolved.framework, resolved.report) == ("npm test", "node", "junit")
    assert resolved.shell.endswith(f"npm test -- {NODE_ARGS}")
    # Extra arguments or a script with file arguments: npm would append the flags after the files.
    assert resolve_test_command(repo, explicit="npm test -- --watch").report == "text"
    (repo / "package.json").write_text(
        json.dumps({"scripts": {"test": "node --test test/"}}), encoding="utf-8"
    )
    files = resolve_test_command(repo)
    assert (files.framework, files.report, files.shell) == ("node", "text", "npm test")
    assert "not exactly `node --test`: reading its text output" in files.note


@pytest.mark.skipif(sys.platform == "win32" or not Path("/usr/bin/node").exists(), reason="needs node")
def test_adapted_node_command_really_writes_the_junit_file(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, NODE_REPO)
    resolved = resolve_test_command(repo, explicit="node --test")
    done = subprocess.run(["sh", "-c", resolved.shell], cwd=repo, capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "✖ rejects zero" in done.stdout  # the human-readable report stays on stdout
    parsed = parse_junit_xml((repo / JUNIT_PATH).read_text(encoding="utf-8"), framework="node")
    assert {r.id: r.outcome for r in parsed.results} == {
        "divide halves": "passed",
        "divide rejects zero": "failed",
        "divide is wrong": "failed",
    }
    zero = next(r.failure for r in parsed.results if r.id == "divide rejects zero")
    assert zero is not None and zero.type == "Error" and zero.message == "division by zero"
    assert [(Path(f.file).name, f.line, f.function) for f in zero.frames][-1] == ("calc.js", 4, "divide")


def _sandbox() -> LocalSandbox | None:
    try:
        box = LocalSandbox()
        box.check()
    except SandboxUnavailable:
        return None
    return box


@pytest.mark.sandbox
@pytest.mark.skipif(not Path("/usr/bin/node").exists(), reason="needs node in /usr/bin")
def test_node_test_repo_through_the_real_sandbox(tmp_path: Path) -> None:
    box = _sandbox()
    if box is None:
        pytest.skip("bubblewrap cannot create a sandbox here")
    repo = repo_with(tmp_path, NODE_REPO)
    resolved = resolve_test_command(repo)  # npm test, whose script is `node --test`
    run = run_in_workspace(box, repo, resolved, timeout_s=120)
    assert (run.source, run.framework) == ("junit", "node"), run
    assert run.passed_ids == ["divide halves"]
    zero = next(f for f in run.failures if f.id == "divide rejects zero")
    # Paths come back repository-relative, the crash site last.
    assert [(f.file, f.line) for f in zero.frames] == [("test/calc.test.js", 7), ("src/calc.js", 4)]
    assert (zero.file, zero.line, zero.type) == ("src/calc.js", 4, "Error")


# --------------------------------------------------------------------------- selection


def test_select_pytest_replaces_paths_and_drops_reruns() -> None:
    cmd = ResolvedCommand(
        command="pip install -e . && pytest tests/ -k fast --reruns 2 -x -q",
        source="flag",
        framework="pytest",
    )
    sel = cmd.selecting(["tests/test_a.py::test_x", "tests/test_a.py::TestC::test_y[1-2]"])
    assert sel is not None
    assert (
        sel.command
        == "pip install -e . && pytest -k fast -q tests/test_a.py::test_x 'tests/test_a.py::TestC::test_y[1-2]'"
    )
    assert sel.report == "junit"


def test_select_unittest() -> None:
    cmd = ResolvedCommand(
        command="python -m unittest discover -s tests -v", source="flag", framework="unittest"
    )
    sel = cmd.selecting(["tests.test_calc.CalcTest.test_add"])
    assert sel is not None and sel.command == "python -m unittest -v tests.test_calc.CalcTest.test_add"


def test_select_go_by_package_and_top_level_name() -> None:
    cmd = ResolvedCommand(command="go test -race -run Old -count 3 ./...", source="flag", framework="go")
    sel = cmd.selecting(
        ["example.com/calc::TestAdd", "example.com/calc::TestTable/neg", "example.com/calc/x::TestB"]
    )
    assert sel is not None
    assert (
        sel.command
        == "go test -race -count=1 -run '^(TestAdd|TestTable|TestB)$' example.com/calc example.com/calc/x"
    )
    assert sel.shell.startswith("go test -json -race -count=1")


def test_select_cargo_exact_names() -> None:
    cmd = ResolvedCommand(
        command="cargo test --all-features -- --nocapture", source="flag", framework="cargo"
    )
    sel = cmd.selecting(["tests::it_adds_one", "integration_adds"])
    assert sel is not None
    assert (
        sel.command == "cargo test --all-features -- --exact --nocapture tests::it_adds_one integration_adds"
    )


def test_select_jest_and_vitest_by_file_and_name() -> None:
    jest = ResolvedCommand(command="npm test", source="convention", framework="jest", junit=False)
    sel = jest.selecting(["src/sum.test.js::Calculator subtracts numbers", "src/sum.test.js::a (b)"])
    assert sel is not None
    assert sel.command == "npm test -- src/sum.test.js -t '^(?:Calculator subtracts numbers|a \\(b\\))$'"
    vt = ResolvedCommand(command="npx vitest run", source="flag", framework="vitest")
    sel2 = vt.selecting(["sum.test.ts::Calculator subtracts"])
    assert sel2 is not None and sel2.command == "npx vitest run sum.test.ts -t '^(?:Calculator subtracts)$'"


def test_select_mocha_by_full_title() -> None:
    mocha = ResolvedCommand(command="npm test --ignore-scripts", source="convention", framework="mocha")
    sel = mocha.selecting(["sprintfjs should return (simple)", "calc add"])
    assert sel is not None
    assert (
        sel.command
        == "npm test --ignore-scripts -- --grep '^(?:sprintfjs should return \\(simple\\)|calc add)$'"
    )
    direct = ResolvedCommand(command="mocha test/test.js", source="flag", framework="mocha")
    sel2 = direct.selecting(["calc add"])
    assert sel2 is not None and sel2.command == "mocha test/test.js --grep '^(?:calc add)$'"


def test_select_maven_and_gradle() -> None:
    mvn = ResolvedCommand(command="mvn -q test", source="flag", framework="maven")
    sel = mvn.selecting(["com.example.CalcTest#adds", "com.example.CalcTest#divides", "com.example.B#c"])
    assert sel is not None
    assert "'-Dtest=com.example.CalcTest#adds+divides,com.example.B#c'" in sel.command
    gradle = ResolvedCommand(command="./gradlew test", source="flag", framework="gradle")
    sel2 = gradle.selecting(["com.example.CalcTest#adds"])
    assert sel2 is not None and sel2.command == "./gradlew test --tests=com.example.CalcTest.adds"


def test_no_selection_for_unknown_frameworks_or_pipes() -> None:
    assert ResolvedCommand(command="make test", source="flag").selecting(["a"]) is None
    assert (
        ResolvedCommand(command="pytest | tee x", source="flag", framework="pytest").selecting(["a"]) is None
    )
    assert ResolvedCommand(command="pytest", source="flag", framework="pytest").selecting([]) is None


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python -m unittest", "python -m unittest -v"),
        ("python -m unittest discover -s tests", "python -m unittest discover -v -s tests"),
        ("python3 -m unittest tests.test_calc", "python3 -m unittest -v tests.test_calc"),
        ("python -m unittest -v", "python -m unittest -v"),
        ("cd src && python -m unittest", "cd src && python -m unittest -v"),
    ],
)
def test_unittest_runs_verbose_so_passing_tests_are_named(
    tmp_path: Path, command: str, expected: str
) -> None:
    resolved = resolve_test_command(tmp_path, explicit=command)
    assert resolved.framework == "unittest"
    assert resolved.shell == expected


def test_verbose_unittest_really_names_passing_tests(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "test_ok.py").write_text(
        "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        self.assertTrue(True)\n"
    )
    resolved = resolve_test_command(tmp_path, explicit="python3 -m unittest discover -s tests -t .")
    done = subprocess.run(
        resolved.shell, shell=True, cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    parsed = parse_text(done.stdout + done.stderr, "unittest")
    assert [r.id for r in parsed.results if r.outcome == "passed"] == ["tests.test_ok.T.test_ok"]
