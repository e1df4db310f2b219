"""The indexing layer's configuration as plain values (no settings object crosses into ``indexing``).

The edge builds one :class:`IndexConfig` from its settings (``bot.settings.Settings.index_config``)
and passes it down. Functions of this package that used to take the settings take an
:class:`IndexConfig`, or anything with an ``index_config()`` method (:class:`IndexConfigSource`,
which the settings are), so callers holding settings keep working.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, runtime_checkable

__all__ = ["IndexConfig", "IndexConfigLike", "IndexConfigSource", "as_index_config"]


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """Where an index lives and how it is built (every field maps to an ``ARCS_*`` setting)."""

    index_dir: Path
    """Per-repository manifests, read snapshots and lock files."""
    cache_dir: Path
    """Content-addressed caches (embeddings, summaries) and the ONNX graph."""
    qdrant_path: Path
    """The embedded Qdrant store's folder (used when ``qdrant_url`` is unset)."""
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    embedder: str = "onnx"
    """``onnx``, ``onnx-int8``, ``minilm`` or ``hash`` (:func:`indexing.embedders.embedder_for`)."""
    embed_threads: int = 0
    embed_max_tokens: int = 128
    index_mode: str = "lazy"
    """``lazy`` or ``eager`` (:mod:`indexing.index`)."""
    exclude: tuple[str, ...] = ()
    """gitignore-style patterns never indexed (on top of each repository's ``.gitignore``)."""
    max_file_bytes: int = 1_000_000

    @classmethod
    def under(cls, home: Path, **changes: object) -> IndexConfig:
        """The layout ARCS uses under ``home`` (``index/``, ``cache/``, ``qdrant/``), with ``changes``."""
        base = cls(index_dir=home / "index", cache_dir=home / "cache", qdrant_path=home / "qdrant")
        return replace(base, **changes)  # type: ignore[arg-type]

    def index_config(self) -> IndexConfig:
        """Itself (so an :class:`IndexConfig` is an :class:`IndexConfigSource` too)."""
        return self


@runtime_checkable
class IndexConfigSource(Protocol):
    """Anything that can give an :class:`IndexConfig` (the application's settings)."""

    def index_config(self) -> IndexConfig:
        """The indexing configuration."""
        ...


IndexConfigLike = IndexConfig | IndexConfigSource


def as_index_config(value: IndexConfigLike) -> IndexConfig:
    """``value`` itself, or the configuration it gives."""
    return value if isinstance(value, IndexConfig) else value.index_config()
