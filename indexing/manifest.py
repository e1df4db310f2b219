"""An index's manifest: what one repository's index holds, one JSON file per repository.

The manifest (under ``config.index_dir``, named by :func:`indexing.retention.index_files`)
records the commit the index was built from, the embedder, and per file its content hash, stat,
point ids and structural summary; :mod:`indexing.index` reads it first and writes it last,
atomically (:func:`write_atomic`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from indexing.hierarchy import FileSummary

__all__ = ["MANIFEST_VERSION", "FileEntry", "Manifest", "write_atomic"]

MANIFEST_VERSION = 1


@dataclass
class FileEntry:
    """Manifest record of one indexed file."""

    hash: str
    size: int
    mtime_ns: int
    ids: list[str]
    summary: FileSummary
    abstract: str

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "hash": self.hash,
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "ids": self.ids,
            "summary": self.summary.to_json(),
            "abstract": self.abstract,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileEntry:
        """Inverse of :meth:`to_json`."""
        return cls(
            hash=str(data["hash"]),
            size=int(data["size"]),
            mtime_ns=int(data["mtime_ns"]),
            ids=[str(i) for i in data["ids"]],
            summary=FileSummary.from_json(data["summary"]),
            abstract=str(data.get("abstract", "")),
        )


@dataclass
class Manifest:
    """The index's memory of what it holds."""

    repo_id: str
    root: str
    collection: str
    commit: str
    embedder: str
    dim: int
    summarizer: str
    files: dict[str, FileEntry] = field(default_factory=dict)
    tree_ids: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    discovery: str = ""
    """Fingerprint of the discovery settings (exclusions, size limit) the file set was built with."""
    unreadable: list[str] = field(default_factory=list)
    """Files skipped as unreadable by the last refresh (re-checked by the next one)."""
    mode: str = "eager"
    """The index mode of the last refresh (an eager refresh after a lazy one fills and re-derives)."""
    snapshot: str = ""
    """Stamp of the read snapshot written with this manifest (:mod:`indexing.snapshot`); empty: none."""

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form (sorted, so equal states write equal files)."""
        return {
            "version": MANIFEST_VERSION,
            "repo_id": self.repo_id,
            "root": self.root,
            "collection": self.collection,
            "commit": self.commit,
            "embedder": self.embedder,
            "dim": self.dim,
            "summarizer": self.summarizer,
            "pending": sorted(self.pending),
            "discovery": self.discovery,
            "unreadable": sorted(self.unreadable),
            "mode": self.mode,
            "snapshot": self.snapshot,
            "tree_ids": sorted(self.tree_ids),
            "files": {p: self.files[p].to_json() for p in sorted(self.files)},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Manifest:
        """Inverse of :meth:`to_json`; ``ValueError`` for another manifest version."""
        if data.get("version") != MANIFEST_VERSION:
            raise ValueError("manifest version mismatch")
        return cls(
            repo_id=str(data["repo_id"]),
            root=str(data["root"]),
            collection=str(data["collection"]),
            commit=str(data["commit"]),
            embedder=str(data["embedder"]),
            dim=int(data["dim"]),
            summarizer=str(data["summarizer"]),
            files={p: FileEntry.from_json(e) for p, e in data["files"].items()},
            tree_ids=[str(i) for i in data.get("tree_ids", [])],
            pending=[str(p) for p in data.get("pending", [])],
            discovery=str(data.get("discovery", "")),
            unreadable=[str(p) for p in data.get("unreadable", [])],
            mode=str(data.get("mode", "eager")),
            snapshot=str(data.get("snapshot", "")),
        )


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a reader sees the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)
