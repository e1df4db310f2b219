"""Tier-0 autofix: run the tool's fix mode, verify with the original check, the change as a candidate."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from jobs.repair.edits import apply_edits
from jobs.repair.fakes_change import FakeCommandBench
from jobs.repair.tier0.autofix import MISSING_COMMAND, autofix
from tests.conftest import sandbox_works

# A fake "fmt" tool: `fmt --check [files]` exits 1 when a file has trailing spaces; `fmt [files]`
# strips them. No file arguments (or "."): every .py file.


def fake_fmt(args: Sequence[str], files: dict[str, str]) -> int:
    check = "--check" in args
    named = [a for a in args if not a.startswith("-") and a != "."]
    chosen = named or [p for p in files if p.endswith(".py")]
    dirty = [p for p in chosen if p in files and files[p] != _clean(files[p])]
    if check:
        return 1 if dirty else 0
    for p in dirty:
        files[p] = _clean(files[p])
    return 0


def _clean(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.split("\n"))


def black_bench(base: dict[str, str]) -> FakeCommandBench:
    return FakeCommandBench(base, {"black": fake_fmt})


def test_fix_then_the_original_check_passes() -> None:
    bench = black_bench({"a.py": "x = 1   \n", "b.py": "y = 2\n"})
    result = autofix(bench, "black --check .")
    assert result.fixed
    assert bench.calls == ["black .", "black --check ."]
    assert result.change is not None and result.change.paths == ("a.py",)
    assert result.runs == 2
    assert result.tools == ("black",)


def test_changed_files_first_then_everything_when_that_is_not_enough() -> None:
    bench = black_bench({"a.py": "x = 1   \n", "old.py": "z = 3  \n"})
    result = autofix(bench, "black --check .", changed_files=["a.py", "README.md"])
    assert bench.calls == ["black a.py", "black --check .", "black .", "black --check ."]
    assert [a.scope for a in result.attempts] == ["changed", "all"]
    assert result.fixed and result.change is not None
    assert result.change.paths == ("a.py", "old.py")


def test_changed_files_only_when_that_suffices() -> None:
    bench = black_bench({"a.py": "x = 1   \n", "clean.py": "z = 3\n"})
    result = autofix(bench, "black --check .", changed_files=["a.py"])
    assert result.fixed and bench.calls == ["black a.py", "black --check ."]


def test_missing_tool_stops_without_a_change() -> None:
    bench = FakeCommandBench({"a.py": "x  \n"}, {})
    result = autofix(bench, "ruff format --check .")
    assert not result.fixed and result.change is None
    assert result.attempts[0].fix.exit_code == MISSING_COMMAND
    assert "not installed" in result.reason
    assert bench.calls == ["ruff format ."]


def test_a_fix_that_changes_nothing_is_not_verified() -> None:
    bench = black_bench({"a.py": "x = 1\n"})
    result = autofix(bench, "black --check .")
    assert not result.fixed and "changed nothing" in result.reason
    assert bench.calls == ["black ."]


def test_a_partial_fix_is_kept_as_an_unverified_change() -> None:
    def lint(args: Sequence[str], files: dict[str, str]) -> int:
        if "--fix" in args:
            files["a.py"] = files["a.py"].replace("import os\n", "")
        return 1 if "undefined" in files["a.py"] or "import os" in files["a.py"] else 0

    bench = FakeCommandBench({"a.py": "import os\nprint(undefined)\n"}, {"ruff": lint})
    result = autofix(bench, "ruff check .")
    assert not result.fixed
    assert result.change is not None and result.change.after["a.py"] == "print(undefined)\n"
    proposal = result.proposal()
    assert proposal is not None and "still fails" in proposal.explanation


def test_budget_bounds_the_runs() -> None:
    bench = black_bench({"a.py": "x = 1   \n", "old.py": "z = 3  \n"})
    result = autofix(bench, "black --check .", changed_files=["a.py"], max_runs=2)
    assert not result.fixed and result.runs == 2 and result.reason.startswith("changed:")
    assert len(bench.calls) == 2


def test_not_a_formatter_check() -> None:
    bench = black_bench({})
    result = autofix(bench, "pytest -q")
    assert not result.fixed and result.runs == 0 and bench.calls == []


def test_the_proposal_reproduces_the_change(tmp_path: Path) -> None:
    bench = black_bench({"a.py": "x = 1   \ny = 2 \n", "b.py": "ok = 1\n"})
    result = autofix(bench, "black --check .")
    proposal = result.proposal()
    assert proposal is not None and proposal.proposer == "autofix"
    (tmp_path / "a.py").write_text("x = 1   \ny = 2 \n")
    (tmp_path / "b.py").write_text("ok = 1\n")
    applied = apply_edits(tmp_path, proposal.edits)
    assert result.change is not None
    assert applied.after == result.change.after
    assert result.to_json()["files"] == ["a.py"]


# -- the real sandbox and the real ruff ---------------------------------------------------------


UGLY = "import os\nx = [1,2,\n  3]\ndef f( a ):\n  return a\n"
CLEAN = "y = 1\n"


@pytest.mark.sandbox
@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
@pytest.mark.skipif(
    shutil.which("ruff", path=str(Path(sys.prefix) / "bin")) is None, reason="no ruff in the venv"
)
def test_real_ruff_in_the_sandbox(tmp_path: Path) -> None:
    from jobs.command_bench import SandboxCommandBench
    from runners.factory import make_runner

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text(
        '[tool.ruff]\nline-length = 100\n[tool.ruff.lint]\nselect = ["F401"]\n'
    )
    (repo / "a.py").write_text(UGLY)
    (repo / "b.py").write_text(CLEAN)
    bench = SandboxCommandBench(repo, make_runner(toolchain_paths=[Path(sys.prefix)]))
    check = "ruff check . && ruff format --check ."
    assert not bench.run_command(check, timeout_s=60).ok

    result = autofix(bench, check, changed_files=["a.py"], timeout_s=60)

    assert result.fixed, result.to_json()
    assert result.change is not None and result.change.paths == ("a.py",)
    fixed = result.change.after["a.py"]
    assert (
        fixed == "x = [1, 2, 3]\n\n\ndef f(a):\n    return a\n"
    )  # F401 removed the import, format did the rest
    assert (repo / "a.py").read_text() == UGLY  # the user's tree is only read
    assert (
        result.attempts[0].fix.command
        == "ruff check --fix --force-exclude a.py\nruff format --force-exclude a.py"
    )
    assert result.attempts[0].check is not None and result.attempts[0].check.command == check
