"""``arcs --version``: the installed distribution's version, on stdout, exit 0, no settings read."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bot.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _pyproject_version() -> str:
    version: str = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    return version


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"arcs {_pyproject_version()}\n"
    assert captured.err == ""


def test_version_needs_no_configuration(tmp_path: Path) -> None:
    # A broken ARCS_* setting must not stop `arcs --version` (it never loads settings).
    env = {**os.environ, "ARCS_LOG_FORMAT": "not-a-format", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "--version"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, f"arcs {_pyproject_version()}\n", "")
