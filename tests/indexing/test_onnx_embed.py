"""The ONNX Runtime path of all-MiniLM-L6-v2: graph cache keys, and numerical parity with torch."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from indexing.embed import MiniLMEmbedder
from indexing.onnx_embed import OnnxMiniLMEmbedder, graph_path

TEXTS = [
    "compute the value added tax of an invoice amount",
    "def compute_vat(amount, rate):\n    return round(amount * rate, 2)",
    "class Session:\n    def expire(self):\n        self.alive = False",
]


def test_graph_cache_key_is_versioned(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"hidden_size": 384}')
    (model / "model.safetensors").write_bytes(b"weights")
    int8 = graph_path(tmp_path / "cache", model, quantize=True)
    fp32 = graph_path(tmp_path / "cache", model, quantize=False)
    assert int8 != fp32 and int8.parent == tmp_path / "cache" / "onnx"
    (model / "model.safetensors").write_bytes(b"other weights")
    assert graph_path(tmp_path / "cache", model, quantize=True) != int8, "new weights, new graph"


def test_the_onnx_embedder_loads_nothing_until_used(tmp_path: Path) -> None:
    emb = OnnxMiniLMEmbedder(tmp_path)
    # fp32 shares the torch model's cache identity (same vectors); int8 has its own.
    assert emb.name == MiniLMEmbedder().name == "all-MiniLM-L6-v2" and emb.dim == 384
    assert OnnxMiniLMEmbedder(tmp_path, quantize=True).name == "all-MiniLM-L6-v2+onnx-int8q2"
    assert emb.embed([]).shape == (0, 384)
    assert not (tmp_path / "onnx").exists()


@pytest.mark.slow
def test_onnx_vectors_match_the_torch_model(tmp_path: Path) -> None:
    """Export from the bundled weights (fp32, then int8) and compare with sentence-transformers."""
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    reference = MiniLMEmbedder().embed(TEXTS)
    for quantize in (False, True):
        vecs = OnnxMiniLMEmbedder(tmp_path, quantize=quantize, threads=1).embed(TEXTS)
        assert vecs.shape == (3, 384) and vecs.dtype == np.float32
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
        cosines = np.sum(vecs * reference, axis=1)
        # fp32 must be the same function (it shares the torch embedder's cache); int8 close to it.
        assert float(cosines.min()) >= (0.99 if quantize else 0.9999), (quantize, cosines)
    assert len(list((tmp_path / "onnx").glob("*.onnx"))) == 2  # both graphs cached for later processes
