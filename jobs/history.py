"""A checkout's history, read with git on the host: the adapter of the History port.

* The change between two commits: the effectful side of :class:`jobs.repair.changes.ChangeSet`
  (``git log``/``git diff``; the parsing is pure, in the core). Bounded: at most ``max_commits``
  commits get their own patch (the newest ones; the rest are listed without it) and diff text
  beyond ``max_diff_chars`` is cut at a file boundary; ``truncated`` says so.
* Other trees of the checkout, as file contents: the tree at an earlier commit (culprit bisection,
  :func:`tree_at`) and the tree with one commit reverted (the ``on_no_fix: revert`` fallback,
  :func:`reverted`). Both read git objects only: the work tree and the index of the checkout are
  never touched (a revert is applied to a throw-away index file). The application turns the
  answers into a change of the work tree and runs it in the sandbox.

Runs git on the host against the checkout ARCS made, never the repository's own code. It lives in
``jobs`` (ex ``runners/gitchanges.py`` + ``runners/gittrees.py``): git on the host is the
application's, not the sandbox's, and the ChangeSet it builds is a core value.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from jobs.repair.changes import LOG_FORMAT, ChangeSet, changeset_from_git, parse_log
from runners.errors import UsageError

MAX_COMMITS = 50
MAX_DIFF_CHARS = 2_000_000


class GitChangeError(UsageError):
    """A ref does not resolve, or git failed (one line, for the user)."""


def read_changeset(
    repo: Path,
    base: str,
    head: str = "HEAD",
    *,
    max_commits: int = MAX_COMMITS,
    max_diff_chars: int = MAX_DIFF_CHARS,
) -> ChangeSet:
    """The :class:`ChangeSet` from ``base`` (last green) to ``head`` (red) in the checkout at ``repo``."""
    base_sha = resolve(repo, base)
    head_sha = resolve(repo, head)
    log = _git(repo, "log", "--reverse", "--no-color", f"--format={LOG_FORMAT}", f"{base_sha}..{head_sha}")
    diff, cut = _bounded(_diff(repo, base_sha, head_sha), max_diff_chars)
    truncated = cut
    shas = [sha for sha, *_ in parse_log(log)]
    if len(shas) > max_commits:
        truncated = True
    per_commit: dict[str, str] = {}
    for sha in shas[-max_commits:]:
        text, cut = _bounded(_diff(repo, f"{sha}^", sha), max_diff_chars)
        truncated = truncated or cut
        per_commit[sha] = text
    return changeset_from_git(
        base_sha, head_sha, log=log, diff=diff, commit_diffs=per_commit, truncated=truncated
    )


def merge_base(repo: Path, a: str, b: str) -> str:
    """The best common ancestor of ``a`` and ``b`` (a pull request's base: ``merge_base(base, head)``)."""
    return _git(repo, "merge-base", resolve(repo, a), resolve(repo, b)).strip()


def resolve(repo: Path, ref: str) -> str:
    """The full sha of the commit ``ref`` names (:class:`GitChangeError` when it names none)."""
    if ref.startswith("-"):
        raise GitChangeError(f"not a git revision: {ref!r}")
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}").strip()
    except GitChangeError:
        raise GitChangeError(f"{ref!r} is not a commit of {repo}") from None


def _diff(repo: Path, a: str, b: str) -> str:
    return _git(repo, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "-U3", a, b, "--")


def _bounded(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut at the last file boundary before ``limit`` characters, and whether it was cut."""
    if len(text) <= limit:
        return text, False
    cut = text.rfind("\ndiff --git ", 0, limit)
    return (text[: cut + 1] if cut > 0 else ""), True


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "-c", "core.quotepath=off", "-c", "diff.renames=true", *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="surrogateescape",
            check=False,
        )
    except OSError as exc:
        raise GitChangeError(f"cannot run git: {exc}") from exc
    if done.returncode != 0:
        raise GitChangeError(
            done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"git {args[0]} failed"
        )
    return done.stdout


# --- other trees of the checkout (culprit bisection, revert) -----------------------------------------

Files = dict[str, str | None]
"""Path -> text (None: the file is absent)."""


def tree_at(repo: Path, sha: str) -> Files | None:
    """The tracked files whose text at ``sha`` differs from the work tree, with their text at
    ``sha`` (None: absent there). None when one of them is not UTF-8 text (a binary file)."""
    commit = resolve(repo, sha)
    names = _git_bytes(repo, "diff", "--no-renames", "--name-only", "-z", commit, "--")
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
    patch = _git_bytes(repo, "diff", "--binary", "--no-renames", "--no-color", parent, commit, "--")
    with tempfile.TemporaryDirectory(prefix="arcs-revert-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git_bytes(repo, "read-tree", base, env=env)
        try:
            _git_bytes(repo, "apply", "--cached", "-R", "--whitespace=nowarn", "-", env=env, stdin=patch)
        except GitChangeError:
            if not three_way:
                return None
            try:  # a failed apply leaves the index as it was
                _git_bytes(
                    repo, "apply", "--cached", "-3", "-R", "--whitespace=nowarn", "-", env=env, stdin=patch
                )
            except GitChangeError:
                return None
        names = _git_bytes(repo, "diff", "--cached", "--no-renames", "--name-only", "-z", base, "--", env=env)
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
        return _git_bytes(repo, "cat-file", "blob", spec, env=env)
    except GitChangeError:
        return None


def _git_bytes(
    repo: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> bytes:
    """git with bytes in and out (trees, blobs, patches) and an optional index file in ``env``."""
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


__all__ = ["Files", "GitChangeError", "merge_base", "read_changeset", "resolve", "reverted", "tree_at"]
