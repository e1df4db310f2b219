"""Ephemeral workspaces: faithful private copies, always removed."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.errors import UsageError
from runners.workspace import (
    WorkspaceTooLarge,
    ephemeral_workspace,
    remove_tree,
    scrub_git_credentials,
    sweep_stale,
    tree_size,
)
from tests.conftest import git

MakeRepo = Callable[..., Path]


def test_copy_is_faithful_and_private(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_repo({"pkg/mod.py": "x = 1\n", "run.sh": "#!/bin/sh\necho hi\n", "data.bin": b"\x00\xff"})
    (repo / "run.sh").chmod(0o755)
    (repo / "untracked.txt").write_text("dirty\n")  # a candidate patch is usually uncommitted
    (repo / "pkg" / "mod.py").write_text("x = 2\n")
    (repo / "link").symlink_to("pkg/mod.py")
    (repo / "dangling").symlink_to("does/not/exist")
    (repo / "empty").mkdir()
    root = tmp_path / "wsroot"
    with ephemeral_workspace(repo, root=root) as ws:
        assert ws.name == repo.name and ws.parent.parent == root
        assert (ws / "pkg" / "mod.py").read_text() == "x = 2\n"
        assert (ws / "untracked.txt").read_text() == "dirty\n"
        assert (ws / "data.bin").read_bytes() == b"\x00\xff"
        assert (ws / "link").readlink() == Path("pkg/mod.py")
        assert (ws / "dangling").readlink() == Path("does/not/exist")
        assert (ws / "empty").is_dir()
        assert stat.S_IMODE((ws / "run.sh").stat().st_mode) == 0o755
        assert "untracked.txt" in git(ws, "status", "--porcelain")
        (ws / "pkg" / "mod.py").write_text("x = 3\n")
        (ws / "new.txt").write_text("new")
    assert (repo / "pkg" / "mod.py").read_text() == "x = 2\n"
    assert not (repo / "new.txt").exists()
    assert list(root.iterdir()) == []


def test_removed_after_an_exception(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("a")
    root = tmp_path / "root"
    with pytest.raises(RuntimeError), ephemeral_workspace(src, root=root) as ws:
        (ws / "b.txt").write_text("b")
        raise RuntimeError("boom")
    assert list(root.iterdir()) == []


def test_read_only_content_is_removed(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "locked").mkdir(parents=True)
    (src / "locked" / "f.txt").write_text("x")
    root = tmp_path / "root"
    with ephemeral_workspace(src, root=root) as ws:
        (ws / "locked" / "f.txt").chmod(0o400)
        (ws / "locked").chmod(0o500)
    assert list(root.iterdir()) == []
    remove_tree(tmp_path / "never-existed")  # missing is fine


def test_parallel_workspaces_are_distinct(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "f.txt").write_text("base")
    root = tmp_path / "root"
    with ephemeral_workspace(src, root=root) as one, ephemeral_workspace(src, root=root) as two:
        assert one != two
        (one / "f.txt").write_text("one")
        assert (two / "f.txt").read_text() == "base"
    assert list(root.iterdir()) == []


def test_size_limit(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "big.bin").write_bytes(b"x" * 50_000)
    assert tree_size(src) >= 50_000
    root = tmp_path / "root"
    with pytest.raises(WorkspaceTooLarge, match="MiB"), ephemeral_workspace(src, root=root, max_bytes=10_000):
        pass  # pragma: no cover
    assert not root.exists() or list(root.iterdir()) == []
    with ephemeral_workspace(src, root=root, max_bytes=None) as ws:
        assert (ws / "big.bin").stat().st_size == 50_000


def test_source_must_be_a_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError), ephemeral_workspace(tmp_path / "missing"):
        pass  # pragma: no cover


def test_credentials_are_scrubbed_from_the_copy(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_repo({"a.py": ""})
    git(repo, "remote", "add", "origin", "https://x-access-token:ghs_SECRET@github.com/acme/widgets.git")
    git(repo, "config", "http.https://github.com/.extraheader", "AUTHORIZATION: basic SECRET64")
    git(repo, "config", "credential.helper", "store --file /root/creds")
    git(repo, "config", "url.https://bot:ghs_SECRET2@github.com/.insteadOf", "https://github.com/")
    with ephemeral_workspace(repo, root=tmp_path / "root") as ws:
        text = (ws / ".git" / "config").read_text()
        assert "SECRET" not in text and "creds" not in text
        assert "https://github.com/acme/widgets.git" in text
        assert git(ws, "remote", "get-url", "origin").strip() == "https://github.com/acme/widgets.git"
        assert git(ws, "log", "--oneline").strip()  # still a working repository
    assert "ghs_SECRET" in (repo / ".git" / "config").read_text()  # the source is untouched
    with ephemeral_workspace(repo, root=tmp_path / "root", scrub_credentials=False) as ws:
        assert "ghs_SECRET" in (ws / ".git" / "config").read_text()


def test_scrub_is_a_no_op_without_git(tmp_path: Path) -> None:
    assert scrub_git_credentials(tmp_path) is False


def test_leftovers_of_a_killed_host_are_swept(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "f.txt").write_text("x")
    root = tmp_path / "root"
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from runners.workspace import ephemeral_workspace
        with ephemeral_workspace(Path({str(src)!r}), root=Path({str(root)!r})) as ws:
            print(ws, flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.stdout is not None
    orphan = Path(proc.stdout.readline().strip())
    proc.stdout.close()
    assert orphan.is_dir()
    os.kill(proc.pid, signal.SIGKILL)  # no finally, no atexit
    proc.wait()
    assert orphan.is_dir()
    with ephemeral_workspace(src, root=root) as ws:
        assert not orphan.exists()
        assert [p.name for p in root.iterdir()] == [ws.parent.name]
    assert list(root.iterdir()) == []


def test_sweep_leaves_live_and_foreign_folders(tmp_path: Path) -> None:
    mine = tmp_path / f"arcs-ws-{os.getpid()}-abc"
    mine.mkdir()
    foreign = tmp_path / "something-else"
    foreign.mkdir()
    assert sweep_stale(tmp_path) == []
    assert mine.exists() and foreign.exists()


def test_a_folder_nobody_may_open_is_removed(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "f.txt").write_text("x")
    (folder / "sub").chmod(0)
    remove_tree(folder)
    assert not folder.exists()
