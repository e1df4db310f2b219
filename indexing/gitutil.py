"""The few git questions the index asks: where the work tree is, HEAD, what changed since a commit."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from runners.errors import UsageError


class GitError(Exception):
    """A git command failed (the caller decides whether that is the user's problem)."""


def run_git(root: Path, *args: str) -> str:
    """Run ``git -C root args...`` and return stdout (``GitError`` on failure)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "-c", "core.quotepath=off", *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="surrogateescape",
            check=False,
        )
    except OSError as exc:  # git itself is missing
        raise GitError(f"cannot run git: {exc}") from exc
    if done.returncode != 0:
        raise GitError(done.stderr.strip() or f"git {' '.join(args)} exited {done.returncode}")
    return done.stdout


def work_tree_root(path: Path) -> Path:
    """The top of the git work tree containing ``path`` (:class:`UsageError` when there is none)."""
    if not path.exists():
        raise UsageError(f"{path} does not exist")
    base = path if path.is_dir() else path.parent
    try:
        inside = run_git(base, "rev-parse", "--is-inside-work-tree").strip()
        top = run_git(base, "rev-parse", "--show-toplevel").strip()
    except GitError as exc:
        raise UsageError(f"{path} is not a git repository") from exc
    if inside != "true" or not top:
        raise UsageError(f"{path} is not inside a git work tree")
    return Path(top).resolve()


def head_commit(root: Path) -> str:
    """SHA of HEAD (:class:`UsageError` for a repository without commits)."""
    try:
        return run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").strip()
    except GitError as exc:
        raise UsageError(f"{root} has no commits yet; commit something before indexing it") from exc


def commit_exists(root: Path, sha: str) -> bool:
    """Whether ``sha`` names a commit in this repository (it may be gone after a rebase and gc)."""
    try:
        run_git(root, "cat-file", "-e", f"{sha}^{{commit}}")
    except GitError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Change:
    """One entry of ``git diff --name-status``; ``old_path`` is set for renames and copies."""

    status: str
    path: str
    old_path: str | None = None


def diff_name_status(root: Path, old: str, new: str = "HEAD") -> list[Change]:
    """Files changed between two commits, renames detected (``-M``)."""
    out = run_git(root, "diff", "--name-status", "-M", "-z", old, new, "--")
    fields = out.split("\0")
    changes: list[Change] = []
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status[:1] in ("R", "C"):
            changes.append(Change(status[:1], fields[i + 2], fields[i + 1]))
            i += 3
        else:
            changes.append(Change(status[:1], fields[i + 1]))
            i += 2
    return changes


def dirty_paths(root: Path) -> set[str]:
    """Paths that differ from HEAD in the work tree or index, untracked files included."""
    out = run_git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    fields = out.split("\0")
    paths: set[str] = set()
    i = 0
    while i < len(fields) and fields[i]:
        entry = fields[i]
        status, path = entry[:2], entry[3:]
        paths.add(path)
        if "R" in status or "C" in status:
            # "-z" puts the rename source in the next field.
            paths.add(fields[i + 1])
            i += 2
        else:
            i += 1
    return paths
