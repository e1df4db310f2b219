"""``arcs replay`` runs with the recorded run's toolchain and, on another tree, names the commit
to check out (issue #23). Both failed on the base commit: the replay's sandbox got only its own
``--toolchain`` folders, and a moved checkout printed two digests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli import commands, fix_cmd, main
from bot.settings import Settings
from runners.fake import FakeRunner
from tests.bot.test_cli_fix import fixture_repo, scripted_pytest
from tests.conftest import git


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if fix_cmd.register not in commands.REGISTRY:
        monkeypatch.setattr(commands, "REGISTRY", [*commands.REGISTRY, fix_cmd.register])
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ARCS_MODEL", "ARCS_TRACES_DIR", "VIRTUAL_ENV"):
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
def toolchains_seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, ...]]:
    """The ``toolchain_paths`` every sandbox was made with (a scripted pytest answers)."""
    import runners.factory

    runner = FakeRunner().on("pytest", scripted_pytest)
    seen: list[tuple[Path, ...]] = []

    def make_runner(**kwargs: Any) -> FakeRunner:
        seen.append(tuple(kwargs["toolchain_paths"]))
        return runner

    monkeypatch.setattr(runners.factory, "make_runner", make_runner)
    return seen


def _fix(repo: Path, trace: Path, settings: Settings, *extra: str) -> None:
    code = main(["fix", str(repo), "--tier", "0", "--trace-out", str(trace), *extra], settings=settings)
    assert code == 0


def test_replay_uses_the_toolchain_the_recorded_run_used(
    tmp_path: Path,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    toolchains_seen: list[tuple[Path, ...]],
) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    jdk = tmp_path / "jdk-21"
    (jdk / "bin").mkdir(parents=True)
    trace = tmp_path / "trace.json"
    _fix(repo, trace, settings, "--toolchain", str(jdk))
    assert jdk in toolchains_seen[-1]
    assert str(jdk) in json.loads(trace.read_text())["repo"]["toolchains"]

    capsys.readouterr()
    code = main(["replay", str(trace)], settings=settings)  # no --toolchain this time
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert jdk in toolchains_seen[-1]

    # A recorded folder that is gone is said, in one line, and the replay still runs.
    (jdk / "bin").rmdir()
    jdk.rmdir()
    main(["replay", str(trace)], settings=settings)
    _out, err = capsys.readouterr()
    assert f"note: the recorded toolchain {jdk} is not here; the replay may diverge (--toolchain DIR)" in err
    assert jdk not in toolchains_seen[-1]


def test_replay_on_another_commit_names_the_commit_to_check_out(
    tmp_path: Path,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
    toolchains_seen: list[tuple[Path, ...]],
) -> None:
    repo = fixture_repo(tmp_path, "boundary")
    recorded = git(repo, "rev-parse", "HEAD").strip()
    trace = tmp_path / "trace.json"
    _fix(repo, trace, settings)
    (repo / "ages" / "__init__.py").write_text('"""Moved on."""\n')
    git(repo, "commit", "-qam", "later")
    capsys.readouterr()

    code = main(["replay", str(trace)], settings=settings)
    out, _ = capsys.readouterr()
    assert code == 1
    head = git(repo, "rev-parse", "HEAD").strip()
    assert out.splitlines() == [
        f"replay diverged at source: commit was {recorded!r}, replay gave {head!r}",
        f"the trace was recorded at commit {recorded}; check it out and replay again: "
        f"git -C {repo} checkout {recorded}",
    ]
    code = main(["replay", str(trace), "--json"], settings=settings)
    data = json.loads(capsys.readouterr()[0])
    assert code == 1 and data["divergence"]["expected"] == recorded
    assert data["hint"].endswith(f"git -C {repo} checkout {recorded}")

    # Checked out as told, it reproduces.
    git(repo, "checkout", "-q", recorded)
    assert main(["replay", str(trace)], settings=settings) == 0
