"""Other trees of a checkout, as file contents: the tree at an earlier commit (culprit bisection)
and the tree with one commit reverted (the ``on_no_fix: revert`` fallback).

Both read git objects only: the work tree and the index of the checkout are never touched (a
revert is applied to a throw-away index file). The application turns the answers into a change
of the work tree and runs it in the sandbox. Runs git on the host against the checkout ARCS made,
never the repository's own code.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from runners.gitchanges import GitChangeError, resolve

Files = dict[str, str | None]
"""Path -> text (None: the file is absent)."""


def tree_at(repo: Path, sha: str) -> Files | None:
    """The tracked files whose text at ``sha`` differs from the work tree, with their text at
    ``sha`` (None: absent there). None when one of them is not UTF-8 text (a binary file)."""
    commit = resolve(repo, sha)
    names = _git(repo, "diff", "--no-renames", "--name-only", "-z", commit, "--")
    return _texts(names, lambda rel: _blob(repo, f"{commit}:{rel}"))


def reverted(repo: Path, sha: str, head: str = "HEAD", *, three_way: bool = False) -> Files | None:
    """The files that reverting commit ``sha`` on top of ``head`` changes, with their new text
    (None: deleted). None when the revert does not apply cleanly, ``sha`` has no parent in the
    checkout, or a file is not UTF-8 text. ``three_way``: when the patch's context no longer
    matches (a later commit edited lines around it), merge it with the blobs it records
    (``git apply -3``, like ``git revert``); a conflict still gives None."""
    commit = resolve(repo, sha)
    base = resolve(repo, head)
    try:
        parent = resolve(repo, f"{commit}^")
    except GitChangeError:
        return None
    patch = _git(repo, "diff", "--binary", "--no-renames", "--no-color", parent, commit, "--")
    with tempfile.TemporaryDirectory(prefix="arcs-revert-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(repo, "read-tree", base, env=env)
        try:
            _git(repo, "apply", "--cached", "-R", "--whitespace=nowarn", "-", env=env, stdin=patch)
        except GitChangeError:
            if not three_way:
                return None
            try:  # a failed apply leaves the index as it was
                _git(repo, "apply", "--cached", "-3", "-R", "--whitespace=nowarn", "-", env=env, stdin=patch)
            except GitChangeError:
                return None
        names = _git(repo, "diff", "--cached", "--no-renames", "--name-only", "-z", base, "--", env=env)
        return _texts(names, lambda rel: _blob(repo, f":{rel}", env=env))


def _texts(names: bytes, blob: Callable[[str], bytes | None]) -> Files | None:
    """``{path: text or None}`` for the NUL-separated ``names``; None when one is not UTF-8."""
    out: Files = {}
    for rel in filter(None, names.decode().split("\0")):
        data = blob(rel)
        if data is None:
            out[rel] = None
            continue
        try:
            out[rel] = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return out


def _blob(repo: Path, spec: str, *, env: dict[str, str] | None = None) -> bytes | None:
    try:
        return _git(repo, "cat-file", "blob", spec, env=env)
    except GitChangeError:
        return None


def _git(repo: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "-c", "core.quotepath=off", *args],
            input=stdin,
            capture_output=True,
            check=False,
            env={**os.environ, **env} if env else None,
        )
    except OSError as exc:
        raise GitChangeError(f"cannot run git: {exc}") from exc
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip()
        raise GitChangeError(err.splitlines()[-1] if err else f"git {args[0]} failed")
    return done.stdout


__all__ = ["Files", "reverted", "tree_at"]
