"""Lazy expansion of dense vectors (seed 001, HCAG's compressed nodes expanded on first access).

In lazy mode a refresh stores every chunk with its sparse vector, payload and place in the tree,
and embeds only the tree's file/directory abstracts; a chunk's dense vector is computed when
something first needs it:

* a query (:meth:`LazyExpander.before_query`): the chunks the cheap signals point at -- the top
  sparse hits, the chunks of the files the tree ranks best for the query, of hinted files and those
  defining named symbols -- are embedded (through the persistent content-addressed embedding cache,
  so each text is computed once, ever) and written back before the dense stage runs;
* the idle fill (:meth:`LazyExpander.fill`): embeds what is left, in batches, until done or out of
  budget; ``arcs index --fill`` and a worker's idle step call it.

A chunk without a dense vector is stored without one (see :class:`~indexing.store.PointData`) and
carries ``"lazy": true`` in its payload; the dense ranking only sees embedded chunks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import numpy.typing as npt

from indexing.embed import Embedder, embedding_text
from indexing.model import Chunk
from indexing.store import QdrantStore, StoredHit, StoreFilter
from indexing.tokens import SparseVec

Vector = npt.NDArray[np.float32]

FILL_BATCH = 256
QUERY_SPARSE_HITS = 50
"""Top sparse hits whose chunks a query embeds."""
QUERY_TREE_FILES = 6
"""Best-ranked files (by their embedded abstracts) whose chunks a query embeds."""
MAX_QUERY_EXPANSION = 128
"""At most this many chunks embedded for one query (hints first, then sparse hits, then files); when
no more than this many are left, a query embeds them all."""


@dataclass
class FillStats:
    """What one fill step did."""

    embedded: int
    """Chunks that got their dense vector in this step (from the model or the cache)."""
    remaining: int
    """Chunks still without one."""
    seconds: float

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return asdict(self)


class LazyExpander:
    """Embeds chunk bodies of one collection on demand and in the background fill."""

    def __init__(
        self,
        store: QdrantStore,
        collection: str,
        tree_collection: str,
        embedder: Embedder,
        *,
        chunk_of: Callable[[StoredHit], Chunk],
        clock: Callable[[], float] = time.perf_counter,
        on_complete: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.collection = collection
        self.tree_collection = tree_collection
        self.embedder = embedder
        self._chunk_of = chunk_of
        self._clock = clock
        self.on_complete = on_complete
        """Called once a query's expansion leaves nothing unembedded (the index re-derives its tree)."""
        self.expanded = 0
        """Chunks embedded on demand by queries so far."""

    def remaining(self) -> int:
        """Chunks of the collection still without a dense vector."""
        return self.store.count_missing_dense(self.collection)

    def embed_hits(self, hits: Sequence[StoredHit]) -> int:
        """Embed ``hits`` (points without a dense vector) and store their vectors; returns how many."""
        todo = {h.id: h for h in hits}
        if not todo:
            return 0
        ids = list(todo)
        vectors = self.embedder.embed([embedding_text(self._chunk_of(todo[i])) for i in ids])
        self.store.set_dense(self.collection, dict(zip(ids, vectors, strict=True)))
        return len(ids)

    def fill(self, *, max_chunks: int | None = None, budget_s: float | None = None) -> FillStats:
        """Embed chunks still without a vector, ``FILL_BATCH`` at a time, in path order, until none is
        left, ``max_chunks`` were done or ``budget_s`` seconds passed (checked between batches)."""
        started = self._clock()
        done = 0
        while max_chunks is None or done < max_chunks:
            if budget_s is not None and self._clock() - started >= budget_s:
                break
            want = FILL_BATCH if max_chunks is None else min(FILL_BATCH, max_chunks - done)
            batch = self.store.missing_dense(self.collection, limit=want)
            if not batch:
                break
            done += self.embed_hits(batch)
        return FillStats(done, self.remaining(), round(self._clock() - started, 3))

    def before_query(
        self,
        dense: Vector | None,
        sparse: SparseVec | None,
        flt: StoreFilter,
        hint_paths: Sequence[str] = (),
        symbols: Sequence[str] = (),
    ) -> int:
        """Embed the chunks a query is likely to rank (see the module docstring); returns how many.

        A no-op (one counter read) once nothing is left to embed, e.g. in eager mode.
        """
        left = self.store.count_missing_dense(self.collection)
        if left == 0:
            return 0
        if left <= MAX_QUERY_EXPANSION:
            # What is left costs no more than one query's expansion: finish it (a small repository
            # is then complete at its first query, tree included).
            n = self.embed_hits(self.store.missing_dense(self.collection))
            self.expanded += n
            if self.on_complete is not None:
                self.on_complete()
            return n
        picked: dict[str, StoredHit] = {}

        def take(hits: Sequence[StoredHit]) -> None:
            for h in hits:
                if len(picked) >= MAX_QUERY_EXPANSION:
                    return
                picked.setdefault(h.id, h)

        if hint_paths:
            take(self.store.missing_dense(self.collection, _with(flt, within=tuple(hint_paths))))
        if sparse is not None and len(sparse):
            top = self.store.query(
                self.collection, dense=None, sparse=sparse, flt=flt, limit=QUERY_SPARSE_HITS
            )
            take([h for h in top if h.payload.get("lazy")])
        if symbols:
            take(self.store.missing_dense(self.collection, _with(flt, symbols=tuple(symbols)), limit=200))
        if (dense is not None or sparse is not None) and self.store.exists(self.tree_collection):
            files = self.store.query(
                self.tree_collection,
                dense=dense,
                sparse=sparse,
                flt=StoreFilter(levels=("file",), prefix=flt.prefix),
                limit=QUERY_TREE_FILES,
            )
            paths = tuple(str(f.payload.get("path", "")) for f in files)
            if paths:
                take(self.store.missing_dense(self.collection, _with(flt, within=paths)))
        n = self.embed_hits(list(picked.values()))
        self.expanded += n
        return n


def _with(flt: StoreFilter, **changes: object) -> StoreFilter:
    from dataclasses import replace

    return replace(flt, **changes)  # type: ignore[arg-type]
