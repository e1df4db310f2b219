"""mocha read per test: real output of mocha 12.0.3 (spec and tap reporters), node 20."""

from __future__ import annotations

from pathlib import Path

from runners.base import Execution
from runners.frameworks.mocha import parse_mocha_text
from runners.results import framework_of_command, parse_output

OUTPUTS = Path(__file__).resolve().parents[2] / "fixtures" / "outputs"


def read(name: str) -> str:
    return (OUTPUTS / name).read_text(encoding="utf-8")


def outcomes(text: str) -> dict[str, str]:
    return {r.id: r.outcome for r in parse_mocha_text(text).results}


def test_spec_reporter_per_test_with_message_and_frames() -> None:
    # sprintf-js 1.1.1 with `.toString(16)` -> `.toString(15)` in src/sprintf.js.
    parsed = parse_mocha_text(read("mocha12_spec_sprintf.txt"))
    failed = [r for r in parsed.results if r.outcome == "failed"]
    assert [r.id for r in failed] == ["sprintfjs should return formated strings for simple placeholders"]
    failure = failed[0].failure
    assert failure is not None
    assert (failure.file, failure.line, failure.type) == ("test/test.js", 30, "AssertionError")
    assert failure.message.splitlines()[0] == "'ff' == '120'"
    assert len([r for r in parsed.results if r.outcome == "passed"]) == 2
    assert not parsed.errors


def test_tap_reporter_keeps_message_and_stack() -> None:
    parsed = parse_mocha_text(read("mocha12_tap_sprintf.txt"))
    failure = next(r.failure for r in parsed.results if r.outcome == "failed")
    assert failure is not None
    assert (failure.file, failure.line, failure.type, failure.message) == (
        "test/test.js",
        30,
        "AssertionError",
        "'ff' == '120'",
    )


def test_spec_and_tap_give_the_same_ids_suites_hooks_and_pending() -> None:
    spec = parse_mocha_text(read("mocha12_spec_hooks.txt"))
    tap = parse_mocha_text(read("mocha12_tap_hooks.txt"))
    want = {
        "calc add adds small numbers": "passed",
        "calc add adds (slowly)": "passed",  # its duration "(64ms)" is not part of the id
        "calc add adds negatives": "failed",
        "calc add adds floats": "skipped",
        "calc div by zero": "failed",  # its beforeEach hook threw
    }
    assert {r.id: r.outcome for r in spec.results} == want
    assert {r.id: r.outcome for r in tap.results} == want
    for parsed in (spec, tap):
        by_id = {r.id: r.failure for r in parsed.results}
        hook = by_id["calc div by zero"]
        assert hook is not None and (hook.type, hook.message, hook.line) == ("TypeError", "setup broke", 10)
        neg = by_id["calc add adds negatives"]
        assert neg is not None and "-2 !== -3" in neg.message and neg.line == 6
        # A before-all hook is the suite's run-level error, not a test.
        assert [(e.id, e.type, e.message, e.line) for e in parsed.errors] == [
            ('broken suite "before all" hook for "never runs"', "hook", "no db", 16)
        ]


def test_mocha_commands_and_output_are_recognised() -> None:
    assert framework_of_command("mocha test/*.js") == "mocha"
    assert framework_of_command("nyc --reporter=lcov mocha --reporter tap") == "mocha"
    assert framework_of_command("./node_modules/.bin/_mocha -R spec") == "mocha"
    run = parse_output(Execution("npx mocha", 1, read("mocha12_spec_sprintf.txt"), "", 1.0))
    assert run.framework == "mocha" and len(run.failed_ids) == 1 and not run.errors


def test_console_output_between_tests_keeps_the_suites() -> None:
    text = read("mocha12_spec_hooks.txt").replace(
        "      ✔ adds small numbers\n", "      ✔ adds small numbers\nlogged by a test\n"
    )
    assert "logged by a test" in text
    assert outcomes(text) == outcomes(read("mocha12_spec_hooks.txt"))


def test_mocha_3_prints_the_title_path_on_one_line() -> None:
    # The same test file under mocha 3.5.3 (sprintf-js 1.1.1's own devDependency range).
    spec = parse_mocha_text(read("mocha3_spec_hooks.txt"))
    assert {r.id: r.outcome for r in spec.results} == outcomes(read("mocha12_spec_hooks.txt"))
    by_id = {r.id: r.failure for r in spec.results}
    neg = by_id["calc add adds negatives"]
    assert neg is not None and (neg.type, neg.line) == ("AssertionError", 6)
    assert [(e.id, e.type, e.message) for e in spec.errors] == [
        ('broken suite "before all" hook', "hook", "no db")
    ]
    # Its tap reporter plans 7 points and prints 6: the unreported test is unknown, never passed.
    tap = parse_mocha_text(read("mocha3_tap_hooks.txt"))
    assert {r.id: r.outcome for r in tap.results} == outcomes(read("mocha12_spec_hooks.txt"))
    assert any(e.id == "<run>" and e.type == "tap-truncated" for e in tap.errors)
