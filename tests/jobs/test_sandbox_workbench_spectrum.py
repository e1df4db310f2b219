"""SandboxWorkbench.spectrum: the base tree's tests traced once in a fresh sandboxed copy (#15)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from jobs.repair.spectrum import Profiler
from jobs.sandbox_workbench import SandboxWorkbench, to_spectrum
from runners.commands import ResolvedCommand
from runners.fake import FakeCall, FakeRunner, fake_execution
from runners.hang import HangProbe
from runners.results import TestFailure, TestResult, TestRun
from runners.spectrum import TRACE_DIR, LineSpectrum
from tests.conftest import MakeRepo, git, sandbox_works

VISITOR = """\
class Evaluator:
    def visit(self, node):
        kind, *args = node
        return getattr(self, "visit_" + kind)(*args)

    def visit_num(self, value):
        return value

    def visit_add(self, left, right):
        return self.visit(left) + self.visit(right)

    def visit_sub(self, left, right):
        return self.visit(left) + self.visit(right)

    def visit_neg(self, operand):
        return -self.visit(operand)
"""
BUG = ("calc/visitor.py", 13)  # visit_sub adds: reached only through getattr's dispatch
NEG = ("calc/visitor.py", 16)  # only a passing test runs it

TESTS = """\
from calc.visitor import Evaluator


def test_add():
    assert Evaluator().visit(("add", ("num", 1), ("num", 2))) == 3


def test_sub():
    assert Evaluator().visit(("sub", ("num", 5), ("num", 2))) == 3
"""
OTHER = """\
from calc.visitor import Evaluator


def test_neg():
    assert Evaluator().visit(("neg", ("num", 4))) == -4
"""
FAILING = "tests/test_calc.py::test_sub"

needs_sandbox = pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")


def _repo(make_repo: MakeRepo, **extra: str) -> Path:
    files = {
        "calc/__init__.py": "",
        "calc/visitor.py": VISITOR,
        "tests/__init__.py": "",
        "tests/test_calc.py": TESTS,
        "tests/test_other.py": OTHER,
        "conftest.py": "",
        **extra,
    }
    return make_repo(files)


def _workbench(repo: Path, *, probe: HangProbe | None = HangProbe()) -> SandboxWorkbench:  # noqa: B008
    from runners.factory import make_runner

    command = ResolvedCommand(command="python -m pytest -q -p no:randomly", source="flag", framework="pytest")
    runner = make_runner(toolchain_paths=[Path(sys.prefix)])
    return SandboxWorkbench(repo, command, runner, hang_probe=probe)


@pytest.mark.sandbox
@pytest.mark.slow
@needs_sandbox
def test_the_buggy_line_behind_dynamic_dispatch_is_only_failing(make_repo: MakeRepo) -> None:
    repo = _repo(make_repo)
    with _workbench(repo) as wb:
        assert isinstance(wb, Profiler)
        suite = wb.spectrum([FAILING], suite=True, timeout_s=120)
        files = wb.spectrum([FAILING], suite=False, timeout_s=120)
        assert wb.runs == 2
    assert suite is not None and files is not None
    assert (suite.scope, suite.failed, suite.passed, suite.complete, suite.note) == ("suite", 1, 2, True, "")
    path, line = BUG
    assert suite.lines[path][line] == (1, 0)
    assert suite.lines[path][4] == (1, 2)  # the dispatch itself: every test runs it
    assert NEG[1] not in suite.lines[path]  # only a passing test ran it
    assert suite.duration_s > 0
    # File scope: only tests/test_calc.py ran (test_neg lives in another file).
    assert (files.scope, files.failed, files.passed, files.complete) == ("files", 1, 1, True)
    assert files.lines[path][4] == (1, 1) and files.lines[path][line] == (1, 0)
    # The user's tree is only read.
    assert git(repo, "status", "--porcelain", "--ignored") == ""
    # A slow suite: the failing test and the passing neighbours the loop names, by id.
    with _workbench(repo) as wb:
        near = wb.spectrum([FAILING], suite=False, timeout_s=120, also=["tests/test_other.py::test_neg"])
    assert near is not None and (near.scope, near.failed, near.passed) == ("tests", 1, 1)
    assert near.lines[path][line] == (1, 0) and NEG[1] not in near.lines[path]  # test_neg ran, test_add not
    assert near.lines[path][4] == (1, 1)


@pytest.mark.sandbox
@pytest.mark.slow
@needs_sandbox
def test_a_timeout_leaves_a_partial_spectrum(make_repo: MakeRepo) -> None:
    slow = (
        "import time\n\n\ndef test_slow():\n    time.sleep(2.5)\n\n\n"
        "def test_zz_forever():\n    time.sleep(600)\n"
    )
    repo = _repo(make_repo, **{"tests/test_zslow.py": slow})
    with _workbench(repo, probe=None) as wb:
        got = wb.spectrum([FAILING], suite=True, timeout_s=12)
    assert got is not None and not got.complete
    assert "timeout" in got.note and "partial" in got.note
    assert got.failed == 1 and got.lines[BUG[0]][BUG[1]] == (1, 0)  # written before the kill


@pytest.mark.sandbox
@pytest.mark.slow
@needs_sandbox
def test_the_baselines_hung_test_is_left_out(make_repo: MakeRepo) -> None:
    hang = "def test_hangs():\n    while True:\n        pass\n"
    repo = _repo(make_repo, **{"tests/test_hang.py": hang})
    with _workbench(repo, probe=HangProbe(probe_s=1.0, ratio=0)) as wb:
        base = wb.run_tests(None, timeout_s=120)
        assert wb.observed_hang == "tests/test_hang.py::test_hangs"
        got = wb.spectrum([*base.failed], suite=True, timeout_s=120)
    assert got is not None and got.complete and got.note == ""
    assert (got.failed, got.passed) == (1, 2)  # the hung test did not run
    assert got.lines[BUG[0]][BUG[1]] == (1, 0)


def test_not_traced_without_pytest_or_python_test_ids(tmp_path: Path) -> None:
    runner = FakeRunner()
    unittest = ResolvedCommand(command="python -m unittest", source="flag", framework="unittest")
    piped = ResolvedCommand(command="pytest -q | tee log", source="flag", framework="pytest")
    plain = ResolvedCommand(command="pytest -q", source="flag", framework="pytest")
    with SandboxWorkbench(tmp_path, unittest, runner) as wb:
        assert wb.spectrum(["tests.test_a.T.test_x"], suite=True, timeout_s=10) is None
    with SandboxWorkbench(tmp_path, piped, runner) as wb:
        assert wb.spectrum([FAILING], suite=True, timeout_s=10) is None
    with SandboxWorkbench(tmp_path, plain, runner) as wb:
        assert wb.spectrum(["src/a.test.js > adds"], suite=False, timeout_s=10) is None
        assert wb.spectrum([], suite=True, timeout_s=10) is None
        assert wb.runs == 0
    assert runner.calls == []


def test_the_command_and_the_conversion_without_a_sandbox(tmp_path: Path) -> None:
    """Wiring: files narrowed, hung test deselected, plugin loaded, limits stretched; a killed run
    gives a partial spectrum with a note."""

    def plugin_wrote(call: FakeCall) -> object:
        assert call.private is not None and not call.private.is_relative_to(call.workspace)
        limits = json.loads((call.private / "hang/limits.json").read_text())
        assert limits == {"tests/test_a.py::test_x": 5.0 * 3.0}
        doc = {"v": 1, "complete": False, "failed": 1, "passed": 0, "files": {"a.py": [2, 1, 0]}}
        (call.private / TRACE_DIR / "spectrum.json").write_text(json.dumps(doc))
        return fake_execution(exit_code=-9, duration_s=7.0, killed_by="timeout")

    runner = FakeRunner(default=plugin_wrote)  # type: ignore[arg-type]
    command = ResolvedCommand(command="python -m pytest -q tests", source="flag", framework="pytest")
    with SandboxWorkbench(tmp_path, command, runner) as wb:
        wb.observed_hang = "tests/test_b.py::test_hang"
        wb._limits = {"tests/test_a.py::test_x": 3.0}
        got = wb.spectrum(
            ["tests/test_a.py::test_y[1]", "tests/test_a.py::test_z"], suite=False, timeout_s=30
        )
    sent = runner.calls[0].command
    assert (
        "-p arcs_spectrum" in sent and "-p arcs_hang_probe" in sent and f"$ARCS_PRIVATE/{TRACE_DIR}" in sent
    )
    assert (
        "python -m pytest -q tests/test_a.py --deselect tests/test_b.py::test_hang -p arcs_spectrum" in sent
    )
    assert got is not None and (got.scope, got.failed, got.complete, got.duration_s) == (
        "files",
        1,
        False,
        7.0,
    )
    assert got.lines == {"a.py": {2: (1, 0)}} and got.note == "timeout after 7s: partial spectrum"


def test_a_hang_under_tracing_or_no_output_is_noted() -> None:
    failure = TestFailure("t.py::test_spin", type="timeout", message="stopped as a hang")
    hung = TestRun(
        command="pytest", exit_code=1, duration_s=4.0, killed_by="timeout", hang_s=3.0,
        results=(TestResult("t.py::test_spin", "failed", failure=failure),),
    )  # fmt: skip
    got = to_spectrum(None, hung, scope="suite")
    assert (got.failed, got.passed, got.complete, got.lines) == (0, 0, False, {})
    assert (
        got.note
        == "stopped: t.py::test_spin hung under tracing; partial spectrum; no spectrum written (exit code 1)"
    )
    fine = TestRun(command="pytest", exit_code=0, duration_s=1.0)
    got = to_spectrum(LineSpectrum(passed=3, complete=True, dropped=7), fine, scope="files")
    assert (
        got.complete
        and got.note == "output too large: 7 least suspicious lines left out; no failing test was traced"
    )
