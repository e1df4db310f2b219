"""The ``arcs/…`` branches ARCS pushes to: their names and the rule that guards them (pure).

One branch (so one pull request) per failure signature: a newer attempt on the same signature
updates the existing branch and pull request instead of opening a second one.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["BRANCH_PREFIX", "BRANCH_RE", "branch_name", "is_pushable", "signature_branch"]

BRANCH_PREFIX = "arcs/"
BRANCH_RE = re.compile(r"^arcs/[A-Za-z0-9][A-Za-z0-9._/-]{0,194}$")


def signature_branch(key: str) -> str:
    """``arcs/<short-key>`` for an idempotency key or failure signature.

    A short key made only of safe characters is used as is (readable branch names); anything
    else becomes the first 12 hex digits of its SHA-256 (stable: the same signature, the same
    branch, so a newer attempt updates the existing branch and PR).
    """
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}", key) and not key.endswith((".", ".lock")):
        return BRANCH_PREFIX + key
    return BRANCH_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


def is_pushable(branch: str) -> bool:
    """True for an ``arcs/`` branch ARCS may push to (a valid git ref under its own prefix)."""
    parts = branch.split("/")
    return not (
        not BRANCH_RE.match(branch)
        or ".." in branch
        or any(not part or part.startswith(".") or part.endswith((".", ".lock")) for part in parts)
    )


def branch_name(*parts: str) -> str:
    """The ``arcs/…`` branch of a failure signature (``parts``, e.g. ``("fix", head_branch)``).

    A readable ``arcs/fix/main`` when the cleaned parts make a branch ARCS may push to, else
    :func:`signature_branch` of the signature (``arcs/`` + a stable hash).
    """
    cleaned = [re.sub(r"[^A-Za-z0-9._/-]+", "-", p).strip("-/.") for p in parts]
    name = BRANCH_PREFIX + "/".join(p for p in cleaned if p)
    name = re.sub(r"/{2,}", "/", name).replace("..", ".")
    name = name[:200].rstrip("/.")
    return name if is_pushable(name) else signature_branch("/".join(parts))
