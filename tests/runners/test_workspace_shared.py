"""Dependency folders shared read-only instead of copied per candidate (issue 30)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runners.sandbox import LocalSandbox, UnsafeLocalRunner
from runners.workspace import ephemeral_workspace, shareable, shared_folders, tree_size


def project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    (repo / "node_modules" / "dep").mkdir(parents=True)
    (repo / "node_modules" / "dep" / "index.js").write_text("module.exports = 1\n")
    (repo / "test").mkdir()
    (repo / "test" / "t.js").write_text("require('dep')\n")
    (repo / ".hidden").write_text("kept\n")
    return repo


def test_shared_folder_is_an_empty_mount_point_and_named(tmp_path: Path) -> None:
    repo = project(tmp_path)
    with ephemeral_workspace(repo, root=tmp_path / "ws", share=("node_modules",)) as ws:
        assert (ws / "test" / "t.js").read_text() == "require('dep')\n"
        assert (ws / ".hidden").is_file()
        assert (ws / "node_modules").is_dir() and not list((ws / "node_modules").iterdir())
        assert shared_folders(ws) == (("node_modules", (repo / "node_modules").resolve()),)
    assert shared_folders(ws) == ()
    with ephemeral_workspace(repo, root=tmp_path / "ws") as plain:
        assert (plain / "node_modules" / "dep" / "index.js").is_file()
        assert shared_folders(plain) == ()


def test_a_linked_or_missing_folder_is_not_shared(tmp_path: Path) -> None:
    repo = project(tmp_path)
    shutil.move(repo / "node_modules", tmp_path / "elsewhere")
    (repo / "node_modules").symlink_to(tmp_path / "elsewhere")
    with ephemeral_workspace(repo, root=tmp_path / "ws", share=("node_modules", "vendor")) as ws:
        assert (ws / "node_modules").is_symlink() and shared_folders(ws) == ()


def test_size_limit_leaves_shared_folders_out(tmp_path: Path) -> None:
    repo = project(tmp_path)
    (repo / "node_modules" / "big.bin").write_bytes(b"\0" * 100_000)
    assert tree_size(repo) > 100_000 > tree_size(repo, skip=frozenset({"node_modules"}))
    with ephemeral_workspace(repo, root=tmp_path / "ws", max_bytes=50_000, share=("node_modules",)):
        pass


def test_only_a_mounting_runner_without_setup_shares() -> None:
    assert shareable(LocalSandbox.__new__(LocalSandbox), None) == ("node_modules",)
    assert shareable(LocalSandbox.__new__(LocalSandbox), "npm ci") == ()
    assert shareable(UnsafeLocalRunner.__new__(UnsafeLocalRunner), None) == ()


@pytest.mark.sandbox
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_candidates_read_the_shared_folder_and_cannot_change_it(tmp_path: Path) -> None:
    box = LocalSandbox()
    box.check()
    repo = project(tmp_path)
    script = (
        "cat node_modules/dep/index.js; "
        "echo poison > node_modules/dep/index.js; touch node_modules/new; rm -rf node_modules/dep; "
        "cat node_modules/dep/index.js"
    )
    with ephemeral_workspace(repo, root=tmp_path / "ws", share=("node_modules",)) as ws:
        run = box.run(ws, script, timeout_s=60)
    assert run.stdout == "module.exports = 1\nmodule.exports = 1\n"
    assert "Read-only file system" in run.stderr
    assert (repo / "node_modules" / "dep" / "index.js").read_text() == "module.exports = 1\n"
    assert not (repo / "node_modules" / "new").exists()
