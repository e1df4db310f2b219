"""The hang probe (runners.hang, runners.hang_node): a hanging test stops the run early, with frames."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from runners.commands import ResolvedCommand
from runners.execute import run_in_workspace
from runners.hang import HangProbe, hang_of, probe_command, read_events, shell_prefix
from runners.hang_node import node_hang
from runners.sandbox import UnsafeLocalRunner
from runners.toolchains import toolchain_paths
from runners.workspace import private_folder

LOOP_MODULE = """
def spin(n):
    while n > 0:
        n = n + 1
    return n
"""

PY_TESTS = """
from loop import spin

def test_quick():
    assert 1 + 1 == 2

def test_fails():
    assert 2 + 2 == 5

def test_hangs():
    assert spin(1) == 0

def test_after():
    assert True
"""

DUMP = """\
Timeout (0:00:10)!
Thread 0x00007f5f25624b80 (most recent call first):
  File "/workspace/loop.py", line 4 in spin
  File "/workspace/tests/test_loop.py", line 11 in test_hangs
"""


def _pytest(command: str = "python -m pytest -q") -> ResolvedCommand:
    return ResolvedCommand(command=command, source="flag", framework="pytest")


@pytest.mark.parametrize(
    ("command", "framework", "probed"),
    [
        ("python -m pytest -q", "pytest", "python -m pytest -q -p arcs_hang_probe"),
        ("pip install -e . && pytest tests", "pytest", "pip install -e . && pytest tests -p arcs_hang_probe"),
        ("pytest -q | tee log.txt", "pytest", None),
        ("cd sub && pytest", "pytest", None),
        ("pytest -p no:faulthandler", "pytest", None),
        ("python -m unittest -v", "unittest", None),
        ("go test ./...", "go", None),
        ("node --test", "node", "node --test"),
    ],
)
def test_which_commands_are_probed(command: str, framework: str, probed: str | None) -> None:
    resolved = ResolvedCommand(command=command, source="flag", framework=framework)  # type: ignore[arg-type]
    got = probe_command(resolved, HangProbe())
    assert (got.command if got is not None else None) == probed
    assert probe_command(resolved, HangProbe(probe_s=0)) is None


def test_the_prefix_keeps_the_users_paths_and_options() -> None:
    py = shell_prefix(HangProbe(probe_s=7, ratio=4))
    assert (
        '"${PYTHONPATH:+:$PYTHONPATH}"' in py
        and "ARCS_HANG_PROBE_S=7.0" in py
        and "ARCS_HANG_RATIO=4.0" in py
    )
    assert "${NODE_OPTIONS:+ $NODE_OPTIONS}" in shell_prefix(HangProbe(), "node")


def test_hang_of_names_the_test_that_never_returned() -> None:
    events = read_events(
        "\n".join(
            [
                '{"start": "t.py::test_quick", "limit_s": 10.0, "before_s": 0.5}',
                '{"done": "t.py::test_quick", "outcome": "passed", "when": "call", "s": 0.01}',
                '{"start": "t.py::test_hangs", "limit_s": 12.0, "before_s": 4.0}',
                "not json",
            ]
        )
    )
    hang = hang_of(events, exit_code=1, output=DUMP)
    assert hang is not None
    assert (hang.test_id, hang.limit_s, hang.before_s) == ("t.py::test_hangs", 12.0, 4.0)
    assert [o.id for o in hang.observed] == ["t.py::test_quick"]
    # No dump, another exit status, or every started test finished: not a hang of the probe.
    assert hang_of(events, exit_code=1, output="") is None
    assert hang_of(events, exit_code=0, output=DUMP) is None
    done = [*events, {"done": "t.py::test_hangs", "outcome": "passed", "when": "call", "s": 11.0}]
    assert hang_of(done, exit_code=1, output=DUMP) is None
    # faulthandler prints fractions of a second when the limit has them.
    assert hang_of(events, exit_code=1, output=DUMP.replace("0:00:10", "0:00:12.500000")) is not None


def test_node_hang_reads_the_marker_and_the_paused_stack() -> None:
    out = (
        "TAP version 13\n"
        '# ARCS hang probe: test "mid \\"x\\"" ran longer than 10.0s (the file had been running 0.2s '
        "when it started); stopped as a hang\n"
        "#     at insertionPoint (/workspace/src/search.js:6:3)\n"
        "#     at <anonymous> (/workspace/test/search.test.js:16:16)\n"
        "#     at runInAsyncScope (node:async_hooks:206:9)\n"
        "not ok 1 - /workspace/test/search.test.js\n"
    )
    hang = node_hang(out)
    assert hang is not None
    assert (hang.test_name, hang.limit_s, hang.before_s) == ('mid "x"', 10.0, 0.2)
    assert [(f.file, f.line, f.function) for f in hang.frames] == [
        ("/workspace/test/search.test.js", 16, None),
        ("/workspace/src/search.js", 6, "insertionPoint"),
    ]
    assert node_hang("ok 1 - fine\n") is None


def _python_repo(root: Path) -> Path:
    (root / "tests").mkdir()
    (root / "loop.py").write_text(LOOP_MODULE)
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "test_loop.py").write_text(PY_TESTS)
    (root / "conftest.py").write_text("")
    return root


def _runner() -> UnsafeLocalRunner:
    return UnsafeLocalRunner(toolchain_paths=toolchain_paths())


def test_a_hanging_pytest_test_stops_the_run_with_its_frames(tmp_path: Path) -> None:
    repo = _python_repo(tmp_path)
    command = _pytest(f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:randomly")
    # The run's own timeout is far away: only the probe can end it as a timeout.
    with private_folder(tmp_path / "ws-root") as private:
        run = run_in_workspace(
            _runner(),
            repo,
            command,
            timeout_s=600,
            hang_probe=HangProbe(probe_s=0.5, ratio=0),
            private=private,
        )
        log = (private / "hang" / "events.jsonl").read_text()
    assert run.killed_by == "timeout"
    by_id = {r.id: r for r in run.results}
    assert by_id["tests/test_loop.py::test_quick"].outcome == "passed"
    assert by_id["tests/test_loop.py::test_fails"].outcome == "failed"
    assert by_id["tests/test_loop.py::test_fails"].failure.type == "AssertionError"  # type: ignore[union-attr]
    hung = by_id["tests/test_loop.py::test_hangs"]
    assert hung.outcome == "failed" and hung.failure is not None
    assert hung.failure.type == "timeout" and "stopped as a hang" in hung.failure.message
    assert [(f.file, f.function) for f in hung.failure.frames] == [
        ("tests/test_loop.py", "test_hangs"),
        ("loop.py", "spin"),
    ]
    assert "tests/test_loop.py::test_after" not in by_id  # never observed: unknown, not passing
    assert not log.count('"done": "tests/test_loop.py::test_hangs"')
    assert not (repo / ".arcs" / "hang").exists()  # the probe lived outside the repository's tree


def test_the_limit_grows_with_the_time_spent_before_the_test(tmp_path: Path) -> None:
    repo = _python_repo(tmp_path)
    tests = repo / "tests" / "test_loop.py"
    tests.write_text(tests.read_text().replace("spin(1) == 0", "spin(-1) == -1"))  # nothing hangs
    command = _pytest(f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:randomly")
    with private_folder(tmp_path / "ws-root") as private:
        run_in_workspace(
            _runner(),
            repo,
            command,
            timeout_s=600,
            hang_probe=HangProbe(probe_s=0.5, ratio=1000),
            private=private,
        )
        events = read_events((private / "hang" / "events.jsonl").read_text())
    starts = [e for e in events if "start" in e]
    assert starts and all(float(e["limit_s"]) >= 1000 * float(e["before_s"]) - 1 for e in starts)  # type: ignore[arg-type]


def test_without_a_probe_nothing_is_injected(tmp_path: Path) -> None:
    repo = _python_repo(tmp_path)
    (repo / "tests" / "test_loop.py").write_text("def test_ok():\n    assert True\n")
    command = _pytest(f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:randomly")
    run = run_in_workspace(_runner(), repo, command, timeout_s=600)
    assert run.exit_code == 0 and run.killed_by is None
    assert not (repo / ".arcs" / "hang").exists()


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_hanging_node_test_stops_its_file_with_the_paused_stack(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "test").mkdir()
    (tmp_path / "src" / "loop.js").write_text(
        "function spin(n) {\n  while (n > 0) {\n    n = n + 1;\n  }\n  return n;\n}\nmodule.exports = { spin };\n"
    )
    (tmp_path / "test" / "loop.test.js").write_text(
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const { spin } = require('../src/loop');\n"
        "test('quick', () => assert.equal(1, 1));\n"
        "test('hangs', () => assert.equal(spin(1), 0));\n"
    )
    command = ResolvedCommand(command="node --test", source="flag", framework="node")
    run = run_in_workspace(_runner(), tmp_path, command, timeout_s=600, hang_probe=HangProbe(probe_s=0.5))
    assert run.killed_by == "timeout"
    timeouts = [f for f in (*run.errors, *run.failures) if f.type == "timeout"]
    assert len(timeouts) == 1
    assert "'hangs'" in timeouts[0].message
    assert [f.file for f in timeouts[0].frames][-1] == "src/loop.js"
    assert timeouts[0].frames[-1].function == "spin"
