"""Which embedder a configuration names: the one factory over :mod:`indexing.embed` and
:mod:`indexing.onnx_embed` (kept apart from both so neither has to import the other's caller)."""

from __future__ import annotations

from pathlib import Path

from indexing.embed import (
    DEFAULT_MAX_SEQ_LENGTH,
    Embedder,
    HashEmbedder,
    MiniLMEmbedder,
    require_minilm_extra,
)
from indexing.onnx_embed import OnnxMiniLMEmbedder


def embedder_for(
    kind: str, *, cache_dir: Path, threads: int = 0, max_tokens: int = DEFAULT_MAX_SEQ_LENGTH
) -> Embedder:
    """A new uncached embedder: ``onnx`` (ONNX Runtime), ``onnx-int8`` (its int8-quantised graph),
    ``minilm`` (torch: the optional ``minilm`` extra; :class:`ConfigError` naming it when it is not
    installed) or ``hash``."""
    if kind == "hash":
        return HashEmbedder()
    if kind == "minilm":
        require_minilm_extra()  # at selection, not at the first embedding deep inside an index run
        return MiniLMEmbedder(threads=threads, max_seq_length=max_tokens)
    if kind in ("onnx", "onnx-int8"):
        return OnnxMiniLMEmbedder(
            cache_dir, threads=threads, quantize=kind == "onnx-int8", max_seq_length=max_tokens
        )
    raise ValueError(f"unknown embedder {kind!r}")
