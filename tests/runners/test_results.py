"""Per-test result parsing (JUnit XML and text outputs), localization and run comparison."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runners.base import Execution
from runners.results import (
    Frame,
    TestFailure,
    TestResult,
    TestRun,
    compare,
    detect_framework,
    extract_frames,
    framework_of_command,
    localize,
    normalize_path,
    parse_cargo_text,
    parse_go_json,
    parse_go_text,
    parse_jest_text,
    parse_junit_xml,
    parse_maven_text,
    parse_node_tap,
    parse_output,
    parse_pytest_text,
    parse_text,
    parse_unittest_text,
    parse_vitest_text,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
OUTPUTS = FIXTURES / "outputs"
JUNIT = FIXTURES / "junit"


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def outcomes(parsed_results: tuple[TestResult, ...]) -> dict[str, str]:
    return {r.id: r.outcome for r in parsed_results}


def failure(parsed_results: tuple[TestResult, ...], test_id: str) -> TestFailure:
    for r in parsed_results:
        if r.id == test_id:
            assert r.failure is not None, test_id
            return r.failure
    raise AssertionError(f"{test_id} not found in {[r.id for r in parsed_results]}")


PYTEST_FAILED = {
    "tests/test_calc.py::test_add": "failed",
    "tests/test_calc.py::test_divide": "failed",
    "tests/test_calc.py::TestParams::test_sum[2-2-5]": "failed",
    "tests/test_calc.py::test_uses_broken": "error",
}


# --------------------------------------------------------------------------- pytest


@pytest.mark.parametrize("name", ["pytest_default.txt", "pytest_verbose_short.txt", "pytest_native.txt"])
def test_pytest_text_failures_in_every_traceback_style(name: str) -> None:
    parsed = parse_pytest_text(read(OUTPUTS / name))
    got = outcomes(parsed.results)
    for test_id, outcome in PYTEST_FAILED.items():
        assert got[test_id] == outcome
    divide = failure(parsed.results, "tests/test_calc.py::test_divide")
    assert divide.type == "ZeroDivisionError"
    assert divide.message == "division by zero"
    # The crash site (innermost frame) is in the library, reached from the test.
    assert divide.file is not None and divide.file.endswith("src/calc/__init__.py")
    assert divide.line == 13
    assert [f.function for f in divide.frames] == ["test_divide", "divide", "_div"]
    add = failure(parsed.results, "tests/test_calc.py::test_add")
    assert add.type == "AssertionError"
    assert add.message.startswith("assert 4 == 3")
    assert add.line == 7
    broken = failure(parsed.results, "tests/test_calc.py::test_uses_broken")
    assert broken.type == "RuntimeError" and broken.message == "fixture exploded"


def test_pytest_verbose_lists_passed_and_skipped() -> None:
    got = outcomes(parse_pytest_text(read(OUTPUTS / "pytest_verbose_short.txt")).results)
    assert got["tests/test_calc.py::test_add_zero"] == "passed"
    assert got["tests/test_calc.py::TestParams::test_sum[1-1-2]"] == "passed"
    assert got["tests/test_calc.py::TestParams::test_skipped"] == "skipped"


def test_pytest_native_frames_drop_site_packages() -> None:
    add = failure(
        parse_pytest_text(read(OUTPUTS / "pytest_native.txt")).results, "tests/test_calc.py::test_add"
    )
    assert all("site-packages" not in f.file for f in add.frames)
    assert add.frames[-1] == Frame("/home/runner/work/calc/calc/tests/test_calc.py", 7, "test_add")


def test_pytest_collection_error_is_a_run_level_error() -> None:
    parsed = parse_pytest_text(read(OUTPUTS / "pytest_collection_error.txt"))
    assert parsed.results == ()
    (err,) = parsed.errors
    assert err.id == "tests/test_config.py"
    assert err.type == "ImportError"
    assert "cannot import name 'parse_config'" in err.message
    assert (err.file, err.line) == ("tests/test_config.py", 1)


def test_pytest_summary_only_output() -> None:
    text = (
        "FAILED tests/test_a.py::test_one - KeyError: 'x'\nERROR tests/test_b.py\n1 failed, 1 error in 0.1s\n"
    )
    parsed = parse_pytest_text(text)
    assert outcomes(parsed.results) == {"tests/test_a.py::test_one": "failed"}
    assert [e.id for e in parsed.errors] == ["tests/test_b.py"]


# --------------------------------------------------------------------------- unittest


def test_unittest_verbose() -> None:
    parsed = parse_unittest_text(read(OUTPUTS / "unittest_verbose.txt"))
    assert outcomes(parsed.results) == {
        "tests.test_calc.CalcTest.test_add": "failed",
        "tests.test_calc.CalcTest.test_error": "error",
        "tests.test_calc.CalcTest.test_ok": "passed",
        "tests.test_calc.CalcTest.test_skip": "skipped",
    }
    add = failure(parsed.results, "tests.test_calc.CalcTest.test_add")
    assert (add.type, add.message, add.line) == ("AssertionError", "4 != 3", 10)
    err = failure(parsed.results, "tests.test_calc.CalcTest.test_error")
    assert (err.type, err.message) == ("KeyError", "'missing'")


def test_unittest_quiet_has_failures_only() -> None:
    parsed = parse_unittest_text(read(OUTPUTS / "unittest_quiet.txt"))
    assert set(outcomes(parsed.results)) == {
        "tests.test_calc.CalcTest.test_add",
        "tests.test_calc.CalcTest.test_error",
    }


def test_unittest_import_failure_is_a_run_level_error() -> None:
    text = (
        "E\n" + "=" * 70 + "\nERROR: test_views (unittest.loader._FailedTest.test_views)\n" + "-" * 70 + "\n"
        "ImportError: Failed to import test module: test_views\nTraceback (most recent call last):\n"
        '  File "/w/tests/test_views.py", line 3, in <module>\n    import nope\n'
        "ModuleNotFoundError: No module named 'nope'\n\n"
        + "-" * 70
        + "\nRan 1 test in 0.000s\n\nFAILED (errors=1)\n"
    )
    parsed = parse_unittest_text(text)
    assert parsed.results == ()
    (err,) = parsed.errors
    assert err.id == "test_views" and err.type == "ModuleNotFoundError"


# --------------------------------------------------------------------------- go


def test_go_plain_output_packages_subtests_and_panics() -> None:
    parsed = parse_go_text(read(OUTPUTS / "go_test_plain.txt"))
    assert outcomes(parsed.results) == {
        "example.com/calc::TestAdd": "failed",
        "example.com/calc::TestTable": "failed",
        "example.com/calc::TestTable/negative": "failed",
        "example.com/calc/internal/mathx::TestIndex": "failed",
    }
    add = failure(parsed.results, "example.com/calc::TestAdd")
    assert (add.file, add.line, add.message) == ("calc_test.go", 12, "Add(1, 2) = 4; want 3")
    parent = failure(parsed.results, "example.com/calc::TestTable")
    assert parent.message == "failed subtests: TestTable/negative"
    panic = failure(parsed.results, "example.com/calc/internal/mathx::TestIndex")
    assert panic.type == "panic"
    assert panic.message == "runtime error: index out of range [5] with length 3"
    assert [(f.file.rsplit("/", 1)[-1], f.line) for f in panic.frames] == [
        ("mathx_test.go", 20),
        ("mathx.go", 14),
    ]
    assert all("hostedtoolcache" not in f.file for f in panic.frames)


def test_go_verbose_has_passes_and_skips() -> None:
    got = outcomes(parse_go_text(read(OUTPUTS / "go_test_verbose.txt")).results)
    assert got["example.com/calc::TestSub"] == "passed"
    assert got["example.com/calc::TestTable/positive"] == "passed"
    assert got["example.com/calc::TestTable/negative"] == "failed"
    assert got["example.com/calc::TestSlow"] == "skipped"
    assert got["example.com/calc/internal/strutil::TestUpper"] == "passed"


def test_go_json_matches_the_text_parse() -> None:
    parsed = parse_go_json(read(OUTPUTS / "go_test.json"))
    got = outcomes(parsed.results)
    assert got["example.com/calc::TestAdd"] == "failed"
    assert got["example.com/calc::TestTable/positive"] == "passed"
    assert got["example.com/calc::TestSlow"] == "skipped"
    assert got["example.com/calc/internal/mathx::TestIndex"] == "failed"
    assert failure(parsed.results, "example.com/calc::TestTable/negative").message == "Abs(-2) = -2; want 2"
    assert failure(parsed.results, "example.com/calc/internal/mathx::TestIndex").type == "panic"


def test_go_build_failure() -> None:
    parsed = parse_go_text(read(OUTPUTS / "go_build_failed.txt"))
    (err,) = parsed.errors
    assert err.id == "example.com/calc" and err.type == "build"
    assert (err.file, err.line) == ("./calc.go", 18)
    assert "undefined: roundHalfEven" in err.message


def test_go_json_with_build_errors_on_stderr() -> None:
    text = (
        "# example.com/calc\n./calc.go:3:1: syntax error: non-declaration statement outside function body\n"
        '{"Action":"start","Package":"example.com/calc"}\n'
        '{"Action":"output","Package":"example.com/calc","Output":"FAIL\\texample.com/calc [build failed]\\n"}\n'
        '{"Action":"fail","Package":"example.com/calc","Elapsed":0}\n'
    )
    parsed = parse_go_json(text)
    assert parsed.results == ()
    assert [e.id for e in parsed.errors] == ["example.com/calc"]
    assert parsed.errors[0].line == 3


# --------------------------------------------------------------------------- cargo


def test_cargo_test_panics_across_targets() -> None:
    parsed = parse_cargo_text(read(OUTPUTS / "cargo_test.txt"))
    assert outcomes(parsed.results) == {
        "tests::it_adds": "passed",
        "tests::it_adds_one": "failed",
        "tests::slow": "skipped",
        "tests::out_of_bounds": "failed",
        "integration_adds": "failed",
        "integration_ok": "passed",
    }
    eq = failure(parsed.results, "tests::it_adds_one")
    assert eq.type == "panic"
    assert eq.message.splitlines() == ["assertion `left == right` failed", "  left: 4", " right: 3"]
    assert (eq.file, eq.line) == ("src/lib.rs", 20)
    assert failure(parsed.results, "integration_adds").file == "tests/integration.rs"


def test_cargo_backtrace_frames_point_into_the_crate() -> None:
    oob = failure(
        parse_cargo_text(read(OUTPUTS / "cargo_test_backtrace.txt")).results, "tests::out_of_bounds"
    )
    assert (oob.file, oob.line) == ("src/lib.rs", 6)  # the panic site, not a std frame
    assert all("/rustc/" not in f.file for f in oob.frames)
    assert ("./src/lib.rs", 6, "rs::get") in [(f.file, f.line, f.function) for f in oob.frames]


def test_cargo_old_panic_format() -> None:
    text = (
        "test tests::t ... FAILED\n\nfailures:\n\n---- tests::t stdout ----\n"
        "thread 'tests::t' panicked at 'boom', src/lib.rs:9:5\n\nfailures:\n    tests::t\n"
    )
    f = failure(parse_cargo_text(text).results, "tests::t")
    assert (f.message, f.file, f.line) == ("boom", "src/lib.rs", 9)


def test_cargo_compile_error() -> None:
    parsed = parse_cargo_text(read(OUTPUTS / "cargo_build_error.txt"))
    assert parsed.results == ()
    (err,) = parsed.errors
    assert (err.type, err.file, err.line, err.message) == ("E0308", "src/lib.rs", 6, "mismatched types")


# --------------------------------------------------------------------------- jest / vitest


def test_jest_default_output_with_ansi() -> None:
    text = read(OUTPUTS / "jest_default.txt")
    assert "\x1b[" in text
    parsed = parse_jest_text(text)
    assert outcomes(parsed.results) == {
        "src/sum.test.js::Calculator subtracts numbers": "failed",
        "src/sum.test.js::Calculator parse trims input": "failed",
    }
    sub = failure(parsed.results, "src/sum.test.js::Calculator subtracts numbers")
    assert sub.message.startswith("expect(received).toBe(expected)")
    assert (sub.file, sub.line) == ("src/sum.test.js", 9)
    trims = failure(parsed.results, "src/sum.test.js::Calculator parse trims input")
    assert trims.type == "TypeError"
    # V8 prints the stack innermost first; frames run outermost first, the crash site last.
    assert [(f.file, f.line) for f in trims.frames] == [("src/sum.test.js", 14), ("src/sum.js", 8)]
    assert (trims.file, trims.line) == ("src/sum.js", 8)


def test_jest_verbose_nesting_builds_full_names() -> None:
    got = outcomes(parse_jest_text(read(OUTPUTS / "jest_verbose.txt")).results)
    assert got == {
        "src/sum.test.js::top level works": "passed",
        "src/sum.test.js::Calculator adds numbers": "passed",
        "src/sum.test.js::Calculator subtracts numbers": "failed",
        "src/sum.test.js::Calculator parse trims input": "failed",
    }


def test_jest_suite_failure_is_a_run_level_error() -> None:
    text = (
        "FAIL src/broken.test.ts\n  ● Test suite failed to run\n\n"
        "    src/broken.test.ts:3:7 - error TS2322: Type 'string' is not assignable to type 'number'.\n\n"
        "Test Suites: 1 failed, 1 total\nTests:       0 total\n"
    )
    parsed = parse_jest_text(text)
    assert parsed.results == ()
    assert parsed.errors[0].id == "src/broken.test.ts"


@pytest.mark.parametrize("name", ["vitest_default.txt", "vitest_verbose.txt"])
def test_vitest(name: str) -> None:
    parsed = parse_vitest_text(read(OUTPUTS / name))
    got = outcomes(parsed.results)
    assert got["sum.test.ts::Calculator subtracts"] == "failed"
    assert got["sum.test.ts::Calculator parse trims input"] == "failed"
    sub = failure(parsed.results, "sum.test.ts::Calculator subtracts")
    assert (sub.type, sub.message, sub.line) == (
        "AssertionError",
        "expected -1 to be 1 // Object.is equality",
        11,
    )
    if name == "vitest_verbose.txt":
        assert got["sum.test.ts::Calculator adds"] == "passed"


# --------------------------------------------------------------------------- maven


def test_maven_surefire_console() -> None:
    parsed = parse_maven_text(read(OUTPUTS / "maven_surefire.txt"))
    assert outcomes(parsed.results) == {
        "com.example.CalcTest#addsSmallNumbers": "failed",
        "com.example.CalcTest#dividesByZero": "error",
    }
    div = failure(parsed.results, "com.example.CalcTest#dividesByZero")
    assert (div.type, div.message) == ("java.lang.ArithmeticException", "/ by zero")
    assert [(f.file, f.line) for f in div.frames] == [
        ("com/example/Calc.java", 9),
        ("com/example/CalcTest.java", 23),
    ]


def test_javac_errors() -> None:
    text = "[ERROR] COMPILATION ERROR : \n[ERROR] /w/src/main/java/com/example/Calc.java:[9,20] cannot find symbol\n"
    (err,) = parse_maven_text(text).errors
    assert (err.file, err.line, err.type, err.message) == (
        "/w/src/main/java/com/example/Calc.java",
        9,
        "compile",
        "cannot find symbol",
    )


# --------------------------------------------------------------------------- JUnit XML


def test_junit_pytest_xunit1_and_xunit2_agree() -> None:
    one = parse_junit_xml(read(JUNIT / "pytest_xunit1.xml"), framework="pytest")
    two = parse_junit_xml(read(JUNIT / "pytest_xunit2.xml"), framework="pytest")
    assert outcomes(one.results) == outcomes(two.results)
    got = outcomes(one.results)
    assert got["tests/test_calc.py::test_add_zero"] == "passed"
    assert got["tests/test_calc.py::TestParams::test_skipped"] == "skipped"
    for test_id, outcome in PYTEST_FAILED.items():
        assert got[test_id] == outcome
    divide = failure(one.results, "tests/test_calc.py::test_divide")
    assert (divide.type, divide.message, divide.file, divide.line) == (
        "ZeroDivisionError",
        "division by zero",
        "src/calc/__init__.py",
        13,
    )
    broken = failure(one.results, "tests/test_calc.py::test_uses_broken")
    assert broken.message == "fixture exploded"  # unwrapped from 'failed on setup with "..."'


def test_junit_pytest_location_attributes_are_zero_based() -> None:
    xml = (
        '<testsuite><testcase classname="tests.test_a.TestX" name="test_y" file="tests/test_a.py" line="4">'
        '<failure message="boom">no traceback here</failure></testcase></testsuite>'
    )
    (result,) = parse_junit_xml(xml, framework="pytest").results
    assert result.id == "tests/test_a.py::TestX::test_y"
    assert result.failure is not None
    assert (result.failure.file, result.failure.line, result.failure.message) == (
        "tests/test_a.py",
        5,
        "boom",
    )


def test_junit_pytest_without_file_attribute_guesses_the_path() -> None:
    xml = '<testsuite><testcase classname="pkg.tests.test_a.TestX" name="test_y"/></testsuite>'
    (result,) = parse_junit_xml(xml, framework="pytest").results
    assert result.id == "pkg/tests/test_a.py::TestX::test_y"


def test_junit_pytest_collection_error() -> None:
    parsed = parse_junit_xml(read(JUNIT / "pytest_collection_error.xml"), framework="pytest")
    assert parsed.results == ()
    (err,) = parsed.errors
    assert err.id == "tests/test_config.py" and err.type == "ImportError"
    assert err.message.startswith("cannot import name 'parse_config'")


def test_junit_jest_junit() -> None:
    parsed = parse_junit_xml(read(JUNIT / "jest_junit.xml"), framework="jest")
    assert outcomes(parsed.results) == {
        "src/sum.test.js::Calculator adds numbers": "passed",
        "src/sum.test.js::Calculator subtracts numbers": "failed",
        "src/sum.test.js::Calculator parse trims input": "failed",
        "src/sum.test.js::top level works": "passed",
        "src/other.test.js::other ok": "passed",
    }
    trims = failure(parsed.results, "src/sum.test.js::Calculator parse trims input")
    assert trims.type == "TypeError"
    assert all("node_modules" not in f.file for f in trims.frames)


def test_junit_ids_agree_with_text_ids_for_jest_and_vitest() -> None:
    jest_xml = {r.id for r in parse_junit_xml(read(JUNIT / "jest_junit.xml"), framework="jest").results}
    jest_text = {r.id for r in parse_jest_text(read(OUTPUTS / "jest_verbose.txt")).results}
    assert jest_text <= jest_xml
    vitest_xml = {r.id for r in parse_junit_xml(read(JUNIT / "vitest_junit.xml"), framework="vitest").results}
    vitest_text = {r.id for r in parse_vitest_text(read(OUTPUTS / "vitest_verbose.txt")).results}
    assert vitest_text == vitest_xml


def test_junit_surefire_and_concatenated_reports() -> None:
    one = read(JUNIT / "surefire_CalcTest.xml")
    other = one.replace("com.example.CalcTest", "com.example.OtherTest")
    parsed = parse_junit_xml(one + "\n" + other, framework="maven")
    got = outcomes(parsed.results)
    assert got["com.example.CalcTest#addsSmallNumbers"] == "failed"
    assert got["com.example.OtherTest#dividesByZero"] == "error"
    assert got["com.example.CalcTest#skipped"] == "skipped"
    assert len(got) == 8


def test_junit_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        parse_junit_xml("<testsuite><testcase", framework="pytest")


# --------------------------------------------------------------------------- detection and dispatch


@pytest.mark.parametrize(
    ("name", "framework"),
    [
        ("pytest_default.txt", "pytest"),
        ("unittest_verbose.txt", "unittest"),
        ("go_test_plain.txt", "go"),
        ("go_test.json", "go"),
        ("cargo_test.txt", "cargo"),
        ("jest_default.txt", "jest"),
        ("vitest_default.txt", "vitest"),
        ("maven_surefire.txt", "maven"),
    ],
)
def test_detect_framework_from_output(name: str, framework: str) -> None:
    assert detect_framework(read(OUTPUTS / name))[0] == framework


@pytest.mark.parametrize(
    ("command", "framework"),
    [
        ("python -m pytest -q", "pytest"),
        ("uv run pytest", "pytest"),
        ("python -m unittest discover", "unittest"),
        ("go test -race ./...", "go"),
        ("cargo +nightly test", "cargo"),
        ("npx jest --ci", "jest"),
        ("pnpm exec vitest run", "vitest"),
        ("./mvnw -B verify", "maven"),
        ("./gradlew test", "gradle"),
        ("node --test", "node"),
        ("npm ci && node --import tsx --test test/", "node"),
        ("node --test-only x.js", None),
        ("node scripts/build.js", None),
        ("make check", None),
    ],
)
def test_framework_of_command(command: str, framework: str | None) -> None:
    assert framework_of_command(command) == framework


def test_parse_text_without_a_hint_uses_the_signature() -> None:
    got = outcomes(parse_text(read(OUTPUTS / "cargo_test.txt")).results)
    assert got["integration_adds"] == "failed"


def _execution(**kw: object) -> Execution:
    base: dict[str, object] = {"command": "x", "exit_code": 1, "stdout": "", "stderr": "", "duration_s": 1.0}
    base.update(kw)
    return Execution(**base)  # type: ignore[arg-type]


def test_parse_output_prefers_junit_over_text() -> None:
    ex = _execution(
        stdout=read(OUTPUTS / "pytest_default.txt"),
        artifacts={".arcs/junit.xml": read(JUNIT / "pytest_xunit1.xml")},
    )
    run = parse_output(ex, "pytest")
    assert run.source == "junit"
    assert "tests/test_calc.py::test_add_zero" in run.passed_ids  # only the XML knows passes in -q mode
    assert set(run.failed_ids) == set(PYTEST_FAILED)
    assert not run.ok


def test_parse_output_falls_back_to_text_on_broken_junit() -> None:
    ex = _execution(stdout=read(OUTPUTS / "pytest_default.txt"), artifacts={".arcs/junit.xml": "<testsu"})
    run = parse_output(ex, "pytest")
    assert run.source == "text"
    assert set(run.failed_ids) == set(PYTEST_FAILED)


def test_parse_output_reads_go_json_and_stderr() -> None:
    run = parse_output(_execution(stdout=read(OUTPUTS / "go_test.json")), "go")
    assert run.source == "go-json"
    assert "example.com/calc::TestSub" in run.passed_ids
    jest = parse_output(_execution(stderr=read(OUTPUTS / "jest_default.txt")), "jest")
    assert len(jest.failed_ids) == 2


def test_a_failing_exit_with_nothing_parsed_is_never_a_pass() -> None:
    run = parse_output(_execution(stdout="Segmentation fault (core dumped)\n", exit_code=139), "pytest")
    assert run.results == ()
    assert [e.id for e in run.errors] == ["<run>"]
    assert "139" in run.errors[0].message and "Segmentation fault" in run.errors[0].message
    assert not run.ok


def test_a_killed_run_is_an_error_even_with_results() -> None:
    run = parse_output(
        _execution(stdout=read(OUTPUTS / "go_test_verbose.txt"), exit_code=-9, killed_by="timeout"), "go"
    )
    assert any(e.type == "timeout" for e in run.errors)
    assert run.killed_by == "timeout" and not run.ok


def test_clean_exit_is_ok() -> None:
    run = parse_output(_execution(exit_code=0, stdout="ok  \texample.com/calc\t0.002s\n"), "go")
    assert run.ok and run.errors == ()


def test_to_dict_shape() -> None:
    ex = _execution(stdout=read(OUTPUTS / "pytest_verbose_short.txt"), truncated=True)
    data = parse_output(ex, "pytest").to_dict()
    assert {"command", "exit_code", "duration_s", "passed", "failed", "errors", "truncated"} <= set(data)
    assert data["truncated"] is True
    assert {"id", "file", "line", "type", "message"} == set(data["failed"][0])


# --------------------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/home/runner/work/calc/calc/src/a.py", "src/a.py"),
        ("D:\\a\\calc\\calc\\src\\a.py", "src/a.py"),
        ("/Users/runner/work/calc/calc/lib/x.go", "lib/x.go"),
        ("./src/lib.rs", "src/lib.rs"),
        ("src/a.py", "src/a.py"),
        ("/opt/hostedtoolcache/Python/3.11.8/x64/lib/python3.11/json/decoder.py", None),
        ("/home/runner/.local/lib/python3.11/site-packages/requests/api.py", None),
        ("/home/runner/work/web/web/node_modules/jest-circus/build/utils.js", None),
        ("/usr/lib/go/src/testing/testing.go", None),
        ("<frozen importlib._bootstrap>", None),
    ],
)
def test_normalize_path_without_repo_files(raw: str, expected: str | None) -> None:
    assert normalize_path(raw) == expected


def test_normalize_path_with_repo_files() -> None:
    files = {"src/main/java/com/example/Calc.java", "pkg/a/util.go", "pkg/b/util.go", "src/app.py"}
    assert normalize_path("com/example/Calc.java", repo_files=files) == "src/main/java/com/example/Calc.java"
    assert normalize_path("/workspace/src/app.py", roots=["/workspace"], repo_files=files) == "src/app.py"
    assert normalize_path("/tmp/elsewhere/src/app.py", repo_files=files) == "src/app.py"  # longest suffix
    assert normalize_path("util.go", repo_files=files) is None  # ambiguous: refuse to guess
    assert normalize_path("a/util.go", repo_files=files) == "pkg/a/util.go"
    assert normalize_path("src/other.py", repo_files=files) is None


def test_localize_rewrites_and_trims_frames() -> None:
    run = parse_output(_execution(stdout=read(OUTPUTS / "pytest_native.txt")), "pytest")
    files = {"src/calc/__init__.py", "tests/test_calc.py"}
    local = localize(run, files, roots=["/home/runner/work/calc/calc"])
    divide = next(f for f in local.failures if f.id == "tests/test_calc.py::test_divide")
    assert [(f.file, f.line) for f in divide.frames] == [
        ("tests/test_calc.py", 15),
        ("src/calc/__init__.py", 9),
        ("src/calc/__init__.py", 13),
    ]
    assert (divide.file, divide.line) == ("src/calc/__init__.py", 13)


def test_localize_resolves_go_files_through_their_package() -> None:
    run = parse_output(_execution(stdout=read(OUTPUTS / "go_test_plain.txt")), "go")
    files = {"calc.go", "calc_test.go", "internal/mathx/mathx.go", "internal/mathx/mathx_test.go", "go.mod"}
    packages = {"example.com/calc": "", "example.com/calc/internal/mathx": "internal/mathx"}
    local = localize(run, files, roots=["/home/runner/work/calc/calc"], go_packages=packages)
    add = next(f for f in local.failures if f.id == "example.com/calc::TestAdd")
    assert (add.file, add.line) == ("calc_test.go", 12)
    panic = next(f for f in local.failures if f.id.endswith("TestIndex"))
    assert (panic.file, panic.line) == ("internal/mathx/mathx.go", 14)


def test_extract_frames_java_and_js() -> None:
    text = (
        "java.lang.IllegalStateException: nope\n"
        "\tat org.junit.jupiter.api.Assertions.fail(Assertions.java:1)\n"
        "\tat com.acme.shop.Cart$Line.total(Cart.java:88)\n"
        "    at Object.<anonymous> (src/a.test.js:4:5)\n"
        "    at node:internal/process/task_queues:95:5\n"
    )
    assert [(f.file, f.line) for f in extract_frames(text)] == [
        ("com/acme/shop/Cart.java", 88),
        ("src/a.test.js", 4),
    ]


# --------------------------------------------------------------------------- comparison


def _run(outcome_map: dict[str, str], *, errors: tuple[str, ...] = (), exit_code: int = 1) -> TestRun:
    results = tuple(
        TestResult(
            i,
            oc,  # type: ignore[arg-type]
            failure=TestFailure(id=i) if oc in ("failed", "error") else None,
        )
        for i, oc in outcome_map.items()
    )
    return TestRun(
        command="t",
        exit_code=exit_code,
        duration_s=1.0,
        results=results,
        errors=tuple(TestFailure(id=e) for e in errors),
    )


def test_compare_fixed_and_regressions() -> None:
    base = _run({"a": "failed", "b": "failed", "c": "passed", "d": "passed", "e": "passed"})
    cand = _run({"a": "passed", "b": "failed", "c": "failed", "d": "passed", "e": "passed", "n": "failed"})
    cmp = compare(base, cand)
    assert cmp.fixed == ("a",)
    assert cmp.still_failing == ("b",)
    assert cmp.regressions == ("c",)
    assert cmp.new_failures == ("n",)
    assert not cmp.ok


def test_compare_all_fixed_is_ok() -> None:
    base = _run({"a": "failed", "c": "passed"})
    cand = _run({"a": "passed", "c": "passed"}, exit_code=0)
    cmp = compare(base, cand)
    assert cmp.ok and cmp.fixed == ("a",)
    assert cmp.to_dict()["ok"] is True


def test_compare_sets_flaky_tests_aside() -> None:
    base = _run({"a": "failed", "f": "passed", "g": "failed"})
    cand = _run({"a": "passed", "f": "failed", "g": "failed"})
    cmp = compare(base, cand, flaky={"f", "g"})
    assert cmp.regressions == ()
    assert cmp.still_failing == ()
    assert cmp.flaky == ("f", "g")
    assert cmp.ok


def test_compare_explicit_targets() -> None:
    base = _run({"a": "failed", "b": "failed"})
    cand = _run({"a": "passed", "b": "failed"})
    assert compare(base, cand, targets=["a"]).ok
    assert not compare(base, cand).ok


def test_a_broken_candidate_cannot_hide_regressions() -> None:
    base = _run({"a": "failed", "c": "passed"})
    cand = _run({}, errors=("tests/test_x.py",))  # e.g. the patch introduced an import error
    cmp = compare(base, cand)
    assert cmp.regressions == ("c",)
    assert cmp.still_failing == ("a",)
    assert cmp.candidate_errors == ("tests/test_x.py",)
    assert not cmp.ok


def test_a_test_that_vanished_from_a_clean_run_is_missing() -> None:
    base = _run({"a": "failed", "c": "passed"})
    cand = _run({"a": "passed"}, exit_code=0)
    cmp = compare(base, cand)
    assert cmp.missing == ("c",)
    assert cmp.fixed == ("a",)


def test_skipping_a_target_is_not_a_fix() -> None:
    base = _run({"a": "failed"})
    cand = _run({"a": "skipped"}, exit_code=0)
    cmp = compare(base, cand)
    assert cmp.still_failing == ("a",) and not cmp.ok


# --------------------------------------------------------------------------- node --test
# Real node v20.20.2 outputs of /tmp/nt (src/calc.js, test/calc.test.js, test/other.test.js,
# test/broken.test.js requiring a missing module): JUnit + spec on stdout, and the default TAP.

NODE_ROOT = "/tmp/nt"
NODE_FILES = ["src/calc.js", "test/calc.test.js", "test/other.test.js", "test/broken.test.js"]
NODE_OUTCOMES = {
    "adds small numbers": "failed",
    "divides": "passed",
    "calc divide rejects zero": "failed",
    "calc divide halves": "passed",
    "other passes": "passed",
    "other fails": "failed",
}


def _node_parsed(kind: str) -> tuple[tuple[TestResult, ...], tuple[TestFailure, ...]]:
    if kind == "junit":
        parsed = parse_junit_xml(read(JUNIT / "node_junit.xml"), framework="node")
    else:
        parsed = parse_node_tap(read(OUTPUTS / "node_tap.txt"))
    return parsed.results, parsed.errors


@pytest.mark.parametrize("kind", ["junit", "tap"])
def test_node_ids_outcomes_and_nested_describe(kind: str) -> None:
    results, errors = _node_parsed(kind)
    assert outcomes(results) == NODE_OUTCOMES
    # A file that fails to load is a run-level error named by its path, not a test.
    assert [(e.id, e.type) for e in errors] == [("/tmp/nt/test/broken.test.js", "load")]


@pytest.mark.parametrize("kind", ["junit", "tap"])
def test_node_assertion_failure(kind: str) -> None:
    results, _ = _node_parsed(kind)
    got = failure(results, "adds small numbers")
    assert got.type == "AssertionError"
    assert got.message == "Expected values to be strictly equal:\n\n4 !== 3"
    # node:internal and node:async_hooks frames are dropped.
    assert [(f.file, f.line) for f in got.frames] == [("/tmp/nt/test/calc.test.js", 7)]
    deep = failure(results, "other fails")
    assert deep.type == "AssertionError" and "+   a: 1\n-   a: 2" in deep.message


@pytest.mark.parametrize("kind", ["junit", "tap"])
def test_node_thrown_error_frames_end_at_the_throw(kind: str) -> None:
    results, _ = _node_parsed(kind)
    got = failure(results, "calc divide rejects zero")
    assert (got.type, got.message) == ("Error", "division by zero")
    assert [(f.file, f.line, f.function) for f in got.frames] == [
        ("/tmp/nt/test/calc.test.js", 17, "TestContext.<anonymous>"),
        ("/tmp/nt/src/calc.js", 7, "divide"),
    ]
    assert (got.file, got.line) == ("/tmp/nt/src/calc.js", 7)


def test_node_junit_through_parse_output_and_localize() -> None:
    execution = Execution(
        command="node --test",
        exit_code=1,
        stdout=read(OUTPUTS / "node_spec.txt"),
        stderr="",
        duration_s=1.0,
        artifacts={".arcs/junit.xml": read(JUNIT / "node_junit.xml")},
    )
    run = localize(parse_output(execution, "node"), NODE_FILES, roots=(NODE_ROOT,))
    assert run.source == "junit" and run.framework == "node"
    assert set(run.failed_ids) == {"adds small numbers", "calc divide rejects zero", "other fails"}
    got = failure(run.results, "calc divide rejects zero")
    assert [(f.file, f.line) for f in got.frames] == [("test/calc.test.js", 17), ("src/calc.js", 7)]
    assert (got.file, got.line) == ("src/calc.js", 7)
    assert [(e.file, e.type) for e in run.errors] == [("test/broken.test.js", "load")]


def test_node_tap_is_detected_without_a_hint() -> None:
    text = read(OUTPUTS / "node_tap.txt")
    assert detect_framework(text) == ["node"]
    assert outcomes(parse_text(text).results) == NODE_OUTCOMES


def test_node_file_urls_and_skips() -> None:
    frames = extract_frames(
        "Error: boom\n"
        "    at explode (file:///work/repo/src/m.mjs:3:9)\n"
        "    at TestContext.<anonymous> (file:///work/repo/test/m.test.mjs:5:3)\n"
        "    at Test.runInAsyncScope (node:async_hooks:206:9)\n"
        "    at node:internal/test_runner/harness:255:12\n"
    )
    assert [(f.file, f.line) for f in frames] == [
        ("/work/repo/test/m.test.mjs", 5),
        ("/work/repo/src/m.mjs", 3),
    ]
    tap = "TAP version 13\n# Subtest: later\nok 1 - later # SKIP\n  ---\n  duration_ms: 0.1\n  ...\n1..1\n"
    assert outcomes(parse_node_tap(tap).results) == {"later": "skipped"}


def test_js_stack_frames_run_outermost_first() -> None:
    # V8 prints the innermost frame first; extract_frames documents outermost first.
    jest = extract_frames(
        "TypeError: x is undefined\n"
        "    at value (src/sum.js:8:12)\n"
        "    at parse (src/parse.js:3:10)\n"
        "    at Object.<anonymous> (src/sum.test.js:14:5)\n"
        "    at Promise.then.completed (node_modules/jest-circus/build/utils.js:298:28)\n"
    )
    assert [(f.file, f.line, f.function) for f in jest] == [
        ("src/sum.test.js", 14, "Object.<anonymous>"),
        ("src/parse.js", 3, "parse"),
        ("src/sum.js", 8, "value"),
    ]
    # vitest prints a code excerpt after the first (innermost) frame.
    vitest = extract_frames(" ❯ parse sum.ts:4:29\n    4| const x = 1\n ❯ sum.test.ts:15:14\n")
    assert [(f.file, f.line) for f in vitest] == [("sum.test.ts", 15), ("sum.ts", 4)]


def test_node_error_code_may_be_mixed_case() -> None:
    # node's JUnit writes "cause: ReferenceError [Error]: ..." for errors thrown by the runtime.
    xml = """<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testcase name="computes subtotal" time="0.001" classname="test">
    <failure type="testCodeFailure" message="calcSubtotal is not defined">
[Error [ERR_TEST_FAILURE]: calcSubtotal is not defined] {
  code: 'ERR_TEST_FAILURE',
  failureType: 'testCodeFailure',
  cause: ReferenceError [Error]: calcSubtotal is not defined
      at TestContext.&lt;anonymous&gt; (/workspace/test/cart.test.js:6:3)
}
    </failure>
  </testcase>
</testsuites>
"""
    parsed = parse_junit_xml(xml, framework="node")
    (failure,) = [r for r in parsed.results if r.outcome == "failed"]
    assert failure.failure is not None
    assert failure.failure.type == "ReferenceError"
    assert "calcSubtotal is not defined" in failure.failure.message


def test_junit_pytest_test_inherited_from_a_helper_module_keeps_the_collecting_module() -> None:
    """``file`` names where the test function is *defined* (``tests/common.py``, a mixin the test
    class inherits from); the test runs — and is re-run by id — under the module that collected it.
    The old id ``tests/common.py::TestA::test_shared`` made pytest answer "not found" (exit 4) on
    every re-run, so a right fix read as failing."""
    xml = (
        '<testsuite><testcase classname="tests.test_a.TestA" name="test_shared" file="tests/common.py" '
        'line="1"><failure message="AssertionError">tests/common.py:3: AssertionError</failure></testcase>'
        '<testcase classname="tests.v1.2.test_b" name="test_dotted" file="tests/v1.2/test_b.py" line="0"/>'
        "</testsuite>"
    )
    inherited, dotted = parse_junit_xml(xml, framework="pytest").results
    assert inherited.id == "tests/test_a.py::TestA::test_shared"
    assert dotted.id == "tests/v1.2/test_b.py::test_dotted"


def test_inherited_test_ids_select_the_test_in_a_real_pytest_run(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "common.py").write_text(
        "class Shared:\n    def test_shared(self):\n        assert self.value() == 2\n"
    )
    (tmp_path / "tests" / "test_a.py").write_text(
        "from tests.common import Shared\n\n\nclass TestA(Shared):\n    def value(self):\n        return 1\n"
    )
    junit = tmp_path / "j.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1"]
    subprocess.run([*cmd, "tests", f"--junitxml={junit}"], cwd=tmp_path, capture_output=True, check=False)
    (result,) = parse_junit_xml(junit.read_text(), framework="pytest").results
    again = subprocess.run([*cmd, result.id], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert again.returncode == 1 and "1 failed" in again.stdout  # found and run, not exit 4
