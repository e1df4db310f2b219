from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from bot.settings import Settings
from indexing.embed import (
    MAX_EMBED_CHARS,
    CachedEmbedder,
    Embedder,
    HashEmbedder,
    MiniLMEmbedder,
    embedding_text,
    missing_extra_modules,
)
from indexing.embedders import embedder_for
from indexing.model import Chunk
from indexing.registry import make_embedder
from runners.errors import ConfigError


class CountingEmbedder:
    """A HashEmbedder that records how many texts it was asked to embed."""

    def __init__(self) -> None:
        self.inner = HashEmbedder(dim=64)
        self.name = "counting"
        self.dim = 64
        self.calls: list[int] = []

    def embed(self, texts: list[str]) -> np.ndarray:  # type: ignore[type-arg]
        self.calls.append(len(texts))
        return self.inner.embed(texts)


def _chunk(text: str, **kw: object) -> Chunk:
    base: dict[str, object] = {
        "path": "app/util.py",
        "language": "python",
        "kind": "function",
        "symbol": "parse",
        "qualified_name": "app.util.parse",
        "start_line": 1,
        "end_line": text.count("\n") + 1,
        "text": text,
    }
    base.update(kw)
    return Chunk(**base)  # type: ignore[arg-type]


def test_hash_embedder_is_deterministic_and_normalised() -> None:
    emb = HashEmbedder()
    a = emb.embed(["def parse_config(path): pass", "class Invoice: total"])
    b = HashEmbedder().embed(["def parse_config(path): pass", "class Invoice: total"])
    assert a.shape == (2, emb.dim) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0)
    assert np.array_equal(a, b)
    assert isinstance(emb, Embedder)


def test_hash_embedder_similarity_follows_shared_tokens() -> None:
    emb = HashEmbedder()
    q, near, far = emb.embed(
        ["compute vat tax", "def compute_vat(amount, rate): tax", "class Circle: radius"]
    )
    assert float(q @ near) > float(q @ far)


def test_hash_embedder_empty_text_is_zero_vector() -> None:
    out = HashEmbedder().embed([""])
    assert out.shape == (1, 384)
    assert not out.any()


def test_cache_embeds_each_text_once_and_persists(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    db = tmp_path / "cache" / "emb.sqlite3"
    with CachedEmbedder(inner, db) as cached:
        first = cached.embed(["alpha beta", "gamma delta", "alpha beta"])
        assert inner.calls == [2]  # the duplicate is embedded once
        assert (cached.embedded, cached.cached) == (2, 1)
        again = cached.embed(["gamma delta", "alpha beta"])
        assert inner.calls == [2]
        assert (cached.embedded, cached.cached) == (2, 3)
        assert np.array_equal(again[1], first[0])
    with CachedEmbedder(inner, db) as reopened:
        reopened.embed(["alpha beta", "epsilon"])
        assert inner.calls == [2, 1]
        assert (reopened.embedded, reopened.cached) == (1, 1)


def test_cache_key_includes_the_embedder_name(tmp_path: Path) -> None:
    db = tmp_path / "emb.sqlite3"
    one = CountingEmbedder()
    two = CountingEmbedder()
    two.name = "other-model"
    with CachedEmbedder(one, db) as a:
        a.embed(["same text"])
    with CachedEmbedder(two, db) as b:
        b.embed(["same text"])
    assert one.calls == [1] and two.calls == [1]


def test_cache_of_empty_input(tmp_path: Path) -> None:
    with CachedEmbedder(HashEmbedder(), tmp_path / "e.sqlite3") as cached:
        assert cached.embed([]).shape == (0, 384)


def test_make_embedder_wraps_configured_embedder(settings: Settings) -> None:
    emb = make_embedder(settings)
    try:
        assert isinstance(emb, CachedEmbedder)
        assert isinstance(emb.inner, HashEmbedder)
        assert emb.name == emb.inner.name and emb.dim == emb.inner.dim
        assert emb.path.is_relative_to(settings.cache_dir)
    finally:
        emb.close()


def test_minilm_embedder_does_not_load_the_model_until_used() -> None:
    emb = MiniLMEmbedder()
    assert emb.dim == 384 and emb.name == "all-MiniLM-L6-v2"
    assert MiniLMEmbedder(max_seq_length=256).name == "all-MiniLM-L6-v2@256"
    assert emb.embed([]).shape == (0, 384)
    assert emb._model is None


@pytest.mark.parametrize("missing", ["torch", "sentence_transformers"])
def test_the_minilm_embedder_names_its_extra_when_torch_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    """torch is an optional extra: selecting the torch embedder without it is one clear line that
    names the extra and the torch-free default, at selection and at first use."""
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == missing else object())
    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(ConfigError, match=r"optional extra 'minilm' \(missing: " + missing) as caught:
        embedder_for("minilm", cache_dir=tmp_path)
    assert (
        "pip install 'arcs[minilm]'" in caught.value.message and "ARCS_EMBEDDER=onnx" in caught.value.message
    )
    with pytest.raises(ConfigError, match="arcs\\[minilm\\]"):
        MiniLMEmbedder().embed(["x"])
    # The other embedders never need it.
    assert embedder_for("onnx", cache_dir=tmp_path).name == "all-MiniLM-L6-v2"
    assert embedder_for("hash", cache_dir=tmp_path).embed(["x"]).shape == (1, 384)


def test_embedding_text_has_metadata_then_code() -> None:
    chunk = _chunk(
        "    return yaml.safe_load(path.read_text())\n",
        signature="def parse(path: Path) -> dict",
        docstring="Parse a YAML config file.",
    )
    text = embedding_text(chunk)
    lines = text.split("\n")
    assert lines[0] == "app/util.py"
    assert lines[1] == "function app.util.parse"
    assert "def parse(path: Path) -> dict" in text
    assert "Parse a YAML config file." in text
    assert text.endswith("return yaml.safe_load(path.read_text())")


def test_embedding_text_does_not_repeat_what_the_code_starts_with() -> None:
    code = 'def parse(path):\n    """Parse a YAML config file."""\n    return 1\n'
    text = embedding_text(_chunk(code, signature="def parse(path):", docstring="Parse a YAML config file."))
    assert text.count("def parse(path):") == 1
    assert text.count("Parse a YAML config file.") == 1


def test_embedding_text_truncates_long_code_at_a_line_boundary() -> None:
    code = "".join(f"    value_{i} = compute({i})\n" for i in range(500))
    text = embedding_text(_chunk(code))
    assert len(text) < MAX_EMBED_CHARS + 200
    assert text.endswith(")")  # cut after a whole line


@pytest.mark.slow
@pytest.mark.skipif(
    bool(missing_extra_modules()), reason="the torch embedder is the optional extra 'minilm' (not installed)"
)
def test_minilm_embeds_unit_vectors_with_semantic_neighbours() -> None:
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    emb = MiniLMEmbedder()
    vecs = emb.embed(
        [
            "compute the value added tax of an invoice amount",
            "def compute_vat(amount, rate):\n    return round(amount * rate, 2)",
            "def area(self):\n    return math.pi * self.radius ** 2",
        ]
    )
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert float(vecs[0] @ vecs[1]) > float(vecs[0] @ vecs[2])
