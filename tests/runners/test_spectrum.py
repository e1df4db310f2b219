"""The spectrum probe (runners.spectrum): per-line counts of failing and passing pytest tests."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from runners.commands import ResolvedCommand
from runners.execute import run_in_workspace
from runners.sandbox import UnsafeLocalRunner
from runners.spectrum import (
    MAX_BYTES,
    ROOT_ENV,
    TRACE_DIR,
    deselecting,
    install,
    parse_spectrum,
    read_spectrum,
    trace_command,
)
from runners.toolchains import toolchain_paths
from runners.workspace import private_folder

SHAPES = """\
class Shapes:
    def area(self, kind, size):
        return getattr(self, "area_" + kind)(size)

    def area_square(self, size):
        return size * size

    def area_cube(self, size):
        return size * size * size + 1
"""
# line 9 (`area_cube`) is the bug: only the failing test reaches it, through getattr.

TESTS = """\
import sys
from shapes import Shapes


def test_square():
    assert Shapes().area("square", 3) == 9


def test_cube():
    assert Shapes().area("cube", 2) == 8


def test_settrace_none():
    sys.settrace(None)
    assert Shapes().area("square", 2) == 4


def test_own_tracer_left_installed():
    sys.settrace(lambda frame, event, arg: None)


def test_cube_again():
    assert Shapes().area("cube", 3) == 27
"""

CONFTEST = """\
import sys

def _outer(frame, event, arg):
    return None

def pytest_configure(config):
    sys.settrace(_outer)  # stands in for coverage.py's tracer

def pytest_sessionfinish(session, exitstatus):
    with open("restored.txt", "w") as f:
        f.write(str(sys.gettrace() is _outer))
"""


def _pytest(command: str, framework: str = "pytest", workdir: str = "") -> ResolvedCommand:
    return ResolvedCommand(command=command, source="flag", framework=framework, workdir=workdir)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("command", "framework", "traced"),
    [
        ("python -m pytest -q", "pytest", "python -m pytest -q -p arcs_spectrum"),
        ("pip install -e . && pytest tests", "pytest", "pip install -e . && pytest tests -p arcs_spectrum"),
        ("pytest -q | tee log.txt", "pytest", None),
        ("cd sub && pytest", "pytest", None),
        # The command's own PYTHONPATH keeps the plugin's folder (ResolvedCommand.shell, #23).
        ("PYTHONPATH=src pytest", "pytest", "PYTHONPATH=src pytest -p arcs_spectrum"),
        ("python -m unittest -v", "unittest", None),
        ("go test ./...", "go", None),
    ],
)
def test_which_commands_are_traced(command: str, framework: str, traced: str | None) -> None:
    got = trace_command(_pytest(command, framework))
    if traced is None:
        assert got is None
        return
    assert got is not None
    folder = f'"$ARCS_PRIVATE/{TRACE_DIR}"'
    prefix = (
        f'export PYTHONPATH={folder}"${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'ARCS_PYTHONPATH={folder}"${{ARCS_PYTHONPATH:+:$ARCS_PYTHONPATH}}" {ROOT_ENV}="$PWD"; '
    )
    assert got.command == prefix + traced
    if "PYTHONPATH=src" in command:  # the user's own PYTHONPATH keeps the plugin's folder (#23)
        assert 'PYTHONPATH=src"${ARCS_PYTHONPATH:+:$ARCS_PYTHONPATH}" pytest' in got.shell


def test_a_workdir_finds_the_plugin_at_the_workspace_root() -> None:
    got = trace_command(_pytest("pytest", workdir="pkg/sub"))
    assert got is not None and f'{ROOT_ENV}="$PWD/../.."; ' in got.command
    assert trace_command(_pytest("pytest", workdir="../x")) is None


def test_deselecting_quotes_the_ids() -> None:
    got = deselecting(_pytest("pytest -q"), ["t.py::test_a[x y]"])
    assert got.command == "pytest -q --deselect 't.py::test_a[x y]'"


def _doc(**over: object) -> bytes:
    doc: dict[str, object] = {
        "v": 1, "complete": True, "failed": 1, "passed": 2, "skipped": 0, "disturbed": 0,
        "dropped": 0, "files": {"a.py": [3, 1, 0, 4, 1, 2]},
    }  # fmt: skip
    doc.update(over)
    return json.dumps(doc).encode()


def test_parse_reads_the_compact_triples() -> None:
    got = parse_spectrum(_doc())
    assert (got.failed, got.passed, got.complete, got.note) == (1, 2, True, "")
    assert got.lines == {"a.py": {3: (1, 0), 4: (1, 2)}}


@pytest.mark.parametrize(
    ("data", "note"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "unknown format"),
        (_doc(v=2), "unknown format"),
        (b"[" * 100_000, "not JSON"),
        (b" " * (MAX_BYTES * 2), "larger than"),
    ],
)
def test_parse_malformed_output_gives_a_note_not_a_crash(data: bytes, note: str) -> None:
    got = parse_spectrum(data)
    assert note in got.note and got.lines == {} and not got.complete


def test_parse_skips_bad_entries_and_escaping_paths() -> None:
    files = {
        "../etc/passwd": [1, 1, 0],
        "/abs.py": [1, 1, 0],
        "ok.py": [1, 1, 0, 2, 0, 5, 3, "x", 1],
        "odd.py": [1],
    }
    got = parse_spectrum(_doc(files=files, failed=-3, complete="yes"))
    assert got.lines == {"ok.py": {1: (1, 0)}}
    assert got.note == "5 malformed spectrum entries skipped"
    assert got.failed == 0 and not got.complete


def test_read_spectrum_adds_up_workers_and_refuses_symlinks_out(tmp_path: Path) -> None:
    assert read_spectrum(tmp_path) is None  # no folder yet
    install(tmp_path)
    folder = tmp_path / TRACE_DIR
    assert read_spectrum(tmp_path) is None  # nothing written yet
    (folder / "spectrum.json").write_bytes(_doc(failed=0, passed=0, files={}))
    (folder / "spectrum-gw0.json").write_bytes(_doc())
    (folder / "spectrum-gw1.json").write_bytes(_doc(complete=False, files={"a.py": [3, 2, 1]}))
    secret = tmp_path.parent / f"{tmp_path.name}-secret.json"
    secret.write_bytes(_doc(files={"secret.py": [1, 1, 0]}))
    (folder / "spectrum-gw2.json").symlink_to(secret)
    os.mkfifo(folder / "spectrum-gw3.json")  # never waited for
    got = read_spectrum(tmp_path)
    assert got is not None
    assert (got.failed, got.passed, got.complete) == (2, 4, False)
    assert got.lines == {"a.py": {3: (3, 1), 4: (1, 2)}}


def _traced_run(repo: Path, private: Path, timeout_s: float = 120) -> None:
    command = trace_command(_pytest(f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:randomly"))
    assert command is not None
    run_in_workspace(
        UnsafeLocalRunner(toolchain_paths=toolchain_paths()),
        repo,
        command,
        timeout_s=timeout_s,
        private=private,
    )


def test_the_plugin_counts_lines_and_survives_tests_that_call_settrace(tmp_path: Path) -> None:
    (tmp_path / "shapes.py").write_text(SHAPES)
    (tmp_path / "test_shapes.py").write_text(TESTS)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    with private_folder(tmp_path.parent / f"{tmp_path.name}-ws") as private:
        install(private)
        _traced_run(tmp_path, private)
        got = read_spectrum(private)
    assert got is not None and got.complete and got.note == ""
    assert (got.failed, got.passed) == (2, 3)
    assert got.lines["shapes.py"][9] == (2, 0)  # the bug, reached only through getattr
    # The dispatch: test_square ran it too; test_settrace_none turned tracing off before it.
    assert got.lines["shapes.py"][3] == (2, 1)
    assert 6 not in got.lines["shapes.py"]  # only passing tests ran area_square's body
    assert got.disturbed == 2
    # The trace function active before the run (coverage.py's, say) is back after it.
    assert (tmp_path / "restored.txt").read_text() == "True"
    assert not any(".arcs" in p for p in got.lines)


def test_oversized_output_keeps_the_most_suspicious_lines(tmp_path: Path) -> None:
    shared = "".join(f"    x{i} = {i}\n" for i in range(4000))  # lines 2-4001: both tests run them
    (tmp_path / "big.py").write_text(
        f"def run(bad):\n{shared}    if bad:\n        return False\n    return True\n"
    )
    tests = "from big import run\n\n\ndef test_bad():\n    assert run(True)\n\n\ndef test_good():\n    assert run(False)\n"
    (tmp_path / "test_big.py").write_text(tests)
    with private_folder(tmp_path.parent / f"{tmp_path.name}-ws") as private:
        install(private)
        plugin = private / TRACE_DIR / "arcs_spectrum.py"
        plugin.write_text(plugin.read_text().replace(f"_MAX = {MAX_BYTES}", "_MAX = 2000"))
        _traced_run(tmp_path, private)
        assert (private / TRACE_DIR / "spectrum.json").stat().st_size <= 2000
        got = read_spectrum(private)
    assert got is not None and got.complete and got.dropped > 3500
    assert got.lines["big.py"][4003] == (1, 0)  # `return False`: only the failing test ran it
    assert got.lines["test_big.py"][5] == (1, 0)
    assert sum(len(by_line) for by_line in got.lines.values()) < 300
