"""The read snapshot: a new process answers from it without opening Qdrant, and never from a stale one."""

from __future__ import annotations

from pathlib import Path

from bot.settings import Settings
from indexing import snapshot
from indexing.index import RepoIndex
from indexing.model import Query
from tests.conftest import git, qdrant_folder_held
from tests.indexing.conftest import OpenIndex

QUERIES = [Query("compute the value added tax of an amount", k=5), Query("end a user's session", k=5)]


def _answers(index: RepoIndex) -> list[list[tuple[str, str, float]]]:
    r = index.retriever()
    return [[(h.chunk.path, h.chunk.qualified_name, round(h.score, 6)) for h in r.search(q)] for q in QUERIES]


def test_read_only_open_answers_like_the_store(
    settings: Settings, sample_repo: Path, open_index: OpenIndex
) -> None:
    index = open_index(sample_repo)
    index.refresh()
    expected = _answers(index)
    index.close()
    with RepoIndex.open(settings, sample_repo, read_only=True) as ro:
        assert ro.store.read_only, "a current snapshot is used"
        assert _answers(ro) == expected


def test_read_only_works_while_another_process_holds_the_store(
    settings: Settings, sample_repo: Path, open_index: OpenIndex
) -> None:
    index = open_index(sample_repo)
    index.refresh()
    index.close()
    with (
        qdrant_folder_held(settings.qdrant_path),
        RepoIndex.open(settings, sample_repo, read_only=True) as ro,
    ):
        hits = ro.retriever().search(QUERIES[0])
        assert "compute_vat" in [h.chunk.symbol for h in hits]


def test_a_stale_snapshot_is_never_used(settings: Settings, sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo)
    index.refresh()
    stamp = snapshot.stamp_of(index.snapshot_path)
    assert stamp
    # A refresh that changes something writes a new snapshot and stamp.
    (sample_repo / "app/billing/tax.py").write_text("def compute_vat(amount, rate):\n    return 0\n")
    git(sample_repo, "commit", "-qam", "edit")
    index.refresh()
    assert snapshot.stamp_of(index.snapshot_path) not in (None, stamp)
    # A snapshot whose stamp is not the manifest's (e.g. a crash between the two writes) is ignored.
    snapshot.save(index.snapshot_path, "other", {})
    index.close()
    with RepoIndex.open(settings, sample_repo, read_only=True) as ro:
        assert not ro.store.read_only, "fell back to the store"
        assert ro.retriever().search(QUERIES[0])


def test_lazy_read_only_expands_in_memory(
    settings: Settings, sample_repo: Path, open_index: OpenIndex
) -> None:
    index = open_index(sample_repo, mode="lazy")
    total = index.refresh().chunks
    index.close()
    with RepoIndex.open(settings, sample_repo, read_only=True, mode="lazy") as ro:
        assert ro.store.read_only
        hits = ro.retriever().search(QUERIES[0])
        assert "compute_vat" in [h.chunk.symbol for h in hits]
        assert ro.store.count_missing_dense(ro.collection) < total
    # Nothing was persisted by the read-only process: the stored index is still all lazy.
    again = open_index(sample_repo, mode="lazy")
    assert again.store.count_missing_dense(again.collection) == total
