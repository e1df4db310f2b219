"""``arcs fix --since REF`` end to end in the real sandbox: a formatter failure fixed at zero LLM
cost by the tool's own fix mode, and a test failure fixed by undoing the culprit's hunk, named in
the trace (issue #14)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli import commands, fix_cmd, main
from bot.settings import Settings
from jobs.repair.trace import load_trace
from tests.conftest import git, sandbox_works


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if fix_cmd.register not in commands.REGISTRY:
        monkeypatch.setattr(commands, "REGISTRY", [*commands.REGISTRY, fix_cmd.register])
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ARCS_MODEL", "ARCS_TRACES_DIR"):
        monkeypatch.delenv(name, raising=False)
    yield


def commit(repo: Path, files: dict[str, str], title: str, author: str = "Ada <ada@example.com>") -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--author", author, "-m", title)
    return git(repo, "rev-parse", "HEAD").strip()


def run_fix(
    repo: Path, args: list[str], settings: Settings, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, Any], str]:
    code = main(["fix", str(repo), "--tier", "0", "--json", "--no-index", *args], settings=settings)
    out, err = capsys.readouterr()
    return code, json.loads(out), err


CLEAN = "def area(w, h):\n    return w * h\n"
UGLY = "def area( w,h ):\n  return w*h\n"


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
def test_formatter_failure_fixed_with_no_llm(
    tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "fmt"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, {"geo.py": CLEAN, "other.py": "X = 1\n"}, "green")
    commit(repo, {"geo.py": UGLY}, "quick edit")
    trace = tmp_path / "trace.json"
    code, data, err = run_fix(
        repo,
        ["--test", "ruff format --check .", "--since", "HEAD~1", "--trace-out", str(trace)],
        settings,
        capsys,
    )
    assert code == 0, err
    assert data["verdict"] == "fixed" and data["cost_usd"] == 0 and data["tokens"] == 0
    assert "+    return w * h" in data["patch"] and "other.py" not in data["patch"]
    notices = load_trace(trace.read_text()).notices
    assert any(n.startswith("autofix (no LLM) with ruff-format on 1 file(s): changed:") for n in notices), (
        notices
    )
    assert "changes since HEAD~1: 1 commit(s), 1 file(s)" in err
    assert_replays(trace, settings, capsys)


RULES = "def is_adult(age):\n    return age >= 18\n\n\ndef is_child(age):\n    return age < 13\n"
TESTS = (
    "from rules import is_adult, is_child\n\n\n"
    "def test_adult():\n    assert is_adult(18)\n\n\n"
    "def test_child():\n    assert is_child(12)\n"
)


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot create a sandbox here")
def test_the_culprit_hunk_is_undone_and_named(
    tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "rev"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, {"rules.py": RULES, "test_rules.py": TESTS, "README.md": "rules\n"}, "green")
    commit(repo, {"README.md": "rules\nmore docs\n"}, "docs")
    culprit = commit(
        repo,
        {"rules.py": RULES.replace("age >= 18", "age > 18")},
        "rules: stricter adults",
        "Bob <bob@example.com>",
    )
    commit(repo, {"README.md": "rules\nmore docs\nand more\n"}, "docs again")
    trace = tmp_path / "trace.json"
    code, data, err = run_fix(
        repo,
        ["--test", "python -m pytest -q", "--since", "HEAD~3", "--trace-out", str(trace)],
        settings,
        capsys,
    )
    assert code == 0, err
    assert "+    return age >= 18" in data["patch"] and "README" not in data["patch"]
    notices = load_trace(trace.read_text()).notices
    assert (
        f"the fix undoes commit {culprit[:7]} (rules: stricter adults, Bob); "
        f"introduced by {culprit[:7]} (rules: stricter adults, Bob)" in notices  # bisected first
    )
    assert_replays(trace, settings, capsys)


def assert_replays(trace: Path, settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    """`arcs replay` reproduces a change-aware run: the trace keeps the change since green."""
    code = main(["replay", str(trace), "--json"], settings=settings)
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["reproduced"] is True, data
    assert data["replayed_verdict"] == "fixed"


def test_an_unknown_since_ref_is_a_one_line_usage_error(
    tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, {"a.py": "A = 1\n"}, "only")
    code = main(["fix", str(repo), "--tier", "0", "--since", "no-such-ref"], settings=settings)
    _, err = capsys.readouterr()
    assert code == 2
    assert "'no-such-ref' is not a commit of" in err
