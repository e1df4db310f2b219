"""A read snapshot of an index's collections: what a new process needs to answer queries fast.

Opening the embedded Qdrant store re-reads every point (pickles in SQLite), and building the query
mirror then scrolls them all again through Qdrant's Python engine: 8-25 s for a 3k-16k-chunk index
on a busy 2-core host before a new ``arcs search`` process could answer. After each refresh (and
fill) the index writes the mirror's points to one ``.npz`` file instead -- ids, the dense matrix,
the sparse vectors (CSR) and the payloads (JSON) -- stamped with a random id that the manifest
records last; a reader that finds matching stamps loads the file (numpy, no pickle) and answers
from memory without opening Qdrant at all (so also while another process holds the embedded
store's lock). Any mismatch means "stale": the reader opens Qdrant as before.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexing.store import PointData
from indexing.tokens import SparseVec

FORMAT = 1


def save(path: Path, stamp: str, collections: Mapping[str, tuple[int, Iterable[PointData]]]) -> None:
    """Write ``collections`` (name -> (dense dim, points)) to ``path`` atomically."""
    arrays: dict[str, np.ndarray[Any, Any]] = {
        "format": np.asarray(FORMAT),
        "stamp": np.asarray(stamp),
        "names": np.asarray(list(collections)),
    }
    for i, (dim, points) in enumerate(collections.values()):
        pts = list(points)
        dense = np.zeros((len(pts), dim), dtype=np.float32)
        ptr = np.zeros(len(pts) + 1, dtype=np.int64)
        for row, p in enumerate(pts):
            vec = np.asarray(p.dense, dtype=np.float32)
            if vec.size == dim:
                dense[row] = vec
            ptr[row + 1] = ptr[row] + len(p.sparse)
        arrays[f"{i}_dim"] = np.asarray(dim)
        arrays[f"{i}_ids"] = np.asarray([p.id for p in pts], dtype=str)
        arrays[f"{i}_dense"] = dense
        arrays[f"{i}_sp_ptr"] = ptr
        arrays[f"{i}_sp_idx"] = np.asarray([t for p in pts for t in p.sparse.indices], dtype=np.int64)
        arrays[f"{i}_sp_val"] = np.asarray([v for p in pts for v in p.sparse.values], dtype=np.float32)
        payloads = json.dumps([dict(p.payload) for p in pts], separators=(",", ":"))
        arrays[f"{i}_payloads"] = np.frombuffer(payloads.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        np.savez(fh, **arrays)  # type: ignore[arg-type]
    tmp.replace(path)


def stamp_of(path: Path) -> str | None:
    """The stamp stored in the snapshot at ``path`` (None when missing or unreadable)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if int(data["format"]) != FORMAT:
                return None
            return str(data["stamp"])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None


def load(path: Path, stamp: str) -> dict[str, tuple[int, list[PointData]]] | None:
    """The collections stored at ``path`` if its stamp is ``stamp``, else None."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if int(data["format"]) != FORMAT or str(data["stamp"]) != stamp:
                return None
            out: dict[str, tuple[int, list[PointData]]] = {}
            for i, name in enumerate(data["names"].tolist()):
                ids: Sequence[str] = data[f"{i}_ids"].tolist()
                dense = data[f"{i}_dense"]
                ptr, idx, val = data[f"{i}_sp_ptr"], data[f"{i}_sp_idx"], data[f"{i}_sp_val"]
                payloads = json.loads(bytes(data[f"{i}_payloads"]).decode("utf-8", "surrogatepass"))
                idx_list, val_list = idx.tolist(), val.tolist()
                points = [
                    PointData(
                        id=pid,
                        dense=dense[row],
                        sparse=SparseVec(
                            tuple(idx_list[ptr[row] : ptr[row + 1]]), tuple(val_list[ptr[row] : ptr[row + 1]])
                        ),
                        payload=payloads[row],
                    )
                    for row, pid in enumerate(ids)
                ]
                out[str(name)] = (int(data[f"{i}_dim"]), points)
            return out
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None
