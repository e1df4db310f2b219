"""ARCS's own PYTHONPATH and pytest plugins survive any form of the user's test command (#23).

The sandboxed tests run the real command in bubblewrap on a src-layout repository: before #23,
``PYTHONPATH=src python -m pytest`` replaced the folder of ARCS's hang probe and the run ended as an
``environment`` problem ("the third-party module `arcs_hang_probe` is not installed").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.commands import resolve_test_command
from runners.execute import run_tests
from runners.hang import HangProbe
from runners.sandbox import LocalSandbox
from runners.shellenv import export_pythonpath, keep_pythonpath
from runners.toolchains import toolchain_paths
from tests.conftest import MakeRepo, sandbox_works

needs_sandbox = pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")

SRC_LAYOUT = {
    "pyproject.toml": '[project]\nname = "minipkg"\nversion = "0.1.0"\n',
    "src/minipkg/__init__.py": "def add(a, b):\n    return a - b\n",
    "tests/test_add.py": (
        "from minipkg import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n"
    ),
}

FORMS = [
    "PYTHONPATH=src python -m pytest",
    "env PYTHONPATH=src python -m pytest",
    "env PYTHONPATH=src pytest",
    "export PYTHONPATH=src; python -m pytest",
    "PYTHONPATH=src pytest -p no:cacheprovider",
    "PYTHONPATH=src python -m pytest -o addopts=",
    "nice -n 1 env PYTHONPATH=src python -m pytest -p no:randomly",
    "env -i PATH=/usr/bin:/bin PYTHONPATH=src python -m pytest",
    "python -m pytest",
    "pytest",
]


def _runner() -> LocalSandbox:
    return LocalSandbox(toolchain_paths=toolchain_paths(environ={}))


@needs_sandbox
@pytest.mark.parametrize("form", FORMS)
def test_every_command_form_runs_the_tests_with_the_probe(make_repo: MakeRepo, form: str) -> None:
    repo = make_repo(SRC_LAYOUT)
    if form.startswith("env -i"):
        # The cleared environment needs the sandbox's Python on its PATH.
        form = form.replace("PATH=/usr/bin:/bin", f"PATH={Path(_runner().path.split(':')[0])}")
    resolved = resolve_test_command(repo, explicit=form)
    run = run_tests(_runner(), repo, resolved, timeout_s=120, hang_probe=HangProbe())
    assert run.environment == ""
    assert run.failed_ids == ["tests/test_add.py::test_add"]
    assert run.passed_ids == ["tests/test_add.py::test_zero"]


@needs_sandbox
def test_the_hang_probe_still_stops_a_hang_under_the_users_pythonpath(make_repo: MakeRepo) -> None:
    files = {**SRC_LAYOUT, "tests/test_hang.py": "def test_hangs():\n    while True:\n        pass\n"}
    repo = make_repo(files)
    resolved = resolve_test_command(repo, explicit="PYTHONPATH=src python -m pytest")
    run = run_tests(_runner(), repo, resolved, timeout_s=60, hang_probe=HangProbe(probe_s=1.0))
    assert run.environment == ""
    assert run.killed_by == "timeout" and run.hang_s > 0
    hung = [r for r in run.results if r.failure is not None and r.failure.type == "timeout"]
    assert [r.id for r in hung] == ["tests/test_hang.py::test_hangs"]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("PYTHONPATH=src pytest", 'PYTHONPATH=src"${ARCS_PYTHONPATH:+:$ARCS_PYTHONPATH}" pytest'),
        (
            "env PYTHONPATH=src pytest -q",
            'env PYTHONPATH=src"${ARCS_PYTHONPATH:+:$ARCS_PYTHONPATH}" pytest -q',
        ),
        ("PYTHONPATH= pytest", 'PYTHONPATH="$ARCS_PYTHONPATH" pytest'),
        (
            "export PYTHONPATH='a b'; pytest",
            "export PYTHONPATH='a b'\"${ARCS_PYTHONPATH:+:$ARCS_PYTHONPATH}\"; pytest",
        ),
        (
            "timeout 60 env -u PYTHONPATH pytest 2>&1 | tee log",
            'timeout 60 env -u PYTHONPATH "PYTHONPATH=$ARCS_PYTHONPATH" pytest 2>&1 | tee log',
        ),
        # Not assignments: left alone.
        ("python -m pytest", "python -m pytest"),
        ('echo "PYTHONPATH=x" && pytest', 'echo "PYTHONPATH=x" && pytest'),
        ("nice PYTHONPATH=x pytest", "nice PYTHONPATH=x pytest"),
    ],
)
def test_keep_pythonpath_rewrites_only_the_users_assignments(command: str, expected: str) -> None:
    assert keep_pythonpath(command) == expected


def test_env_i_keeps_arcs_variables() -> None:
    got = keep_pythonpath("env -i PATH=/usr/bin pytest")
    assert got.startswith('env -i "ARCS_PYTHONPATH=$ARCS_PYTHONPATH"')
    assert '"ARCS_HANG_LOG=$ARCS_HANG_LOG"' in got and '"PYTHONPATH=$ARCS_PYTHONPATH"' in got
    assert got.endswith("PATH=/usr/bin pytest")


def test_export_pythonpath_refuses_odd_folder_names() -> None:
    assert export_pythonpath(["src", "../up", "a;b", "/abs"]) == (
        'export ARCS_PYTHONPATH="$PWD/src${ARCS_PYTHONPATH:+:$ARCS_PYTHONPATH}" '
        'PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"; '
    )
    assert export_pythonpath([]) == ""
