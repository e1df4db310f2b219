"""Lazy index mode: sparse + structure at once, chunk bodies embedded on demand and by the fill."""

from __future__ import annotations

from pathlib import Path

import pytest

import indexing.lazy as lazy_mod
from indexing.index import RepoIndex
from indexing.model import Location, Query
from indexing.store import QdrantStore, StoreFilter
from tests.indexing.conftest import OpenIndex


def _dense_paths(index: RepoIndex) -> set[str]:
    """Paths of the chunks that have a dense vector."""
    hits = index.store.scroll(index.collection, None, limit=10_000)
    return {str(h.payload["path"]) for h in hits if h.vector is not None}


def test_lazy_refresh_embeds_no_chunk_body(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo, mode="lazy")
    stats = index.refresh()
    assert stats.mode == "lazy"
    assert stats.chunks > 0 and stats.deferred == stats.chunks
    assert index.store.count_missing_dense(index.collection) == stats.chunks
    assert _dense_paths(index) == set()
    assert all(h.payload.get("lazy") is True for h in index.store.scroll(index.collection, None))
    # The hierarchy is embedded: every tree node has a vector (from its abstract).
    nodes = index.store.scroll(index.tree_collection, None, limit=10_000)
    assert nodes and all(n.vector is not None for n in nodes)


@pytest.fixture
def small_expansion(monkeypatch: pytest.MonkeyPatch) -> None:
    """A query may embed at most 12 chunks (the sample repository has 30), so it must select."""
    monkeypatch.setattr(lazy_mod, "MAX_QUERY_EXPANSION", 12)


@pytest.mark.usefixtures("small_expansion")
def test_a_query_embeds_the_chunks_it_needs_and_only_those(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo, mode="lazy")
    total = index.refresh().chunks
    hits = index.retriever().search(Query("compute the value added tax of an amount", k=3))
    assert hits[0].chunk.symbol == "compute_vat"
    embedded = _dense_paths(index)
    assert "app/billing/tax.py" in embedded
    left = index.store.count_missing_dense(index.collection)
    assert 0 < left < total, "some chunks are embedded, not all"
    assert index.expander.expanded == total - left
    # The expansion is stored in Qdrant, not only in the process's mirror.
    settings = index.settings
    index.close()
    store = QdrantStore.open(settings, accelerate=False)
    try:
        assert store.count_missing_dense(index.collection) == left
    finally:
        store.close()


@pytest.mark.usefixtures("small_expansion")
def test_hinted_files_are_expanded(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo, mode="lazy")
    index.refresh()
    index.retriever().search(Query("KeyError", k=3, hints=(Location("lib/geometry/shapes.py", 0),)))
    assert "lib/geometry/shapes.py" in _dense_paths(index)


def test_a_query_finishes_a_small_remainder_and_derives_the_tree(
    sample_repo: Path, open_index: OpenIndex
) -> None:
    index = open_index(sample_repo, mode="lazy")
    index.refresh()
    before = index.load_manifest()
    assert before is not None
    index.retriever().search(Query("compute the value added tax of an amount", k=3))
    assert index.store.count_missing_dense(index.collection) == 0  # 30 chunks <= one expansion
    after = index.load_manifest()
    assert after is not None and after.tree_ids != before.tree_ids, "tree re-derived from chunk means"


def test_fill_completes_and_then_ranks_like_the_eager_index(
    sample_repo: Path, open_index: OpenIndex, tmp_path: Path
) -> None:
    from bot.settings import load_settings

    queries = [
        Query("compute the value added tax of an amount", k=5),
        Query("end a user's session", k=5, mode="dense"),
        Query("area of a circle", k=5, hints=(Location("lib/geometry/shapes.py", 12),)),
    ]
    eager_settings = load_settings(
        {"ARCS_HOME": str(tmp_path / "eager"), "ARCS_EMBEDDER": "hash", "ARCS_INDEX_MODE": "eager"}
    )
    with RepoIndex.open(eager_settings, sample_repo) as eager:
        eager.refresh()
        expected = [
            [(h.chunk.path, h.chunk.qualified_name) for h in eager.retriever().search(q)] for q in queries
        ]
        eager_hier = [[h.chunk.qualified_name for h in eager.retriever().hierarchical(q)] for q in queries]
        eager_manifest = eager.load_manifest()
        assert eager_manifest is not None

    index = open_index(sample_repo, mode="lazy")
    total = index.refresh().chunks
    done = index.fill()
    assert done.remaining == 0 and done.embedded == total
    got = [[(h.chunk.path, h.chunk.qualified_name) for h in index.retriever().search(q)] for q in queries]
    assert got == expected
    # The tree switched to chunk-mean node vectors: the same nodes (ids) as the eager build.
    manifest = index.load_manifest()
    assert manifest is not None and manifest.tree_ids == eager_manifest.tree_ids
    assert [
        [h.chunk.qualified_name for h in index.retriever().hierarchical(q)] for q in queries
    ] == eager_hier
    assert index.fill().embedded == 0  # nothing left: a no-op


def test_fill_respects_its_budget(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo, mode="lazy")
    total = index.refresh().chunks
    step = index.fill(max_chunks=4)
    assert step.embedded == 4 and step.remaining == total - 4
    assert index.fill(budget_s=0.0).embedded == 0  # no time: stops before the first batch


def test_embeddings_are_cached_by_content_across_rebuilds(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo, mode="lazy")
    index.refresh()
    index.fill()
    stats = index.refresh(full=True)
    # Every chunk body's vector comes from the cache: nothing is deferred, no chunk is recomputed.
    assert stats.deferred == 0
    assert index.store.count_missing_dense(index.collection) == 0


def test_an_eager_refresh_fills_what_a_lazy_one_left(sample_repo: Path, open_index: OpenIndex) -> None:
    lazy = open_index(sample_repo, mode="lazy")
    lazy.refresh()
    lazy.close()
    eager = open_index(sample_repo, mode="eager")
    stats = eager.refresh()
    assert stats.mode == "eager" and stats.deferred == 0
    assert eager.store.count_missing_dense(eager.collection) == 0
    manifest = eager.load_manifest()
    assert manifest is not None and manifest.mode == "eager"


def test_lazy_points_through_qdrants_own_api(sample_repo: Path, open_index: OpenIndex) -> None:
    """The server code path (no in-memory mirror) finds and fills lazy points the same way."""
    index = open_index(sample_repo, mode="lazy")
    total = index.refresh().chunks
    settings = index.settings
    index.close()
    store = QdrantStore.open(settings, accelerate=False)
    try:
        missing = store.missing_dense(index.collection, StoreFilter(within=("app/billing",)))
        assert missing and all(str(h.payload["path"]).startswith("app/billing/") for h in missing)
        assert store.count_missing_dense(index.collection) == total
        first = missing[0]
        vec = index.embedder.inner.embed(["x"])[0]
        store.set_dense(index.collection, {first.id: vec})
        assert store.count_missing_dense(index.collection) == total - 1
        (back,) = [h for h in store.scroll(index.collection, None, limit=10_000) if h.id == first.id]
        assert back.vector is not None and "lazy" not in back.payload
    finally:
        store.close()
