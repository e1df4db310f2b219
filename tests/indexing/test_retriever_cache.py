"""The retriever's per-collection chunk cache: reused across queries and retrievers, never stale."""

from __future__ import annotations

from pathlib import Path

import pytest

import indexing.retriever as retriever_mod
from indexing.index import RepoIndex
from indexing.model import Chunk, Query
from tests.indexing.conftest import OpenIndex


@pytest.fixture
def shop(sample_repo: Path, open_index: OpenIndex) -> RepoIndex:
    index = open_index(sample_repo)
    index.refresh()
    return index


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    real = retriever_mod.chunk_from_payload

    def counted(payload: object) -> Chunk:
        calls.append(payload)
        return real(payload)  # type: ignore[arg-type]

    monkeypatch.setattr(retriever_mod, "chunk_from_payload", counted)
    return calls


def test_a_stored_chunk_is_rebuilt_once_across_queries_and_retrievers(
    shop: RepoIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_builds(monkeypatch)
    q = Query("area of a circle from its radius", k=5)
    first = shop.retriever().search(q)
    built = len(calls)
    assert first and built > 0
    again = shop.retriever().search(q)  # a new retriever over the same open store
    assert [h.as_dict() for h in again] == [h.as_dict() for h in first]
    assert len(calls) == built


def test_a_moved_chunk_is_served_with_its_new_lines(shop: RepoIndex, sample_repo: Path) -> None:
    r = shop.retriever()
    q = Query("compute value added tax rate", k=1)
    before = r.search(q)[0].chunk
    target = sample_repo / before.path
    # Same content, three lines lower: the point keeps its id, its payload (lines) changes.
    target.write_text("\n\n\n" + target.read_text(encoding="utf-8"), encoding="utf-8")
    shop.refresh()
    after = r.search(q)[0].chunk
    assert (after.path, after.qualified_name) == (before.path, before.qualified_name)
    assert (after.start_line, after.end_line) == (before.start_line + 3, before.end_line + 3)


def test_the_cache_is_bounded() -> None:
    cache = retriever_mod._ChunkCache(limit=2)
    payloads = [{"path": f"m{i}.py", "start_line": 1, "end_line": 2, "text": "x"} for i in range(3)]
    for i, p in enumerate(payloads):
        assert cache.entry(str(i), p).chunk.path == f"m{i}.py"
    assert len(cache) <= 2
    # an equal payload (a store without an in-memory mirror returns fresh dicts) is a hit
    assert cache.entry("2", dict(payloads[2])) is cache.entry("2", payloads[2])
