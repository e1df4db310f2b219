"""Bundled sample repositories (the demo's broken project)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from bot.errors import UsageError

SAMPLES_DIR = Path(__file__).resolve().parent
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


def sample_names() -> list[str]:
    """Names of the bundled sample repositories."""
    return sorted(p.name for p in SAMPLES_DIR.iterdir() if p.is_dir() and not p.name.startswith("_"))


def materialize_sample(name: str, dest: Path) -> Path:
    """Copy sample ``name`` to ``dest`` (replacing it) as a fresh git repository with one commit."""
    src = SAMPLES_DIR / name
    if not src.is_dir() or name.startswith("_"):
        raise UsageError(f"no bundled sample named {name!r} (have: {', '.join(sample_names())})")
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dest, ignore=_IGNORE)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "ARCS demo",
        "GIT_AUTHOR_EMAIL": "demo@arcs.invalid",
        "GIT_COMMITTER_NAME": "ARCS demo",
        "GIT_COMMITTER_EMAIL": "demo@arcs.invalid",
    }
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "commit.gpgsign=false", "commit", "-q", "-m", f"{name}: initial import"],
    ):
        subprocess.run(["git", *args], cwd=dest, env=env, check=True, capture_output=True)
    return dest
