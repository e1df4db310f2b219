"""Qdrant storage of chunks and hierarchy nodes: collections, points, filtered hybrid queries.

One code path for both deployments: ``QdrantClient(path=...)`` (embedded, the default, under
``$ARCS_HOME/qdrant``) or ``QdrantClient(url=...)`` (``ARCS_QDRANT_URL``). Each collection has a named
dense vector (cosine) and a named sparse lexical vector whose IDF Qdrant applies at query time.

Reads in embedded mode go through an in-memory *mirror* of the collection. Qdrant's embedded engine
scores sparse vectors in a Python loop and evaluates payload filters point by point (about 0.5 s per
hybrid query at 20k points on 2 cores); the mirror answers the same query -- same cosine, same IDF
formula, same RRF constant -- with numpy in milliseconds. It is loaded from Qdrant on first use and
kept in step by every write made through this class (the embedded store is single-process: Qdrant
holds a file lock). Server mode always uses Qdrant's query API (prefetch + RRF fusion); tests pin
that both paths rank identically.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import sqlite3
import uuid
import warnings
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from qdrant_client import QdrantClient, models

from indexing.config import IndexConfigLike, as_index_config
from indexing.tokens import SparseVec
from runners.errors import ConfigError

DENSE = "dense"
SPARSE = "sparse"
RRF_K = 2
"""Qdrant's default RRF ranking constant (score = sum of 1 / (rank0 + k)); the mirror uses the same."""

UPSERT_BATCH = 256
_KEYWORD_FIELDS = ("path", "dirs", "language", "kind", "level", "parent", "defines", "qualified_name")

Vector = npt.NDArray[np.float32]


def point_id(*parts: str) -> str:
    """Deterministic UUID point id from its identifying parts (re-runs upsert the same ids)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return str(uuid.UUID(bytes=h.digest()[:16]))


def ancestor_dirs(path: str) -> list[str]:
    """``"a/b/c.py"`` -> ``["a", "a/b"]`` (stored as the ``dirs`` payload for prefix filters)."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


@dataclass(frozen=True, slots=True)
class StoreFilter:
    """A conjunction of optional restrictions; each maps to a Qdrant filter and a mirror mask.

    ``within`` and ``prefix`` match a path exactly or any path under it as a directory.
    """

    within: tuple[str, ...] | None = None
    prefix: str | None = None
    language: str | None = None
    kind: str | None = None
    levels: tuple[str, ...] = ()
    parents: tuple[str, ...] | None = None
    symbols: tuple[str, ...] = ()
    """Points whose ``defines`` or ``qualified_name`` contains any of these."""

    def matches_nothing(self) -> bool:
        """True for an empty ``within``/``parents`` set (no point can match)."""
        return (self.within is not None and not self.within) or (
            self.parents is not None and not self.parents
        )


@dataclass(frozen=True, slots=True)
class PointData:
    """One point to write: id, unit dense vector, sparse vector and payload.

    An all-zero (or empty) ``dense`` means *no dense vector yet* (lazy indexing): the point is
    stored without one, takes part in sparse and filtered reads only, and gets its vector later
    through :meth:`QdrantStore.set_dense`.
    """

    id: str
    dense: Vector
    sparse: SparseVec
    payload: Mapping[str, Any]

    @property
    def has_dense(self) -> bool:
        """Whether the point carries a dense vector."""
        return bool(np.any(np.asarray(self.dense)))


@dataclass(frozen=True, slots=True)
class StoredHit:
    """A point read back: id, score (fused, cosine or sparse dot; 0 for scrolls), payload, dense vector."""

    id: str
    score: float
    payload: Mapping[str, Any]
    vector: Vector | None = None


def _paths_under(sorted_paths: Sequence[str], known: Collection[str], roots: Iterable[str]) -> list[str]:
    """The paths of ``sorted_paths`` equal to or below one of ``roots``, by bisection (no scan)."""
    out: list[str] = []
    for r in roots:
        if r in known:
            out.append(r)
        start = r + "/"
        i = bisect.bisect_left(sorted_paths, start)
        while i < len(sorted_paths) and sorted_paths[i].startswith(start):
            out.append(sorted_paths[i])
            i += 1
    return out


def _qdrant_filter(flt: StoreFilter | None) -> models.Filter | None:
    if flt is None:
        return None
    must: list[models.Condition] = []

    def path_group(roots: Sequence[str]) -> None:
        must.append(
            models.Filter(
                should=[
                    models.FieldCondition(key="path", match=models.MatchAny(any=list(roots))),
                    models.FieldCondition(key="dirs", match=models.MatchAny(any=list(roots))),
                ]
            )
        )

    if flt.within is not None and "" not in flt.within:
        path_group(flt.within)
    if flt.prefix:
        path_group([flt.prefix])
    if flt.language:
        must.append(models.FieldCondition(key="language", match=models.MatchValue(value=flt.language)))
    if flt.kind:
        must.append(models.FieldCondition(key="kind", match=models.MatchValue(value=flt.kind)))
    if flt.levels:
        must.append(models.FieldCondition(key="level", match=models.MatchAny(any=list(flt.levels))))
    if flt.parents is not None:
        must.append(models.FieldCondition(key="parent", match=models.MatchAny(any=list(flt.parents))))
    if flt.symbols:
        syms = list(flt.symbols)
        must.append(
            models.Filter(
                should=[
                    models.FieldCondition(key="defines", match=models.MatchAny(any=syms)),
                    models.FieldCondition(key="qualified_name", match=models.MatchAny(any=syms)),
                ]
            )
        )
    return models.Filter(must=must) if must else None


def _idf(df: int, n: int) -> float:
    # Qdrant's sparse IDF modifier: ln(1 + (n - df + 0.5) / (df + 0.5)).
    return math.log((n - df + 0.5) / (df + 0.5) + 1.0)


def _rrf(rankings: Sequence[Sequence[int]], limit: int) -> list[tuple[int, float]]:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for pos, row in enumerate(ranking):
            scores[row] = scores.get(row, 0.0) + 1.0 / (pos + RRF_K)
    ordered = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    return ordered[:limit]


@dataclass
class _Compiled:
    ids: list[str]
    payloads: list[Mapping[str, Any]]
    dense: Vector
    has_dense: npt.NDArray[np.bool_]
    terms: npt.NDArray[np.int64]
    term_rows: npt.NDArray[np.int64]
    term_vals: npt.NDArray[np.float32]
    columns: dict[str, tuple[dict[str, int], npt.NDArray[np.int32]]]
    symbol_rows: dict[str, list[int]]
    sorted_paths: list[str] = field(default_factory=list)


@dataclass
class _Mirror:
    """In-memory copy of one collection (dense matrix, inverted sparse index, filter columns)."""

    dim: int
    rows: dict[str, PointData] = field(default_factory=dict)
    _compiled: _Compiled | None = None

    def upsert(self, points: Iterable[PointData]) -> None:
        for p in points:
            self.rows[p.id] = p
        self._compiled = None

    def delete(self, ids: Iterable[str]) -> None:
        for pid in ids:
            self.rows.pop(pid, None)
        self._compiled = None

    def compile(self) -> _Compiled:
        if self._compiled is not None:
            return self._compiled
        points = list(self.rows.values())
        dense = np.zeros((len(points), self.dim), dtype=np.float32)
        term_parts: list[npt.NDArray[np.int64]] = []
        row_parts: list[npt.NDArray[np.int64]] = []
        val_parts: list[npt.NDArray[np.float32]] = []
        columns: dict[str, tuple[dict[str, int], list[int]]] = {
            name: ({}, []) for name in ("path", "language", "kind", "level", "parent")
        }
        symbol_rows: dict[str, list[int]] = {}
        for row, p in enumerate(points):
            vec = np.asarray(p.dense, dtype=np.float32)
            norm = float(np.linalg.norm(vec)) if vec.size else 0.0
            if norm > 0:
                dense[row] = vec / norm
            if len(p.sparse):
                term_parts.append(np.asarray(p.sparse.indices, dtype=np.int64))
                row_parts.append(np.full(len(p.sparse), row, dtype=np.int64))
                val_parts.append(np.asarray(p.sparse.values, dtype=np.float32))
            for name, (vocab, codes) in columns.items():
                value = str(p.payload.get(name, ""))
                codes.append(vocab.setdefault(value, len(vocab)))
            names = {*p.payload.get("defines", ()), str(p.payload.get("qualified_name", ""))}
            for sym in names:
                if sym:
                    symbol_rows.setdefault(sym, []).append(row)
        terms = np.concatenate(term_parts) if term_parts else np.zeros(0, dtype=np.int64)
        term_rows = np.concatenate(row_parts) if row_parts else np.zeros(0, dtype=np.int64)
        term_vals = np.concatenate(val_parts) if val_parts else np.zeros(0, dtype=np.float32)
        order = np.argsort(terms, kind="stable")
        self._compiled = _Compiled(
            ids=[p.id for p in points],
            payloads=[p.payload for p in points],
            dense=dense,
            has_dense=np.linalg.norm(dense, axis=1) > 0 if len(points) else np.zeros(0, dtype=np.bool_),
            terms=terms[order],
            term_rows=term_rows[order],
            term_vals=term_vals[order],
            columns={
                name: (vocab, np.asarray(codes, dtype=np.int32)) for name, (vocab, codes) in columns.items()
            },
            symbol_rows=symbol_rows,
            sorted_paths=sorted(columns["path"][0]),
        )
        return self._compiled

    @staticmethod
    def _isin(
        column: tuple[dict[str, int], npt.NDArray[np.int32]], wanted: Iterable[str]
    ) -> npt.NDArray[np.bool_]:
        vocab, codes = column
        # A lookup table over the vocabulary: one gather instead of np.isin's sort.
        table = np.zeros(len(vocab) + 1, dtype=np.bool_)
        table[[vocab[w] for w in wanted if w in vocab]] = True
        return table[codes]

    def mask(self, c: _Compiled, flt: StoreFilter | None) -> npt.NDArray[np.bool_]:
        n = len(c.ids)
        mask = np.ones(n, dtype=np.bool_)
        if flt is None:
            return mask
        path_vocab = c.columns["path"][0]
        if flt.within is not None and "" not in flt.within:
            mask &= self._isin(c.columns["path"], _paths_under(c.sorted_paths, path_vocab, flt.within))
        if flt.prefix:
            mask &= self._isin(c.columns["path"], _paths_under(c.sorted_paths, path_vocab, [flt.prefix]))
        if flt.language:
            mask &= self._isin(c.columns["language"], [flt.language])
        if flt.kind:
            mask &= self._isin(c.columns["kind"], [flt.kind])
        if flt.levels:
            mask &= self._isin(c.columns["level"], flt.levels)
        if flt.parents is not None:
            mask &= self._isin(c.columns["parent"], flt.parents)
        if flt.symbols:
            sym_mask = np.zeros(n, dtype=np.bool_)
            for sym in flt.symbols:
                sym_mask[c.symbol_rows.get(sym, [])] = True
            mask &= sym_mask
        return mask

    @staticmethod
    def dense_ranking(
        c: _Compiled, query: Vector, mask: npt.NDArray[np.bool_], limit: int
    ) -> tuple[list[int], npt.NDArray[np.float32]]:
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        # einsum's row-wise dot loop, not BLAS: OpenBLAS's gemv on this tall matrix is 4-8x slower
        # on 2 cores, and spreads over both of them (bench/indexing/latency.py).
        scores: npt.NDArray[np.float32] = np.asarray(
            np.einsum("ij,j->i", c.dense, q / norm if norm > 0 else q), dtype=np.float32
        )
        return _top_rows(scores, mask & c.has_dense, limit), scores

    @staticmethod
    def sparse_scores(
        c: _Compiled, query: SparseVec
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        n = len(c.ids)
        scores = np.zeros(n, dtype=np.float32)
        matched = np.zeros(n, dtype=np.bool_)
        for tid, qval in zip(query.indices, query.values, strict=True):
            lo = int(np.searchsorted(c.terms, tid, side="left"))
            hi = int(np.searchsorted(c.terms, tid, side="right"))
            if hi == lo:
                continue
            rows = c.term_rows[lo:hi]
            weight = qval * _idf(hi - lo, n)
            scores[rows] += np.float32(weight) * c.term_vals[lo:hi]
            matched[rows] = True
        return scores, matched

    @classmethod
    def sparse_ranking(
        cls, c: _Compiled, query: SparseVec, mask: npt.NDArray[np.bool_], limit: int
    ) -> tuple[list[int], npt.NDArray[np.float32]]:
        scores, matched = cls.sparse_scores(c, query)
        return _top_rows(scores, mask & matched, limit), scores


def _top_rows(scores: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_], limit: int) -> list[int]:
    """Rows of the ``limit`` best masked scores, best first; equal scores in row order."""
    rows = np.flatnonzero(mask)
    values = scores[rows]
    keep = np.argpartition(-values, limit - 1)[:limit] if len(values) > limit else np.arange(len(values))
    ordered = keep[np.lexsort((keep, -values[keep]))]
    return [int(r) for r in rows[ordered]]


def _payload_dict(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in payload.items()}


class QdrantStore:
    """A Qdrant client plus the collection operations the index needs. Close it (or use ``with``)."""

    def __init__(self, client: QdrantClient | None, *, local: bool, accelerate: bool = True) -> None:
        self._client = client
        self.local = local
        self.accelerate = accelerate and local
        self._mirrors: dict[str, _Mirror] = {}
        self._local_dbs: dict[str, sqlite3.Connection | None] = {}
        self.where = ""
        """The server URL or folder (for messages)."""
        self.closed = False

    @classmethod
    def open(cls, config: IndexConfigLike, *, accelerate: bool = True) -> QdrantStore:
        """Connect to ``config.qdrant_url`` or open the embedded store under ``config.qdrant_path``.

        A folder locked by another process, or an unreachable server, is a :class:`ConfigError`.
        """
        cfg = as_index_config(config)
        return cls.open_at(
            url=cfg.qdrant_url, path=cfg.qdrant_path, api_key=cfg.qdrant_api_key, accelerate=accelerate
        )

    @classmethod
    def open_at(
        cls, *, url: str | None, path: Path, api_key: str | None = None, accelerate: bool = True
    ) -> QdrantStore:
        """:meth:`open` from plain values: a server ``url``, else the embedded store in ``path``."""
        kwargs: dict[str, Any]
        if url:
            kwargs = {"url": url, "api_key": api_key}
            where = url
        else:
            path.mkdir(parents=True, exist_ok=True)
            kwargs = {"path": str(path)}
            where = str(path)
        try:
            with warnings.catch_warnings():
                # Embedded mode warns past 20k points; reads here go through the mirror instead.
                warnings.filterwarnings(
                    "ignore", message="Local mode is not recommended", category=UserWarning
                )
                client = QdrantClient(**kwargs)
        except RuntimeError as exc:
            _close_half_open_lock(exc)
            if "already accessed" in str(exc):
                raise ConfigError(
                    f"the Qdrant folder {where} is in use by another process: the embedded store admits "
                    "one process at a time (wait for it, query with `arcs search --no-refresh`, which "
                    "reads the index snapshot without the lock, or set ARCS_QDRANT_URL to share a "
                    "Qdrant server between processes)"
                ) from exc
            raise ConfigError(f"cannot open the Qdrant store at {where}: {exc}") from exc
        except OSError as exc:
            raise ConfigError(f"cannot open the Qdrant store at {where}: {exc}") from exc
        store = cls(client, local=not url, accelerate=accelerate)
        store.where = where
        if url:
            try:
                client.get_collections()
            except Exception as exc:
                store.close()
                raise ConfigError(f"cannot reach Qdrant at {where}: {' '.join(str(exc).split())}") from exc
        return store

    @classmethod
    def from_snapshot(cls, collections: Mapping[str, tuple[int, Iterable[PointData]]]) -> QdrantStore:
        """A read-only store answering from in-memory mirrors of ``collections`` (name -> (dim,
        points); see :mod:`indexing.snapshot`), with no Qdrant client and so no folder lock.

        Writes raise, except :meth:`set_dense`, which updates the mirror only (lazy expansion in a
        read-only process: the vectors come from the embedding cache or the model, and are simply
        not persisted by this process).
        """
        store = cls(None, local=True, accelerate=True)
        for name, (dim, points) in collections.items():
            mirror = _Mirror(dim)
            mirror.upsert(points)
            store._mirrors[name] = mirror
        return store

    @property
    def client(self) -> QdrantClient:
        """The Qdrant client (a snapshot store has none)."""
        if self._client is None:
            raise RuntimeError("this store is a read-only snapshot: it has no Qdrant client")
        return self._client

    @property
    def read_only(self) -> bool:
        """True for a snapshot store (:meth:`from_snapshot`)."""
        return self._client is None

    def points(self, name: str) -> tuple[int, list[PointData]]:
        """Dense dimension and every point of the collection (from the mirror), for a snapshot."""
        mirror = self._mirror(name)
        return mirror.dim, list(mirror.rows.values())

    def close(self) -> None:
        """Release the client (and the embedded store's folder lock)."""
        self._mirrors.clear()
        self._local_dbs.clear()
        self.closed = True
        if self._client is not None:
            self._client.close()

    def _fast_writes(self, name: str) -> None:
        """Embedded mode: stop the per-point fsync of Qdrant's collection database.

        Embedded Qdrant commits every point in its own SQLite transaction, which with SQLite's
        defaults is one fsync per point (10 ms each on a busy disk: minutes for a large repository).
        In WAL mode with ``synchronous=NORMAL`` a commit survives a process crash without an fsync;
        :meth:`flush` then makes everything durable at once before the index manifest is written.
        The connection is reached through the client's internals; if they change, writes simply
        stay slow.
        """
        if not self.local or name in self._local_dbs or self._client is None:
            return
        db: sqlite3.Connection | None = None
        collections = getattr(getattr(self.client, "_client", None), "collections", None)
        if isinstance(collections, dict):
            candidate = getattr(getattr(collections.get(name), "storage", None), "storage", None)
            if isinstance(candidate, sqlite3.Connection):
                try:
                    candidate.execute("PRAGMA journal_mode=WAL")
                    candidate.execute("PRAGMA synchronous=NORMAL")
                    db = candidate
                except sqlite3.Error:
                    db = None
        self._local_dbs[name] = db

    def flush(self) -> None:
        """Make all writes so far durable (embedded mode: checkpoint the write-ahead logs)."""
        for db in self._local_dbs.values():
            if db is not None:
                db.execute("PRAGMA wal_checkpoint(FULL)")

    def __enter__(self) -> QdrantStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- collections -------------------------------------------------------------------------

    def exists(self, name: str) -> bool:
        """Whether the collection exists."""
        if self._client is None:
            return name in self._mirrors
        return bool(self.client.collection_exists(name))

    def dense_dim(self, name: str) -> int | None:
        """Size of the collection's dense vector, None when it has none."""
        if self._client is None:
            return self._mirrors[name].dim if name in self._mirrors else None
        info = self.client.get_collection(name)
        vectors = info.config.params.vectors
        if isinstance(vectors, Mapping) and DENSE in vectors:
            return int(vectors[DENSE].size)
        return None

    def recreate(self, name: str, dim: int) -> None:
        """Drop (if present) and create the collection with the dense + sparse layout."""
        self._local_dbs.pop(name, None)
        if self.exists(name):
            self.client.delete_collection(name)
        self.client.create_collection(
            name,
            vectors_config={DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
        )
        with self._quiet_local():
            for key in _KEYWORD_FIELDS:
                self.client.create_payload_index(name, key, field_schema=models.PayloadSchemaType.KEYWORD)
            self.client.create_payload_index(
                name, "start_line", field_schema=models.PayloadSchemaType.INTEGER
            )
        self._mirrors[name] = _Mirror(dim)

    def drop(self, name: str) -> None:
        """Delete the collection if it exists."""
        self._mirrors.pop(name, None)
        self._local_dbs.pop(name, None)
        if self.exists(name):
            self.client.delete_collection(name)

    @contextmanager
    def _quiet_local(self) -> Iterator[None]:
        # Embedded Qdrant keeps payload indexes as schema only and says so with a UserWarning;
        # they still matter on a server, so they are always declared.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Payload indexes have no effect", category=UserWarning)
            yield

    # -- writes --------------------------------------------------------------------------------

    def upsert(self, name: str, points: Sequence[PointData]) -> None:
        """Insert or replace points, in batches."""
        if self._client is None:
            self._mirror(name).upsert(points)  # a snapshot store: in memory only (see from_snapshot)
            return
        self._fast_writes(name)
        for start in range(0, len(points), UPSERT_BATCH):
            batch = points[start : start + UPSERT_BATCH]
            self.client.upsert(
                name,
                points=[
                    models.PointStruct(id=p.id, vector=_vectors_of(p), payload=_payload_dict(p.payload))
                    for p in batch
                ],
                wait=True,
            )
            mirror = self._mirrors.get(name)
            if mirror is not None:
                mirror.upsert(batch)

    def set_dense(self, name: str, vectors: Mapping[str, Vector]) -> None:
        """Give existing points their dense vector and drop their ``lazy`` payload flag."""
        if not vectors:
            return
        if self.accelerate:
            mirror = self._mirror(name)
            points = []
            for pid, vec in vectors.items():
                old = mirror.rows.get(pid)
                if old is not None:
                    payload = {k: v for k, v in old.payload.items() if k != "lazy"}
                    points.append(PointData(pid, np.asarray(vec, dtype=np.float32), old.sparse, payload))
            self.upsert(name, points)
            return
        self._fast_writes(name)
        ids: list[models.ExtendedPointId] = list(vectors)
        for start in range(0, len(ids), UPSERT_BATCH):
            part = ids[start : start + UPSERT_BATCH]
            self.client.update_vectors(
                name,
                points=[
                    models.PointVectors(
                        id=pid, vector={DENSE: np.asarray(vectors[str(pid)], dtype=np.float32).tolist()}
                    )
                    for pid in part
                ],
                wait=True,
            )
            self.client.delete_payload(name, keys=["lazy"], points=part, wait=True)

    def delete_ids(self, name: str, ids: Collection[str]) -> None:
        """Delete points by id (missing ids are ignored)."""
        if not ids:
            return
        self._fast_writes(name)
        id_list: list[models.ExtendedPointId] = list(ids)
        for start in range(0, len(id_list), 1024):
            part = id_list[start : start + 1024]
            self.client.delete(name, points_selector=models.PointIdsList(points=part), wait=True)
        mirror = self._mirrors.get(name)
        if mirror is not None:
            mirror.delete(ids)

    def delete_paths(self, name: str, paths: Collection[str], keep: Collection[str] = ()) -> None:
        """Delete every point whose ``path`` is in ``paths``, except the ids in ``keep``.

        This is the ground-truth sweep used after an interrupted refresh: it also removes points
        that no manifest knows about.
        """
        if not paths:
            return
        mirror = self._mirrors.get(name)
        if mirror is not None:
            keep_set = set(keep)
            doomed = [
                pid
                for pid, p in mirror.rows.items()
                if p.payload.get("path") in paths and pid not in keep_set
            ]
            self.delete_ids(name, doomed)
            return
        self._fast_writes(name)
        must_not: list[models.Condition] = []
        if keep:
            must_not.append(models.HasIdCondition(has_id=list(keep)))
        selector = models.FilterSelector(
            filter=models.Filter(
                must=[models.FieldCondition(key="path", match=models.MatchAny(any=list(paths)))],
                must_not=must_not,
            )
        )
        self.client.delete(name, points_selector=selector, wait=True)

    # -- reads ---------------------------------------------------------------------------------

    def _mirror(self, name: str) -> _Mirror:
        mirror = self._mirrors.get(name)
        if mirror is None:
            if self._client is None:
                raise KeyError(f"collection {name!r} is not in this snapshot")
            dim = self.dense_dim(name) or 0
            mirror = _Mirror(dim)
            mirror.upsert(self._scroll_points(name))
            self._mirrors[name] = mirror
        return mirror

    def _scroll_points(self, name: str) -> Iterator[PointData]:
        offset: models.ExtendedPointId | None = None
        while True:
            records, offset = self.client.scroll(
                name, limit=2048, offset=offset, with_payload=True, with_vectors=[DENSE, SPARSE]
            )
            for rec in records:
                vectors = rec.vector if isinstance(rec.vector, Mapping) else {}
                dense = np.asarray(vectors.get(DENSE, []), dtype=np.float32)
                raw_sparse = vectors.get(SPARSE)
                sparse = (
                    SparseVec(tuple(raw_sparse.indices), tuple(raw_sparse.values))
                    if isinstance(raw_sparse, models.SparseVector)
                    else SparseVec((), ())
                )
                yield PointData(id=str(rec.id), dense=dense, sparse=sparse, payload=rec.payload or {})
            if offset is None:
                return

    def missing_dense(
        self, name: str, flt: StoreFilter | None = None, *, limit: int = 10**9
    ) -> list[StoredHit]:
        """Points (matching ``flt``) that have no dense vector yet, at most ``limit``."""
        if flt is not None and flt.matches_nothing():
            return []
        if self.accelerate:
            mirror = self._mirror(name)
            c = mirror.compile()
            rows = np.flatnonzero(mirror.mask(c, flt) & ~c.has_dense)[:limit]
            return [StoredHit(c.ids[r], 0.0, c.payloads[r], None) for r in rows]
        lazy = models.FieldCondition(key="lazy", match=models.MatchValue(value=True))
        qfilter = _qdrant_filter(flt) or models.Filter(must=[])
        qfilter = models.Filter(must=[*(qfilter.must or []), lazy])
        out: list[StoredHit] = []
        offset: models.ExtendedPointId | None = None
        while len(out) < limit:
            records, offset = self.client.scroll(
                name,
                scroll_filter=qfilter,
                limit=min(1024, limit - len(out)),
                offset=offset,
                with_payload=True,
                with_vectors=False,
            )
            out.extend(StoredHit(str(r.id), 0.0, r.payload or {}, None) for r in records)
            if offset is None:
                break
        return out

    def count_missing_dense(self, name: str) -> int:
        """Number of points without a dense vector (embedded mode: from the mirror, instantly)."""
        if self.accelerate:
            c = self._mirror(name).compile()
            return int(len(c.ids) - int(np.count_nonzero(c.has_dense)))
        return len(self.missing_dense(name))

    def count(self, name: str) -> int:
        """Number of points in the collection."""
        if self.accelerate:
            return len(self._mirror(name).rows)
        return int(self.client.count(name, exact=True).count)

    def ids(self, name: str) -> set[str]:
        """All point ids of the collection."""
        if self.accelerate:
            return set(self._mirror(name).rows)
        out: set[str] = set()
        offset: models.ExtendedPointId | None = None
        while True:
            records, offset = self.client.scroll(
                name, limit=4096, offset=offset, with_payload=False, with_vectors=False
            )
            out.update(str(r.id) for r in records)
            if offset is None:
                return out

    def scroll(
        self, name: str, flt: StoreFilter | None, *, limit: int = 1000, with_vectors: bool = True
    ) -> list[StoredHit]:
        """Points matching ``flt`` (score 0), at most ``limit``."""
        if flt is not None and flt.matches_nothing():
            return []
        if self.accelerate:
            mirror = self._mirror(name)
            c = mirror.compile()
            rows = np.flatnonzero(mirror.mask(c, flt))[:limit]
            return [
                StoredHit(
                    c.ids[r], 0.0, c.payloads[r], c.dense[r] if with_vectors and c.has_dense[r] else None
                )
                for r in rows
            ]
        out: list[StoredHit] = []
        offset: models.ExtendedPointId | None = None
        while len(out) < limit:
            records, offset = self.client.scroll(
                name,
                scroll_filter=_qdrant_filter(flt),
                limit=min(1024, limit - len(out)),
                offset=offset,
                with_payload=True,
                with_vectors=[DENSE] if with_vectors else False,
            )
            out.extend(StoredHit(str(r.id), 0.0, r.payload or {}, _dense_of(r.vector)) for r in records)
            if offset is None:
                break
        return out

    def query(
        self,
        name: str,
        *,
        dense: Vector | None,
        sparse: SparseVec | None,
        flt: StoreFilter | None = None,
        limit: int = 50,
    ) -> list[StoredHit]:
        """Top ``limit`` points: RRF fusion of dense and sparse when both are given, else the one.

        Scores are RRF scores (hybrid), cosine (dense) or IDF-weighted dot products (sparse).
        """
        if sparse is not None and not len(sparse):
            sparse = None
        if (dense is None and sparse is None) or (flt is not None and flt.matches_nothing()):
            return []
        if self.accelerate:
            return self._query_mirror(name, dense, sparse, flt, limit)
        qfilter = _qdrant_filter(flt)
        qsparse = (
            models.SparseVector(indices=list(sparse.indices), values=list(sparse.values))
            if sparse is not None
            else None
        )
        if dense is not None and qsparse is not None:
            response = self.client.query_points(
                name,
                prefetch=[
                    models.Prefetch(query=dense.tolist(), using=DENSE, limit=limit, filter=qfilter),
                    models.Prefetch(query=qsparse, using=SPARSE, limit=limit, filter=qfilter),
                ],
                query=models.FusionQuery(fusion=models.Fusion.RRF),
                limit=limit,
                with_payload=True,
                with_vectors=[DENSE],
            )
        else:
            response = self.client.query_points(
                name,
                query=dense.tolist() if dense is not None else qsparse,
                using=DENSE if dense is not None else SPARSE,
                query_filter=qfilter,
                limit=limit,
                with_payload=True,
                with_vectors=[DENSE],
            )
        return [
            StoredHit(str(p.id), float(p.score), p.payload or {}, _dense_of(p.vector))
            for p in response.points
        ]

    def _query_mirror(
        self, name: str, dense: Vector | None, sparse: SparseVec | None, flt: StoreFilter | None, limit: int
    ) -> list[StoredHit]:
        mirror = self._mirror(name)
        c = mirror.compile()
        if not c.ids:
            return []
        mask = mirror.mask(c, flt)
        ranked: list[tuple[list[int], npt.NDArray[np.float32]]] = []
        if dense is not None:
            ranked.append(mirror.dense_ranking(c, dense, mask, limit))
        if sparse is not None:
            ranked.append(mirror.sparse_ranking(c, sparse, mask, limit))
        if len(ranked) == 2:
            scored = _rrf([rows for rows, _ in ranked], limit)
        else:
            rows, scores = ranked[0]
            scored = [(r, float(scores[r])) for r in rows]
        return [
            StoredHit(c.ids[r], score, c.payloads[r], c.dense[r] if c.has_dense[r] else None)
            for r, score in scored
        ]


def _close_half_open_lock(exc: BaseException) -> None:
    # qdrant-client opens ``<path>/.lock`` before trying to lock it and leaves the file open when the
    # lock is taken (an unclosed-file ResourceWarning, and a descriptor leak in a long-lived worker).
    # The half-built local client is still reachable from the traceback's frames: close it there.
    tb = exc.__traceback__
    while tb is not None:
        handle = getattr(tb.tb_frame.f_locals.get("self"), "_flock_file", None)
        if handle is not None and hasattr(handle, "close") and not getattr(handle, "closed", True):
            handle.close()
        tb = tb.tb_next


def _vectors_of(p: PointData) -> dict[str, Any]:
    """Qdrant's named vectors of a point (no dense entry while it has none: lazy indexing)."""
    out: dict[str, Any] = {
        SPARSE: models.SparseVector(indices=list(p.sparse.indices), values=list(p.sparse.values))
    }
    if p.has_dense:
        out[DENSE] = np.asarray(p.dense, dtype=np.float32).tolist()
    return out


def _dense_of(vector: Any) -> Vector | None:
    if isinstance(vector, Mapping) and DENSE in vector:
        return np.asarray(vector[DENSE], dtype=np.float32)
    return None
