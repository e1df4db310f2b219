"""Per-test hang limits measured once on the baseline (runners.hang.limits_of), applied by the probe
to every later run (jobs.sandbox_workbench), and a failing subtest that must not disarm the probe."""

from __future__ import annotations

import sys
from pathlib import Path

from jobs.repair.model import Edit
from jobs.sandbox_workbench import SandboxWorkbench
from runners.commands import ResolvedCommand
from runners.execute import run_in_workspace
from runners.hang import HangProbe, hang_of, limits_of, write_limits
from runners.results import TestFailure, TestResult, TestRun
from runners.sandbox import UnsafeLocalRunner
from runners.toolchains import toolchain_paths
from runners.workspace import private_folder

LOOP = "def spin(n):\n    while n > 0:\n        n = n + 1\n    return n\n"
TESTS = (
    "from loop import spin\n\n\n"
    "def test_quick():\n    assert 1 + 1 == 2\n\n\n"
    "def test_spins():\n    assert spin(-1) == 0\n"  # fails at once on the base code; hangs with spin(1)
)
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:randomly"


def _repo(root: Path, tests: str = TESTS) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "loop.py").write_text(LOOP)
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "test_loop.py").write_text(tests)
    (root / "conftest.py").write_text("")
    return root


def _command() -> ResolvedCommand:
    return ResolvedCommand(command=PYTEST, source="flag", framework="pytest")


def _runner() -> UnsafeLocalRunner:
    return UnsafeLocalRunner(toolchain_paths=toolchain_paths())


def test_limits_of_a_baseline() -> None:
    hung = TestFailure(id="t::h", type="timeout", message="stopped as a hang")
    run = TestRun(
        command="pytest",
        exit_code=1,
        duration_s=12.0,
        results=(
            TestResult("t::a", "passed", 0.1),
            TestResult("t::b", "passed", 2.0),
            TestResult("t::c", "failed", 0.2, TestFailure(id="t::c", type="AssertionError")),
            TestResult("t::d", "skipped", 0.0),
            TestResult("t::h", "failed", 10.0, hung),
        ),
        killed_by="timeout",
        framework="pytest",
        hang_s=10.0,
    )
    # Finished tests: 5x their own duration, at least 3 s; the hung test: the slowest finished one
    # (at least 3 s); a skipped test has no limit (it keeps the ratio rule).
    assert limits_of(run) == {"t::a": 3.0, "t::b": 10.0, "t::c": 3.0, "t::h": 3.0}
    assert limits_of(run, floor_s=1.0, factor=2.0) == {"t::a": 1.0, "t::b": 4.0, "t::c": 1.0, "t::h": 2.0}
    assert (
        limits_of(
            TestRun(command="node --test", exit_code=1, duration_s=1.0, framework="node", results=run.results)
        )
        == {}
    )


def test_a_test_with_a_limit_is_stopped_there_not_by_the_ratio_rule(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", TESTS.replace("spin(-1)", "spin(1)"))
    with private_folder(tmp_path / "ws-root") as private:
        write_limits(private, {"tests/test_loop.py::test_spins": 0.5})
        run = run_in_workspace(
            _runner(),
            repo,
            _command(),
            timeout_s=120,
            hang_probe=HangProbe(probe_s=30, ratio=1000),
            private=private,
        )
    assert run.killed_by == "timeout" and run.hang_s == 0.5  # the limit it ran to, not 30 s
    by_id = {r.id: r for r in run.results}
    assert by_id["tests/test_loop.py::test_quick"].outcome == "passed"
    assert by_id["tests/test_loop.py::test_spins"].failure.type == "timeout"  # type: ignore[union-attr]


def test_a_failing_subtest_does_not_disarm_the_probe(tmp_path: Path) -> None:
    # pytest's faulthandler plugin cancels every pending dump when a subtest fails (its
    # pytest_exception_interact): without re-arming, the hang below would run to the timeout.
    tests = (
        "import unittest\n\nfrom loop import spin\n\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_sub(self):\n"
        "        for i in range(2):\n"
        "            with self.subTest(i=i):\n"
        "                self.assertEqual(i, 5)\n"
        "        spin(1)\n"
    )
    repo = _repo(tmp_path, tests)
    run = run_in_workspace(
        _runner(), repo, _command(), timeout_s=30, hang_probe=HangProbe(probe_s=1, ratio=0)
    )
    assert run.hang_s == 1.0, run.errors
    (hung,) = [r for r in run.results if r.id == "tests/test_loop.py::T::test_sub"]
    assert hung.failure is not None and hung.failure.type == "timeout"
    assert "stopped as a hang" in hung.failure.message


def test_later_runs_share_the_baselines_limits(tmp_path: Path) -> None:
    # The baseline fails without hanging; a candidate that makes the test hang is stopped at the
    # limit measured on the baseline (3 s floor), not at the probe's 10 s.
    repo = _repo(tmp_path)
    with SandboxWorkbench(repo, _command(), _runner(), hang_probe=HangProbe(probe_s=10, ratio=3)) as wb:
        base = wb.run_tests(None, timeout_s=60)
        assert not base.timed_out and "tests/test_loop.py::test_spins" in base.failed
        assert wb.hang_limits == {"hung_s": 0.0, "floor_s": 3.0, "tests": 2.0}
        change = wb.preview([Edit("tests/test_loop.py", old="spin(-1)", new="spin(1)")])
        hung = wb.run_tests(change, select=["tests/test_loop.py::test_spins"], timeout_s=60)
        assert hung.timed_out and hung.hang_s == 3.0
        assert [f.type for f in hung.failures] == ["timeout"]
        # The final verification is never probed: the exact command, its own timeout.
        assert not wb.verify(None, timeout_s=60).timed_out


def test_a_dump_cut_short_by_a_segfault_is_still_a_hang() -> None:
    # Seen on tabulate: faulthandler crashed while reading the running main thread's frames.
    events = [
        {"start": "t::quick", "limit_s": 10.0, "before_s": 1.0},
        {"done": "t::quick", "outcome": "passed", "when": "call", "s": 0.01},
        {"start": "t::spins", "limit_s": 10.0, "before_s": 1.5},
    ]
    output = 'Timeout (0:00:10)!\nThread 0x00007f05c1a10b80 (most recent call first):\n  File "/r/re.py", line 277 in _compile\n  File Segmentation fault\n'
    for exit_code in (-11, 139):
        hang = hang_of(events, exit_code=exit_code, output=output)
        assert hang is not None and hang.test_id == "t::spins" and hang.limit_s == 10.0
    assert hang_of(events, exit_code=2, output=output) is None
