"""Environment failures are recognised from a test run (runners.environment)."""

from __future__ import annotations

from runners.environment import diagnose
from runners.results import TestFailure, TestResult, TestRun


def _run(
    exit_code: int, *, errors: tuple[TestFailure, ...] = (), results: tuple[TestResult, ...] = ()
) -> TestRun:
    return TestRun(command="cmd", exit_code=exit_code, duration_s=0.1, errors=errors, results=results)


def test_a_missing_command() -> None:
    problem = diagnose(_run(127), output="/bin/sh: 1: nosuchcmd: not found\n", command="nosuchcmd --x")
    assert problem is not None and problem.key == "test"
    assert "`nosuchcmd` was not found" in problem.line and "`test:` in .arcs.yml" in problem.line


def test_a_missing_runner_module() -> None:
    out = "/usr/bin/python3: No module named nosuchrunner\n"
    problem = diagnose(_run(1), output=out, command="python -m nosuchrunner")
    assert problem is not None and problem.key == "setup" and "`nosuchrunner`" in problem.line


def test_a_missing_third_party_module_but_not_a_repository_one() -> None:
    error = TestFailure("tests/test_a.py", type="ImportError", message="No module named 'requests'")
    problem = diagnose(
        _run(2, errors=(error,)), output="", command="pytest", repo_files=["inventory/core.py"]
    )
    assert problem is not None and "`requests`" in problem.line and "`setup:`" in problem.line
    # A module of the repository (or a near miss of one, or of the standard library) is a code bug.
    for missing in ("inventory.missing", "inventroy", "jsonn"):
        err = TestFailure("tests/test_a.py", type="ImportError", message=f"No module named '{missing}'")
        assert (
            diagnose(_run(2, errors=(err,)), output="", command="pytest", repo_files=["inventory/core.py"])
            is None
        )


def test_node_missing_package() -> None:
    failure = TestFailure("t.test.js::x", type="Error", message="Cannot find module 'lodash'")
    run = _run(1, results=(TestResult("t.test.js::x", "failed", failure=failure),))
    problem = diagnose(run, output="", command="node --test", repo_files=["src/a.js"])
    assert problem is not None and "`lodash`" in problem.line
    relative = TestFailure("t.test.js::x", type="Error", message="Cannot find module './missing'")
    run = _run(1, results=(TestResult("t.test.js::x", "failed", failure=relative),))
    assert diagnose(run, output="", command="node --test") is None


def test_a_failed_setup_step() -> None:
    error = TestFailure("<setup>", type="setup", message="setup failed (exit code 1)\nERROR: no such package")
    problem = diagnose(_run(1, errors=(error,)), output="", command="pytest")
    assert problem is not None and problem.key == "setup" and "no such package" in problem.line


def test_ordinary_failures_are_not_environment_problems() -> None:
    failure = TestFailure("tests/test_a.py::t", type="AssertionError", message="assert 1 == 2")
    run = _run(1, results=(TestResult("tests/test_a.py::t", "failed", failure=failure),))
    assert diagnose(run, output="1 failed", command="pytest") is None


def test_a_handled_missing_module_inside_a_code_failure_is_the_codes() -> None:
    """markdown looks an extension up as a top-level module first and handles the
    ModuleNotFoundError; a bug in the handler fails the tests with a TypeError whose chained
    traceback (and the output) still says ``No module named 'footnotes'``."""
    chained = (
        "ModuleNotFoundError: No module named 'footnotes'\n\nDuring handling of the above exception, "
        "another exception occurred:\n...\nTypeError: unsupported operand type(s) for -: 'tuple' and 'tuple'"
    )
    failure = TestFailure("tests/test_ext.py::t", type="TypeError", message=chained)
    run = _run(1, results=(TestResult("tests/test_ext.py::t", "failed", failure=failure),))
    assert diagnose(run, output=chained, command="pytest", repo_files=["markdown/core.py"]) is None
    # The same import failing the test itself is still the environment's.
    failed = TestFailure(
        "tests/test_ext.py::t", type="ModuleNotFoundError", message="No module named 'footnotes'"
    )
    run = _run(1, results=(TestResult("tests/test_ext.py::t", "failed", failure=failed),))
    problem = diagnose(run, output=chained, command="pytest", repo_files=["markdown/core.py"])
    assert problem is not None and "`footnotes`" in problem.line


def test_the_package_under_test_that_cannot_be_imported() -> None:
    """In the repository but not on the import path (#23): the environment's, naming where it is."""
    error = TestFailure("tests/test_a.py", type="ModuleNotFoundError", message="No module named 'minipkg'")
    files = ["lib/minipkg/__init__.py", "lib/minipkg/core.py", "tests/test_a.py"]
    problem = diagnose(_run(2, errors=(error,)), output="", command="pytest", repo_files=files)
    assert problem is not None and problem.key == "setup"
    assert "the package under test `minipkg` (lib/minipkg) cannot be imported" in problem.line
    assert "pip install -e ." in problem.line
    sub = TestFailure("tests/test_a.py", type="ModuleNotFoundError", message="No module named 'minipkg.core'")
    problem = diagnose(_run(2, errors=(sub,)), output="", command="pytest", repo_files=files)
    assert problem is not None and "`minipkg.core` (lib/minipkg/core.py)" in problem.line


def test_its_missing_metadata() -> None:
    error = TestFailure(
        "tests/test_a.py",
        type="importlib.metadata.PackageNotFoundError",
        message="No package metadata was found for minipkg",
    )
    problem = diagnose(_run(2, errors=(error,)), output="", command="pytest", repo_files=["minipkg/a.py"])
    assert (
        problem is not None
        and "`minipkg` is not installed" in problem.line
        and "pip install -e ." in problem.line
    )


def test_a_suite_that_collects_no_tests() -> None:
    out = "collected 0 items\n\n============================ no tests ran in 0.01s ============================\n"
    exit_error = TestFailure("<run>", type="exit", message="exit code 5")
    problem = diagnose(_run(5, errors=(exit_error,)), output=out, command="pytest")
    assert problem is not None and problem.key == "test"
    assert problem.line.startswith("the test command ran no tests (collected 0 items)")
    deselected = "collected 4 items / 4 deselected / 0 selected\n"
    problem = diagnose(_run(5, errors=(exit_error,)), output=deselected, command="pytest -k x")
    assert problem is not None and "4 deselected" in problem.line
    assert diagnose(_run(0), output="Ran 0 tests in 0.000s\n\nOK\n", command="python -m unittest") is not None
    # A collection error is not "no tests": the import diagnosis (or the repair) takes it.
    broken = TestFailure("tests/test_a.py", type="SyntaxError", message="invalid syntax")
    assert (
        diagnose(_run(2, errors=(broken,)), output="collected 0 items / 1 error\n", command="pytest") is None
    )
