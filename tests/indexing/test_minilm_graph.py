"""The BERT graph built with the onnx API, on a tiny random model (no weights package needed), held to
a plain numpy forward pass; and the safetensors reader and the weights package's checks."""

from __future__ import annotations

import hashlib
import io
import json
import math
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from indexing import minilm_weights
from indexing.minilm_graph import build_bert_mean_pooling
from indexing.minilm_weights import ModelFiles, bundled_model, parse_safetensors
from runners.errors import ConfigError

CONFIG: dict[str, Any] = {
    "model_type": "bert",
    "hidden_act": "gelu",
    "hidden_size": 8,
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "intermediate_size": 16,
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 20,
    "vocab_size": 30,
    "type_vocab_size": 2,
}


def _tiny_weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    h, i = CONFIG["hidden_size"], CONFIG["intermediate_size"]

    def r(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.5, shape).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": r(CONFIG["vocab_size"], h),
        "embeddings.position_embeddings.weight": r(CONFIG["max_position_embeddings"], h),
        "embeddings.token_type_embeddings.weight": r(2, h),
        "embeddings.LayerNorm.weight": 1 + r(h),
        "embeddings.LayerNorm.bias": r(h),
    }
    for n in range(CONFIG["num_hidden_layers"]):
        p = f"encoder.layer.{n}"
        for part in ("query", "key", "value"):
            w[f"{p}.attention.self.{part}.weight"], w[f"{p}.attention.self.{part}.bias"] = r(h, h), r(h)
        w[f"{p}.attention.output.dense.weight"], w[f"{p}.attention.output.dense.bias"] = r(h, h), r(h)
        w[f"{p}.attention.output.LayerNorm.weight"], w[f"{p}.attention.output.LayerNorm.bias"] = (
            1 + r(h),
            r(h),
        )
        w[f"{p}.intermediate.dense.weight"], w[f"{p}.intermediate.dense.bias"] = r(i, h), r(i)
        w[f"{p}.output.dense.weight"], w[f"{p}.output.dense.bias"] = r(h, i), r(h)
        w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"] = 1 + r(h), r(h)
    return w


def _numpy_bert(w: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """BERT on one unpadded sequence, written the textbook way (float64), then the mean of the tokens."""
    h, heads = CONFIG["hidden_size"], CONFIG["num_attention_heads"]
    d = h // heads

    def ln(x: np.ndarray, p: str) -> np.ndarray:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w[f"{p}.weight"] + w[f"{p}.bias"]

    def lin(x: np.ndarray, p: str) -> np.ndarray:
        return x @ w[f"{p}.weight"].astype(np.float64).T + w[f"{p}.bias"]

    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][0]
    x = ln(x + w["embeddings.position_embeddings.weight"][: len(ids)], "embeddings.LayerNorm").astype(
        np.float64
    )
    erf = np.vectorize(math.erf)
    for n in range(CONFIG["num_hidden_layers"]):
        p = f"encoder.layer.{n}"
        q, k, v = (lin(x, f"{p}.attention.self.{s}") for s in ("query", "key", "value"))
        ctx = np.zeros_like(x)
        for head in range(heads):
            cols = slice(head * d, (head + 1) * d)
            s = q[:, cols] @ k[:, cols].T / math.sqrt(d)
            s = np.exp(s - s.max(-1, keepdims=True))
            ctx[:, cols] = (s / s.sum(-1, keepdims=True)) @ v[:, cols]
        x = ln(lin(ctx, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        inner = lin(x, f"{p}.intermediate.dense")
        x = ln(
            lin(inner * 0.5 * (1 + erf(inner / math.sqrt(2))), f"{p}.output.dense") + x,
            f"{p}.output.LayerNorm",
        )
    return np.asarray(x.mean(0))


def _run(model: Any, rows: list[list[int]]) -> np.ndarray:
    import onnxruntime as ort

    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)] = r, 1
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL  # what the embedder runs
    opts.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    (out,) = session.run(["embedding"], {"input_ids": ids, "attention_mask": mask})
    return np.asarray(out)


def test_the_graph_computes_bert_with_mean_pooling() -> None:
    w = _tiny_weights()
    rows = [[1, 5, 7, 2], [1, 9, 2], [1, 3, 4, 6, 8, 11, 2]]  # different lengths: padded in one batch
    got = _run(build_bert_mean_pooling(w, CONFIG), rows)
    want = np.stack([_numpy_bert(w, r) for r in rows])
    assert got.shape == (3, CONFIG["hidden_size"]) and got.dtype == np.float32
    assert np.allclose(got, want, atol=1e-4), np.abs(got - want).max()


def test_padding_does_not_change_a_text_vector() -> None:
    model = build_bert_mean_pooling(_tiny_weights(1), CONFIG)
    alone = _run(model, [[1, 4, 2]])
    padded = _run(model, [[1, 4, 2], [1, 5, 6, 7, 8, 9, 10, 2]])
    assert np.allclose(alone[0], padded[0], atol=1e-5)


def test_the_builder_accepts_prefixed_names_and_rejects_other_models() -> None:
    w = {f"bert.{k}": v for k, v in _tiny_weights().items()}
    assert _run(build_bert_mean_pooling(w, CONFIG), [[1, 2]]).shape == (1, 8)
    with pytest.raises(ValueError, match="hidden_act='relu'"):
        build_bert_mean_pooling(w, {**CONFIG, "hidden_act": "relu"})
    with pytest.raises(ValueError, match="model_type='roberta'"):
        build_bert_mean_pooling(w, {**CONFIG, "model_type": "roberta"})
    with pytest.raises(ValueError, match=r"no tensor 'encoder\.layer\.1\.output\.dense\.weight'"):
        build_bert_mean_pooling({k: v for k, v in w.items() if "layer.1.output.dense.w" not in k}, CONFIG)


def _safetensors(tensors: dict[str, np.ndarray]) -> bytes:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    body = b""
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
        dtype = {"float32": "F32", "int64": "I64", "float16": "F16"}[arr.dtype.name]
        header[name] = {
            "dtype": dtype,
            "shape": list(arr.shape),
            "data_offsets": [len(body), len(body) + len(raw)],
        }
        body += raw
    head = json.dumps(header).encode()
    return struct.pack("<Q", len(head)) + head + body


def test_safetensors_round_trip_and_malformed_files() -> None:
    tensors = {
        "a": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b": np.array([[7, 8]], dtype=np.int64),
        "c": np.array([1.5], dtype=np.float16),
    }
    got = parse_safetensors(_safetensors(tensors))
    assert set(got) == {"a", "b", "c"}
    for name, arr in tensors.items():
        assert got[name].shape == arr.shape and np.array_equal(got[name], arr)
    with pytest.raises(ValueError, match="shorter than"):
        parse_safetensors(b"abc")
    with pytest.raises(ValueError, match="header of"):
        parse_safetensors(struct.pack("<Q", 10_000) + b"{}")
    with pytest.raises(ValueError, match="do not fit"):
        parse_safetensors(_safetensors(tensors)[:-4])
    bad = _safetensors({"x": np.zeros(2, dtype=np.float32)}).replace(b'"F32"', b'"U8X"')
    with pytest.raises(ValueError, match="unsupported or malformed"):
        parse_safetensors(bad)


def test_model_files_check_the_pinned_digests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights = _safetensors({"a": np.ones(3, dtype=np.float32)})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("model.safetensors", weights)
        zf.writestr("config.json", json.dumps(CONFIG))
    (tmp_path / "model.zip").write_bytes(buf.getvalue())
    files = ModelFiles(tmp_path / "model.zip")
    with pytest.raises(ConfigError, match=r"model\.safetensors .* is not the all-MiniLM-L6-v2 file"):
        files.tensors()
    monkeypatch.setitem(
        minilm_weights.PINNED_SHA256, "model.safetensors", hashlib.sha256(weights).hexdigest()
    )
    assert np.array_equal(files.tensors()["a"], np.ones(3, dtype=np.float32))
    assert files.config()["hidden_size"] == 8
    with pytest.raises(ConfigError, match=r"have no tokenizer\.json"):
        files.read("tokenizer.json")
    assert (files.extract(tmp_path / "out") / "config.json").is_file()
    (tmp_path / "broken.zip").write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match="unreadable"):
        ModelFiles(tmp_path / "broken.zip").fingerprint()


def test_a_missing_weights_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minilm_weights, "WEIGHTS_DISTRIBUTION", "arcs-no-such-weights-package")
    with pytest.raises(ConfigError, match="arcs-no-such-weights-package is not installed"):
        bundled_model()


def test_the_installed_weights_are_the_pinned_model() -> None:
    """The dependency is installed and its files are the ones the reference vectors came from
    (reads the 87 MB zip member once: a fraction of a second)."""
    files = bundled_model()
    assert files.read("tokenizer.json")  # digest-checked
    tensors = files.tensors()  # digest-checked
    assert tensors["embeddings.word_embeddings.weight"].shape == (30522, 384)
    assert files.config()["num_hidden_layers"] == 6
