"""The process registry: one model, one cache and one Qdrant client per configuration and process."""

from __future__ import annotations

from pathlib import Path

from bot.settings import Settings
from indexing.embed import HashEmbedder
from indexing.index import RepoIndex
from indexing.model import Query
from indexing.registry import IndexRegistry, base_embedder, make_embedder, process_registry


def test_same_configuration_same_instances(tmp_path: Path) -> None:
    reg = IndexRegistry()
    try:
        a = reg.base_embedder("hash", tmp_path / "c1")
        assert reg.base_embedder("hash", tmp_path / "c2") is a  # the hash embedder keeps no files
        assert isinstance(a, HashEmbedder)
        onnx1 = reg.base_embedder("onnx", tmp_path / "c1", threads=1)
        assert reg.base_embedder("onnx", tmp_path / "c1", threads=1) is onnx1  # not loaded: lazy
        assert reg.base_embedder("onnx", tmp_path / "c1", threads=2) is not onnx1
        assert reg.cached_embedder("hash", tmp_path / "c1") is reg.cached_embedder("hash", tmp_path / "c1")
        s1 = reg.store(url=None, path=tmp_path / "q")
        assert reg.store(url=None, path=tmp_path / "q") is s1
    finally:
        reg.close()
    assert s1.closed


def test_make_embedder_shares_the_model_of_the_process(settings: Settings) -> None:
    first, second = make_embedder(settings), make_embedder(settings)
    try:
        assert first is not second and first.inner is second.inner is base_embedder(settings)
    finally:
        first.close()
        second.close()


def test_shared_indexes_reuse_one_store_and_embedder(
    settings: Settings, sample_repo: Path, tmp_path: Path
) -> None:
    with RepoIndex.open(settings, sample_repo, shared=True) as one:
        one.refresh()
        store, embedder = one.store, one.embedder
    assert not store.closed, "closing a shared index leaves the process's store open"
    # A second job in the same process: same client (no second lock on the folder), same model.
    with RepoIndex.open(settings, sample_repo, shared=True) as two:
        assert two.store is store and two.embedder is embedder
        assert two.refresh().changed_files == 0
        hits = two.retriever().search(Query("compute_vat value added tax", k=3))
        assert "compute_vat" in [h.chunk.symbol for h in hits]
    process_registry().release_store(url=None, path=settings.qdrant_path)
    assert store.closed
