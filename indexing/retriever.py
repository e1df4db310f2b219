"""Retrieval over an indexed repository: hybrid search, locality boosts, redundancy filter, hierarchy.

The pipeline for :meth:`HybridRetriever.search`:

1. dense + sparse candidates fused with RRF (Qdrant's query API; seed 002's hybrid retrieval);
2. chunks named by the query's locality signals are pulled in even if the first stage missed them:
   chunks of files named in ``file:line`` hints and chunks defining symbols named in the query;
3. boosts: a chunk containing a hinted line (strongest; the tightest such chunk a bit more), a chunk in
   a hinted file, a chunk defining a named symbol. Library frames of a stack count almost equally (the
   bug is often a caller above the frame that raised); unless the query is about tests, test code is
   down-weighted (relevance and its hints), and the functions called on a hinted line -- plus, for a
   failing test, the rest of what it calls and what those callees call -- are boosted instead;
4. a class chunk that scores close to one of its own method chunks is ranked just below it;
5. a deterministic order: score, then path and start line (ascending chunk order) for ties;
6. the redundancy filter of seed 000: drop a chunk whose embedding has cosine > threshold with an
   earlier-ranked kept chunk; then cut to ``k``.

:meth:`HybridRetriever.hierarchical` (seed 001) first walks the repo -> directory -> file tree by the
nodes' abstracts, then ranks chunks only inside the chosen files and directories.
"""

from __future__ import annotations

import dataclasses
import math
import re
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from indexing.embed import Embedder
from indexing.languages import code_languages, doc_languages, is_test_path
from indexing.model import Chunk, Query, SearchFilters, SearchHit
from indexing.store import QdrantStore, StoredHit, StoreFilter
from indexing.tokens import SparseVec, code_tokens, query_symbols, query_vector

# Retrieval scores are normalised to [0, 1] (the best candidate scores 1), so the boosts below read
# as "worth this many top hits": a hinted line beats everything, a named symbol beats relevance alone.
HINT_LINE_BOOST = 2.0
"""Added to a chunk containing a hinted line (scaled down for later hints)."""
HINT_TIGHTEST_BOOST = 0.5
"""Extra for the smallest chunk containing the line (the method rather than its class)."""
HINT_FILE_BOOST = 0.3
"""Added to the other chunks of a file hinted with a line."""
HINT_WHOLE_FILE_BOOST = 0.6
"""Added to every chunk of a file hinted without a line (``line`` 0: 'somewhere in this file')."""
SYMBOL_BOOST = 1.2
"""Added to a chunk defining a symbol named in the query."""
QUALIFIED_SYMBOL_BOOST = 0.3
"""Extra when a dotted name (``Circle.area``) matches the chunk's qualified name, not just ``area``."""
HINT_DECAY = 0.85
"""Hint ``i`` among the hints of its group (library / test code) is weighted at least ``HINT_DECAY ** i``."""
HINT_STACK_FLOOR = 0.9
"""Library-code hints are weighted ``max(HINT_DECAY ** i, HINT_STACK_FLOOR)``: the bug is often a caller
a few frames above where the error fires, so every repository frame of the stack counts almost fully."""
TEST_HINT_WEIGHT = 0.1
"""Weight of a hint into a test file (a failing assertion says little about where the bug is)."""
TEST_BASE_WEIGHT = 0.4
"""Relevance of a test-file chunk is scaled by this unless the query is about tests."""
FAILURE_ASIDE_WEIGHT = 0.4
"""For a query built from a failure (an assertion message, an exception), the relevance of a doc
chunk (README) and, on top of :data:`TEST_BASE_WEIGHT`, of a test chunk is scaled by this when
library code is among the candidates: the message's words are in the tests and the docs, the bug
is in the library (issue 30: README and tests ranked above the library file). Below 0.5 so that
a doc chunk fused first falls below a library chunk fused second (fused scores 1 and 1/2)."""
CALLEE_BOOST = 0.9
"""Added to a chunk defining a function called on a hinted line (divided among its definitions)."""
CALLEE_OF_CALLEE_BOOST = 0.4
"""Added to a chunk (in the same file) defining a function that a callee chunk calls."""
CROSS_FILE_WEIGHT = 0.5
"""Share of :data:`CALLEE_OF_CALLEE_BOOST` for a callee's callee defined only in another file."""
TEST_USES_BOOST = 0.3
"""Added to a chunk defining a function the failing test calls elsewhere than on the hinted line."""
MEMBER_SYMBOL_WEIGHT = 0.5
"""A class chunk matching a named symbol only through a member gets this share of the symbol boost."""
CONTAINER_MARGIN = 0.35
"""A class chunk scoring at most this much above one of its own method chunks is ranked just below it."""

_FAILURE_TEXT = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|\bassert(?:ion)?\b|\bexpected\b|\bpanic(?:ked)?\b|"
    r"\bTraceback\b|^\s*(?:FAIL(?:ED)?|not ok)\b",
    re.M,
)
"""Text a failure gives: an error or exception type, an assertion, a panic, a FAIL/not ok line."""
_CALLED = re.compile(r"([^\W\d]\w*)\s*(?:::<[^>]*>)?(?:<[\w\s,.\[\]]*>)?\s*\(")
_TEST_INTENT = re.compile(
    r"\b(flaky|fixtures?|conftest|test (?:is|was|are) (?:wrong|broken|flaky|incorrect)|"
    r"(?:fix|update|rewrite|add) (?:the |a |this )?(?:unit |integration )?tests?)\b",
    re.IGNORECASE,
)
_CONTAINER_KINDS = frozenset({"class", "class_skeleton"})
_CALLABLE_KINDS = frozenset({"function", "method"})
_MAX_CALLEES = 12

_CHUNK_CACHE_LIMIT = 200_000
"""Chunks kept per collection across queries (cleared when full: a long-lived worker's bound)."""
_MEMO_LIMIT = 4096
"""Resolved hint paths / query symbols remembered per retriever."""

Vector = npt.NDArray[np.float32]

Expander = Callable[[Vector | None, SparseVec | None, StoreFilter, Sequence[str], Sequence[str]], int]
"""Lazy mode's hook (:meth:`indexing.lazy.LazyExpander.before_query`): embeds the chunks a query is
likely to rank before the dense stage runs; args: dense, sparse, filter, hinted paths, symbols."""


@runtime_checkable
class Retriever(Protocol):
    """The retrieval port used by the repair loop."""

    def search(self, query: Query) -> list[SearchHit]:
        """Flat ranked search over chunks."""
        ...

    def hierarchical(self, query: Query, depth: int = 3) -> list[SearchHit]:
        """Top-down search: directories and files by abstract, then chunks inside the chosen ones."""
        ...


def chunk_from_payload(payload: Mapping[str, Any]) -> Chunk:
    """Rebuild a :class:`Chunk` from its stored payload."""
    return Chunk(
        path=str(payload.get("path", "")),
        language=str(payload.get("language", "")),
        kind=payload.get("kind", "window"),
        symbol=str(payload.get("symbol", "")),
        qualified_name=str(payload.get("qualified_name", "")),
        start_line=int(payload.get("start_line", 0)),
        end_line=int(payload.get("end_line", 0)),
        text=str(payload.get("text", "")),
        signature=str(payload.get("signature", "")),
        docstring=str(payload.get("docstring", "")),
        defines=tuple(payload.get("defines", ())),
        uses=tuple(payload.get("uses", ())),
    )


def store_filter(filters: SearchFilters) -> StoreFilter:
    """Translate the public :class:`SearchFilters` to the store's filter."""
    prefix = (filters.path_prefix or "").strip().replace("\\", "/").removeprefix("./").strip("/")
    return StoreFilter(
        prefix=prefix if prefix not in ("", ".") else None,
        language=filters.language or None,
        kind=filters.kind or None,
    )


@dataclass(slots=True)
class _Entry:
    """A stored chunk as the ranking needs it, derived once from its payload (see :class:`_ChunkCache`)."""

    payload: Mapping[str, Any]
    chunk: Chunk
    test: bool
    """``is_test_path(chunk.path)``."""
    kind: str
    """``library`` (code outside tests), ``test``, ``doc`` (a doc language of the language table)
    or ``other`` (config, plain text)."""
    names: frozenset[str]
    """What a named symbol matches: symbol, qualified name and defines."""
    tokens: frozenset[str] | None = None
    """Lexical tokens of path, name, signature and text (computed when first explained)."""

    def token_set(self) -> frozenset[str]:
        if self.tokens is None:
            ch = self.chunk
            self.tokens = frozenset(code_tokens(f"{ch.path} {ch.qualified_name} {ch.signature} {ch.text}"))
        return self.tokens


class _ChunkCache:
    """Per-collection :class:`_Entry` objects by point id, reused across queries and retrievers.

    Rebuilding a :class:`Chunk` from its payload (and classifying it) for every candidate of every
    query was a large share of a query's time. An entry is reused only for the very payload object
    it was built from, or an equal one: an upsert replaces the payload (a chunk that moved keeps its
    id but not its lines), so a stale entry is never served.
    """

    def __init__(self, limit: int = _CHUNK_CACHE_LIMIT) -> None:
        self._items: dict[str, _Entry] = {}
        self._limit = limit

    def __len__(self) -> int:
        return len(self._items)

    def entry(self, pid: str, payload: Mapping[str, Any]) -> _Entry:
        """The entry of point ``pid`` with ``payload`` (built and remembered when not cached)."""
        e = self._items.get(pid)
        if e is not None and (e.payload is payload or e.payload == payload):
            return e
        chunk = chunk_from_payload(payload)
        names = frozenset({chunk.symbol, chunk.qualified_name, *chunk.defines} - {""})
        test = is_test_path(chunk.path)
        kind = (
            "test"
            if test
            else "doc"
            if chunk.language in doc_languages()
            else "library"
            if chunk.language in code_languages()
            else "other"
        )
        e = _Entry(payload, chunk, test, kind, names)
        if len(self._items) >= self._limit:
            self._items.clear()
        self._items[pid] = e
        return e


_CACHES: weakref.WeakKeyDictionary[object, dict[str, _ChunkCache]] = weakref.WeakKeyDictionary()
"""Chunk caches by store, then collection: shared by every retriever over the same open store."""


def _chunk_cache(store: object, collection: str) -> _ChunkCache:
    try:
        per_store = _CACHES.setdefault(store, {})
    except TypeError:  # a store that cannot be weakly referenced: a cache for this retriever only
        return _ChunkCache()
    return per_store.setdefault(collection, _ChunkCache())


@dataclass(slots=True)
class _Candidate:
    id: str
    entry: _Entry
    base: float
    vector: Vector | None
    from_query: bool
    reasons: list[str] = field(default_factory=list)
    boost: float = 0.0

    @property
    def chunk(self) -> Chunk:
        return self.entry.chunk

    @property
    def score(self) -> float:
        return self.base + self.boost

    def sort_key(self) -> tuple[float, str, int, int, str]:
        c = self.chunk
        return (-round(self.score, 9), c.path, c.start_line, c.end_line, c.qualified_name)


def _qualified_match(qualified_name: str, dotted: str) -> bool:
    return qualified_name == dotted or qualified_name.endswith("." + dotted)


def _unit(v: Vector) -> Vector:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


class HybridRetriever:
    """Implements :class:`Retriever` over one repository's chunk and tree collections."""

    def __init__(
        self,
        store: QdrantStore,
        collection: str,
        tree_collection: str,
        embedder: Embedder,
        *,
        root: Path | None = None,
        known_paths: Collection[str] = (),
        candidates: int = 50,
        dir_beam: int = 3,
        file_beam: int = 6,
        expander: Expander | None = None,
    ) -> None:
        self.store = store
        self.collection = collection
        self.tree_collection = tree_collection
        self.embedder = embedder
        self.root = root
        self.known_paths = frozenset(known_paths)
        self.candidates = candidates
        self.dir_beam = dir_beam
        self.file_beam = file_beam
        self.expander = expander
        self._chunks = _chunk_cache(store, collection)
        # Memos of pure functions of (root, known paths) and of the query text: a query resolves
        # its hints and extracts its symbols at several stages.
        self._resolved: dict[str, str | None] = {}
        self._resolved_for: tuple[Path | None, frozenset[str]] = (root, self.known_paths)
        self._symbol_memo: dict[str, tuple[str, ...]] = {}
        self._sparse_memo: dict[str, SparseVec] = {}

    # -- query vectors ---------------------------------------------------------------------------

    def _vectors(self, query: Query) -> tuple[Vector | None, SparseVec | None]:
        text = query.text.strip()
        if not text:
            return None, None
        dense = self.embedder.embed([text])[0] if query.mode in ("dense", "hybrid") else None
        sparse = self._query_vector(text) if query.mode in ("sparse", "hybrid") else None
        return dense, sparse

    def _query_vector(self, text: str) -> SparseVec:
        """:func:`query_vector`, remembered per text (a repeated query skips the tokenizer)."""
        vec = self._sparse_memo.get(text)
        if vec is None:
            if len(self._sparse_memo) >= _MEMO_LIMIT:
                self._sparse_memo.clear()
            vec = self._sparse_memo[text] = query_vector(text)
        return vec

    def _expand(self, query: Query, dense: Vector | None, sparse: SparseVec | None, flt: StoreFilter) -> None:
        """Lazy mode: embed what this query may rank before ranking (no-op when all is embedded)."""
        if self.expander is None or (dense is None and query.mode != "hybrid"):
            return  # a sparse-only query needs no chunk vectors
        hint_paths = list(dict.fromkeys(p for p, _ in self._hints(query)))
        symbols = self._symbols(query)
        # The lexical vector steers the expansion even for a dense-only query.
        self.expander(dense, sparse or self._query_vector(query.text), flt, hint_paths, symbols)

    # -- public API ------------------------------------------------------------------------------

    def search(self, query: Query) -> list[SearchHit]:
        """Ranked chunks for ``query`` (``query.mode`` picks dense, sparse or hybrid)."""
        if query.k <= 0:
            return []
        flt = store_filter(query.filters)
        dense, sparse = self._vectors(query)
        self._expand(query, dense, sparse, flt)
        limit = max(self.candidates, 4 * query.k)
        hits = self.store.query(self.collection, dense=dense, sparse=sparse, flt=flt, limit=limit)
        return self._rank(query, hits, flt, dense, {})

    def hierarchical(self, query: Query, depth: int = 3) -> list[SearchHit]:
        """Top-down search (seed 001): walk the tree by abstracts, then rank chunks in the chosen part.

        Each of the ``depth - 1`` rounds scores the children of the current directories (starting
        at the repository, or at ``filters.path_prefix``), keeps the best ``file_beam`` files and
        descends into the best ``dir_beam`` directories. Chunks are then ranked within the kept
        files, the last directories reached, and any hinted file. ``depth <= 1`` is a flat search.
        """
        if depth <= 1 or query.k <= 0:
            return self.search(query)
        flt = store_filter(query.filters)
        dense, sparse = self._vectors(query)
        if dense is None and sparse is None and not query.hints:
            return []
        self._expand(query, dense, sparse, flt)  # before the walk: it may complete the tree
        scope_reasons: dict[str, str] = {}
        frontier: list[str] = [flt.prefix or ""]
        if flt.prefix and flt.prefix in self.known_paths:
            scope_reasons[flt.prefix] = "file filter"
            frontier = []
        for _ in range(depth - 1):
            if not frontier or (dense is None and sparse is None):
                break
            nodes = self.store.query(
                self.tree_collection,
                dense=dense,
                sparse=sparse,
                flt=StoreFilter(levels=("dir", "file"), parents=tuple(frontier)),
                limit=max(50, 4 * (self.dir_beam + self.file_beam)),
            )
            dirs = [n for n in nodes if n.payload.get("level") == "dir"][: self.dir_beam]
            files = [n for n in nodes if n.payload.get("level") == "file"][: self.file_beam]
            for rank, node in enumerate(files, start=1):
                scope_reasons.setdefault(str(node.payload["path"]), f"file#{rank}")
            frontier = [str(d.payload["path"]) for d in dirs]
        for rank, d in enumerate(frontier, start=1):
            scope_reasons.setdefault(d, f"dir#{rank} {d}/")
        for path, _line in self._hints(query):
            scope_reasons.setdefault(path, "hinted file")
        if not scope_reasons:
            # No tree (or nothing scored): fall back to the flat search rather than return nothing.
            return self.search(query)
        scoped = dataclasses.replace(flt, within=tuple(sorted(scope_reasons)))
        self._expand(query, dense, sparse, scoped)
        limit = max(self.candidates, 4 * query.k)
        hits = self.store.query(self.collection, dense=dense, sparse=sparse, flt=scoped, limit=limit)
        return self._rank(query, hits, scoped, dense, scope_reasons)

    # -- ranking ---------------------------------------------------------------------------------

    def resolve_path(self, raw: str) -> str | None:
        """Map a hint path (absolute, ``./x``, a CI runner's checkout path…) to an indexed path."""
        if self._resolved_for != (self.root, self.known_paths):
            self._resolved, self._resolved_for = {}, (self.root, self.known_paths)
        if raw in self._resolved:
            return self._resolved[raw]
        if len(self._resolved) >= _MEMO_LIMIT:
            self._resolved.clear()
        out = self._resolved[raw] = self._resolve_path(raw)
        return out

    def _resolve_path(self, raw: str) -> str | None:
        p = raw.strip().replace("\\", "/")
        if self.root is not None and PurePosixPath(p).is_absolute():
            root = self.root.as_posix().rstrip("/") + "/"
            if p.startswith(root):
                p = p[len(root) :]
        while p.startswith("./"):
            p = p[2:]
        if not self.known_paths or p in self.known_paths:
            return p or None
        # A longer path (a CI runner's absolute checkout path): the longest indexed suffix wins.
        inside = [k for k in self.known_paths if p.endswith("/" + k)]
        if inside:
            return max(inside, key=lambda k: (len(k), k))
        # A shorter one ("login.py"): only when it names exactly one indexed file.
        partial = [k for k in self.known_paths if k.endswith("/" + p)]
        return partial[0] if len(partial) == 1 else None

    def _symbols(self, query: Query) -> tuple[str, ...]:
        """The symbols the query names: the caller's, else those extracted from its text."""
        if query.symbols:
            return tuple(query.symbols)
        found = self._symbol_memo.get(query.text)
        if found is None:
            if len(self._symbol_memo) >= _MEMO_LIMIT:
                self._symbol_memo.clear()
            found = self._symbol_memo[query.text] = query_symbols(query.text)
        return found

    def _candidate(self, hit: StoredHit, base: float, from_query: bool) -> _Candidate:
        return _Candidate(hit.id, self._chunks.entry(hit.id, hit.payload), base, hit.vector, from_query)

    def _hints(self, query: Query) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for hint in query.hints:
            path = self.resolve_path(hint.path)
            if path is not None and (path, hint.line) not in out:
                out.append((path, hint.line))
        return out

    def _rank(
        self,
        query: Query,
        hits: Sequence[StoredHit],
        flt: StoreFilter,
        dense: Vector | None,
        scope_reasons: Mapping[str, str],
    ) -> list[SearchHit]:
        cands: dict[str, _Candidate] = {}
        top = max((h.score for h in hits), default=0.0)
        for h in hits:
            cands[h.id] = self._candidate(h, h.score / top if top > 0 else 0.0, True)

        hints = self._hints(query)
        symbols = self._symbols(query)
        extra: list[StoredHit] = []
        if hints:
            hint_paths = tuple(sorted({p for p, _ in hints}))
            within = (
                hint_paths if flt.within is None else tuple(p for p in hint_paths if p in set(flt.within))
            )
            extra += self.store.scroll(self.collection, dataclasses.replace(flt, within=within), limit=5000)
        if symbols:
            extra += self.store.scroll(self.collection, dataclasses.replace(flt, symbols=symbols), limit=200)
        for h in extra:
            if h.id not in cands:
                cands[h.id] = self._candidate(h, 0.0, False)

        about_tests = self._about_tests(query, flt)
        if not about_tests:
            # A repair query wants the code under test; a failing test's own text matches its log best.
            for c in cands.values():
                if c.entry.test:
                    c.base *= TEST_BASE_WEIGHT
            if _FAILURE_TEXT.search(query.text) and any(
                c.entry.kind == "library" and c.base > 0 for c in cands.values()
            ):
                for c in cands.values():
                    if c.entry.kind in ("doc", "test"):
                        c.base *= FAILURE_ASIDE_WEIGHT
        if scope_reasons:
            for c in cands.values():
                reason = scope_reasons.get(c.chunk.path) or next(
                    (r for d, r in scope_reasons.items() if c.chunk.path.startswith(d + "/")), None
                )
                if reason:
                    c.reasons.append(reason)
        self._boost_hints(cands, hints, about_tests=about_tests)
        self._boost_callees(cands, hints, flt, about_tests=about_tests)
        self._boost_symbols(cands, symbols, about_tests=about_tests)
        self._prefer_members(cands)

        ordered = sorted(cands.values(), key=_Candidate.sort_key)
        kept = self._filter_redundant(ordered, query.redundancy_threshold, query.k)
        dense_ranks = self._rank_by_cosine(cands, dense) if dense is not None else {}
        wanted = list(dict.fromkeys(code_tokens(query.text))) if query.mode in ("sparse", "hybrid") else []
        return [
            SearchHit(c.chunk, c.score, (*self._why(c, dense_ranks.get(c.id), wanted), *c.reasons))
            for c in kept
        ]

    @staticmethod
    def _why(cand: _Candidate, dense_rank: int | None, wanted: Sequence[str]) -> list[str]:
        """Why the first stage retrieved ``cand``: its dense rank and the query terms it contains
        (``wanted``: the query's distinct tokens; empty for a dense-only query)."""
        if not cand.from_query:
            return []
        out: list[str] = [f"dense#{dense_rank}"] if dense_rank is not None else []
        if wanted:
            have = cand.entry.token_set()
            matched = [t for t in wanted if t in have]
            if matched:
                out.append("sparse: " + ", ".join(matched[:5]))
        return out

    @staticmethod
    def _rank_by_cosine(cands: Mapping[str, _Candidate], dense: Vector) -> dict[str, int]:
        fetched = [c for c in cands.values() if c.from_query and c.vector is not None]
        if not fetched:
            return {}
        matrix = np.stack([np.asarray(c.vector, dtype=np.float32) for c in fetched])
        norms = np.linalg.norm(matrix, axis=1)
        norms[norms == 0] = 1.0
        sims = (matrix @ _unit(np.asarray(dense, dtype=np.float32))) / norms
        order = sorted(
            range(len(fetched)),
            key=lambda i: (-float(sims[i]), fetched[i].chunk.path, fetched[i].chunk.start_line),
        )
        return {fetched[i].id: rank for rank, i in enumerate(order, start=1)}

    @staticmethod
    def _about_tests(query: Query, flt: StoreFilter) -> bool:
        """Whether the query asks about test code itself (then test files are not down-weighted)."""
        if flt.prefix and (is_test_path(flt.prefix) or is_test_path(flt.prefix + "/_")):
            return True
        return bool(_TEST_INTENT.search(query.text))

    @staticmethod
    def _hint_weights(hints: Sequence[tuple[str, int]], *, about_tests: bool) -> list[float]:
        """Per-hint weights: library frames nearly flat (innermost slightly more), test frames low."""
        weights: list[float] = []
        lib = test = 0
        for path, _line in hints:
            if not about_tests and is_test_path(path):
                weights.append(TEST_HINT_WEIGHT * HINT_DECAY**test)
                test += 1
            else:
                weights.append(max(HINT_DECAY**lib, HINT_STACK_FLOOR) if lib else 1.0)
                lib += 1
        return weights

    @staticmethod
    def _tightest(
        cands: Mapping[str, _Candidate] | Sequence[_Candidate], path: str, line: int
    ) -> _Candidate | None:
        pool = cands.values() if isinstance(cands, Mapping) else cands
        containing = [c for c in pool if c.chunk.path == path and line > 0 and c.chunk.contains_line(line)]
        return min(
            containing,
            key=lambda c: (c.chunk.end_line - c.chunk.start_line, c.chunk.start_line, c.chunk.qualified_name),
            default=None,
        )

    def _boost_hints(
        self, cands: Mapping[str, _Candidate], hints: Sequence[tuple[str, int]], *, about_tests: bool = False
    ) -> None:
        file_boosted: set[tuple[str, str]] = set()
        weights = self._hint_weights(hints, about_tests=about_tests)
        by_path: dict[str, list[_Candidate]] = {}
        if hints:
            for c in cands.values():
                by_path.setdefault(c.chunk.path, []).append(c)
        for (path, line), weight in zip(hints, weights, strict=True):
            in_file = by_path.get(path, [])
            containing = [c for c in in_file if line > 0 and c.chunk.contains_line(line)]
            tightest = self._tightest(in_file, path, line)
            for c in containing:
                c.boost += HINT_LINE_BOOST * weight + (HINT_TIGHTEST_BOOST * weight if c is tightest else 0.0)
                c.reasons.append(f"contains {path}:{line}")
            per_file = HINT_FILE_BOOST if line > 0 else HINT_WHOLE_FILE_BOOST
            for c in in_file:
                if c not in containing and (c.id, path) not in file_boosted:
                    file_boosted.add((c.id, path))
                    c.boost += per_file * weight
                    c.reasons.append(f"in {path}")

    def _boost_callees(
        self,
        cands: dict[str, _Candidate],
        hints: Sequence[tuple[str, int]],
        flt: StoreFilter,
        *,
        about_tests: bool,
    ) -> None:
        """Boost the functions called on hinted lines (and, for failing tests, what those call).

        A failing assertion's frame is the test; the code at fault is what the test line calls, or a
        helper that callee calls in turn. A name defined ``n`` times gets ``1/sqrt(n)`` of the boost.
        """
        called: dict[str, float] = {}
        test_uses: dict[str, float] = {}
        from_tests: set[str] = set()
        for path, line in hints:
            site = self._tightest(cands, path, line)
            if site is None:
                continue
            ch = site.chunk
            lines = ch.text.split("\n")
            text = lines[line - ch.start_line] if 0 <= line - ch.start_line < len(lines) else ""
            own = {ch.symbol, *ch.defines}
            names = [n for n in dict.fromkeys(_CALLED.findall(text)) if n not in own][:_MAX_CALLEES]
            in_test = not about_tests and is_test_path(path)
            for n in names:
                called[n] = max(called.get(n, 0.0), CALLEE_BOOST)
                if in_test:
                    from_tests.add(n)
            if in_test:
                for n in ch.uses:
                    if n not in own and n not in names:
                        test_uses[n] = TEST_USES_BOOST
        if not called and not test_uses:
            return
        wanted = tuple(sorted({*called, *test_uses}))
        defs = self._definitions(cands, flt, wanted, about_tests=about_tests)
        hop1: list[tuple[_Candidate, float]] = []
        for name, chunks in defs.items():
            share = 1.0 / math.sqrt(len(chunks))
            amount = called.get(name) or test_uses.get(name, 0.0)
            for c in chunks:
                c.boost += amount * share
                c.reasons.append(f"{'called' if name in called else 'used by test'}: {name}")
                if name in from_tests:
                    hop1.append((c, 1.0))
                elif name in test_uses:
                    hop1.append((c, TEST_USES_BOOST / CALLEE_BOOST))
        # One more hop, within the callee's file: a private helper is where many assertions fail.
        inner = tuple(sorted({u for c, _ in hop1 for u in c.chunk.uses} - set(defs)))
        if not inner:
            return
        hop2 = self._definitions(cands, flt, inner, about_tests=about_tests)
        for name, chunks in hop2.items():
            callers: dict[str, float] = {}
            for c, factor in hop1:
                if name in c.chunk.uses:
                    callers[c.chunk.path] = max(callers.get(c.chunk.path, 0.0), factor)
            local = [c for c in chunks if c.chunk.path in callers]
            for c in local:
                c.boost += CALLEE_OF_CALLEE_BOOST * callers[c.chunk.path] / math.sqrt(len(local))
                c.reasons.append(f"called by callee: {name}")
            if not local and callers:
                # Defined only elsewhere: a cross-module helper, weaker evidence than a local one.
                factor = max(callers.values()) * CROSS_FILE_WEIGHT
                for c in chunks:
                    c.boost += CALLEE_OF_CALLEE_BOOST * factor / math.sqrt(len(chunks))
                    c.reasons.append(f"called by callee: {name}")

    def _definitions(
        self, cands: dict[str, _Candidate], flt: StoreFilter, names: Sequence[str], *, about_tests: bool
    ) -> dict[str, list[_Candidate]]:
        """Function/method chunks defining each of ``names`` (test code left out), added as candidates."""
        found = self.store.scroll(
            self.collection, dataclasses.replace(flt, symbols=tuple(names)), limit=50 * len(names)
        )
        for h in found:
            if h.id not in cands:
                cands[h.id] = self._candidate(h, 0.0, False)
        wanted = set(names)
        out: dict[str, list[_Candidate]] = {}
        for h in found:
            c = cands[h.id]
            ch = c.chunk
            if ch.kind not in _CALLABLE_KINDS or (not about_tests and c.entry.test):
                continue
            if ch.symbol in wanted:
                out.setdefault(ch.symbol, []).append(c)
        return out

    @staticmethod
    def _prefer_members(cands: Mapping[str, _Candidate]) -> None:
        """Rank a class chunk just below its best method chunk when they score close (the method is
        the more precise answer, and the class would otherwise hide it through the redundancy filter)."""
        by_path: dict[str, list[_Candidate]] = {}
        with_container: set[str] = set()
        for c in cands.values():
            by_path.setdefault(c.chunk.path, []).append(c)
            if c.chunk.kind in _CONTAINER_KINDS:
                with_container.add(c.chunk.path)
        for path in [p for p in by_path if p in with_container]:  # candidate order, as before
            group = by_path[path]
            for cont in group:
                if cont.chunk.kind not in _CONTAINER_KINDS:
                    continue
                members = [
                    m
                    for m in group
                    if m is not cont
                    and m.chunk.kind in _CALLABLE_KINDS
                    and cont.chunk.start_line <= m.chunk.start_line
                    and m.chunk.end_line <= cont.chunk.end_line
                ]
                best = max(members, key=lambda m: m.score, default=None)
                if best is None:
                    continue
                gap = cont.score - best.score
                if 0 <= gap <= CONTAINER_MARGIN:
                    cont.boost -= gap + 1e-6
                    cont.reasons.append(f"ranked below its member {best.chunk.qualified_name}")

    @staticmethod
    def _boost_symbols(
        cands: Mapping[str, _Candidate], symbols: Sequence[str], *, about_tests: bool = False
    ) -> None:
        if not symbols:
            return
        dotted_symbols = [s for s in symbols if "." in s]
        for c in cands.values():
            ch = c.chunk
            names = c.entry.names
            dotted = next((s for s in dotted_symbols if _qualified_match(ch.qualified_name, s)), None)
            hit = dotted or next((s for s in symbols if s in names), None)
            if hit is not None:
                amount = SYMBOL_BOOST + (QUALIFIED_SYMBOL_BOOST if dotted else 0.0)
                if ch.kind in _CONTAINER_KINDS and not dotted and hit not in (ch.symbol, ch.qualified_name):
                    amount *= MEMBER_SYMBOL_WEIGHT  # the name is a member's: its own chunk is the answer
                if not about_tests and c.entry.test:
                    amount *= TEST_HINT_WEIGHT  # a failing test's name is in every log of it
                c.boost += amount
                c.reasons.append(f"defines {hit}")

    @staticmethod
    def _filter_redundant(ordered: Sequence[_Candidate], threshold: float | None, k: int) -> list[_Candidate]:
        kept: list[_Candidate] = []
        kept_vecs: Vector | None = None  # the unit vectors kept so far, rows [:n]
        n = 0
        for c in ordered:
            if len(kept) >= k:
                break
            if threshold is not None and c.vector is not None:
                v = _unit(np.asarray(c.vector, dtype=np.float32))
                if kept_vecs is None:
                    kept_vecs = np.empty((k, v.shape[0]), dtype=np.float32)
                elif n and float(np.max(kept_vecs[:n] @ v)) > threshold:
                    continue
                kept_vecs[n] = v
                n += 1
            kept.append(c)
        return kept
