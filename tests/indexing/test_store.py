from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bot.errors import ConfigError
from bot.settings import Settings
from indexing.embed import HashEmbedder
from indexing.index import chunk_payload, sparse_text
from indexing.model import Chunk
from indexing.retention import collection_name
from indexing.store import PointData, QdrantStore, StoreFilter, ancestor_dirs, point_id
from indexing.tokens import SparseVec, document_vector, query_vector
from tests.conftest import qdrant_folder_held
from tests.indexing.conftest import OpenIndex


def test_point_id_is_a_deterministic_uuid() -> None:
    a = point_id("repo", "app/x.py", "app.x.f", "abc")
    assert a == point_id("repo", "app/x.py", "app.x.f", "abc")
    assert a != point_id("repo2", "app/x.py", "app.x.f", "abc")
    # parts are separated: ("ab", "c") and ("a", "bc") differ
    assert point_id("ab", "c") != point_id("a", "bc")
    assert len(a) == 36 and a.count("-") == 4


def test_collection_name_is_sanitised_stable_and_distinct() -> None:
    a = collection_name("local:/home/me/src/shop")
    assert a == collection_name("local:/home/me/src/shop")
    assert a != collection_name("local:/home/me/src/shop2")
    assert a != collection_name("github:12345")
    for name in (a, collection_name("github:owner/repo with spaces/ünï"), collection_name("")):
        assert all(ch.isascii() and (ch.isalnum() or ch in "_-") for ch in name)
        assert len(name) <= 64


def test_ancestor_dirs() -> None:
    assert ancestor_dirs("a/b/c.py") == ["a", "a/b"]
    assert ancestor_dirs("c.py") == []


def _points(n_files: int = 6) -> list[PointData]:
    emb = HashEmbedder(dim=32)
    chunks = []
    for i in range(n_files):
        d = "pkg/sub" if i % 2 else "pkg"
        lang = "python" if i % 3 else "go"
        kind = "function" if i % 2 else "class"
        text = f"def handler_{i}(request):\n    return render_{i % 3}(request, value_{i})\n"
        chunks.append(
            Chunk(
                path=f"{d}/m{i}.py",
                language=lang,
                kind=kind,
                symbol=f"handler_{i}",
                qualified_name=f"pkg.m{i}.handler_{i}",
                start_line=1,
                end_line=2,
                text=text,
                defines=(f"handler_{i}",),
            )
        )
    vecs = emb.embed([c.text for c in chunks])
    return [
        PointData(
            point_id("r", c.path, c.qualified_name), v, document_vector(sparse_text(c)), chunk_payload(c)
        )
        for c, v in zip(chunks, vecs, strict=True)
    ]


@pytest.fixture
def store(settings: Settings) -> QdrantStore:
    s = QdrantStore.open(settings)
    yield s  # type: ignore[misc]
    s.close()


def test_upsert_is_idempotent(store: QdrantStore) -> None:
    store.recreate("c", 32)
    pts = _points()
    store.upsert("c", pts)
    store.upsert("c", pts)
    assert store.count("c") == len(pts)
    assert store.ids("c") == {p.id for p in pts}


@pytest.mark.parametrize("accelerate", [True, False])
def test_filters(store: QdrantStore, accelerate: bool) -> None:
    store.accelerate = accelerate
    store.recreate("c", 32)
    store.upsert("c", _points())
    q = HashEmbedder(dim=32).embed(["handler request"])[0]

    def paths(flt: StoreFilter) -> set[str]:
        return {str(h.payload["path"]) for h in store.query("c", dense=q, sparse=None, flt=flt, limit=50)}

    assert paths(StoreFilter(prefix="pkg/sub")) == {"pkg/sub/m1.py", "pkg/sub/m3.py", "pkg/sub/m5.py"}
    assert paths(StoreFilter(prefix="pkg/m2.py")) == {"pkg/m2.py"}
    assert paths(StoreFilter(prefix="pk")) == set()  # a prefix is a directory or a file, not a substring
    assert paths(StoreFilter(language="go")) == {"pkg/m0.py", "pkg/sub/m3.py"}
    assert paths(StoreFilter(kind="class", language="go")) == {"pkg/m0.py"}
    assert paths(StoreFilter(within=("pkg/m0.py", "pkg/sub"))) == {
        "pkg/m0.py",
        "pkg/sub/m1.py",
        "pkg/sub/m3.py",
        "pkg/sub/m5.py",
    }
    assert paths(StoreFilter(within=())) == set()
    assert paths(StoreFilter(symbols=("handler_4", "nope"))) == {"pkg/m4.py"}
    assert paths(StoreFilter(levels=("file",))) == set()
    scrolled = store.scroll("c", StoreFilter(prefix="pkg/sub"), with_vectors=True)
    assert {str(h.payload["path"]) for h in scrolled} == {"pkg/sub/m1.py", "pkg/sub/m3.py", "pkg/sub/m5.py"}
    assert all(h.vector is not None and h.vector.shape == (32,) for h in scrolled)


def _random_points(n: int, rng: np.random.Generator) -> list[PointData]:
    # Random floats: no two points tie on any score, so every rank is well defined.
    out = []
    for i in range(n):
        terms = sorted(rng.choice(40, size=int(rng.integers(1, 8)), replace=False).tolist())
        sparse = SparseVec(tuple(terms), tuple(float(v) for v in rng.uniform(0.1, 2.0, len(terms))))
        c = Chunk(
            f"pkg/{'sub/' if i % 2 else ''}m{i}.py",
            "python",
            "function",
            f"fn_{i}",
            f"m{i}.fn_{i}",
            1,
            2,
            "x",
        )
        dense = rng.standard_normal(32).astype(np.float32)
        out.append(PointData(point_id("r", c.path), dense / np.linalg.norm(dense), sparse, chunk_payload(c)))
    return out


def test_mirror_ranks_exactly_like_qdrant_query_api(store: QdrantStore) -> None:
    rng = np.random.default_rng(7)
    store.recreate("c", 32)
    store.upsert("c", _random_points(60, rng))
    for _ in range(5):
        dense = rng.standard_normal(32).astype(np.float32)
        terms = sorted(rng.choice(40, size=4, replace=False).tolist())
        sparse = SparseVec(tuple(terms), tuple(float(v) for v in rng.uniform(0.5, 1.5, 4)))
        for d, s in ((dense, sparse), (dense, None), (None, sparse)):
            for flt in (None, StoreFilter(prefix="pkg/sub")):
                store.accelerate = False
                ref = store.query("c", dense=d, sparse=s, flt=flt, limit=8)
                store.accelerate = True
                fast = store.query("c", dense=d, sparse=s, flt=flt, limit=8)
                assert len(ref) > 0
                assert [h.id for h in fast] == [h.id for h in ref], (d is None, s is None, flt)
                assert np.allclose([h.score for h in fast], [h.score for h in ref], atol=1e-4)
                for a, b in zip(fast, ref, strict=True):
                    assert a.vector is not None and b.vector is not None
                    assert np.allclose(
                        a.vector / np.linalg.norm(a.vector), b.vector / np.linalg.norm(b.vector), atol=1e-5
                    )


def test_mirror_follows_writes_and_deletes(store: QdrantStore) -> None:
    store.recreate("c", 32)
    pts = _points()
    store.upsert("c", pts[:3])
    assert store.count("c") == 3  # loads the mirror
    store.upsert("c", pts[3:])
    store.delete_ids("c", {pts[0].id})
    store.delete_paths("c", {pts[1].payload["path"], pts[2].payload["path"]}, keep={pts[2].id})
    expected = {p.id for p in pts} - {pts[0].id, pts[1].id}
    assert store.ids("c") == expected
    store.accelerate = False
    assert store.ids("c") == expected
    assert store.count("c") == len(expected)


def test_delete_paths_without_mirror_uses_a_qdrant_filter(store: QdrantStore) -> None:
    store.accelerate = False
    store.recreate("c", 32)
    pts = _points()
    store.upsert("c", pts)
    store._mirrors.clear()
    store.delete_paths("c", {pts[1].payload["path"], pts[2].payload["path"]}, keep={pts[2].id})
    assert store.ids("c") == {p.id for p in pts} - {pts[1].id}


def test_empty_queries_return_nothing(store: QdrantStore) -> None:
    store.recreate("c", 32)
    store.upsert("c", _points())
    assert store.query("c", dense=None, sparse=None) == []
    assert store.query("c", dense=None, sparse=query_vector("the of")) == []


def test_locked_folder_is_a_config_error(settings: Settings) -> None:
    settings.qdrant_path.mkdir(parents=True, exist_ok=True)
    with (
        qdrant_folder_held(settings.qdrant_path),
        pytest.raises(ConfigError, match="in use by another process"),
    ):
        QdrantStore.open(settings)
    QdrantStore.open(settings).close()  # released: opens fine again


def test_reindex_is_idempotent_point_count_stable(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo)
    first = index.refresh()
    ids = index.store.ids(index.collection)
    tree_ids = index.store.ids(index.tree_collection)
    assert first.full and len(ids) == first.chunks > 0
    again = index.refresh(full=True)
    assert again.full and again.chunks == first.chunks
    assert index.store.ids(index.collection) == ids
    assert index.store.ids(index.tree_collection) == tree_ids
    # a fresh process sees the same points (persisted, not only mirrored)
    index = open_index(sample_repo)
    assert index.store.ids(index.collection) == ids
    assert index.refresh().changed_files == 0


def test_two_repositories_in_one_store_never_mix(
    make_repo, settings: Settings, open_index: OpenIndex
) -> None:
    a = make_repo({"alpha.py": "def shared_name():\n    return 'alpha apples'\n"}, name="a")
    b = make_repo({"beta.py": "def shared_name():\n    return 'beta bananas'\n"}, name="b")
    store = QdrantStore.open(settings)
    try:
        ia = open_index(a, store=store)
        ia.refresh()
        ib = open_index(b, store=store)
        ib.refresh()
        assert ia.collection != ib.collection
        from indexing.model import Query

        for index, own in ((ia, "alpha.py"), (ib, "beta.py")):
            for mode in ("hybrid", "dense", "sparse"):
                hits = index.retriever().search(Query("shared_name apples bananas", k=10, mode=mode))  # type: ignore[arg-type]
                assert hits and {h.chunk.path for h in hits} == {own}
            tree = index.retriever().hierarchical(Query("shared_name apples bananas", k=10))
            assert {h.chunk.path for h in tree} == {own}
    finally:
        store.close()


def test_embedded_writes_skip_per_point_fsync_but_flush_persists(settings: Settings) -> None:
    store = QdrantStore.open(settings)
    try:
        store.recreate("c", 32)
        pts = _points()
        store.upsert("c", pts)
        db = store._local_dbs.get("c")
        assert db is not None  # if qdrant-client internals move, this tells us writes got slow again
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        store.flush()
    finally:
        store.close()
    with QdrantStore.open(settings, accelerate=False) as again:
        assert again.ids("c") == {p.id for p in pts}
