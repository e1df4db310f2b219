"""``runners.toolchains.toolchain_paths``: the folders a sandbox exposes as toolchains."""

from __future__ import annotations

from pathlib import Path

from runners.toolchains import toolchain_paths


def test_toolchain_paths(tmp_path: Path) -> None:
    venv, jdk = tmp_path / "venv", tmp_path / "jdk"
    venv.mkdir()
    jdk.mkdir()
    got = toolchain_paths([jdk, jdk], prefix=str(venv), base_prefix="/usr", environ={})
    assert got == [venv, jdk]
    assert toolchain_paths([], prefix="/usr", base_prefix="/usr", environ={"VIRTUAL_ENV": str(venv)}) == [
        venv
    ]
    assert toolchain_paths([], prefix="/usr", base_prefix="/usr", environ={}) == []


def test_the_cli_and_the_worker_use_the_same_function() -> None:
    from bot.cli import test_cmd

    assert test_cmd.toolchain_paths is toolchain_paths
