"""``arcs fix`` exit codes of the verdicts the README documents (issue #10): ``environment`` is 4,
with its one-line hint and no candidate; ``partial`` is 3."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.cli import commands, fix_cmd, main
from bot.settings import Settings
from runners.fake import FakeRunner, fake_execution
from tests.conftest import git

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "fix"


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    if fix_cmd.register not in commands.REGISTRY:
        monkeypatch.setattr(commands, "REGISTRY", [*commands.REGISTRY, fix_cmd.register])
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ARCS_MODEL", "ARCS_TRACES_DIR"):
        monkeypatch.delenv(name, raising=False)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "passing"
    shutil.copytree(FIXTURES / "passing", repo)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def test_a_missing_command_is_exit_4_with_one_line_and_no_candidate(
    tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import runners.factory

    runner = FakeRunner().on(
        "nosuchcmd", fake_execution(exit_code=127, stderr="sh: 1: nosuchcmd: not found\n")
    )
    monkeypatch.setattr(runners.factory, "make_runner", lambda **_kwargs: runner)
    repo = _repo(tmp_path)
    code = main(["fix", str(repo), "--test", "nosuchcmd", "--json"], settings=settings)
    out, _ = capsys.readouterr()
    data = json.loads(out)
    assert code == fix_cmd.EXIT_ENVIRONMENT == 4
    assert data["verdict"] == "environment" and data["candidates"] == 0 and data["tokens"] == 0
    assert "nosuchcmd" in data["reason"] and ".arcs.yml" in data["reason"] and "\n" not in data["reason"]


def test_the_documented_exit_codes() -> None:
    assert [fix_cmd.exit_code_of(v) for v in ("fixed", "partial", "environment", "budget_exhausted")] == [
        0,
        3,
        4,
        1,
    ]
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    assert "`3` **partial**" in readme and "`4` **environment**" in readme
