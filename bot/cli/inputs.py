"""The checks every repairing command makes on its input before anything runs (issue #23).

A folder that is not a git work tree, an empty test command or an ``.arcs.yml`` the App would
refuse stops ``arcs fix`` and ``arcs test`` at once with one ``arcs: error: …`` line naming the
problem (exit 2), instead of running a sandbox, an index and a repair that can only end in
"no candidate". The ``.arcs.yml`` rules are :func:`jobs.config.load_local`: the App's parser, so
the command line, the Action and the App refuse the same files with the same words.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from bot.errors import UsageError

if TYPE_CHECKING:
    from jobs.config import ArcsConfig

__all__ = ["finite", "folder", "git_work_tree", "repo_config", "test_command"]


def folder(path: Path, command: str) -> Path:
    """``path`` when it is an existing folder; else :class:`UsageError` saying which it is not."""
    if not path.exists():
        raise UsageError(f"{command}: {path} does not exist")
    if not path.is_dir():
        raise UsageError(f"{command}: {path} is not a folder")
    return path


def git_work_tree(path: Path, command: str) -> Path:
    """``path`` when it is a folder inside a git work tree with at least one commit.

    ARCS diffs, bisects and replays commits, and records the commit it repaired: without one
    there is nothing to start from, so the user is told how to make one.
    """
    from indexing.gitutil import GitError, run_git

    folder(path, command)
    try:
        inside = run_git(path, "rev-parse", "--is-inside-work-tree").strip()
    except GitError:
        inside = ""
    if inside != "true":
        raise UsageError(
            f"{command}: {path} is not a git repository; ARCS repairs a git work tree "
            f"(to start one: git -C {path} init && git -C {path} add -A && git -C {path} commit -m base)"
        )
    try:
        run_git(path, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except GitError:
        raise UsageError(
            f"{command}: {path} has no commit yet; commit the files first "
            f"(git -C {path} add -A && git -C {path} commit -m base)"
        ) from None
    return path


def test_command(value: str | None, flag: str, command: str) -> str | None:
    """The test command given with ``flag`` (None: not given); an empty one is an error, never
    "use the default" in disguise."""
    if value is None:
        return None
    if not value.strip():
        raise UsageError(
            f"{command}: {flag} is empty; give the command that runs the tests (e.g. {flag} "
            "'python -m pytest'), or leave it out to use .arcs.yml `test:` or the conventions"
        )
    return value


def finite(value: float | None, flag: str, command: str) -> float | None:
    """``value`` unless it is NaN or infinite (argparse's ``float`` accepts ``nan`` and ``inf``)."""
    if value is not None and not math.isfinite(value):
        raise UsageError(f"{command}: {flag} must be a finite number, got {value}")
    return value


def repo_config(path: Path) -> ArcsConfig:
    """The folder's whole ``.arcs.yml``, validated as the App validates it (an unknown key or a bad
    value: :class:`jobs.config.ArcsConfigError`, exit 2, naming the key)."""
    from jobs.config import load_local

    return load_local(path)
