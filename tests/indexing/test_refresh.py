from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import indexing.index as index_mod
from bot.errors import UsageError
from bot.settings import Settings, load_settings
from indexing.embed import HashEmbedder
from indexing.index import RepoIndex
from indexing.model import Query
from indexing.retention import default_repo_id
from indexing.store import QdrantStore
from tests.conftest import MakeRepo, git, write_tree
from tests.indexing.conftest import SAMPLE_FILES, OpenIndex

Snapshot = tuple[frozenset[tuple[Any, ...]], frozenset[tuple[Any, ...]]]


def snapshot(index: RepoIndex) -> Snapshot:
    """Every point of both collections, as read back from a freshly opened Qdrant client."""
    index.store.close()
    store = QdrantStore.open(index.settings, accelerate=False)
    try:
        chunks = frozenset(
            (
                h.id,
                h.payload["path"],
                h.payload["qualified_name"],
                h.payload["start_line"],
                h.payload["end_line"],
            )
            for h in store.scroll(index.collection, None, limit=100_000, with_vectors=False)
        )
        tree = frozenset(
            (h.id, h.payload["level"], h.payload["path"], h.payload["abstract"])
            for h in store.scroll(index.tree_collection, None, limit=100_000, with_vectors=False)
        )
    finally:
        store.close()
    return chunks, tree


def clean_snapshot(repo: Path, tmp_path: Path, name: str) -> Snapshot:
    """The state a from-scratch build of ``repo`` produces (same repo id, separate ARCS_HOME)."""
    other = load_settings(
        {"ARCS_HOME": str(tmp_path / name), "ARCS_EMBEDDER": "hash", "ARCS_INDEX_MODE": "eager"}
    )
    index = RepoIndex.open(other, repo, repo_id=default_repo_id(repo))
    try:
        index.refresh()
        return snapshot(index)
    finally:
        index.close()


def paths_in(index: RepoIndex) -> set[str]:
    return {
        str(h.payload["path"])
        for h in index.store.scroll(index.collection, None, limit=100_000, with_vectors=False)
    }


def test_first_refresh_builds_then_nothing_to_do(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo)
    first = index.refresh()
    head = git(sample_repo, "rev-parse", "HEAD").strip()
    assert first.full and first.commit == head
    assert first.files == len(SAMPLE_FILES) and first.chunks > first.files
    assert first.embedded == first.chunks and first.cached == 0
    second = index.refresh()
    assert not second.full
    assert (second.changed_files, second.removed_files, second.embedded, second.cached) == (0, 0, 0, 0)
    assert second.chunks == first.chunks
    assert json.loads(json.dumps(second.as_dict()))["commit"] == head


def test_second_full_build_embeds_nothing(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo)
    first = index.refresh()
    again = index.refresh(full=True)
    assert again.full and again.embedded == 0 and again.cached == first.chunks
    index.manifest_path.unlink()  # a lost manifest is a full rebuild, still from the cache
    third = open_index(sample_repo).refresh()
    assert third.full and third.embedded == 0


def test_add_modify_delete_committed(sample_repo: Path, open_index: OpenIndex, tmp_path: Path) -> None:
    index = open_index(sample_repo)
    built = index.refresh()
    write_tree(
        sample_repo,
        {
            "app/billing/tax.py": SAMPLE_FILES["app/billing/tax.py"].replace(
                "round(amount * rate, 2)", "round(amount * rate, 4)"
            ),
            "app/billing/discount.py": "def apply_discount(total, percent):\n    return total * (1 - percent / 100)\n",
        },
    )
    (sample_repo / "app/auth/tokens.py").unlink()
    git(sample_repo, "add", "-A")
    git(sample_repo, "commit", "-q", "-m", "change")
    stats = index.refresh()
    assert not stats.full
    assert (stats.changed_files, stats.removed_files) == (2, 1)
    assert stats.files == built.files
    # only the changed function and the new file's chunks were embedded
    assert 0 < stats.embedded <= 4
    assert "app/auth/tokens.py" not in paths_in(index)
    hits = index.retriever().search(Query("apply discount percent", k=1))
    assert hits[0].chunk.symbol == "apply_discount"
    assert stats.commit == git(sample_repo, "rev-parse", "HEAD").strip()
    assert snapshot(index) == clean_snapshot(sample_repo, tmp_path, "clean")


def test_rename(sample_repo: Path, open_index: OpenIndex, tmp_path: Path) -> None:
    index = open_index(sample_repo)
    index.refresh()
    git(sample_repo, "mv", "lib/geometry/shapes.py", "lib/geometry/figures.py")
    git(sample_repo, "commit", "-q", "-m", "rename")
    stats = index.refresh()
    assert (stats.changed_files, stats.removed_files) == (1, 1)
    assert "lib/geometry/shapes.py" not in paths_in(index)
    hit = index.retriever().search(Query("circle radius area", k=1))[0]
    assert hit.chunk.path == "lib/geometry/figures.py"
    assert snapshot(index) == clean_snapshot(sample_repo, tmp_path, "clean")


def test_dirty_working_tree(sample_repo: Path, open_index: OpenIndex, tmp_path: Path) -> None:
    index = open_index(sample_repo)
    index.refresh()
    head = git(sample_repo, "rev-parse", "HEAD").strip()
    write_tree(
        sample_repo,
        {
            "app/auth/login.py": SAMPLE_FILES["app/auth/login.py"]
            + "\n\ndef reset_password(user):\n    user.password_hash = None\n",
            "scratch/notes.py": "def untracked_helper():\n    return 'draft'\n",
        },
    )
    stats = index.refresh()
    assert stats.commit == head
    assert stats.changed_files == 2
    assert index.retriever().search(Query("reset_password", k=1))[0].chunk.symbol == "reset_password"
    assert "scratch/notes.py" in paths_in(index)
    assert snapshot(index) == clean_snapshot(sample_repo, tmp_path, "clean1")
    # back to the committed state: the index follows the content, not the commit id
    write_tree(sample_repo, {"app/auth/login.py": SAMPLE_FILES["app/auth/login.py"]})
    (sample_repo / "scratch/notes.py").unlink()
    index = open_index(sample_repo)
    stats = index.refresh()
    assert (stats.changed_files, stats.removed_files) == (1, 1)
    assert stats.embedded == 0  # the old chunks' embeddings are still cached
    assert snapshot(index) == clean_snapshot(sample_repo, tmp_path, "clean2")


def test_touched_but_unchanged_file_is_not_rechunked(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo)
    index.refresh()
    target = sample_repo / "app/billing/tax.py"
    os.utime(target, ns=(1, 1))
    stats = index.refresh()
    assert stats.changed_files == 0 and stats.embedded == 0


def test_lost_commit_falls_back_to_content_hashes(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo)
    index.refresh()
    data = json.loads(index.manifest_path.read_text())
    data["commit"] = "0" * 40  # e.g. history rewritten and garbage-collected
    index.manifest_path.write_text(json.dumps(data))
    stats = index.refresh()
    assert not stats.full and stats.changed_files == 0


def test_corrupt_manifest_means_full_rebuild(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo)
    index.refresh()
    index.manifest_path.write_text("{not json")
    stats = index.refresh()
    assert stats.full and stats.embedded == 0


def test_new_embedder_means_full_rebuild(sample_repo: Path, open_index: OpenIndex) -> None:
    open_index(sample_repo).refresh()
    index = open_index(sample_repo, embedder=HashEmbedder(dim=64))
    stats = index.refresh()
    assert stats.full and stats.embedded == stats.chunks
    assert index.store.dense_dim(index.collection) == 64
    assert index.retriever().search(Query("compute vat", k=1))[0].chunk.symbol == "compute_vat"


def test_excluded_paths_are_not_indexed(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_repo({"keep.py": "def kept():\n    pass\n", "gen/skip.py": "def skipped():\n    pass\n"})
    s = load_settings(
        {
            "ARCS_HOME": str(tmp_path / "h"),
            "ARCS_EMBEDDER": "hash",
            "ARCS_EXCLUDE": "gen/",
            "ARCS_INDEX_MODE": "eager",
        }
    )
    with RepoIndex.open(s, repo) as index:
        index.refresh()
        assert paths_in(index) == {"keep.py"}


def _edit(repo: Path) -> None:
    write_tree(
        repo,
        {
            "app/billing/tax.py": SAMPLE_FILES["app/billing/tax.py"]
            + "\n\ndef zero_rated(item):\n    return item.kind == 'food'\n",
            "app/new_module.py": "def brand_new():\n    return 1\n\n\ndef second_new():\n    return 2\n",
        },
    )
    (sample := repo / "lib/geometry/shapes.py").rename(repo / "lib/geometry/figures.py")
    assert not sample.exists()
    (repo / "app/auth/tokens.py").unlink()


class Boom(RuntimeError):
    pass


@pytest.mark.parametrize("where", ["upsert", "delete_ids", "sync_tree"])
def test_crashed_refresh_rerun_converges(
    sample_repo: Path, open_index: OpenIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.setattr(index_mod, "EMBED_BATCH", 2)  # many small batches: crash between them
    index = open_index(sample_repo)
    index.refresh()
    _edit(sample_repo)

    calls = {"n": 0}
    if where == "sync_tree":

        def explode(*args: Any, **kwargs: Any) -> Any:
            raise Boom(where)

        monkeypatch.setattr(RepoIndex, "_sync_tree", explode)
    else:
        original = getattr(QdrantStore, where)

        def flaky(self: QdrantStore, *args: Any, **kwargs: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == 2:
                raise Boom(where)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(QdrantStore, where, flaky)
    with pytest.raises(Boom):
        index.refresh()
    monkeypatch.undo()

    # the interrupted run left its work recorded as pending; a new process finishes it
    assert json.loads(index.manifest_path.read_text())["pending"]
    index = open_index(sample_repo)
    stats = index.refresh()
    assert not stats.full
    assert json.loads(index.manifest_path.read_text())["pending"] == []
    assert snapshot(index) == clean_snapshot(sample_repo, tmp_path, "clean")


def test_crash_then_more_edits_leaves_no_orphans(
    sample_repo: Path, open_index: OpenIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = open_index(sample_repo)
    index.refresh()
    write_tree(sample_repo, {"app/billing/tax.py": "def first_version():\n    return 1\n"})

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise Boom("after upsert")

    monkeypatch.setattr(QdrantStore, "delete_ids", explode)
    with pytest.raises(Boom):
        index.refresh()
    monkeypatch.undo()
    # the points of "first_version" are in Qdrant but in no manifest; the file changes again
    write_tree(sample_repo, {"app/billing/tax.py": "def second_version():\n    return 2\n"})
    index = open_index(sample_repo)
    index.refresh()
    assert snapshot(index) == clean_snapshot(sample_repo, tmp_path, "clean")


def test_crashed_full_build_rebuilds(
    sample_repo: Path, open_index: OpenIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_mod, "EMBED_BATCH", 2)
    index = open_index(sample_repo)
    original = QdrantStore.upsert
    calls = {"n": 0}

    def flaky(self: QdrantStore, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise Boom("full")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(QdrantStore, "upsert", flaky)
    with pytest.raises(Boom):
        index.refresh()
    monkeypatch.undo()
    assert not index.manifest_path.exists()
    index = open_index(sample_repo)
    assert index.refresh().full
    assert snapshot(index) == clean_snapshot(sample_repo, tmp_path, "clean")


def test_not_a_git_repository(tmp_path: Path, settings: Settings) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UsageError, match="not a git repository"):
        RepoIndex.open(settings, plain)
    with pytest.raises(UsageError, match="does not exist"):
        RepoIndex.open(settings, tmp_path / "missing")


def test_repository_without_commits(make_repo: MakeRepo, settings: Settings) -> None:
    repo = make_repo({"a.py": "x = 1\n"}, commit=False)
    with RepoIndex.open(settings, repo) as index, pytest.raises(UsageError, match="no commits"):
        index.refresh()


def test_a_subdirectory_opens_the_whole_repository(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo / "app" / "auth")
    assert index.root == sample_repo.resolve()


def test_unreadable_file_is_a_warning_not_a_crash(
    sample_repo: Path, open_index: OpenIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = sample_repo / "app/auth/tokens.py"
    if os.geteuid() == 0:
        # root reads anything: make discovery and the permission probe see what a user would
        real_discover = index_mod.discover_files
        monkeypatch.setattr(
            index_mod,
            "discover_files",
            lambda *a, **k: [p for p in real_discover(*a, **k) if p != "app/auth/tokens.py"],
        )
        monkeypatch.setattr(index_mod, "_is_readable", lambda p: Path(p) != secret)
    else:
        secret.chmod(0)
    try:
        stats = open_index(sample_repo).refresh()
    finally:
        secret.chmod(0o644)
    assert stats.unreadable == ["app/auth/tokens.py"]
    assert any("cannot read app/auth/tokens.py" in w for w in stats.warnings)
    assert stats.files == len(SAMPLE_FILES) - 1


def test_file_vanishing_mid_refresh_is_a_warning(
    sample_repo: Path, open_index: OpenIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = index_mod.read_text
    monkeypatch.setattr(
        index_mod, "read_text", lambda root, rel: None if rel == "app/billing/tax.py" else real(root, rel)
    )
    stats = open_index(sample_repo).refresh()
    assert "app/billing/tax.py" in stats.unreadable
    assert stats.files == len(SAMPLE_FILES) - 1


def test_crash_before_the_final_manifest_then_more_edits(
    sample_repo: Path, open_index: OpenIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = open_index(sample_repo)
    index.refresh()
    write_tree(sample_repo, {"app/billing/tax.py": "def first_version():\n    return 1\n"})
    original = RepoIndex._save_manifest
    calls = {"n": 0}

    def flaky(self: RepoIndex, manifest: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:  # the pending record was written, all points were, the manifest not
            raise Boom("final manifest")
        original(self, manifest)

    monkeypatch.setattr(RepoIndex, "_save_manifest", flaky)
    with pytest.raises(Boom):
        index.refresh()
    monkeypatch.undo()
    write_tree(sample_repo, {"app/billing/tax.py": "def second_version():\n    return 2\n"})
    index = open_index(sample_repo)
    index.refresh()
    assert snapshot(index) == clean_snapshot(sample_repo, tmp_path, "clean")


def test_gitutil_reports_renames_modifications_and_untracked(sample_repo: Path) -> None:
    from indexing import gitutil

    old = gitutil.head_commit(sample_repo)
    git(sample_repo, "mv", "app/billing/tax.py", "app/billing/vat.py")
    write_tree(sample_repo, {"README.md": "# Changed\n"})
    git(sample_repo, "commit", "-q", "-am", "rename and edit")
    changes = {(c.status, c.path, c.old_path) for c in gitutil.diff_name_status(sample_repo, old)}
    assert ("R", "app/billing/vat.py", "app/billing/tax.py") in changes
    assert ("M", "README.md", None) in changes
    write_tree(sample_repo, {"new dir/ünïcode file.py": "x = 1\n", "app/__init__.py": "# dirty\n"})
    git(sample_repo, "mv", "lib/geometry/shapes.py", "lib/geometry/figures.py")
    dirty = gitutil.dirty_paths(sample_repo)
    assert {
        "new dir/ünïcode file.py",
        "app/__init__.py",
        "lib/geometry/figures.py",
        "lib/geometry/shapes.py",
    } <= dirty
    assert gitutil.commit_exists(sample_repo, old)
    assert not gitutil.commit_exists(sample_repo, "0" * 40)


class _NoDiscovery:
    """Stands in for ``discover_files``: counts calls, optionally forbids them."""

    def __init__(self, real: Any, *, allow: bool) -> None:
        self.real = real
        self.allow = allow
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> list[str]:
        self.calls += 1
        if not self.allow:
            raise AssertionError("an incremental refresh rediscovered the whole tree")
        result: list[str] = self.real(*args, **kwargs)
        return result


def test_incremental_refresh_checks_only_changed_paths(
    sample_repo: Path, open_index: OpenIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = open_index(sample_repo)
    index.refresh()
    monkeypatch.setattr(index_mod, "discover_files", _NoDiscovery(index_mod.discover_files, allow=False))
    assert index.refresh().changed_files == 0  # no-op
    _edit(sample_repo)  # modify, add untracked, rename, delete
    (sample_repo / "app/blob.py").write_bytes(b"x = 1\n\0binary\n")  # new but not indexable
    stats = index.refresh()
    assert not stats.full
    assert (stats.changed_files, stats.removed_files) == (3, 2)
    git(sample_repo, "add", "-A")
    git(sample_repo, "commit", "-q", "-m", "edit")
    (sample_repo / "lib/geometry/figures.py").unlink()  # dirty deletion on top of the new commit
    stats = index.refresh()
    assert (stats.changed_files, stats.removed_files) == (0, 1)
    assert "app/blob.py" not in paths_in(index)
    monkeypatch.undo()
    assert snapshot(index) == clean_snapshot(sample_repo, tmp_path, "clean")


def test_changed_exclusions_or_ignore_rules_rediscover_the_tree(
    sample_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = str(tmp_path / "home")
    plain = load_settings({"ARCS_HOME": home, "ARCS_EMBEDDER": "hash", "ARCS_INDEX_MODE": "eager"})
    excluding = load_settings(
        {"ARCS_HOME": home, "ARCS_EMBEDDER": "hash", "ARCS_EXCLUDE": "lib/", "ARCS_INDEX_MODE": "eager"}
    )
    (sample_repo / "scratch.py").write_text("def scratch():\n    return 0\n")  # untracked
    with RepoIndex.open(plain, sample_repo) as index:
        index.refresh()
        assert "scratch.py" in paths_in(index)
    counter = _NoDiscovery(index_mod.discover_files, allow=True)
    monkeypatch.setattr(index_mod, "discover_files", counter)
    with RepoIndex.open(excluding, sample_repo) as index:
        stats = index.refresh()
        assert counter.calls == 1 and not stats.full
        assert not any(p.startswith("lib/") for p in paths_in(index))
        index.refresh()
        assert counter.calls == 1  # same settings again: the quick path
        (sample_repo / ".gitignore").write_text("scratch.py\n")
        stats = index.refresh()
        assert counter.calls == 2
        assert "scratch.py" not in paths_in(index)
