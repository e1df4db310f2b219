"""Where a repository's index lives, and its removal: names, files, drop and sweep.

A repository's index is two Qdrant collections (chunks, and the ``__tree`` of file/directory
abstracts) named by :func:`collection_name`, plus a manifest and a read snapshot under
``config.index_dir`` (:func:`index_files`). :func:`drop_repo_index` deletes all four (the
``drop_index`` job: a repository removed from the App, an uninstalled App);
:func:`sweep_leftover_checkouts` drops the per-checkout indexes older workers left behind.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from indexing.config import IndexConfig

if TYPE_CHECKING:
    from indexing.store import QdrantStore

__all__ = [
    "LEFTOVER_CHECKOUT_PREFIX",
    "collection_name",
    "default_repo_id",
    "drop_repo_index",
    "index_files",
    "is_local_repo_id",
    "leftover_checkout_ids",
    "sweep_leftover_checkouts",
]


def default_repo_id(root: Path) -> str:
    """Repository id of a local checkout: its resolved absolute path."""
    return f"local:{root.resolve().as_posix()}"


def is_local_repo_id(repo_id: str) -> bool:
    """Whether ``repo_id`` names a local checkout (:func:`default_repo_id`), not ``owner/name``."""
    return repo_id.startswith("local:")


def index_files(config: IndexConfig, repo_id: str) -> tuple[Path, Path]:
    """The manifest and the read snapshot of ``repo_id``'s index under ``config.index_dir``."""
    collection = collection_name(repo_id)
    return config.index_dir / f"{collection}.json", config.index_dir / f"{collection}.snapshot.npz"


def collection_name(repo_id: str) -> str:
    """Qdrant collection of a repository: a readable slug plus a hash of the full id (stable, unique)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", repo_id).strip("-")[-40:].strip("-") or "repo"
    digest = hashlib.sha256(repo_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"arcs_{slug}_{digest}"


LEFTOVER_CHECKOUT_PREFIX = "arcs-job-"
"""The worker's job folders (``<ARCS_HOME>/work/arcs-job-*``): an index of a checkout in one of
them was made by a repair of an older version, per attempt, and is never used again."""


def drop_repo_index(store: QdrantStore, config: IndexConfig, repo_id: str) -> bool:
    """Delete ``repo_id``'s two collections, its manifest and its read snapshot.

    Returns True when any of them existed. The caller holds the repository's lock.
    """
    collection = collection_name(repo_id)
    existed = False
    for name in (collection, f"{collection}__tree"):
        if store.exists(name):
            existed = True
            store.drop(name)
    for path in index_files(config, repo_id):
        if path.exists():
            existed = True
            path.unlink(missing_ok=True)
    return existed


def leftover_checkout_ids(config: IndexConfig) -> list[str]:
    """Repository ids of indexes built on a worker's job checkout that no longer exists.

    Only ``local:`` ids under an ``arcs-job-*`` folder that is gone: an ``arcs index`` of a user's
    own folder is never one, and a checkout still in use is not either.
    """
    out: list[str] = []
    for manifest in sorted(config.index_dir.glob("*.json")):
        try:
            repo_id = str(json.loads(manifest.read_text(encoding="utf-8")).get("repo_id", ""))
        except (OSError, ValueError, AttributeError):
            continue
        if not is_local_repo_id(repo_id):
            continue
        path = Path(repo_id.removeprefix("local:"))
        if any(part.startswith(LEFTOVER_CHECKOUT_PREFIX) for part in path.parts) and not path.exists():
            out.append(repo_id)
    return out


def sweep_leftover_checkouts(store: QdrantStore, config: IndexConfig) -> int:
    """Drop every index :func:`leftover_checkout_ids` finds; return how many were dropped."""
    return sum(drop_repo_index(store, config, repo_id) for repo_id in leftover_checkout_ids(config))
