"""The sandbox against hostile repositories (tests/fixtures/security/*/attack.py).

Every attack runs in an ephemeral workspace copied from a fixture repository, inside LocalSandbox,
while the host process holds a canary secret in its environment, its ``~/.git-credentials``,
``~/.gitconfig`` and the repository's ``.git/config``. For each attack the host checks that it
failed (or was killed at its limit), that no process and no file survived the run, and that the
canary appears nowhere in the result.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from runners.base import Execution, Runner
from runners.sandbox import LocalSandbox, UnsafeLocalRunner
from runners.workspace import ephemeral_workspace
from tests.conftest import git

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "security"

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed"),
]


@pytest.fixture(scope="module")
def sandbox() -> LocalSandbox:
    # A low process cap keeps the fork bomb small on CI machines.
    box = LocalSandbox(max_processes=64)
    box.check()
    return box


@dataclass
class Host:
    """What the host holds that the sandbox must never see."""

    canary: str
    home: Path
    repo_factory: Callable[[str], Path]
    ws_root: Path


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_repo: Callable[..., Path]) -> Host:
    canary = f"arcs-canary-{uuid.uuid4().hex}"
    home = tmp_path / "host-home"
    home.mkdir()
    (home / ".git-credentials").write_text(f"https://x-access-token:{canary}@github.com\n")
    (home / ".gitconfig").write_text(f"[credential]\n\thelper = store\n[user]\n\tname = {canary}\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ARCS_TEST_CANARY", canary)
    monkeypatch.setenv("GITHUB_TOKEN", f"ghs_{canary}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", f"sk-ant-{canary}")
    monkeypatch.setenv("GIT_ASKPASS", f"/bin/echo {canary}")

    def repo_factory(name: str) -> Path:
        source = FIXTURES / name
        files = {p.relative_to(source).as_posix(): p.read_text() for p in source.rglob("*") if p.is_file()}
        repo = make_repo(files, name=name)
        git(repo, "remote", "add", "origin", f"https://x-access-token:{canary}@github.com/acme/widgets.git")
        git(repo, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {canary}")
        assert canary in (repo / ".git" / "config").read_text()
        return repo

    return Host(canary=canary, home=home, repo_factory=repo_factory, ws_root=tmp_path / "workspaces")


def survivors(marker: str, *, settle_s: float = 5.0) -> list[int]:
    """Host pids whose command line contains ``marker`` (SIGKILLed ones get ``settle_s`` to go)."""
    deadline = time.monotonic() + settle_s
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry.name))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def attack(
    runner: Runner,
    host: Host,
    name: str,
    args: str = "",
    *,
    timeout_s: float = 30.0,
    memory_mb: int = 2048,
    collect: tuple[str, ...] = (),
) -> Execution:
    """Run fixture ``name`` in an ephemeral workspace and check the invariants every attack shares."""
    repo = host.repo_factory(name)
    marker = f"arcs-marker-{uuid.uuid4().hex}"
    with ephemeral_workspace(repo, root=host.ws_root) as ws:
        result = runner.run(
            ws,
            f"python3 attack.py {marker} {args}".strip(),
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            collect=collect,
        )
    assert survivors(marker) == [], "a process outlived the run"
    assert list(host.ws_root.iterdir()) == [], "the workspace was not removed"
    if isinstance(runner, LocalSandbox):
        assert host.canary not in repr(result)
    return result


def test_secrets_never_reach_the_sandbox(sandbox: LocalSandbox, host: Host) -> None:
    repo = host.repo_factory("secrets")
    with ephemeral_workspace(repo, root=host.ws_root) as ws:
        result = sandbox.run(
            ws,
            f"python3 attack.py {host.home} {repo}",
            timeout_s=30,
            collect=("loot.txt", "loot-link", "loot-repo-link"),
        )
    assert "DONE" in result.stdout, result.stderr
    assert host.canary not in repr(result)
    # The attack really ran: it could read its own environment and left its loot file.
    assert "READ /proc/self/environ" in result.stdout
    assert set(result.artifacts) == {"loot.txt"}  # the symlinks to host files were not followed
    for path in (
        host.home / ".git-credentials",
        host.home / ".gitconfig",
        repo / ".git" / "config",
        Path("/root/.git-credentials"),
        Path("/etc/gitconfig"),
        Path("/etc/shadow"),
    ):
        assert f"BLOCKED {path}:" in result.stdout
    # The workspace's own copy of .git/config exists, without the credentials.
    assert "READ .git/config" in result.stdout and "acme/widgets" in result.stdout
    # Only the sandbox's own processes are visible, and only its own environment is readable.
    assert all("GITHUB_TOKEN" not in line for line in result.stdout.splitlines())
    assert list(host.ws_root.iterdir()) == []


def test_canary_detection_catches_an_unsandboxed_run(host: Host, capsys: pytest.CaptureFixture[str]) -> None:
    # Control: the same attack without the sandbox does find the host's secrets, which shows the
    # checks above can fail.
    runner = UnsafeLocalRunner()
    repo = host.repo_factory("secrets")
    with ephemeral_workspace(repo, root=host.ws_root) as ws:
        result = runner.run(ws, f"python3 attack.py {host.home} {repo}", timeout_s=30)
    assert host.canary in result.stdout
    assert f"READ {host.home / '.git-credentials'}" in result.stdout


def test_network_is_unreachable(sandbox: LocalSandbox, host: Host) -> None:
    result = attack(sandbox, host, "network")
    lines = result.stdout.splitlines()
    assert lines[-1] == "DONE", result.stderr
    assert not [line for line in lines if line.startswith(("CONNECTED", "RESOLVED"))]
    blocked = [line for line in lines if line.startswith("BLOCKED")]
    assert len(blocked) == 7
    assert any(line.startswith("BLOCKED tcp 169.254.169.254:80") for line in blocked)
    assert any(line.startswith("BLOCKED dns example.com") for line in blocked)


def test_writes_outside_the_workspace_never_reach_the_host(
    sandbox: LocalSandbox, host: Host, tmp_path: Path
) -> None:
    host_dir = tmp_path / "host-dir"
    host_dir.mkdir()
    repo_guess = tmp_path / "write_outside"  # where the fixture repo lives on the host
    result = attack(sandbox, host, "write_outside", f"{host_dir} {repo_guess} {host.ws_root} {host.home}")
    assert result.stdout.splitlines()[-1] == "DONE", result.stderr
    marker = result.command.split()[2]
    name = f"arcs-pwn-{marker}"
    for folder in ("/", "/usr", "/usr/local/bin", "/etc", sys.base_prefix):
        assert f"BLOCKED {Path(folder, name)}:" in result.stdout
        assert not Path(folder, name).exists()
    for folder in (host_dir, repo_guess, host.ws_root, host.home):
        assert f"BLOCKED {folder / name}:" in result.stdout
        assert not (folder / name).exists()
    # Private tmpfs mounts: writable inside, invisible outside.
    assert f"WROTE /tmp/{name}" in result.stdout
    for folder in ("/tmp", "/dev/shm", Path("~").expanduser()):
        assert not Path(folder, name).exists()


def test_fork_bomb_is_contained(sandbox: LocalSandbox, host: Host) -> None:
    result = attack(sandbox, host, "fork_bomb", timeout_s=3)
    assert result.exit_code == -9
    if sandbox.enforcer.cgroups.has("pids"):
        # The run's pids cgroup refuses the 65th fork and the sandbox stops the run at once.
        assert result.killed_by == "processes"
        assert 0 < result.usage["pids_peak"] <= 64
        assert result.limit == "stopped: the sandbox reached its 64-process limit"
    else:  # RLIMIT_NPROC holds it until the time limit
        assert result.killed_by == "timeout"
        assert "BLOCKED fork: errno 11" in result.stdout


def test_memory_bomb_fails_fast(sandbox: LocalSandbox, host: Host) -> None:
    result = attack(sandbox, host, "memory", memory_mb=512, timeout_s=60)
    assert result.killed_by == "memory"
    assert "MemoryError" in result.stderr
    assert "ALLOCATED" not in result.stdout


def test_sleep_is_killed_at_the_timeout(sandbox: LocalSandbox, host: Host) -> None:
    result = attack(sandbox, host, "sleep", timeout_s=1)
    assert result.killed_by == "timeout"
    assert result.exit_code == -9
    assert result.stdout == "SLEEPING\n"


def test_daemon_does_not_survive(sandbox: LocalSandbox, host: Host) -> None:
    result = attack(sandbox, host, "daemon", timeout_s=30)
    assert result.ok, result.stderr
    assert result.stdout == "DAEMON STARTED\n"
