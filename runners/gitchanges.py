"""Read the change between two commits of a checkout: the effectful side of
:class:`jobs.repair.changes.ChangeSet` (``git log``/``git diff``; the parsing is pure, in the core).

Bounded: at most ``max_commits`` commits get their own patch (the newest ones; the rest are listed
without it) and diff text beyond ``max_diff_chars`` is cut at a file boundary; ``truncated`` says so.
Runs git on the host against the checkout ARCS made, never the repository's own code.
"""

from __future__ import annotations

import subprocess
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


__all__ = ["GitChangeError", "merge_base", "read_changeset", "resolve"]
