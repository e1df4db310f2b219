"""``arcs test`` and ``arcs triage``: the CLI contract, with a fake runner and with the real sandbox."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli import commands, main, test_cmd
from bot.settings import Settings
from runners.base import Runner
from runners.commands import JUNIT_PATH
from runners.fake import FakeRunner, fake_execution
from tests.conftest import MakeRepo, sandbox_works

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
JUNIT = Path(__file__).resolve().parent.parent / "fixtures" / "junit"


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Works whether or not the integrator has added test_cmd to the registry yet.
    if test_cmd.register not in commands.REGISTRY:
        monkeypatch.setattr(commands, "REGISTRY", [*commands.REGISTRY, test_cmd.register])
    yield


@pytest.fixture
def fake_sandbox(monkeypatch: pytest.MonkeyPatch) -> Callable[[FakeRunner], list[dict[str, Any]]]:
    """Make ``make_runner`` return the given FakeRunner; returns the recorded make_runner calls."""

    def install(runner: FakeRunner) -> list[dict[str, Any]]:
        made: list[dict[str, Any]] = []

        def fake_make_runner(**kwargs: Any) -> Runner:
            made.append(kwargs)
            return runner

        import runners.factory

        monkeypatch.setattr(runners.factory, "make_runner", fake_make_runner)
        return made

    return install


def run_cli(args: list[str], settings: Settings, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args, settings=settings)
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- arcs triage


def test_triage_json(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["triage", str(LOGS / "python_pytest_assert.log"), "--json"], settings, capsys)
    assert code == 0
    data = json.loads(out)
    assert data["class"] == "test" and data["repairable"] is True
    assert data["step"]["title"] == "python -m pytest -q --color=yes"
    assert "tests/test_calc.py::test_add" in data["test_ids"]
    assert "tests/test_calc.py:7" in [loc["ref"] for loc in data["locations"]]


def test_triage_human_and_repo_filter(
    settings: Settings, capsys: pytest.CaptureFixture[str], make_repo: MakeRepo
) -> None:
    repo = make_repo({"src/lib.rs": "", "Cargo.toml": ""})  # tests/integration.rs is not in this repo
    code, out, _ = run_cli(
        ["triage", str(LOGS / "rust_cargo_test_panic.log"), "--repo", str(repo)], settings, capsys
    )
    assert code == 0
    assert out.startswith("test: 3 failing tests")
    assert "repairable: yes" in out
    locations = next(line for line in out.splitlines() if line.startswith("locations: "))
    assert "src/lib.rs:20" in locations and "tests/integration.rs" not in locations


def test_triage_reads_stdin(
    settings: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO((LOGS / "infra_disk_full.log").read_text(encoding="utf-8")))
    code, out, _ = run_cli(["triage", "-", "--json"], settings, capsys)
    assert code == 0
    assert json.loads(out)["class"] == "infrastructure"


def test_triage_missing_file_is_one_line_exit_2(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["triage", "/nonexistent/job.log", "--json"], settings, capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("arcs: error: triage:")
    assert json.loads(out)["exit_code"] == 2


# --------------------------------------------------------------------------- arcs test (fake runner)


def test_test_json_with_a_fake_runner(
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    make_repo: MakeRepo,
    fake_sandbox: Callable[[FakeRunner], list[dict[str, Any]]],
) -> None:
    repo = make_repo({"tests/test_calc.py": "", "src/calc/__init__.py": "", ".arcs.yml": "timeout_s: 42\n"})
    xml = (JUNIT / "pytest_xunit1.xml").read_text(encoding="utf-8")
    runner = FakeRunner().on("pytest", fake_execution(exit_code=1, artifacts={JUNIT_PATH: xml}))
    made = fake_sandbox(runner)
    code, out, _ = run_cli(["test", str(repo), "--json", "--memory", "1024"], settings, capsys)
    assert code == 1
    data = json.loads(out)
    assert (
        data["command"] == "python -m pytest" and data["source"] == "convention" and data["report"] == "junit"
    )
    assert data["exit_code"] == 1 and data["truncated"] is False
    assert "tests/test_calc.py::test_add_zero" in data["passed"]
    failed = {f["id"]: f for f in data["failed"]}
    assert failed["tests/test_calc.py::test_divide"] == {
        "id": "tests/test_calc.py::test_divide",
        "file": "src/calc/__init__.py",
        "line": 13,
        "type": "ZeroDivisionError",
        "message": "division by zero",
    }
    assert data["errors"] == []
    assert (runner.calls[0].timeout_s, runner.calls[0].memory_mb) == (42, 1024)
    assert made[0]["unsafe_no_sandbox"] is False


def test_test_cmd_flag_and_human_output(
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    make_repo: MakeRepo,
    fake_sandbox: Callable[[FakeRunner], list[dict[str, Any]]],
) -> None:
    repo = make_repo({"go.mod": "module example.com/calc\n"})
    runner = FakeRunner().on("make check", fake_execution(exit_code=0, stdout="all good\n"))
    made = fake_sandbox(runner)
    code, out, err = run_cli(
        ["test", str(repo), "--cmd", "make check", "--unsafe-no-sandbox"], settings, capsys
    )
    assert code == 0
    assert out.startswith("$ make check   [flag;")
    assert "0 passed, 0 failed" in out
    assert "make check" in err  # progress goes to stderr
    assert made[0]["unsafe_no_sandbox"] is True


def test_test_reports_a_crash_as_an_error(
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    make_repo: MakeRepo,
    fake_sandbox: Callable[[FakeRunner], list[dict[str, Any]]],
) -> None:
    repo = make_repo({"Cargo.toml": ""})
    fake_sandbox(FakeRunner().on("cargo", fake_execution(exit_code=-9, killed_by="timeout")))
    code, out, _ = run_cli(["test", str(repo), "--json"], settings, capsys)
    assert code == 1
    data = json.loads(out)
    assert data["killed_by"] == "timeout"
    assert data["errors"][0]["type"] == "timeout"


def test_test_human_output_shows_the_hint_the_notes_and_the_output_tail(
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    make_repo: MakeRepo,
    fake_sandbox: Callable[[FakeRunner], list[dict[str, Any]]],
) -> None:
    # npm stopped in `pretest` (tsc) before any test ran: the human output says so (issue 30).
    pkg = {"name": "calc", "version": "1.0.0", "scripts": {"pretest": "tsc", "test": "mocha"}}
    repo = make_repo({"package.json": json.dumps(pkg), "test/test.js": ""})
    noise = [f"src/f{i}.ts(1,1): error TS2304: Cannot find name 'x{i}'." for i in range(30)]
    stdout = "\n".join(["", "> calc@1.0.0 pretest", "> tsc", "", *noise, "x" * 500]) + "\n"
    fake_sandbox(FakeRunner().on("npm test", fake_execution(exit_code=2, stdout=stdout)))
    code, out, _ = run_cli(["test", str(repo), "--cmd", "npm test"], settings, capsys)
    assert code == 1
    lines = out.splitlines()
    hint = next(ln for ln in lines if ln.startswith("hint: "))
    assert "stopped in npm's `pretest` hook" in hint
    note = next(ln for ln in lines if ln.startswith("note: "))
    assert "also runs pretest: `tsc`" in note
    header = lines.index("--- output (last 20 of 34 lines; --output shows all) ---")
    tail = lines[header + 1 :]
    assert len(tail) == 20 and tail[-2] == noise[-1] and noise[10] not in tail
    assert tail[-1] == "x" * 299 + "…"  # a long line is cut

    code, out, _ = run_cli(["test", str(repo), "--cmd", "npm test", "--output"], settings, capsys)
    assert "--- output (34 lines) ---" in out and "> calc@1.0.0 pretest" in out and noise[0] in out


TAPE_PASS = "TAP version 13\n# add\nok 1 should be equal\n\n1..1\n# tests 1\n# pass  1\n\n# ok\n"


def test_test_note_names_the_node_of_a_toolchain(
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    make_repo: MakeRepo,
    fake_sandbox: Callable[[FakeRunner], list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    toolchain = tmp_path / "node-v99"
    (toolchain / "bin").mkdir(parents=True)
    node = toolchain / "bin" / "node"
    node.write_text("#!/bin/sh\necho v99.1.0\n", encoding="utf-8")
    node.chmod(0o755)
    repo = make_repo({"package.json": json.dumps({"scripts": {"test": "tape test/*.js"}})})
    made = fake_sandbox(FakeRunner().on("npm test", fake_execution(exit_code=0, stdout=TAPE_PASS)))
    code, out, _ = run_cli(["test", str(repo), "--toolchain", str(toolchain), "--json"], settings, capsys)
    assert code == 0
    data = json.loads(out)
    assert f"node: the sandbox runs {node} (v99.1.0)" in data["note"]
    assert toolchain in made[0]["toolchain_paths"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["test", "/nonexistent/repo"], "not a folder"),
        (["test", "{repo}", "--toolchain", "/nonexistent/jdk"], "toolchain"),
        (["test", "{repo}", "--timeout", "-1"], "positive"),
        (["test", "{repo}"], "no test command found"),
    ],
)
def test_test_usage_errors_are_one_line_exit_2(
    args: list[str],
    needle: str,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    make_repo: MakeRepo,
    fake_sandbox: Callable[[FakeRunner], list[dict[str, Any]]],
) -> None:
    fake_sandbox(FakeRunner(default=fake_execution()))
    repo = make_repo({"README.md": "nothing to test"})
    code, _, err = run_cli([a.replace("{repo}", str(repo)) for a in args], settings, capsys)
    assert code == 2
    assert err.count("\n") == 1 and needle in err


def test_bad_arcs_yml_is_exit_2(
    settings: Settings, capsys: pytest.CaptureFixture[str], make_repo: MakeRepo
) -> None:
    repo = make_repo({".arcs.yml": "timeout_s: soon\n"})
    code, _, err = run_cli(["test", str(repo)], settings, capsys)
    assert code == 2 and "`timeout_s`" in err


# --------------------------------------------------------------------------- arcs test (real sandbox)


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
def test_real_pytest_repo_through_the_sandbox(
    settings: Settings, capsys: pytest.CaptureFixture[str], make_repo: MakeRepo
) -> None:
    repo = make_repo(
        {
            "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["src"]\n',
            "src/calc/__init__.py": "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a / b\n",
            "tests/test_calc.py": (
                "from calc import add, div\n\n\n"
                "def test_add():\n    assert add(1, 2) == 3\n\n\n"
                "def test_div():\n    assert div(1, 0) == 0\n\n\n"
                "def test_wrong():\n    assert add(2, 2) == 5\n"
            ),
        }
    )
    # The test process's own venv has pytest: arcs test exposes it (sys.prefix) to the sandbox.
    code, out, _ = run_cli(["test", str(repo), "--json", "--timeout", "120"], settings, capsys)
    data = json.loads(out)
    assert code == 1, data
    assert data["runner"] == "bubblewrap" and data["report"] == "junit"
    assert data["passed"] == ["tests/test_calc.py::test_add"]
    failed = {f["id"]: f for f in data["failed"]}
    assert set(failed) == {"tests/test_calc.py::test_div", "tests/test_calc.py::test_wrong"}
    assert (
        failed["tests/test_calc.py::test_div"]["file"],
        failed["tests/test_calc.py::test_div"]["line"],
    ) == (
        "src/calc/__init__.py",
        6,
    )
    assert failed["tests/test_calc.py::test_wrong"]["type"] == "AssertionError"
    assert not (repo / ".arcs").exists() and not (repo / ".pytest_cache").exists()  # ran in a copy
