"""runners.quota: what the disk watcher counts, and that it never follows, opens or blocks on what
the sandbox leaves in the workspace (the attacker-side runs are in test_sandbox_limits.py)."""

from __future__ import annotations

import os
from pathlib import Path

from runners.quota import DiskWatch, deleted_open_bytes, tree_bytes

MiB = 1 << 20


def blocks(path: Path) -> int:
    return path.lstat().st_blocks * 512


def test_tree_bytes_counts_allocated_blocks_and_hard_links_once(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * MiB)
    os.link(tmp_path / "a", tmp_path / "a-again")
    (tmp_path / "sparse").touch()
    os.truncate(tmp_path / "sparse", 10 << 30)  # 10 GiB that use no disk
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"y" * 4096)
    size, entries = tree_bytes(tmp_path)
    expected = sum(
        blocks(p)
        for p in (tmp_path, tmp_path / "a", tmp_path / "sparse", tmp_path / "sub", tmp_path / "sub" / "b")
    )
    assert size == expected and entries == 6
    assert size < 2 * MiB


def test_tree_bytes_follows_no_symlink_and_opens_no_fifo(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"x" * (4 * MiB))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link-to-dir").symlink_to(outside)
    (ws / "link-to-file").symlink_to(outside / "big")
    os.mkfifo(ws / "fifo")  # opening it would block the host forever
    size, entries = tree_bytes(ws)
    assert size < MiB and entries == 4


def test_an_open_deleted_file_is_counted_by_its_holder(tmp_path: Path) -> None:
    path = tmp_path / "hidden"
    dev = tmp_path.stat().st_dev
    # The test process may already hold deleted temp files of earlier tests on this device.
    before = deleted_open_bytes([os.getpid()], dev)
    with path.open("wb") as handle:
        handle.write(b"z" * (2 * MiB))
        handle.flush()
        path.unlink()
        held = deleted_open_bytes([os.getpid()], dev)
        assert held >= before + 2 * MiB
        assert deleted_open_bytes([os.getpid()], dev + 1) == 0
    assert deleted_open_bytes([os.getpid()], dev) == before


def test_the_watch_measures_growth_from_its_start(tmp_path: Path) -> None:
    (tmp_path / "before").write_bytes(b"x" * (3 * MiB))
    now = [0.0]
    watch = DiskWatch(tmp_path, 2 * MiB, clock=lambda: now[0])
    assert watch.poll(None, list) is False  # 3 MiB at the start are not growth
    (tmp_path / "after").write_bytes(b"x" * MiB)
    now[0] = 10.0
    assert watch.poll(None, list) is False and watch.peak.workspace_growth >= MiB
    (tmp_path / "more").write_bytes(b"x" * (2 * MiB))
    assert watch.poll(None, list) is True  # the filesystem grew past the headroom: walked at once
    assert watch.peak.total >= 2 * MiB and watch.walks == 3


def test_temp_mounts_of_another_size_are_not_the_sandbox_s(tmp_path: Path) -> None:
    # Before bwrap has pivoted into the new root, /proc/PID/root/tmp is the host's /tmp: it must not count.
    watch = DiskWatch(tmp_path, 64 * MiB, temp_mounts={"/tmp": 64 * MiB})
    assert watch.poll(os.getpid(), list) is False
    assert watch.peak.temp == 0 and watch.full_mount == ""
