"""Lint / type-check output read into failure sites (``<tool>:<path>:<rule>`` run-level errors).

The samples in tests/fixtures/outputs/lint_*.txt are real output of ruff 0.17 (full, concise,
syntax error), flake8 7, pylint 3, eslint 9 (stylish, unix, a parse error), tsc 5 (plain and
``--pretty``) and mypy. Before this, a failing lint command was one synthetic ``<run>`` error
with no file or line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.repair.state import Baseline
from jobs.sandbox_workbench import to_outcome
from runners.base import Execution
from runners.results import TestRun, compare, localize, parse_output

OUTPUTS = Path(__file__).resolve().parent.parent / "fixtures" / "outputs"


def run_of(text: str, exit_code: int = 1, command: str = "make lint") -> TestRun:
    execution = Execution(command=command, exit_code=exit_code, stdout=text, stderr="", duration_s=0.5)
    return parse_output(execution, None)


def sites(name: str) -> dict[str, tuple[str | None, int | None]]:
    run = run_of((OUTPUTS / name).read_text(encoding="utf-8"))
    return {e.id: (e.file, e.line) for e in run.errors}


PY = {
    "F401": ("pkg/mod.py", 1),
    "F841": ("pkg/mod.py", 6),
    "F821": ("pkg/mod.py", 11),
}


@pytest.mark.parametrize("name", ["lint_ruff_full.txt", "lint_ruff_concise.txt"])
def test_ruff_both_formats_give_the_same_sites(name: str) -> None:
    assert sites(name) == {
        **{f"ruff:pkg/mod.py:{code}": where for code, where in PY.items()},
        "ruff:pkg/other.py:F401": ("pkg/other.py", 1),
    }


def test_ruff_syntax_errors_are_sites() -> None:
    assert sites("lint_ruff_syntax.txt") == {"ruff:pkg/bad.py:invalid-syntax": ("pkg/bad.py", 1)}


def test_flake8_and_pylint() -> None:
    assert sites("lint_flake8.txt") == {
        **{f"flake8:pkg/mod.py:{code}": where for code, where in PY.items()},
        "flake8:pkg/mod.py:E711": ("pkg/mod.py", 7),
        "flake8:pkg/other.py:F401": ("pkg/other.py", 1),
    }
    got = sites("lint_pylint.txt")
    assert got["pylint:pkg/mod.py:E0602"] == ("pkg/mod.py", 11)
    assert got["pylint:pkg/mod.py:C0116"] == ("pkg/mod.py", 5)  # the first of two sites
    assert len(got) == 8


@pytest.mark.parametrize("name", ["lint_eslint_stylish.txt", "lint_eslint_unix.txt"])
def test_eslint_errors_are_sites_and_warnings_are_not(name: str) -> None:
    a, b = "/tmp/h12/es/src/a.js", "/tmp/h12/es/src/b.js"
    assert sites(name) == {
        f"eslint:{a}:no-unused-vars": (a, 2),
        f"eslint:{a}:no-undef": (a, 4),
        f"eslint:{b}:no-unreachable": (b, 4),
        f"eslint:{b}:no-unused-vars": (b, 4),
    }  # no-console is a warning: it does not fail the command


def test_eslint_parse_error_and_repository_relative_ids() -> None:
    run = run_of((OUTPUTS / "lint_eslint_parse.txt").read_text(encoding="utf-8"))
    local = localize(run, ["src/c.js"], roots=("/tmp/h12/es",))
    assert [(e.id, e.file, e.line, e.type) for e in local.errors] == [
        ("eslint:src/c.js:parse", "src/c.js", 1, "lint")
    ]


@pytest.mark.parametrize("name", ["lint_tsc.txt", "lint_tsc_pretty.txt"])
def test_tsc_sites_carry_every_line_as_a_frame(name: str) -> None:
    run = run_of((OUTPUTS / name).read_text(encoding="utf-8"))
    (err,) = run.errors
    assert (err.id, err.file, err.line) == ("tsc:src/a.ts:TS2322", "src/a.ts", 2)
    assert [(f.file, f.line) for f in err.frames] == [("src/a.ts", 5), ("src/a.ts", 2)]
    assert "Type 'number' is not assignable to type 'string'." in err.message


def test_mypy() -> None:
    assert sites("lint_mypy.txt") == {"mypy:pkg/typed.py:return-value": ("pkg/typed.py", 2)}


def test_a_passing_lint_run_has_no_sites() -> None:
    text = (OUTPUTS / "lint_eslint_stylish.txt").read_text(encoding="utf-8")
    assert run_of(text, exit_code=0).errors == ()


CONCISE = "pkg/mod.py:{line}:8: F401 [*] `os` imported but unused\n"


def test_ids_leave_the_line_out_so_an_edit_above_does_not_rename_a_site() -> None:
    one = run_of(CONCISE.format(line=1) + "Found 1 error.\n")
    moved = run_of(CONCISE.format(line=3) + "Found 1 error.\n")
    assert [e.id for e in one.errors] == [e.id for e in moved.errors] == ["ruff:pkg/mod.py:F401"]


def test_a_fixed_site_is_fixed_and_a_new_site_is_a_regression() -> None:
    text = (OUTPUTS / "lint_ruff_concise.txt").read_text(encoding="utf-8")
    base_run = run_of(text)
    base = to_outcome(base_run, selected=False)
    ids = tuple(base.errors)
    baseline = Baseline(outcome=base, targets=ids, errors=frozenset(ids), failing=frozenset(ids))
    clean = to_outcome(run_of("All checks passed!\n", exit_code=0), selected=False)
    assert baseline.targets_gate(clean).passed
    assert baseline.fixed_targets(clean) == frozenset(ids)
    new = run_of("pkg/other.py:3:1: E402 Module level import not at top of file\nFound 1 error.\n")
    gate = baseline.regression_gate(to_outcome(new, selected=False), None)
    assert not gate.passed and "ruff:pkg/other.py:E402" in gate.detail
    # The runner's own comparison sees the new site too.
    assert compare(base_run, new).candidate_errors == ("ruff:pkg/other.py:E402",)
