"""``setup:`` installs into an environment of its own inside the workspace (#23), and a failed
setup says why: the real error line, a refused download with its whole hint."""

from __future__ import annotations

import pytest

from runners.commands import resolve_test_command
from runners.config import RepoConfig
from runners.egress import EgressPolicy
from runners.environment import diagnose
from runners.execute import run_tests
from runners.results import TestFailure, TestRun
from runners.sandbox import LocalSandbox
from runners.toolchains import toolchain_paths
from tests.conftest import MakeRepo, sandbox_works

needs_sandbox = pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")

PROJECT = {
    "pyproject.toml": (
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "minipkg"\nversion = "0.1.0"\n'
    ),
    "src/minipkg/__init__.py": "def add(a, b):\n    return a + b\n",
    "tests/test_add.py": (
        "import importlib.metadata\nfrom minipkg import add\n\n\n"
        "def test_installed():\n    assert importlib.metadata.version('minipkg') == '0.1.0'\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n"
    ),
}


def _offline() -> LocalSandbox:
    # No network: the setup below needs none (setuptools comes from the sandbox's Python).
    return LocalSandbox(toolchain_paths=toolchain_paths(environ={}), setup_network=EgressPolicy(mode="none"))


@needs_sandbox
def test_pip_install_e_installs_into_the_workspace_environment(make_repo: MakeRepo) -> None:
    repo = make_repo(PROJECT)
    setup = "pip install --no-index --no-deps --no-build-isolation -e ."
    resolved = resolve_test_command(repo, explicit="python -m pytest", config=RepoConfig(setup=setup))
    run = run_tests(_offline(), repo, resolved, timeout_s=180)
    assert run.environment == "", run.environment
    assert sorted(run.passed_ids) == ["tests/test_add.py::test_add", "tests/test_add.py::test_installed"]


@needs_sandbox
def test_the_parents_console_scripts_run_in_the_workspace_environment(make_repo: MakeRepo) -> None:
    """`pytest` (the script of the toolchain's venv) must see what setup installed."""
    repo = make_repo(PROJECT)
    setup = "python -m pip install --no-index --no-deps --no-build-isolation -e ."
    resolved = resolve_test_command(repo, explicit="pytest", config=RepoConfig(setup=setup))
    run = run_tests(_offline(), repo, resolved, timeout_s=180)
    assert run.environment == "" and run.failed_ids == []
    assert "tests/test_add.py::test_installed" in run.passed_ids


@needs_sandbox
def test_npm_ci_still_works(make_repo: MakeRepo) -> None:
    repo = make_repo(
        {
            "package.json": '{"name": "n", "version": "1.0.0", "scripts": {"test": "node --test"}}',
            "package-lock.json": (
                '{"name": "n", "version": "1.0.0", "lockfileVersion": 3, "requires": true, '
                '"packages": {"": {"name": "n", "version": "1.0.0"}}}'
            ),
            "add.test.js": (
                "const test = require('node:test'); const assert = require('node:assert');\n"
                "test('adds', () => { assert.strictEqual(1 + 1, 2); });\n"
            ),
        }
    )
    resolved = resolve_test_command(repo, config=RepoConfig(setup="npm ci"))
    run = run_tests(_offline(), repo, resolved, timeout_s=180)
    assert run.environment == "" and run.exit_code == 0


@needs_sandbox
def test_a_failed_pip_install_names_pips_error(make_repo: MakeRepo) -> None:
    repo = make_repo(PROJECT)
    setup = "pip install --no-index nosuchpkg-arcs-test; echo '[notice] a new release of pip is available' >&2; false"
    resolved = resolve_test_command(repo, explicit="python -m pytest", config=RepoConfig(setup=setup))
    run = run_tests(_offline(), repo, resolved, timeout_s=180)
    assert (
        "ERROR: Could not find a version that satisfies the requirement nosuchpkg-arcs-test"
        in run.environment
    )
    assert "[notice]" not in run.environment


def _setup_failed(output: str) -> TestRun:
    tail = "\n".join(output.splitlines()[-8:])
    error = TestFailure("<setup>", type="setup", message=f"setup failed (exit code 1)\n{tail}")
    return TestRun(command="pytest", exit_code=1, duration_s=1.0, errors=(error,))


PIP_OUTPUT = """\
Collecting nosuchpkg
ERROR: Could not find a version that satisfies the requirement nosuchpkg (from versions: none)
ERROR: No matching distribution found for nosuchpkg

[notice] A new release of pip is available: 23.2.1 -> 24.0
[notice] To update, run: pip install --upgrade pip
"""

REFUSED = (
    "arcs: setup network refused CONNECT pypi.org:443: pypi.org resolves to 203.0.113.80, private "
    "(only the operator can allow it, by naming exactly pypi.org:443 in ARCS_SETUP_NETWORK_ALLOW)"
)


def test_the_cause_of_a_failed_setup_is_pips_error_not_its_last_line() -> None:
    problem = diagnose(_setup_failed(PIP_OUTPUT), output=PIP_OUTPUT, command="pytest")
    assert problem is not None and problem.key == "setup"
    assert problem.what.endswith(
        ": ERROR: Could not find a version that satisfies the requirement nosuchpkg (from versions: none)"
    )
    assert "notice" not in problem.line


def test_a_refused_download_says_the_variable_to_set() -> None:
    output = "ERROR: Could not find a version that satisfies the requirement setuptools>=40.8.0\n" + REFUSED
    problem = diagnose(_setup_failed(output), output=output, command="pytest")
    assert problem is not None
    assert "refused CONNECT pypi.org:443" in problem.line
    assert problem.line.endswith(
        "only the operator can allow it, by naming exactly pypi.org:443 in ARCS_SETUP_NETWORK_ALLOW"
    )
    assert " in ;" not in problem.line


def test_npm_errors_skip_the_code_and_log_lines() -> None:
    output = (
        "npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/nosuch - Not found\n"
        "npm ERR! A complete log of this run can be found in: /home/sandbox/.npm/_logs/x.log\n"
    )
    problem = diagnose(_setup_failed(output), output=output, command="npm test")
    assert problem is not None and "404 Not Found - GET https://registry.npmjs.org/nosuch" in problem.line


def test_a_long_cause_is_cut_at_a_word() -> None:
    line = "ERROR: " + " ".join(["word"] * 200)
    problem = diagnose(_setup_failed(line), output=line, command="pytest")
    assert problem is not None and "… ;" not in problem.line and problem.what.endswith("word …")
