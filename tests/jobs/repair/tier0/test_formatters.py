"""The formatter/linter table: failing check command -> fix command, through wrappers."""

from __future__ import annotations

import pytest

from jobs.repair.tier0.formatters import autofix_plan, tools


@pytest.mark.parametrize(
    ("check", "fix"),
    [
        ("ruff format --check .", "ruff format ."),
        ("ruff format --diff src", "ruff format src"),
        ("ruff check src tests --output-format=github", "ruff check --output-format=github --fix src tests"),
        ("ruff check --no-fix --select I src", "ruff check --select I --fix src"),
        ("black --check --diff -l 100 src", "black -l 100 src"),
        ("isort --check-only --profile black .", "isort --profile black ."),
        ("isort -c src", "isort src"),
        ("prettier --check 'src/**/*.ts'", "prettier --write 'src/**/*.ts'"),
        ("prettier -c .", "prettier --write ."),
        ("prettier --list-different .", "prettier --write ."),
        ("eslint --max-warnings 0 src", "eslint --max-warnings 0 --fix src"),
        ("eslint -c .eslintrc.json src", "eslint -c .eslintrc.json --fix src"),
        ("gofmt -l -s .", "gofmt -s -w ."),
        ("gofmt -d ./pkg", "gofmt -w ./pkg"),
        ("goimports -l -local example.com .", "goimports -local example.com -w ."),
        ("rustfmt --check src/main.rs", "rustfmt src/main.rs"),
        ("cargo fmt --check", "cargo fmt"),
        ("cargo fmt --all -- --check", "cargo fmt --all"),
    ],
)
def test_check_maps_to_its_fix_keeping_paths_and_config(check: str, fix: str) -> None:
    plan = autofix_plan(check)
    assert plan is not None
    assert plan.script() == fix
    assert plan.check == check


@pytest.mark.parametrize(
    ("check", "fix"),
    [
        ("python -m ruff format --check .", "python -m ruff format ."),
        ("python3.12 -m black --check src", "python3.12 -m black src"),
        ("uv run ruff check --no-fix src", "uv run ruff check --fix src"),
        ("uv run --frozen --with ruff ruff format --check", "uv run --frozen --with ruff ruff format"),
        ("poetry run python -m isort -c src", "poetry run python -m isort src"),
        ("pdm run black --check .", "pdm run black ."),
        ("npx prettier --check .", "npx prettier --write ."),
        ("npx --no-install eslint src", "npx --no-install eslint --fix src"),
        ("pnpm exec eslint .", "pnpm exec eslint --fix ."),
        ("pnpm eslint .", "pnpm eslint --fix ."),
        ("yarn run prettier -c .", "yarn run prettier --write ."),
        ("npm exec -- prettier --check .", "npm exec -- prettier --write ."),
        ("./node_modules/.bin/eslint src", "./node_modules/.bin/eslint --fix src"),
        (".venv/bin/ruff format --check", ".venv/bin/ruff format"),
        ("FORCE_COLOR=0 ruff format --check .", "FORCE_COLOR=0 ruff format ."),
    ],
)
def test_wrappers_are_seen_through_and_kept(check: str, fix: str) -> None:
    plan = autofix_plan(check)
    assert plan is not None
    assert plan.script() == fix


def test_several_steps_give_one_fix_each_in_order() -> None:
    plan = autofix_plan("ruff check . && ruff format --check .\npytest -q; black --check src")
    assert plan is not None
    assert plan.tools == ("ruff-check", "ruff-format", "black")
    assert plan.script() == "ruff check --fix .\nruff format .\nblack src"


def test_cd_is_kept_in_front() -> None:
    plan = autofix_plan("cd web && npx prettier -c .")
    assert plan is not None
    assert plan.script() == "cd web || exit 1\nnpx prettier --write ."
    assert plan.script(["web/a.ts"]) is None  # paths would be relative to the wrong folder


@pytest.mark.parametrize(
    "check",
    [
        "pytest -q",
        "ruff format .",  # already fixes: it cannot be the failing check
        "black src",
        "prettier --write .",
        "pre-commit run ruff --all-files",  # hook environments come from the network
        "npm run lint",
        "make lint",
        'test -z "$(gofmt -l .)"',
        "black --check -",  # standard input: nothing to write back
        "cargo fmt --check src/main.rs",
        "unbalanced 'quote",
        "",
    ],
)
def test_unsupported_commands_have_no_plan(check: str) -> None:
    assert autofix_plan(check) is None


def test_limited_to_changed_files_under_the_checks_paths() -> None:
    plan = autofix_plan("ruff format --check src tests && npx prettier --check 'web/**/*.ts'")
    assert plan is not None
    files = ["src/a.py", "docs/b.py", "tests/t.py", "web/x/y.ts", "web/y.js", "src/c.txt", "-odd.py"]
    assert plan.script(files) == (
        "ruff format --force-exclude src/a.py tests/t.py\nnpx prettier --write web/x/y.ts"
    )
    everything = autofix_plan("black --check .")
    assert everything is not None
    assert everything.script(["-odd.py", "a.md"]) == "black ./-odd.py"
    assert everything.script(["a.md"]) is None


def test_cargo_fmt_takes_no_file_list() -> None:
    plan = autofix_plan("cargo fmt --check")
    assert plan is not None
    assert plan.script(["src/main.rs"]) is None
    assert plan.script() == "cargo fmt"


def test_every_table_row_is_complete() -> None:
    rows = tools()
    assert {t.name for t in rows} >= {
        "ruff-format",
        "ruff-check",
        "black",
        "isort",
        "prettier",
        "eslint",
        "gofmt",
        "cargo-fmt",
    }
    for t in rows:
        assert t.program and t.suffixes
        assert t.requires_check == bool(t.check_flags)
        assert t.fix_flags or t.check_flags
