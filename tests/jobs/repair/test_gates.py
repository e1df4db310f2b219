"""The non-LLM quality gates: applies, syntax, targets, regressions, policy, size."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexing.languages import is_test_path
from jobs.repair.diffing import DiffStats, unified_diff
from jobs.repair.edits import AppliedEdits, EditError, FileChange
from jobs.repair.gates import (
    DEFAULT_DENIED,
    applies_gate,
    gate_summary,
    policy_gate,
    regression_gate,
    size_gate,
    syntax_gate,
    syntax_problems,
    targets_gate,
)
from jobs.repair.model import GateResult


def change(path: str, before: str | None, after: str | None) -> AppliedEdits:
    return AppliedEdits((FileChange(path, before, after),))


# --- applies -----------------------------------------------------------------------------------


def test_applies_gate() -> None:
    bad = applies_gate(EditError(1, "a.py", "file not found: a.py"))
    assert (bad.gate, bad.passed, bad.detail) == ("applies", False, "edit #2 (a.py): file not found: a.py")
    assert bad.data["reason"] == "file not found: a.py"
    empty = applies_gate(AppliedEdits())
    assert not empty.passed and empty.detail == "the edits change nothing"
    ok = applies_gate(change("a.py", "x = 1\n", "x = 2\n"))
    assert ok.passed and ok.detail == "applied cleanly to 1 file"


# --- syntax ------------------------------------------------------------------------------------

GOOD_AND_BAD = {
    "m.py": ("def f(x):\n    return x + 1\n", "def f(x):\n    return x +\n"),
    "m.js": ("function f(x) {\n  return x + 1;\n}\n", "function f(x) {\n  return x + ;\n}\n"),
    "m.ts": (
        "function f(x: number): number {\n  return x;\n}\n",
        "function f(x: number): number {\n  return x;\n",
    ),
    "m.tsx": ("const A = () => <div>{1}</div>;\n", "const A = () => <div>{1</div>;\n"),
    "m.go": (
        "package m\n\nfunc F(x int) int {\n\treturn x + 1\n}\n",
        "package m\n\nfunc F(x int) int {\n\treturn x +\n}\n",
    ),
    "m.rs": ("fn f(x: i32) -> i32 {\n    x + 1\n}\n", "fn f(x: i32) -> i32 {\n    let y = ;\n    x + 1\n}\n"),
    "M.java": (
        "class M {\n  int f(int x) { return x + 1; }\n}\n",
        "class M {\n  int f(int x) { return x + 1 }\n}\n",
    ),
}


@pytest.mark.parametrize("path", sorted(GOOD_AND_BAD))
def test_syntax_gate_per_language(path: str) -> None:
    good, bad = GOOD_AND_BAD[path]
    assert syntax_problems(path, good) == []
    assert syntax_problems(path, bad)
    ok = syntax_gate(change(path, good, good.replace("1", "2")))
    assert ok.passed and ok.detail == "1 touched source file parses"
    result = syntax_gate(change(path, good, bad))
    assert result.gate == "syntax" and not result.passed
    assert result.detail.startswith("the patch introduces syntax errors:\n")
    assert f"{path}:" in result.detail
    assert path in result.data["errors"]  # type: ignore[operator]


@pytest.mark.parametrize("path", sorted(GOOD_AND_BAD))
def test_new_broken_file_fails(path: str) -> None:
    assert not syntax_gate(change(path, None, GOOD_AND_BAD[path][1])).passed
    assert syntax_gate(change(path, None, GOOD_AND_BAD[path][0])).passed


def test_python_error_names_line_and_message() -> None:
    result = syntax_gate(change("pkg/m.py", "x = 1\n", "x = 1\ndef f(:\n    pass\n"))
    assert "pkg/m.py:2: SyntaxError:" in result.detail


def test_python_compile_catches_symbol_table_errors() -> None:
    assert syntax_problems("m.py", "return 1\n")  # parses as an AST, fails to compile


def test_python_syntax_warning_does_not_escape() -> None:
    # pytest turns warnings into errors here: the gate must keep compile()'s SyntaxWarning to itself
    assert syntax_gate(change("m.py", "x = 1\n", 'import re\nP = re.compile("\\d+")\n')).passed


def test_already_broken_file_is_judged_by_no_new_errors() -> None:
    broken = "function f( {\n  return 1;\n}\n"
    still = "function f( {\n  return 2;\n}\n"
    worse = "function f( {\n  return 2;\n}\nfunction g( {\n"
    assert syntax_gate(change("a.js", broken, still)).passed
    result = syntax_gate(change("a.js", broken, worse))
    assert not result.passed and "already had syntax errors before the edit" in result.detail
    assert syntax_gate(change("a.js", broken, "function f() {\n  return 2;\n}\n")).passed  # fixed


def test_python_newer_than_interpreter_is_not_a_new_error() -> None:
    # PEP 695 syntax: compile() of Python 3.11 rejects it, tree-sitter parses it; an unrelated edit passes.
    newer = "type Point = tuple[float, float]\nX = 1\n"
    assert syntax_gate(change("m.py", newer, newer.replace("X = 1", "X = 2"))).passed
    assert not syntax_gate(change("m.py", newer, newer.replace("X = 1", "X = (2"))).passed


def test_unchecked_and_deleted_files_pass() -> None:
    applied = AppliedEdits(
        (FileChange("README.md", "# a\n", "# b ((\n"), FileChange("gone.py", "x = 1\n", None))
    )
    result = syntax_gate(applied)
    assert result.passed and result.detail == "0 touched source files parse (1 other file not checked)"


def test_syntax_gate_reads_the_workspace_when_given(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f(:\n")
    applied = change("m.py", "x = 1\n", "x = 2\n")
    assert syntax_gate(applied).passed
    assert not syntax_gate(applied, workspace=tmp_path).passed


def test_error_listing_is_capped() -> None:
    bad = "".join(f"function f{i}( {{\n" for i in range(10))
    result = syntax_gate(change("a.js", None, bad))
    assert "more syntax errors" in result.detail


# --- targets -----------------------------------------------------------------------------------


def test_targets_all_pass() -> None:
    r = targets_gate(["t::a", "t::b"], ["t::a", "t::b", "t::c"], [])
    assert (r.gate, r.passed, r.detail) == ("targets", True, "all 2 target tests pass")


def test_targets_failed_and_not_run() -> None:
    r = targets_gate(["t::a", "t::b", "t::c"], ["t::a"], ["t::b"])
    assert not r.passed
    assert r.detail.splitlines() == ["2 of 3 target tests do not pass:", "failed: t::b", "not run: t::c"]
    assert r.data == {"failed": ["t::b"], "not_run": ["t::c"]}


def test_target_covers_parametrizations_and_subtests() -> None:
    assert targets_gate(["t.py::test_x"], ["t.py::test_x[1]", "t.py::test_x[2]"], []).passed
    assert targets_gate(["TestAdd"], ["TestAdd/zero", "TestAdd/neg"], []).passed
    assert targets_gate(["tests/test_a.py"], ["tests/test_a.py::test_one"], []).passed
    r = targets_gate(["t.py::test_x"], ["t.py::test_x[1]"], ["t.py::test_x[2]"])
    assert not r.passed and "failed: t.py::test_x (t.py::test_x[2])" in r.detail
    # a longer name is not a subtest
    assert not targets_gate(["t.py::test_x"], ["t.py::test_xy"], []).passed


def test_failed_wins_over_passed() -> None:
    assert not targets_gate(["a"], ["a"], ["a"]).passed


def test_no_targets_passes_with_a_note() -> None:
    r = targets_gate([], ["a"], [])
    assert r.passed and r.detail == "no target tests were given"


# --- regressions ---------------------------------------------------------------------------------


def test_no_regressions() -> None:
    r = regression_gate({"a", "b"}, {"c"}, {"a", "b", "c"})
    assert (r.gate, r.passed) == ("regressions", True)
    assert r.detail == "no regressions among 2 previously passing tests"


def test_regression_now_failing_and_disappeared() -> None:
    r = regression_gate(["a", "b", "c"], ["b"], ["a", "b"])
    assert not r.passed
    assert r.detail.splitlines() == [
        "2 previously passing tests regressed:",
        "now fails: b",
        "no longer runs: c",
    ]
    assert r.data == {"failed": ["b"], "missing": ["c"]}


def test_regression_listing_is_capped() -> None:
    r = regression_gate([f"t{i:02}" for i in range(30)], [f"t{i:02}" for i in range(30)], [])
    assert r.detail.splitlines()[-1] == "... and 10 more"


# --- size --------------------------------------------------------------------------------------


def test_size_gate() -> None:
    ok = size_gate(DiffStats(files=2, added=10, removed=5))
    assert (ok.gate, ok.passed, ok.detail) == ("size", True, "2 files, +10 -5 lines")
    too_many = size_gate(DiffStats(files=11, added=1, removed=0))
    assert not too_many.passed and "touches 11 files (limit 10)" in too_many.detail
    too_long = size_gate(DiffStats(files=1, added=300, removed=101))
    assert not too_long.passed and "changes 401 lines (limit 400)" in too_long.detail
    assert size_gate(DiffStats(files=3, added=30, removed=0), max_files=3, max_lines=30).passed
    assert not size_gate(DiffStats(files=3, added=30, removed=1), max_files=3, max_lines=30).passed


# --- policy: paths ---------------------------------------------------------------------------------


def edit_diff(path: str, before: str | None = "a\n", after: str | None = "b\n") -> str:
    return unified_diff({path: before}, {path: after})


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        (".github/workflows/ci.yml", "path.ci"),
        (".gitlab-ci.yml", "path.ci"),
        (".circleci/config.yml", "path.ci"),
        ("Jenkinsfile", "path.ci"),
        ("azure-pipelines.yml", "path.ci"),
        ("package-lock.json", "path.lockfile"),
        ("web/yarn.lock", "path.lockfile"),
        ("pnpm-lock.yaml", "path.lockfile"),
        ("poetry.lock", "path.lockfile"),
        ("Cargo.lock", "path.lockfile"),
        ("go.sum", "path.lockfile"),
        ("uv.lock", "path.lockfile"),
        ("Pipfile.lock", "path.lockfile"),
        ("Gemfile.lock", "path.lockfile"),
        (".env", "path.secret"),
        ("config/.env.production", "path.secret"),
        ("certs/server.pem", "path.secret"),
        ("deploy.key", "path.secret"),
        ("id_rsa", "path.secret"),
        (".ssh/id_rsa.pub", "path.secret"),
        (".npmrc", "path.secret"),
        (".pypirc", "path.secret"),
        ("credentials.json", "path.secret"),
        ("aws/credentials", "path.secret"),
        (".arcs.yml", "path.config"),
        (".github/arcs.yml", "path.config"),
        ("vendor/lib/x.go", "path.denied"),
        ("web/node_modules/x/index.js", "path.denied"),
    ],
)
def test_protected_paths_are_refused(path: str, rule: str) -> None:
    for about_tests in (False, True):
        r = policy_gate(edit_diff(path), about_tests=about_tests)
        assert not r.passed, path
        assert rule in [v["rule"] for v in r.data["violations"]]  # type: ignore[attr-defined]
        assert f"{path}: edits" in r.detail or f"{path}: path is denied" in r.detail


@pytest.mark.parametrize(
    "path",
    [
        "src/environment.py",
        "docs/ci.md",
        ".github/ISSUE_TEMPLATE/bug.md",
        "package.json",
        "src/auth/credentials.py",
        "pkg/keys.go",
        "src/lockfile.rs",
        "vendored_notes.md",
    ],
)
def test_ordinary_paths_are_allowed(path: str) -> None:
    assert policy_gate(edit_diff(path), about_tests=False).passed


def test_denied_and_allowed_globs() -> None:
    diff = unified_diff(
        {"src/a.py": "a\n", "generated/b.py": "a\n"}, {"src/a.py": "b\n", "generated/b.py": "b\n"}
    )
    r = policy_gate(diff, about_tests=False, denied=["generated/"])
    assert not r.passed and r.detail.splitlines()[1] == "generated/b.py: path is denied by configuration"
    # a caller's `denied` replaces the defaults
    assert policy_gate(edit_diff("vendor/x.go"), about_tests=False, denied=()).passed
    assert "vendor/" in DEFAULT_DENIED
    r = policy_gate(diff, about_tests=False, denied=(), allowed=["src/"])
    assert not r.passed and "generated/b.py: path is outside the allowed paths" in r.detail
    assert policy_gate(diff, about_tests=False, denied=(), allowed=["src/", "generated/*.py"]).passed
    assert not policy_gate(diff, about_tests=False, denied=(), allowed=["*.py", "!generated/**"]).passed
    assert not policy_gate(diff, about_tests=False, denied=(), allowed=[]).passed


def test_renames_are_checked_on_both_paths() -> None:
    diff = "diff --git a/.env b/env.txt\nsimilarity index 100%\nrename from .env\nrename to env.txt\n"
    assert not policy_gate(diff, about_tests=True).passed


# --- policy: test files ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/helpers.py", True),
        ("pkg/test_calc.py", True),
        ("pkg/calc_test.py", True),
        ("conftest.py", True),
        ("calc_test.go", True),
        ("src/calc.test.ts", True),
        ("src/calc.test.js", True),
        ("web/Button.spec.tsx", True),
        ("src/test/java/org/x/CalcTest.java", True),
        ("src/main/java/org/x/CalcTest.java", True),
        ("app/__tests__/calc.js", True),
        ("pkg/testdata/golden.txt", True),
        ("spec/models/user_spec.rb", True),
        ("src/calc.py", False),
        ("src/contest.py", False),
        ("src/latest.go", False),
        ("src/main/java/org/x/Calc.java", False),
        ("src/testing_utils.py", False),
        ("tests", False),
    ],
)
def test_is_test_path(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected


def rules(result: GateResult) -> list[str]:
    return [v["rule"] for v in result.data.get("violations", [])]  # type: ignore[attr-defined]


def check_both_ways(path: str, before: str | None, after: str | None) -> list[str]:
    """Run the gate on the diff and on AppliedEdits; both must agree on the rules that fire."""
    from_diff = policy_gate(unified_diff({path: before}, {path: after}), about_tests=False)
    from_applied = policy_gate(change(path, before, after), about_tests=False)
    assert sorted(set(rules(from_diff))) == sorted(set(rules(from_applied))), (
        from_diff.detail,
        from_applied.detail,
    )
    # ... and the test-task exemption lifts every test rule
    assert not [
        r for r in rules(policy_gate(change(path, before, after), about_tests=True)) if r.startswith("tests.")
    ]
    return sorted(set(rules(from_applied)))


PY_TEST = (
    "import pytest\n\nfrom calc import add\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n    assert add(0, 0) == 0\n\n\n"
    "def test_neg():\n    assert add(-1, -1) == -2\n"
)
UNITTEST = (
    "import unittest\n\n\nclass TestAdd(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\n"
    "    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n"
)
JS_TEST = (
    "const { add } = require('./calc');\n\n"
    "describe('add', () => {\n  it('adds', () => {\n    expect(add(1, 2)).toBe(3);\n  });\n\n"
    "  it('adds zero', () => {\n    expect(add(0, 0)).toBe(0);\n  });\n});\n"
)
GO_TEST = (
    'package calc\n\nimport "testing"\n\n'
    'func TestAdd(t *testing.T) {\n\tif got := Add(1, 2); got != 3 {\n\t\tt.Errorf("got %d", got)\n\t}\n}\n\n'
    'func TestZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal("zero")\n\t}\n}\n'
)
RUST_TEST = (
    "use calc::add;\n\n#[test]\nfn adds() {\n    assert_eq!(add(1, 2), 3);\n}\n\n"
    "#[test]\nfn adds_zero() {\n    assert_eq!(add(0, 0), 0);\n}\n"
)
RUST_INLINE = (
    "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n"
    "    #[test]\n    fn adds() {\n        assert_eq!(add(1, 2), 3);\n    }\n}\n"
)
JAVA_TEST = (
    "package org.x;\n\nimport org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.*;\n\n"
    "class CalcTest {\n    @Test\n    void adds() {\n        assertEquals(3, Calc.add(1, 2));\n    }\n\n"
    "    @Test\n    public void addsZero() {\n        assertEquals(0, Calc.add(0, 0));\n    }\n}\n"
)

P_PY, P_UT, P_JS, P_GO = "tests/test_calc.py", "tests/test_unit.py", "src/calc.test.js", "calc_test.go"
P_RS, P_RS_INLINE, P_JAVA = "tests/calc.rs", "src/lib.rs", "src/test/java/org/x/CalcTest.java"


@pytest.mark.parametrize(
    ("path", "before", "after", "expected"),
    [
        # removed or changed assertions
        (P_PY, PY_TEST, PY_TEST.replace("    assert add(0, 0) == 0\n", ""), ["tests.assertion_removed"]),
        (P_UT, UNITTEST, UNITTEST.replace("(add(1, 2), 3)", "(add(1, 2), 4)"), ["tests.assertion_removed"]),
        (P_JS, JS_TEST, JS_TEST.replace("    expect(add(1, 2)).toBe(3);\n", ""), ["tests.assertion_removed"]),
        (P_GO, GO_TEST, GO_TEST.replace('\t\tt.Errorf("got %d", got)\n', ""), ["tests.assertion_removed"]),
        (
            P_RS,
            RUST_TEST,
            RUST_TEST.replace("    assert_eq!(add(0, 0), 0);\n", ""),
            ["tests.assertion_removed"],
        ),
        (
            P_RS_INLINE,
            RUST_INLINE,
            RUST_INLINE.replace("assert_eq!(add(1, 2), 3)", "assert_eq!(add(1, 2), 4)"),
            ["tests.assertion_removed"],
        ),
        (
            P_JAVA,
            JAVA_TEST,
            JAVA_TEST.replace("        assertEquals(0, Calc.add(0, 0));\n", ""),
            ["tests.assertion_removed"],
        ),
        # ... but moving, re-indenting or adding assertions is fine
        (
            P_PY,
            PY_TEST,
            PY_TEST.replace(
                "    assert add(1, 2) == 3\n    assert add(0, 0) == 0\n",
                "    assert add(0, 0) == 0\n    assert add(1, 2) == 3\n",
            ),
            [],
        ),
        (
            P_PY,
            PY_TEST,
            PY_TEST.replace(
                "    assert add(1, 2) == 3\n", "    with pytest.warns(None):\n        assert add(1, 2) == 3\n"
            ),
            [],
        ),
        (P_JS, JS_TEST, JS_TEST.replace("toBe(3);\n", "toBe(3);\n    expect(add(2, 2)).toBe(4);\n"), []),
        (P_PY, PY_TEST + "# assert nothing\n", PY_TEST, []),  # a commented-out assert is not an assertion
        (
            "src/calc.py",
            "def f(x):\n    assert x > 0\n    return x\n",
            "def f(x):\n    return x\n",
            [],
        ),  # not a test file
        (
            P_RS_INLINE.replace("lib", "util"),
            "pub fn f(x: u8) -> u8 {\n    assert!(x > 0);\n    x\n}\n",
            "pub fn f(x: u8) -> u8 {\n    x\n}\n",
            [],
        ),
        # tautologies
        (
            P_PY,
            PY_TEST,
            PY_TEST.replace("assert add(1, 2) == 3", "assert True"),
            ["tests.assertion_removed", "tests.tautology"],
        ),
        (
            P_PY,
            PY_TEST,
            PY_TEST.replace("assert add(0, 0) == 0", "assert add(0, 0) == 0\n    assert 1 == 1"),
            ["tests.tautology"],
        ),
        (
            P_JS,
            JS_TEST,
            JS_TEST.replace("expect(add(1, 2)).toBe(3);", "expect(true).toBe(true);"),
            ["tests.assertion_removed", "tests.tautology"],
        ),
        (
            P_RS,
            RUST_TEST,
            RUST_TEST.replace("assert_eq!(add(1, 2), 3);", "assert!(true);"),
            ["tests.assertion_removed", "tests.tautology"],
        ),
        (
            P_JAVA,
            JAVA_TEST,
            JAVA_TEST.replace("assertEquals(3, Calc.add(1, 2));", "assertTrue(true);"),
            ["tests.assertion_removed", "tests.tautology"],
        ),
        (
            P_UT,
            UNITTEST,
            UNITTEST.replace(
                "self.assertEqual(add(0, 0), 0)",
                "self.assertEqual(add(0, 0), 0)\n        self.assertTrue(result is True)",
            ),
            [],
        ),
    ],
)
def test_assertion_rules(path: str, before: str, after: str, expected: list[str]) -> None:
    assert check_both_ways(path, before, after) == expected


PY_SKIPS = [
    '@pytest.mark.skip(reason="flaky")',
    '@pytest.mark.skipif(sys.platform == "linux", reason="x")',
    "@pytest.mark.xfail",
    '@unittest.skip("later")',
    "@skip",
]


@pytest.mark.parametrize("marker", PY_SKIPS)
def test_python_skip_decorators(marker: str) -> None:
    after = PY_TEST.replace("def test_neg", f"{marker}\ndef test_neg")
    assert check_both_ways(P_PY, PY_TEST, after) == ["tests.skip"]


@pytest.mark.parametrize(
    "call", ['pytest.skip("x")', 'pytest.xfail("x")', 'self.skipTest("x")', "raise unittest.SkipTest()"]
)
def test_python_skip_calls(call: str) -> None:
    after = UNITTEST.replace(
        "        self.assertEqual(add(0, 0), 0)\n",
        f"        {call}\n        self.assertEqual(add(0, 0), 0)\n",
    )
    assert check_both_ways(P_UT, UNITTEST, after) == ["tests.skip"]


def test_pytestmark_module_skip() -> None:
    after = PY_TEST.replace("import pytest\n", "import pytest\n\npytestmark = pytest.mark.skip\n")
    assert check_both_ways(P_PY, PY_TEST, after) == ["tests.skip"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("  it('adds', ", "  it.skip('adds', "),
        ("  it('adds', ", "  xit('adds', "),
        ("  it('adds', ", "  it.only('adds', "),
        ("  it('adds', ", "  test.skip('adds', "),
        ("describe('add', ", "describe.skip('add', "),
        ("describe('add', ", "xdescribe('add', "),
        ("  it('adds', ", "  it.todo('adds', "),
    ],
)
def test_js_skips(old: str, new: str) -> None:
    found = check_both_ways(P_JS, JS_TEST, JS_TEST.replace(old, new))
    assert "tests.skip" in found
    assert set(found) <= {"tests.skip", "tests.deleted_test"}  # the plain `it('adds'` is gone too


def test_go_skip() -> None:
    after = GO_TEST.replace(
        "func TestZero(t *testing.T) {\n", 'func TestZero(t *testing.T) {\n\tt.Skip("flaky")\n'
    )
    assert check_both_ways(P_GO, GO_TEST, after) == ["tests.skip"]


def test_rust_ignore() -> None:
    after = RUST_TEST.replace("#[test]\nfn adds_zero", "#[test]\n#[ignore]\nfn adds_zero")
    assert check_both_ways(P_RS, RUST_TEST, after) == ["tests.skip"]
    inline = RUST_INLINE.replace("    #[test]\n", '    #[test]\n    #[ignore = "slow"]\n')
    assert check_both_ways(P_RS_INLINE, RUST_INLINE, inline) == ["tests.skip"]


@pytest.mark.parametrize(
    "annotation", ["@Disabled", '@Disabled("flaky")', "@Ignore", "@DisabledOnOs(OS.LINUX)"]
)
def test_java_disabled(annotation: str) -> None:
    after = JAVA_TEST.replace("    @Test\n    void adds()", f"    @Test\n    {annotation}\n    void adds()")
    assert check_both_ways(P_JAVA, JAVA_TEST, after) == ["tests.skip"]


@pytest.mark.parametrize(
    ("path", "before", "line"),
    [
        (P_PY, PY_TEST, "    result = sys.exit if skip_reason else None"),
        (P_PY, PY_TEST, "    model.fit(data)"),
        (P_PY, PY_TEST, "    benefit(1)"),
        (P_PY, PY_TEST, "    skipped = [t for t in tests if t.skip]"),
        (P_GO, GO_TEST, '\tt.Log("skip nothing")'),
        (P_JAVA, JAVA_TEST, "        Calc.ignore();"),
    ],
)
def test_lookalikes_are_not_skips(path: str, before: str, line: str) -> None:
    lines = before.split("\n")
    at = next(
        k for k, text in enumerate(lines) if "assert" in text or "t.Errorf" in text or "assertEquals" in text
    )
    after = "\n".join([*lines[:at], line, *lines[at:]])
    assert check_both_ways(path, before, after) == []


def test_skip_markers_outside_test_files_are_not_policed() -> None:
    assert check_both_ways("docs/conf.py", "x = 1\n", "x = 1\n# it.skip('x', fn)\n") == []


def test_importorskip() -> None:
    after = PY_TEST.replace("import pytest\n", 'import pytest\n\nnp = pytest.importorskip("numpy")\n')
    assert check_both_ways(P_PY, PY_TEST, after) == ["tests.importorskip"]
    assert (
        check_both_ways(
            P_PY, PY_TEST, PY_TEST.replace("import pytest\n", "import pytest\nimport numpy as np\n")
        )
        == []
    )


@pytest.mark.parametrize(
    ("path", "before", "after"),
    [
        (
            "pytest.ini",
            "[pytest]\naddopts = -q\n",
            "[pytest]\naddopts = -q --deselect tests/test_calc.py::test_add\n",
        ),
        (
            "pyproject.toml",
            '[tool.pytest.ini_options]\naddopts = "-q"\n',
            '[tool.pytest.ini_options]\naddopts = "-q --ignore=tests/test_calc.py"\n',
        ),
        ("tests/conftest.py", "import pytest\n", 'import pytest\n\ncollect_ignore = ["test_calc.py"]\n'),
        (
            "package.json",
            '{\n  "jest": {}\n}\n',
            '{\n  "jest": {\n    "testPathIgnorePatterns": ["calc"]\n  }\n}\n',
        ),
        ("Makefile", "test:\n\tpytest\n", 'test:\n\tpytest -k "not test_add"\n'),
    ],
)
def test_test_deselection(path: str, before: str, after: str) -> None:
    assert check_both_ways(path, before, after) == ["tests.deselect"]


def test_cli_flags_in_source_are_not_deselection() -> None:
    src = 'parser.add_argument("--verbose")\n'
    assert (
        check_both_ways(
            "src/cli.py", src, src + 'parser.add_argument("--skip")\nparser.add_argument("--ignore")\n'
        )
        == []
    )


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (P_PY, PY_TEST),
        (P_GO, GO_TEST),
        (P_JAVA, JAVA_TEST),
        (P_JS, JS_TEST),
        (P_RS, RUST_TEST),
        ("tests/fixtures/data.json", "{}\n"),
    ],
)
def test_deleting_a_test_file(path: str, text: str) -> None:
    r = policy_gate(unified_diff({path: text}, {path: None}), about_tests=False)
    assert rules(r) == ["tests.deleted_file"]
    assert f"{path}: deletes a test file" in r.detail
    assert policy_gate(change(path, text, None), about_tests=False).data == r.data
    assert policy_gate(unified_diff({path: text}, {path: None}), about_tests=True).passed


def test_deleting_a_source_file_is_fine() -> None:
    assert policy_gate(
        unified_diff({"src/old.py": "x = 1\n"}, {"src/old.py": None}), about_tests=False
    ).passed


def test_moving_a_test_file_out_of_the_tests() -> None:
    diff = "diff --git a/tests/test_a.py b/lib/a.py\nsimilarity index 100%\nrename from tests/test_a.py\nrename to lib/a.py\n"
    assert rules(policy_gate(diff, about_tests=False)) == ["tests.deleted_file"]
    within = "diff --git a/tests/test_a.py b/tests/test_b.py\nsimilarity index 100%\nrename from tests/test_a.py\nrename to tests/test_b.py\n"
    assert policy_gate(within, about_tests=False).passed


@pytest.mark.parametrize(
    ("path", "before", "after"),
    [
        (P_PY, PY_TEST, PY_TEST.split("\n\ndef test_neg")[0] + "\n"),
        (
            P_UT,
            UNITTEST,
            UNITTEST.replace("\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n", ""),
        ),
        (
            P_JS,
            JS_TEST,
            JS_TEST.replace("\n  it('adds zero', () => {\n    expect(add(0, 0)).toBe(0);\n  });\n", ""),
        ),
        (P_GO, GO_TEST, GO_TEST.split("\nfunc TestZero")[0]),
        (P_RS, RUST_TEST, RUST_TEST.split("\n#[test]\nfn adds_zero")[0]),
        (
            P_JAVA,
            JAVA_TEST,
            JAVA_TEST.replace(
                "\n    @Test\n    public void addsZero() {\n        assertEquals(0, Calc.add(0, 0));\n    }\n",
                "",
            ),
        ),
    ],
)
def test_deleting_a_test_function(path: str, before: str, after: str) -> None:
    found = check_both_ways(path, before, after)
    assert "tests.deleted_test" in found
    assert set(found) <= {"tests.deleted_test", "tests.assertion_removed"}


def test_deleted_test_is_named_with_its_line() -> None:
    r = policy_gate(change(P_PY, PY_TEST, PY_TEST.split("\n\ndef test_neg")[0] + "\n"), about_tests=False)
    assert f"{P_PY}:11: deletes or disables test `test_neg`" in r.detail.splitlines()


def test_removing_only_the_test_attribute_disables_the_test() -> None:
    after = RUST_TEST.replace("#[test]\nfn adds_zero", "fn adds_zero")
    assert check_both_ways(P_RS, RUST_TEST, after) == ["tests.deleted_test"]
    java = JAVA_TEST.replace("    @Test\n    public void addsZero", "    public void addsZero")
    assert check_both_ways(P_JAVA, JAVA_TEST, java) == ["tests.deleted_test"]


def test_adding_tests_and_editing_helpers_is_fine() -> None:
    extra = PY_TEST + "\n\ndef test_big():\n    assert add(10**9, 1) == 10**9 + 1\n"
    assert check_both_ways(P_PY, PY_TEST, extra) == []
    helper = "def make():\n    return 1\n\n\n" + PY_TEST
    assert check_both_ways(P_PY, helper, helper.replace("return 1", "return 2")) == []


@pytest.mark.parametrize(
    ("path", "before", "old", "new"),
    [
        (P_PY, PY_TEST, "def test_neg():\n", "def test_neg():\n    return\n"),
        (
            P_PY,
            PY_TEST.replace("def test_neg():\n", 'def test_neg():\n    """Negative numbers."""\n'),
            '"""Negative numbers."""\n',
            '"""Negative numbers."""\n    return None\n',
        ),
        (P_GO, GO_TEST, "func TestZero(t *testing.T) {\n", "func TestZero(t *testing.T) {\n\treturn\n"),
        (P_JS, JS_TEST, "  it('adds zero', () => {\n", "  it('adds zero', () => {\n    return;\n"),
        (
            P_JAVA,
            JAVA_TEST,
            "    public void addsZero() {\n",
            "    public void addsZero() {\n        return;\n",
        ),
        (P_RS, RUST_TEST, "fn adds_zero() {\n", "fn adds_zero() {\n    return;\n"),
    ],
)
def test_early_return_at_top_of_test(path: str, before: str, old: str, new: str) -> None:
    assert check_both_ways(path, before, before.replace(old, new)) == ["tests.early_return"]


def test_guarded_or_valued_returns_are_not_early_returns() -> None:
    guarded = GO_TEST.replace("\tif Add(0, 0) != 0 {\n", "\tif Add(0, 0) != 0 {\n\t\treturn\n")
    assert "tests.early_return" not in check_both_ways(P_GO, GO_TEST, guarded)
    helper = PY_TEST + "\n\ndef helper():\n    pass\n"
    assert check_both_ways(P_PY, helper, helper.replace("    pass\n", "    return 1\n")) == []
    assert check_both_ways("src/calc.py", "def f():\n    x()\n", "def f():\n    return\n    x()\n") == []


def test_policy_detail_names_each_violation_and_gives_advice() -> None:
    after = PY_TEST.replace("    assert add(0, 0) == 0\n", "").replace(
        "def test_neg", "@pytest.mark.skip\ndef test_neg"
    )
    r = policy_gate(change(P_PY, PY_TEST, after), about_tests=False)
    lines = r.detail.splitlines()
    assert lines[0] == "2 policy violations:"
    assert f"{P_PY}:8: removes or changes an assertion: `assert add(0, 0) == 0`" in lines
    assert f"{P_PY}:10: adds a pytest skip/xfail marker: `@pytest.mark.skip`" in lines
    assert lines[-1] == "Fix the code under test; do not weaken, skip or delete tests."
    assert r.data["violations"][0] == {  # type: ignore[index]
        "path": P_PY,
        "line": 8,
        "rule": "tests.assertion_removed",
        "message": "removes or changes an assertion: `assert add(0, 0) == 0`",
    }


def test_about_tests_allows_test_edits_but_not_ci() -> None:
    applied = AppliedEdits(
        (
            FileChange(".github/workflows/ci.yml", "on: push\n", "on: pull_request\n"),
            FileChange(P_PY, PY_TEST, None),
        )
    )
    r = policy_gate(applied, about_tests=True)
    assert rules(r) == ["path.ci"]
    assert sorted(rules(policy_gate(applied, about_tests=False))) == ["path.ci", "tests.deleted_file"]


def test_clean_source_fix_passes() -> None:
    r = policy_gate(
        change("src/calc.py", "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n"),
        about_tests=False,
    )
    assert (r.gate, r.passed, r.detail) == ("policy", True, "no policy violations in 1 file")


# --- summary -------------------------------------------------------------------------------------


def test_gate_summary() -> None:
    text = gate_summary(
        [
            GateResult("size", True, "1 files, +1 -1 lines"),
            GateResult("targets", False, "1 of 1 target tests do not pass:\nfailed: t"),
        ]
    )
    assert (
        text
        == "- [x] size: 1 files, +1 -1 lines\n- [ ] targets: 1 of 1 target tests do not pass:\n  failed: t"
    )
