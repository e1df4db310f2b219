"""Process-wide index resources: embedding models, embedding caches and Qdrant clients, each opened
once per process and reused by every index (and every job) that asks with the same configuration.

A model load costs seconds (torch: 10-17 s on a busy 2-core host; the ONNX graph well under one) and
opening the embedded Qdrant store re-reads every point; paying that per job, or per ``arcs`` call
inside one process, is what this module avoids. It also makes the process the *single owner* of an
embedded Qdrant folder: Qdrant's local mode admits one client per folder, so every index of the
process must share one :class:`~indexing.store.QdrantStore`. A second *process* still cannot open the
folder (a :class:`~runners.errors.ConfigError` says so and points at ``ARCS_QDRANT_URL``).

Resources are keyed by plain values (no settings object), created under a lock, and closed together
by :meth:`IndexRegistry.close` (process exit); an index opened with them never closes them.
"""

from __future__ import annotations

import atexit
import threading
from pathlib import Path

from indexing.config import IndexConfigLike, as_index_config
from indexing.embed import DEFAULT_MAX_SEQ_LENGTH, CachedEmbedder, Embedder
from indexing.embedders import embedder_for
from indexing.store import QdrantStore


class IndexRegistry:
    """Shared embedders, embedding caches and stores, keyed by configuration. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._embedders: dict[tuple[str, str, int, int], Embedder] = {}
        self._caches: dict[tuple[tuple[str, str, int, int], str], CachedEmbedder] = {}
        self._stores: dict[str, QdrantStore] = {}

    @staticmethod
    def _embedder_key(kind: str, cache_dir: Path, threads: int, max_tokens: int) -> tuple[str, str, int, int]:
        # Only the ONNX embedder keeps files (its exported graph) under the cache directory.
        where = str(cache_dir.resolve()) if kind.startswith("onnx") else ""
        return (kind, where, threads, max_tokens)

    def base_embedder(
        self, kind: str, cache_dir: Path, threads: int = 0, max_tokens: int = DEFAULT_MAX_SEQ_LENGTH
    ) -> Embedder:
        """The uncached embedder of this configuration (created, not loaded, on first request:
        models load on their first call)."""
        key = self._embedder_key(kind, cache_dir, threads, max_tokens)
        with self._lock:
            emb = self._embedders.get(key)
            if emb is None:
                emb = embedder_for(kind, cache_dir=cache_dir, threads=threads, max_tokens=max_tokens)
                self._embedders[key] = emb
            return emb

    def cached_embedder(
        self, kind: str, cache_dir: Path, threads: int = 0, max_tokens: int = DEFAULT_MAX_SEQ_LENGTH
    ) -> CachedEmbedder:
        """The shared model behind the shared persistent cache ``cache_dir/embeddings.sqlite3``."""
        base = self.base_embedder(kind, cache_dir, threads, max_tokens)
        key = (self._embedder_key(kind, cache_dir, threads, max_tokens), str(cache_dir.resolve()))
        with self._lock:
            cached = self._caches.get(key)
            if cached is None:
                cached = CachedEmbedder(base, cache_dir / "embeddings.sqlite3")
                self._caches[key] = cached
            return cached

    def store(self, *, url: str | None, path: Path, api_key: str | None = None) -> QdrantStore:
        """The process's client of a Qdrant server or embedded folder (opened on first request).

        Raises :class:`~runners.errors.ConfigError` when an embedded folder is held by another process.
        """
        key = f"url:{url}" if url else f"path:{path.resolve()}"
        with self._lock:
            store = self._stores.get(key)
            if store is None or store.closed:
                store = QdrantStore.open_at(url=url, path=path, api_key=api_key)
                self._stores[key] = store
            return store

    def release_store(self, *, url: str | None, path: Path) -> None:
        """Close and forget one store (e.g. to let another process have an embedded folder)."""
        key = f"url:{url}" if url else f"path:{path.resolve()}"
        with self._lock:
            store = self._stores.pop(key, None)
        if store is not None and not store.closed:
            store.close()

    def close(self) -> None:
        """Close every cache and store (models are just dropped)."""
        with self._lock:
            caches, stores = list(self._caches.values()), list(self._stores.values())
            self._caches.clear()
            self._stores.clear()
            self._embedders.clear()
        for cache in caches:
            cache.close()
        for store in stores:
            if not store.closed:
                store.close()


_registry: IndexRegistry | None = None
_registry_lock = threading.Lock()


def process_registry() -> IndexRegistry:
    """The registry of this process (created on first use, closed at interpreter exit)."""
    global _registry
    with _registry_lock:
        if _registry is None:
            _registry = IndexRegistry()
            atexit.register(_registry.close)
        return _registry


def base_embedder(config: IndexConfigLike) -> Embedder:
    """The configured embedder without a cache (shared by every caller in this process)."""
    cfg = as_index_config(config)
    return process_registry().base_embedder(
        cfg.embedder, cfg.cache_dir, cfg.embed_threads, cfg.embed_max_tokens
    )


def make_embedder(config: IndexConfigLike) -> CachedEmbedder:
    """The configured embedder wrapped in the persistent cache under ``config.cache_dir``.

    The model behind it is the process's shared instance (loaded once, see :func:`process_registry`);
    the returned cache is the caller's to close.
    """
    cfg = as_index_config(config)
    return CachedEmbedder(base_embedder(cfg), cfg.cache_dir / "embeddings.sqlite3")
