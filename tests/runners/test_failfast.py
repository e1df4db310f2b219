"""The fail-fast table and the diagnosis command without fail-fast flags (runners.failfast)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.failfast import FAIL_FAST_FLAGS, flags_of, without_fail_fast


@pytest.mark.parametrize(
    ("command", "framework", "diagnosis", "removed"),
    [
        ("python -m pytest -q -x tests/test_x.py", "pytest", "python -m pytest -q tests/test_x.py", ("-x",)),
        ("pytest --exitfirst tests", "pytest", "pytest tests", ("--exitfirst",)),
        ("pytest --maxfail 3 tests", "pytest", "pytest tests", ("--maxfail", "3")),
        ("pytest --maxfail=2 tests", "pytest", "pytest tests", ("--maxfail=2",)),
        ("pytest -xq tests", "pytest", "pytest -q tests", ("-x",)),
        ("pytest -vx", "pytest", "pytest -v", ("-x",)),
        ("pytest --sw", "pytest", "pytest", ("--sw",)),
        ("python -m unittest -f discover", "unittest", "python -m unittest discover", ("-f",)),
        ("python -m unittest --failfast", "unittest", "python -m unittest", ("--failfast",)),
        ("npx jest --bail", "jest", "npx jest", ("--bail",)),
        ("npx jest -b src", "jest", "npx jest src", ("-b",)),
        ("jest --bail=2", "jest", "jest", ("--bail=2",)),
        ("jest --bail 2 src", "jest", "jest src", ("--bail", "2")),
        ("npx mocha --bail test/", None, "npx mocha test/", ("--bail",)),
        ("mocha -b", None, "mocha", ("-b",)),
        ("npx vitest run --bail 1", "vitest", "npx vitest run", ("--bail", "1")),
        ("vitest run --bail=1", "vitest", "vitest run", ("--bail=1",)),
        ("go test -failfast ./...", "go", "go test ./...", ("-failfast",)),
        ("mvn -ff -q test", "maven", "mvn -q test", ("-ff",)),
        ("mvn --fail-fast test", "maven", "mvn test", ("--fail-fast",)),
        ("./gradlew test --fail-fast", "gradle", "./gradlew test", ("--fail-fast",)),
        ("pip install -e . && pytest -x", "pytest", "pip install -e . && pytest", ("-x",)),
    ],
)
def test_each_fail_fast_flag_is_removed(
    command: str, framework: str | None, diagnosis: str, removed: tuple[str, ...]
) -> None:
    got = without_fail_fast(command, framework)
    assert got.command == diagnosis
    assert got.removed == removed and got.complete and got.changed


def test_value_options_that_look_like_flags_are_kept() -> None:
    # -k takes a value: "x" is its expression, not --exitfirst.
    assert without_fail_fast("pytest -kx tests", "pytest").command == "pytest -kx tests"
    assert not without_fail_fast("pytest -q tests", "pytest").changed
    # After `-args` the flags belong to the go test binary.
    assert without_fail_fast("go test ./... -args -failfast", "go").command == "go test ./... -args -failfast"


def test_cargo_stops_at_the_first_failing_binary_by_default() -> None:
    got = without_fail_fast("cargo test --workspace", "cargo")
    assert got.command == "cargo test --no-fail-fast --workspace" and got.added == ("--no-fail-fast",)
    assert not without_fail_fast("cargo test --no-fail-fast", "cargo").changed


def test_every_runner_of_the_issue_is_in_the_table() -> None:
    table = {(f.runner, f.flag) for f in FAIL_FAST_FLAGS}
    for runner, flag in [
        ("pytest", "-x"),
        ("pytest", "--exitfirst"),
        ("pytest", "--maxfail"),
        ("jest", "--bail"),
        ("jest", "-b"),
        ("mocha", "--bail"),
        ("mocha", "-b"),
        ("vitest", "--bail"),
        ("go", "-failfast"),
        ("maven", "-ff"),
        ("maven", "--fail-fast"),
    ]:
        assert (runner, flag) in table
    assert {f.flag for f in flags_of("vitest")} == {"--bail"}


def test_what_cannot_be_removed_is_reported_incomplete(tmp_path: Path) -> None:
    piped = without_fail_fast("pytest -x | tee log.txt", "pytest")
    assert piped.command == "pytest -x | tee log.txt" and not piped.complete
    (tmp_path / "package.json").write_text('{"scripts": {"test": "jest --bail"}}', encoding="utf-8")
    script = without_fail_fast("npm test", "jest", root=tmp_path)
    assert script.command == "npm test" and not script.complete and "package.json" in script.note


def test_pytest_addopts_fail_fast_is_overridden(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -x -q\n", encoding="utf-8")
    got = without_fail_fast("python -m pytest", "pytest", root=tmp_path)
    assert got.command == "python -m pytest --maxfail=0" and got.added == ("--maxfail=0",) and got.complete
