"""TAP output (tape, tap, plain TAP producers) read into per-test outcomes.

The samples in tests/fixtures/outputs/ are real output: tape 5.9.0 under node 20 (``tape_*``),
and small node scripts printing TAP the way ``tap --bail``, a process that stops early, and
``tap`` >= 15 subtests do (``tap_*``). On the code before this parser, ``tape``'s output was
unread: the run was one synthetic ``<run>`` error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.base import Execution
from runners.commands import resolve_test_command
from runners.results import (
    TestFailure,
    TestResult,
    TestRun,
    compare,
    framework_of_command,
    localize,
    parse_node_tap,
    parse_output,
    parse_text,
)

OUTPUTS = Path(__file__).resolve().parent.parent / "fixtures" / "outputs"
TAPE = "node_modules/.bin/tape 'test/**/*.js'"


def read(name: str) -> str:
    return (OUTPUTS / name).read_text(encoding="utf-8")


def run_of(name: str, exit_code: int, command: str = TAPE) -> TestRun:
    execution = Execution(command=command, exit_code=exit_code, stdout=read(name), stderr="", duration_s=1.0)
    return parse_output(execution, framework_of_command(command))


def outcomes(run: TestRun) -> dict[str, str]:
    return {r.id: r.outcome for r in run.results}


def failure_of(run: TestRun, test_id: str) -> TestFailure:
    got = next(r for r in run.results if r.id == test_id)
    assert got.failure is not None
    return got.failure


@pytest.mark.parametrize(
    ("command", "framework"),
    [
        (TAPE, "tap"),
        ("npx tape test/*.js", "tap"),
        ("tap test/", "tap"),
        ("cd pkg && tape test.js | tap-spec", "tap"),
        ("node --test --test-reporter tap", "node"),  # node keeps its own parser
        ("python -m pytest", "pytest"),
    ],
)
def test_the_command_table_maps_tap_runners(command: str, framework: str) -> None:
    assert framework_of_command(command) == framework


def test_tape_tests_are_the_comment_names_with_their_assertions() -> None:
    run = run_of("tape_fail.txt", 1)
    assert outcomes(run) == {
        "add": "failed",
        "mul": "passed",
        "nested": "passed",
        "inner": "failed",
        "skipped one": "skipped",
        "mul #2": "passed",  # the same name in a second file: numbered in order of appearance
        "todo thing": "skipped",  # a failing TODO assertion is not a failure
        "throws inside": "failed",
    }
    assert run.errors == () and run.source == "text" and run.framework == "tap"


def test_tape_failure_has_message_and_location_from_the_yaml_block() -> None:
    run = run_of("tape_fail.txt", 1)
    got = failure_of(run, "add")
    assert got.type == "AssertionError"
    assert got.message == "adds small numbers\nexpected: 3\nactual: -1"
    # tape's own frames (node_modules) and node internals are dropped.
    assert [(f.file, f.line) for f in got.frames] == [("/tmp/h12/js/test/calc.js", 6)]
    local = localize(run, ["test/calc.js", "test/more.js", "src/calc.js"], roots=("/tmp/h12/js",))
    assert (failure_of(local, "throws inside").file, failure_of(local, "throws inside").line) == (
        "test/more.js",
        16,
    )


def test_ids_are_stable_from_failing_to_passing_so_a_fix_is_seen() -> None:
    baseline = run_of("tape_fail.txt", 1)
    candidate = run_of("tape_pass.txt", 0)
    assert candidate.ok and candidate.errors == ()
    cmp = compare(baseline, candidate, targets=["add", "inner"])
    assert cmp.fixed == ("add", "inner") and cmp.ok


def test_a_crash_mid_run_is_an_error_and_later_tests_are_unknown() -> None:
    run = run_of("tape_crash.txt", 1)
    got = outcomes(run)
    assert got["before crash"] == "passed" and got["crashes"] == "error"
    assert "after crash" not in got  # never reported: unknown, not passed
    crash = failure_of(run, "crashes")
    assert (crash.type, crash.message) == ("TypeError", "Cannot read properties of null (reading 'size')")
    assert (crash.file, crash.line) == ("/tmp/h12/js/test/zcrash.js", 12)
    assert [(e.id, e.type) for e in run.errors] == [("<run>", "tap-crash")]


def test_a_crash_regresses_tests_that_did_not_report() -> None:
    crashed = run_of("tape_crash.txt", 1)
    passed_before = ["add", "mul", "nested", "inner", "before crash", "crashes", "after crash"]
    before = TestRun(
        command=TAPE,
        exit_code=0,
        duration_s=1.0,
        results=tuple(TestResult(i, "passed") for i in passed_before),
    )
    cmp = compare(before, crashed, targets=[])
    assert set(cmp.regressions) == {"crashes", "after crash"}


def test_a_bail_out_is_a_run_error_and_the_rest_is_unknown() -> None:
    run = run_of("tap_bail.txt", 1, "tap --bail")
    assert outcomes(run) == {"connects": "passed", "reads config": "failed"}
    assert failure_of(run, "reads config").message == "config file missing"
    assert [(e.id, e.type, e.message) for e in run.errors] == [
        ("<run>", "tap-bail", "Bail out! config file missing")
    ]


def test_a_stream_that_stops_before_its_plan_never_reads_as_a_pass() -> None:
    # The process exited 0 after 1 of 3 planned points.
    run = run_of("tap_truncated.txt", 0, "node test/run.js")
    assert outcomes(run) == {"first": "passed"}
    assert not run.ok
    assert [(e.id, e.type) for e in run.errors] == [("<run>", "tap-truncated")]
    assert "1 of 3 planned" in run.errors[0].message


def test_tap_subtests_are_tests_and_their_assertions_fold_into_them() -> None:
    run = run_of("tap_nested.txt", 1, "tap")
    assert outcomes(run) == {
        "test/calc.js add": "failed",
        "test/calc.js mul": "passed",
        "test/calc.js slow one": "skipped",
    }
    got = failure_of(run, "test/calc.js add")
    assert got.message == "should be equal\nwanted: 3\nfound: -1"
    assert (got.file, got.line) == ("test/calc.js", 9)


def test_tap_output_is_detected_without_a_hint_and_node_tap_keeps_its_parser() -> None:
    assert {r.id for r in parse_text(read("tape_fail.txt")).results} >= {"add", "inner"}
    node = parse_text(read("node_tap.txt"))
    assert "adds small numbers" in {r.id for r in node.results}
    assert [e.type for e in node.errors] == ["load"]  # complete: no run-level error added


def test_node_tap_cut_before_its_plan_gets_a_run_error() -> None:
    text = read("node_tap.txt")
    cut = text[: text.index("\n1..")]
    parsed = parse_node_tap(cut)
    assert [(e.id, e.type) for e in parsed.errors][-1] == ("<run>", "tap-truncated")


def test_an_npm_test_script_running_tape_reads_tap(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"scripts": {"test": "tape test/*.js"}}')
    resolved = resolve_test_command(tmp_path, explicit="npm test")
    assert resolved.framework == "tap" and resolved.report == "text"
