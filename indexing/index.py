"""Build and incrementally refresh one repository's index (chunks + hierarchy) in Qdrant.

State lives in two places: the Qdrant collections (points) and a JSON *manifest* per repository
under ``config.index_dir`` (commit built from, embedder, and per file: content hash, stat, point ids,
structural summary). A refresh:

1. finds candidate files -- when the manifest's commit is an ancestor of HEAD, the discovery settings
   are unchanged and no ignore rule changed, only the paths git reports plus files whose size/mtime
   changed are re-checked (:func:`~indexing.files.is_indexable`); otherwise the whole tree is
   rediscovered -- added/removed vs the manifest, ``git diff --name-status -M <old> HEAD``,
   ``git status`` (dirty and untracked files), files whose size/mtime changed, and files left pending
   by an interrupted run -- and compares their content hash with the manifest (the ground truth);
2. re-chunks only changed/added files, embeds their chunks through the embedding cache, upserts
   them (deterministic ids: same content, same id), then deletes stale points of changed and removed
   files;
3. re-derives the directory/repo abstracts and syncs the tree collection (node dense vectors are the
   mean of the chunk vectors below the node: no model call; sparse vectors come from the abstracts);
4. writes the manifest last, atomically.

Modes (``config.index_mode``): *eager* embeds every changed chunk during the refresh; *lazy* (seed
001's lazy expansion, :mod:`indexing.lazy`) stores chunks with their sparse vectors only -- plus a
dense vector when the embedding cache already has one -- and embeds the tree's file/directory
abstracts instead; chunk bodies are embedded when a query needs them or by :meth:`RepoIndex.fill`.
An eager refresh of an index left partly lazy fills the rest.

Crash safety: before touching Qdrant an incremental run records the files it is about to change as
*pending* in the manifest; a full build deletes the manifest first. A re-run after a crash therefore
redoes exactly the unfinished work and sweeps any point of a pending file that is not in its new set,
so it converges to the state a clean run would have produced.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from indexing import gitutil
from indexing.chunker import chunk_file
from indexing.config import IndexConfig, IndexConfigLike, as_index_config
from indexing.embed import CachedEmbedder, Embedder, embedding_text
from indexing.files import discover_files, is_indexable, read_text
from indexing.hierarchy import (
    CachedSummarizer,
    FileSummary,
    NodeDraft,
    StructuralSummarizer,
    Summarizer,
    TreeNode,
    build_tree,
    file_structural,
)
from indexing.languages import language_for_path
from indexing.lazy import FillStats, LazyExpander
from indexing.manifest import FileEntry, Manifest, write_atomic
from indexing.model import Chunk
from indexing.registry import make_embedder, process_registry
from indexing.retention import collection_name, default_repo_id, index_files
from indexing.retriever import HybridRetriever, chunk_from_payload
from indexing.store import PointData, QdrantStore, StoreFilter, ancestor_dirs, point_id
from indexing.tokens import document_vector
from runners import wsfs
from runners.errors import UsageError

EMBED_BATCH = 256
_MAX_SPARSE_CHARS = 20_000
DERIVE_NODE_VECTORS = True
"""Dense vectors of file/directory/repo nodes are the mean of their chunks' vectors (no model call)."""


@dataclass
class IndexStats:
    """What a refresh did. ``files``/``chunks`` describe the whole index after it."""

    files: int
    chunks: int
    embedded: int
    cached: int
    removed_files: int
    changed_files: int
    seconds: float
    commit: str
    full: bool
    warnings: list[str] = field(default_factory=list)
    """Files skipped as unreadable, chunker notes (syntax errors), …"""
    unreadable: list[str] = field(default_factory=list)
    """Paths that could not be read (permission denied); the rest of the index is complete."""
    mode: str = "eager"
    deferred: int = 0
    """Chunks left without a dense vector (lazy mode): embedded on demand or by :meth:`RepoIndex.fill`."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (``arcs index --json``)."""
        return asdict(self)


def chunk_point_id(repo_id: str, chunk: Chunk) -> str:
    """Deterministic id of a chunk's point."""
    return point_id(repo_id, "chunk", chunk.path, chunk.qualified_name, chunk.content_hash)


def node_point_id(repo_id: str, node: TreeNode, members: str = "") -> str:
    """Deterministic id of a tree node's point.

    ``members`` (a digest of the chunk points under the node) is part of the id when the node's dense
    vector is derived from those chunks, so the vector is recomputed whenever one of them changes.
    """
    if members:
        return point_id(repo_id, "node", node.level, node.path, node.abstract_hash, "mean", members)
    return point_id(repo_id, "node", node.level, node.path, node.abstract_hash)


def chunk_payload(chunk: Chunk) -> dict[str, Any]:
    """The Qdrant payload of a chunk (everything needed to rebuild it, plus filter fields)."""
    return {
        "level": "chunk",
        "path": chunk.path,
        "dirs": ancestor_dirs(chunk.path),
        "parent": chunk.path,
        "language": chunk.language,
        "kind": chunk.kind,
        "symbol": chunk.symbol,
        "qualified_name": chunk.qualified_name,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "text": chunk.text,
        "signature": chunk.signature,
        "docstring": chunk.docstring,
        "defines": list(chunk.defines),
        "uses": list(chunk.uses),
        "content_hash": chunk.content_hash,
    }


def node_payload(node: TreeNode) -> dict[str, Any]:
    """The Qdrant payload of a tree node."""
    return {
        "level": node.level,
        "path": node.path,
        "dirs": ancestor_dirs(node.path),
        "parent": node.parent,
        "name": node.name,
        "abstract": node.abstract,
        "children": list(node.children),
        "language": node.language,
        "defines": list(node.defines),
        "line_count": node.line_count,
        "file_count": node.file_count,
    }


def sparse_text(chunk: Chunk) -> str:
    """What the lexical vector of a chunk is built from (untruncated code plus its names)."""
    return "\n".join(
        (chunk.path, chunk.qualified_name, chunk.signature, chunk.docstring, chunk.text[:_MAX_SPARSE_CHARS])
    )


def _unit_mean(vectors: Sequence[Any]) -> Any:
    """The normalised mean of ``vectors`` (None when they cancel out or there are none)."""
    if not vectors:
        return None
    mean = np.sum(np.stack([np.asarray(v, dtype=np.float32) for v in vectors]), axis=0)
    norm = float(np.linalg.norm(mean))
    return (mean / norm).astype(np.float32) if norm > 0 else None


def _is_readable(path: Path) -> bool:
    return os.access(path, os.R_OK)


@dataclass
class _Pending:
    """Chunks waiting to be embedded and upserted."""

    chunks: list[tuple[str, Chunk]] = field(default_factory=list)


class RepoIndex:
    """One repository's index. Use as a context manager, or call :meth:`close`."""

    def __init__(
        self,
        config: IndexConfigLike,
        root: Path,
        store: QdrantStore,
        embedder: CachedEmbedder,
        summarizer: Summarizer,
        *,
        repo_id: str,
        owned: Iterable[Any] = (),
        mode: str = "eager",
    ) -> None:
        self.config = as_index_config(config)
        self.root = root
        self.store = store
        self.embedder = embedder
        self.summarizer = summarizer
        self.repo_id = repo_id
        self.collection = collection_name(repo_id)
        self.tree_collection = f"{self.collection}__tree"
        self.manifest_path, self.snapshot_path = index_files(self.config, repo_id)
        self._owned = list(owned)
        self._closed = False
        self.derive_node_vectors = DERIVE_NODE_VECTORS
        if mode not in ("eager", "lazy"):
            raise ValueError(f"unknown index mode {mode!r}")
        self.mode = mode
        self.expander = LazyExpander(
            store,
            self.collection,
            self.tree_collection,
            embedder,
            chunk_of=lambda h: chunk_from_payload(h.payload),
            on_complete=self._expansion_complete,
        )
        self._chunk_vectors: dict[str, list[Any]] = {}
        """Dense vectors of the chunks embedded by the current refresh, per file (for node vectors)."""

    @property
    def settings(self) -> IndexConfig:
        """The index's configuration (the name older callers use; see :attr:`config`)."""
        return self.config

    @classmethod
    def open(
        cls,
        config: IndexConfigLike,
        repo_path: Path,
        *,
        embedder: Embedder | None = None,
        repo_id: str | None = None,
        summarizer: Summarizer | None = None,
        store: QdrantStore | None = None,
        shared: bool = False,
        mode: str | None = None,
        read_only: bool = False,
    ) -> RepoIndex:
        """Open the index of the git work tree containing ``repo_path``.

        ``embedder`` defaults to :func:`make_embedder`; one without a cache is wrapped in the
        persistent cache. ``store`` lets several indexes share one Qdrant client (an embedded store
        admits one client per folder); it is not closed with the index. ``shared`` takes the store
        and the embedder (model and cache) from the process registry (:mod:`indexing.registry`):
        opened once per process, reused by every later index, never closed with one. ``mode``
        overrides ``config.index_mode``. ``read_only`` answers queries from the index's read
        snapshot when it is current -- no Qdrant client, no folder lock, no refresh possible -- and
        opens the store normally otherwise. Raises :class:`UsageError` for a path that is not a git
        work tree and :class:`ConfigError` when the Qdrant store cannot be opened (e.g. locked by
        another process).
        """
        settings = as_index_config(config)
        root = gitutil.work_tree_root(Path(repo_path))
        owned: list[Any] = []
        if read_only and store is None:
            store = cls._snapshot_store(settings, repo_id or default_repo_id(root))
            if store is not None:
                owned.append(store)
        if shared:
            registry = process_registry()
            if store is None:
                store = registry.store(
                    url=settings.qdrant_url, path=settings.qdrant_path, api_key=settings.qdrant_api_key
                )
            if embedder is None:
                embedder = registry.cached_embedder(
                    settings.embedder, settings.cache_dir, settings.embed_threads, settings.embed_max_tokens
                )
        if store is None:
            store = QdrantStore.open(settings)
            owned.append(store)
        try:
            if embedder is None:
                cached = make_embedder(settings)
                owned.append(cached)
            elif isinstance(embedder, CachedEmbedder):
                cached = embedder
            else:
                cached = CachedEmbedder(embedder, settings.cache_dir / "embeddings.sqlite3")
                owned.append(cached)
            if summarizer is None:
                summ: Summarizer = StructuralSummarizer()
            else:
                summ = CachedSummarizer(summarizer, settings.cache_dir / "summaries.sqlite3")
                owned.append(summ)
        except BaseException:
            for res in reversed(owned):
                res.close()
            raise
        return cls(
            settings,
            root,
            store,
            cached,
            summ,
            repo_id=repo_id or default_repo_id(root),
            owned=owned,
            mode=mode or settings.index_mode,
        )

    @staticmethod
    def _snapshot_store(settings: IndexConfig, repo_id: str) -> QdrantStore | None:
        """A store over the current read snapshot of ``repo_id``'s index, or None when stale/missing."""
        from indexing import snapshot

        collection = collection_name(repo_id)
        try:
            data = json.loads((settings.index_dir / f"{collection}.json").read_text(encoding="utf-8"))
            stamp = str(data.get("snapshot", "")) if data.get("repo_id") == repo_id else ""
        except (OSError, ValueError, AttributeError):
            return None
        if not stamp or data.get("pending"):
            return None
        loaded = snapshot.load(settings.index_dir / f"{collection}.snapshot.npz", stamp)
        return QdrantStore.from_snapshot(loaded) if loaded is not None else None

    def _write_snapshot(self, manifest: Manifest) -> None:
        """Save the read snapshot of both collections and record its stamp in ``manifest``."""
        import uuid

        from indexing import snapshot

        if not self.store.accelerate or self.store.read_only:
            manifest.snapshot = ""
            return
        stamp = uuid.uuid4().hex
        snapshot.save(
            self.snapshot_path,
            stamp,
            {name: self.store.points(name) for name in (self.collection, self.tree_collection)},
        )
        manifest.snapshot = stamp

    def close(self) -> None:
        """Release the store, caches and embedder this index opened."""
        if self._closed:
            return
        self._closed = True
        for res in reversed(self._owned):
            res.close()

    def __enter__(self) -> RepoIndex:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- manifest --------------------------------------------------------------------------------

    def load_manifest(self) -> Manifest | None:
        """The stored manifest, or None when missing or unreadable (then the next refresh rebuilds)."""
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
            manifest = Manifest.from_json(data)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return manifest if manifest.repo_id == self.repo_id else None

    def _save_manifest(self, manifest: Manifest) -> None:
        write_atomic(self.manifest_path, json.dumps(manifest.to_json(), separators=(",", ":")))

    # -- refresh ---------------------------------------------------------------------------------

    def refresh(self, *, full: bool = False) -> IndexStats:
        """Build the index on first call (or with ``full``), else update it incrementally."""
        if self.store.read_only:
            raise UsageError("this index was opened read-only (from its snapshot); it cannot refresh")
        started = time.perf_counter()
        before = (self.embedder.embedded, self.embedder.cached)
        warnings: list[str] = []
        self._chunk_vectors = {}
        head = gitutil.head_commit(self.root)
        dim = self.embedder.dim
        manifest = None if full else self.load_manifest()
        if manifest is not None and (
            manifest.embedder != self.embedder.name
            or manifest.dim != dim
            or manifest.summarizer != self.summarizer.name
            or not self.store.exists(self.collection)
            or not self.store.exists(self.tree_collection)
        ):
            manifest = None
        is_full = manifest is None
        if manifest is None:
            # Forget first, then rebuild: a crash from here on leaves no manifest, so the next run
            # rebuilds again instead of trusting half-written collections.
            self.manifest_path.unlink(missing_ok=True)
            self.store.recreate(self.collection, dim)
            self.store.recreate(self.tree_collection, dim)
            manifest = Manifest(
                repo_id=self.repo_id,
                root=self.root.as_posix(),
                collection=self.collection,
                commit=head,
                embedder=self.embedder.name,
                dim=dim,
                summarizer=self.summarizer.name,
                mode=self.mode,
            )
        mode_changed = manifest.mode != self.mode
        old_files = dict(manifest.files)
        pending_before = set(manifest.pending)

        discovery = self._discovery_key()
        quick = None if is_full else self._changed_paths(manifest, head, discovery)
        if quick is None:
            current = set(
                discover_files(
                    self.root, exclude=self.config.exclude, max_file_bytes=self.config.max_file_bytes
                )
            )
            unreadable = self._unreadable(current)
        else:
            current, unreadable = self._current_from(
                quick | pending_before | set(manifest.unreadable), old_files
            )
        manifest.discovery = discovery
        warnings.extend(f"cannot read {rel}: permission denied; skipped" for rel in unreadable)
        candidates = (current ^ set(old_files)) | pending_before
        if not is_full:
            candidates |= quick if quick is not None else self._git_candidates(manifest.commit, head, current)
            for path in current - candidates:
                entry = old_files[path]
                st = self._stat(path)
                if st is None or st != (entry.size, entry.mtime_ns):
                    candidates.add(path)

        changed: dict[str, tuple[str, str, tuple[int, int]]] = {}
        present = set(current)
        new_files = dict(old_files)
        for path in sorted(candidates & current):
            st = self._stat(path)
            text = read_text(self.root, path) if st is not None else None
            if st is None or text is None:
                warnings.append(f"cannot read {path}; skipped")
                unreadable.append(path)
                present.discard(path)
                continue
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            old = old_files.get(path)
            if old is not None and old.hash == digest and path not in pending_before:
                new_files[path] = FileEntry(digest, st[0], st[1], old.ids, old.summary, old.abstract)
            else:
                changed[path] = (text, digest, st)
        removed = sorted(p for p in old_files if p not in present)

        if changed or removed or is_full or pending_before or mode_changed:
            if not is_full:
                manifest.pending = sorted(set(changed) | set(removed) | pending_before)
                self._save_manifest(manifest)
            self._apply(changed, removed, old_files, new_files, warnings)
            sweep = (pending_before & (set(changed) | set(removed))) | (pending_before - present)
            if sweep:
                keep = {i for p in sweep if p in new_files for i in new_files[p].ids}
                self.store.delete_paths(self.collection, sweep, keep)
            if self.mode == "eager" and manifest.mode == "lazy":
                self.expander.fill()  # what an earlier lazy refresh left without vectors
            manifest.tree_ids = self._sync_tree(
                new_files, manifest, crashed=bool(pending_before) or is_full or mode_changed
            )
        deferred = self.store.count_missing_dense(self.collection) if self.mode == "lazy" else 0
        manifest.mode = self.mode
        manifest.files = new_files
        manifest.commit = head
        manifest.pending = []
        manifest.unreadable = sorted(set(unreadable))
        self.store.flush()  # the points must be durable before the manifest says they are there
        if changed or removed or is_full or pending_before or mode_changed or not manifest.snapshot:
            self._write_snapshot(manifest)
        self._save_manifest(manifest)
        return IndexStats(
            files=len(new_files),
            chunks=sum(len(e.ids) for e in new_files.values()),
            embedded=self.embedder.embedded - before[0],
            cached=self.embedder.cached - before[1],
            removed_files=len(removed),
            changed_files=len(changed),
            seconds=round(time.perf_counter() - started, 3),
            commit=head,
            full=is_full,
            warnings=warnings,
            unreadable=sorted(unreadable),
            mode=self.mode,
            deferred=deferred,
        )

    def _expansion_complete(self) -> None:
        """A query embedded the last deferred chunks: derive the tree as an eager build would."""
        self._finish_fill(embedded=0)

    def fill(self, *, max_chunks: int | None = None, budget_s: float | None = None) -> FillStats:
        """Embed chunk bodies a lazy refresh deferred (all of them, or up to ``max_chunks`` / for about
        ``budget_s`` seconds): the idle-time background fill. Safe to interrupt; a no-op when done."""
        stats = self.expander.fill(max_chunks=max_chunks, budget_s=budget_s)
        self._finish_fill(embedded=stats.embedded, remaining=stats.remaining)
        return stats

    def _finish_fill(self, *, embedded: int, remaining: int = 0) -> None:
        """After chunks got vectors: once none is left, re-derive the tree's node vectors from them;
        persist (flush, snapshot, manifest) when anything changed. Not in a read-only index."""
        manifest = self.load_manifest()
        if self.store.read_only or manifest is None:
            return
        changed_tree = False
        if remaining == 0:
            # Every chunk is embedded: node vectors become chunk means, exactly as an eager build.
            before = set(manifest.tree_ids)
            manifest.tree_ids = self._sync_tree(manifest.files, manifest, crashed=False)
            changed_tree = set(manifest.tree_ids) != before
        if embedded or changed_tree:
            self.store.flush()
            self._write_snapshot(manifest)  # new vectors: readers should see them
            self._save_manifest(manifest)

    def _discovery_key(self) -> str:
        """What decides the indexed file set besides the files themselves (a change means rediscovery)."""
        data = json.dumps([list(self.config.exclude), self.config.max_file_bytes])
        return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def _changed_paths(self, manifest: Manifest, head: str, discovery: str) -> set[str] | None:
        """The paths that may differ from the manifest, or None when the whole tree must be rediscovered.

        Checking only these (plus files whose size/mtime changed and pending ones) is enough when the
        manifest was built from an ancestor of HEAD with the same discovery settings and no ignore
        rules changed; otherwise (rewritten history, new exclusions, a touched ``.gitignore``, git
        errors) the caller falls back to a full :func:`discover_files`.
        """
        if not manifest.discovery or manifest.discovery != discovery:
            return None
        try:
            paths = gitutil.dirty_paths(self.root)
            if manifest.commit != head:
                gitutil.run_git(self.root, "merge-base", "--is-ancestor", manifest.commit, head)
                for change in gitutil.diff_name_status(self.root, manifest.commit, head):
                    paths.add(change.path)
                    if change.old_path:
                        paths.add(change.old_path)
        except gitutil.GitError:
            return None
        if any(p.rsplit("/", 1)[-1] in (".gitignore", ".gitmodules") or p.endswith("/") for p in paths):
            return None  # ignore rules or submodules changed: which files count is no longer local
        return paths

    def _current_from(
        self, changed: set[str], old_files: Mapping[str, FileEntry]
    ) -> tuple[set[str], list[str]]:
        """The indexed file set after ``changed``: the manifest's files, with each changed (or vanished)
        path re-checked by :func:`is_indexable`. Returns it and the changed paths that are unreadable."""
        check = set(changed)
        for path, entry in old_files.items():
            st = self._stat(path)
            if st is None or st != (entry.size, entry.mtime_ns):
                check.add(path)
        current = set(old_files) - check
        unreadable: list[str] = []
        for rel in sorted(check):
            if is_indexable(
                self.root, rel, exclude=self.config.exclude, max_file_bytes=self.config.max_file_bytes
            ):
                current.add(rel)
                continue
            full = self.root / rel
            known = language_for_path(rel) is not None and full.is_file() and not full.is_symlink()
            if known and not _is_readable(full):
                unreadable.append(rel)
        return current, unreadable

    @staticmethod
    def _under_each_node(paths_items: Iterable[tuple[str, list[Any]]]) -> dict[str, list[Any]]:
        """Items per node path: a file's own, a directory's (and the repository's, ``""``) from below it."""
        out: dict[str, list[Any]] = {}
        for path, items in paths_items:
            parts = path.split("/")
            for depth in range(len(parts) + 1):
                out.setdefault("/".join(parts[:depth]), []).extend(items)
        return out

    def _node_members(
        self,
        files: Mapping[str, FileEntry],
        nodes: Iterable[TreeNode],
        *,
        skip: set[str] | frozenset[str] = frozenset(),
    ) -> dict[str, str]:
        """Digest of the chunk ids under each file/directory/repo node (nodes without chunks, and
        nodes with a chunk in ``skip``, omitted)."""
        under = self._under_each_node((p, e.ids) for p, e in files.items())
        out: dict[str, str] = {}
        for node in nodes:
            ids = under.get(node.path)
            if ids and (not skip or skip.isdisjoint(ids)):
                out[node.path] = hashlib.sha256("\0".join(sorted(ids)).encode("ascii")).hexdigest()[:16]
        return out

    def _derived_vectors(
        self, nodes: Sequence[TreeNode], files: Mapping[str, FileEntry], wanted: Collection[str]
    ) -> dict[str, Any]:
        """Dense vectors of ``nodes`` without a model call: a file's is the normalised mean of its
        chunks' vectors, a directory's (and the repository's) the chunk-count-weighted mean of its
        files' vectors, i.e. the mean over all chunks below it up to normalisation.

        Chunk vectors come from this refresh's embeddings (changed files) and, for other files, from
        their current file nodes in the tree collection; the chunk collection is only read for a
        file node that must be rebuilt without its chunks having been embedded now (after a crash).
        The sparse vector of a node still comes from its abstract (names, docstrings).
        """
        if not nodes:
            return {}
        chunk_vecs: dict[str, list[Any]] = {p: list(v) for p, v in self._chunk_vectors.items()}
        missing = tuple(sorted({n.path for n in nodes if n.level == "file" and n.path not in chunk_vecs}))
        if missing:
            for h in self.store.scroll(self.collection, StoreFilter(within=missing), limit=10**9):
                if h.vector is not None:
                    chunk_vecs.setdefault(str(h.payload.get("path", "")), []).append(h.vector)
        file_vecs: dict[str, Any] = {}
        for path, vecs in chunk_vecs.items():
            unit = _unit_mean(vecs)
            if unit is not None:
                file_vecs[path] = unit
        if any(n.level != "file" for n in nodes):
            for h in self.store.scroll(self.tree_collection, StoreFilter(levels=("file",)), limit=10**9):
                path = str(h.payload.get("path", ""))
                if h.id in wanted and path not in file_vecs and h.vector is not None:
                    file_vecs[path] = np.asarray(h.vector, dtype=np.float32)
        weighted = self._under_each_node(
            (p, [v * len(files[p].ids)]) for p, v in file_vecs.items() if p in files and files[p].ids
        )
        out: dict[str, Any] = {}
        for node in nodes:
            if node.level == "file":
                vec = file_vecs.get(node.path)
            else:
                parts = weighted.get(node.path)
                vec = _unit_mean(parts) if parts else None
            if vec is not None:
                out[node.path] = vec
        return out

    def _stat(self, rel: str) -> tuple[int, int] | None:
        st = wsfs.entry_stat(self.root, rel)  # no link followed, as read_text
        return None if st is None else (st.st_size, st.st_mtime_ns)

    def _unreadable(self, current: set[str]) -> list[str]:
        """Files git lists that discovery dropped because they cannot be read (permission denied)."""
        try:
            listed = gitutil.run_git(
                self.root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"
            )
        except gitutil.GitError:
            return []
        out: list[str] = []
        for rel in sorted(set(listed.split("\0")) - current - {""}):
            path = self.root / rel
            if language_for_path(rel) is None or not path.is_file() or path.is_symlink():
                continue
            if not _is_readable(path):
                out.append(rel)
        return out

    def _git_candidates(self, old_commit: str, head: str, current: set[str]) -> set[str]:
        """Paths git says may differ from the manifest (commit diff, renames, dirty and untracked files)."""
        try:
            paths = gitutil.dirty_paths(self.root)
            if old_commit != head:
                if not gitutil.commit_exists(self.root, old_commit):
                    return set(current)  # history rewritten: let content hashes decide for every file
                for change in gitutil.diff_name_status(self.root, old_commit, head):
                    paths.add(change.path)
                    if change.old_path:
                        paths.add(change.old_path)
        except gitutil.GitError:
            return set(current)
        return paths

    def _apply(
        self,
        changed: Mapping[str, tuple[str, str, tuple[int, int]]],
        removed: Iterable[str],
        old_files: Mapping[str, FileEntry],
        new_files: dict[str, FileEntry],
        warnings: list[str],
    ) -> tuple[int, int]:
        """Chunk, embed and upsert changed files; delete stale and removed points."""
        before = (self.embedder.embedded, self.embedder.cached)
        pending = _Pending()
        stale: set[str] = set()
        for path, (text, digest, st) in changed.items():
            fc = chunk_file(path, text, language=language_for_path(path))
            warnings.extend(w if path in w else f"{path}: {w}" for w in fc.warnings)
            ids: list[str] = []
            for chunk in fc.chunks:
                pid = chunk_point_id(self.repo_id, chunk)
                if pid in ids:
                    continue  # an exact duplicate definition in one file: one point is enough
                ids.append(pid)
                pending.chunks.append((pid, chunk))
            summary = FileSummary.from_chunks(fc)
            abstract = self.summarizer.summarize(
                NodeDraft(level="file", path=path, structural=file_structural(summary), source=text)
            )
            new_files[path] = FileEntry(digest, st[0], st[1], ids, summary, abstract)
            if path in old_files:
                stale.update(set(old_files[path].ids) - set(ids))
            if len(pending.chunks) >= EMBED_BATCH:
                self._flush(pending)
        self._flush(pending)
        for path in removed:
            entry = old_files.get(path)
            if entry is not None:
                stale.update(entry.ids)
            new_files.pop(path, None)
        # Deleting after upserting means a reader never sees a changed file vanish in between.
        self.store.delete_ids(self.collection, stale)
        return self.embedder.embedded - before[0], self.embedder.cached - before[1]

    def _flush(self, pending: _Pending) -> None:
        if not pending.chunks:
            return
        batch, pending.chunks = pending.chunks, []
        texts = [embedding_text(c) for _, c in batch]
        if self.mode == "lazy":
            # Only what the cache already knows; the rest waits for a query or the fill.
            vectors, found = self.embedder.cached_only(texts)
        else:
            vectors, found = self.embedder.embed(texts), [True] * len(texts)
        points = [
            PointData(
                id=pid,
                dense=vec,
                sparse=document_vector(sparse_text(c)),
                payload=chunk_payload(c) if ok else {**chunk_payload(c), "lazy": True},
            )
            for (pid, c), vec, ok in zip(batch, vectors, found, strict=True)
        ]
        self.store.upsert(self.collection, points)
        for (_pid, c), vec, ok in zip(batch, vectors, found, strict=True):
            if ok:
                self._chunk_vectors.setdefault(c.path, []).append(vec)

    def _sync_tree(self, files: Mapping[str, FileEntry], manifest: Manifest, *, crashed: bool) -> list[str]:
        """Rebuild the directory/repo abstracts and make the tree collection hold exactly those nodes."""
        nodes = build_tree(
            {p: e.summary for p, e in files.items()},
            {p: e.abstract for p, e in files.items()},
            self.summarizer,
            repo_name=self.root.name,
        )
        # A node whose chunks are not all embedded yet (lazy mode) gets its abstract embedded instead.
        lazy = {h.id for h in self.store.missing_dense(self.collection)} if self.mode == "lazy" else set()
        members = self._node_members(files, nodes, skip=lazy) if self.derive_node_vectors else {}
        wanted = {node_point_id(self.repo_id, n, members.get(n.path, "")): n for n in nodes}
        # After a crash the manifest's list may miss nodes written by the interrupted run: ask Qdrant.
        existing = self.store.ids(self.tree_collection) if crashed else set(manifest.tree_ids)
        fresh = [(pid, n) for pid, n in wanted.items() if pid not in existing]
        derived = self._derived_vectors([n for _, n in fresh if n.path in members], files, set(wanted))
        for start in range(0, len(fresh), EMBED_BATCH):
            part = fresh[start : start + EMBED_BATCH]
            todo = [n.abstract for _, n in part if n.path not in derived]
            embedded: Iterator[Any] = iter(self.embedder.embed(todo) if todo else [])
            vectors = [derived[n.path] if n.path in derived else next(embedded) for _, n in part]
            self.store.upsert(
                self.tree_collection,
                [
                    PointData(id=pid, dense=vec, sparse=document_vector(n.abstract), payload=node_payload(n))
                    for (pid, n), vec in zip(part, vectors, strict=True)
                ],
            )
        self.store.delete_ids(self.tree_collection, existing - set(wanted))
        return sorted(wanted)

    # -- reading ---------------------------------------------------------------------------------

    def retriever(self) -> HybridRetriever:
        """A retriever over this index (as of the last refresh, or the stored manifest)."""
        manifest = self.load_manifest()
        if manifest is None:
            raise UsageError(f"{self.root} is not indexed yet; run `arcs index {self.root}` first")
        return HybridRetriever(
            self.store,
            self.collection,
            self.tree_collection,
            self.embedder,
            root=self.root,
            known_paths=manifest.files.keys(),
            expander=self.expander.before_query,
        )
