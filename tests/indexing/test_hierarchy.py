from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from indexing.hierarchy import (
    CachedSummarizer,
    FileSummary,
    NodeDraft,
    StructuralSummarizer,
    Summarizer,
    build_tree,
    file_structural,
)
from indexing.index import RepoIndex
from indexing.model import Chunk, FileChunks, Location, Query, SearchFilters
from tests.indexing.conftest import OpenIndex


def _summary(path: str, defines: tuple[str, ...], doc: str = "", lines: int = 10) -> FileSummary:
    return FileSummary(
        path=path,
        language="python",
        line_count=lines,
        chunk_count=len(defines),
        module_docstring=doc,
        imports=("os",),
        defines=defines,
        symbols=tuple(f"{path[:-3].replace('/', '.')}.{d}" for d in defines),
    )


FILES = {
    "a/b/deep.py": _summary("a/b/deep.py", ("deep_fn",), "Deep helpers."),
    "a/top.py": _summary("a/top.py", ("top_fn", "TopClass")),
    "main.py": _summary("main.py", ("main",), "Entry point.", lines=5),
}


def test_build_tree_shape() -> None:
    nodes = build_tree(FILES, {}, StructuralSummarizer(), repo_name="demo")
    by_path = {n.path: n for n in nodes}
    assert [n.level for n in nodes] == ["repo", "dir", "dir", "file", "file", "file"]
    assert set(by_path) == {"", "a", "a/b", "a/b/deep.py", "a/top.py", "main.py"}
    assert by_path[""].children == ("a", "main.py")
    assert by_path["a"].children == ("a/b", "a/top.py")
    assert by_path["a/b"].parent == "a" and by_path["a"].parent == "" and by_path["main.py"].parent == ""
    assert by_path[""].file_count == 3 and by_path[""].line_count == 25
    assert by_path["a"].file_count == 2


def test_abstracts_are_structural_and_aggregate_upwards() -> None:
    by_path = {n.path: n for n in build_tree(FILES, {}, StructuralSummarizer(), repo_name="demo")}
    deep = by_path["a/b/deep.py"].abstract
    assert deep.startswith("file a/b/deep.py (python, 10 lines, 1 chunks)")
    assert "Deep helpers." in deep and "defines: deep_fn" in deep and "imports: os" in deep
    a = by_path["a"].abstract
    assert a.startswith("directory a: 2 files, 1 subdirectories, 20 lines")
    assert "contains: b/, top.py" in a
    assert "deep_fn" in a and "TopClass" in a  # symbols of the whole subtree
    repo = by_path[""].abstract
    assert repo.startswith("repository demo: 3 files")
    assert "languages: python (3)" in repo
    assert "main.py: Entry point." in repo


def test_build_tree_is_a_pure_function() -> None:
    one = build_tree(FILES, {}, StructuralSummarizer(), repo_name="demo")
    two = build_tree(dict(reversed(list(FILES.items()))), {}, StructuralSummarizer(), repo_name="demo")
    assert one == two


def test_file_summary_from_chunks_and_json_round_trip() -> None:
    chunk = Chunk("m.py", "python", "function", "f", "m.f", 1, 3, "def f(): pass")
    window = Chunk("m.py", "python", "window", "", "m.py#L4", 4, 9, "x = 1")
    fc = FileChunks(
        "m.py",
        "python",
        (chunk, window),
        module_docstring="Doc.",
        imports=("os",),
        defines=("f",),
        line_count=9,
    )
    s = FileSummary.from_chunks(fc)
    assert s.symbols == ("m.f",) and s.chunk_count == 2 and s.line_count == 9
    assert FileSummary.from_json(s.to_json()) == s
    assert "defines: f" in file_structural(s)


class CountingSummarizer:
    name = "counting-v1"

    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, node: NodeDraft) -> str:
        self.calls += 1
        return f"LLM SUMMARY of {node.level} {node.path or '/'}: " + node.structural.split("\n")[0]


def test_cached_summarizer_summarises_each_node_once(tmp_path: Path) -> None:
    inner = CountingSummarizer()
    assert isinstance(inner, Summarizer)
    with CachedSummarizer(inner, tmp_path / "s.sqlite3") as cached:
        build_tree(FILES, {}, cached, repo_name="demo")
        first = inner.calls
        assert first == 3  # two directories and the repository (file abstracts are given)
        build_tree(FILES, {}, cached, repo_name="demo")
        assert inner.calls == first
    with CachedSummarizer(inner, tmp_path / "s.sqlite3") as reopened:
        changed = {**FILES, "a/b/deep.py": _summary("a/b/deep.py", ("renamed_fn",))}
        build_tree(changed, {}, reopened, repo_name="demo")
        assert inner.calls == first + 3  # deep.py changed: a/b, a and the repo are re-summarised


def test_index_uses_a_configured_summarizer(sample_repo: Path, open_index: OpenIndex) -> None:
    inner = CountingSummarizer()
    index = open_index(sample_repo, summarizer=inner)
    index.refresh()
    tree = index.store.scroll(index.tree_collection, None, with_vectors=False)
    abstracts = {h.payload["path"]: str(h.payload["abstract"]) for h in tree}
    assert abstracts["app/billing/tax.py"].startswith("LLM SUMMARY of file app/billing/tax.py")
    assert abstracts[""].startswith("LLM SUMMARY of repo /")
    calls = inner.calls
    index.refresh(full=True)
    assert inner.calls == calls  # everything came from the summary cache


def _shop(sample_repo: Path, open_index: OpenIndex) -> RepoIndex:
    index = open_index(sample_repo)
    index.refresh()
    return index


def test_tree_points_cover_every_node(sample_repo: Path, open_index: OpenIndex) -> None:
    index = _shop(sample_repo, open_index)
    tree = index.store.scroll(index.tree_collection, None, with_vectors=False)
    levels = sorted((str(h.payload["level"]), str(h.payload["path"])) for h in tree)
    assert ("repo", "") in levels
    assert ("dir", "app/billing") in levels and ("dir", "lib/geometry") in levels
    assert ("file", "app/billing/invoice.py") in levels


def test_hierarchical_descends_to_the_right_directory_and_file(
    sample_repo: Path, open_index: OpenIndex
) -> None:
    r = _shop(sample_repo, open_index).retriever()
    hits = r.hierarchical(Query("invoice line items total", k=5), depth=3)
    assert hits and hits[0].chunk.path == "app/billing/invoice.py"
    assert {h.chunk.path for h in hits} <= {
        "app/billing/invoice.py",
        "app/billing/tax.py",
        "app/billing/__init__.py",
    }
    assert any(r.startswith(("file#", "dir#")) for r in hits[0].reasons)
    auth = r.hierarchical(Query("password session logout", k=3), depth=4)
    assert auth[0].chunk.path == "app/auth/login.py"
    geometry = r.hierarchical(Query("circle radius area", k=3))
    assert geometry[0].chunk.path == "lib/geometry/shapes.py"


def test_hierarchical_depth_one_is_the_flat_search(sample_repo: Path, open_index: OpenIndex) -> None:
    r = _shop(sample_repo, open_index).retriever()
    q = Query("token signature", k=4)
    assert [h.as_dict() for h in r.hierarchical(q, depth=1)] == [h.as_dict() for h in r.search(q)]


def test_hierarchical_respects_a_file_prefix_and_hints(sample_repo: Path, open_index: OpenIndex) -> None:
    r = _shop(sample_repo, open_index).retriever()
    only = r.hierarchical(
        Query("anything about totals", k=5, filters=SearchFilters(path_prefix="app/billing/tax.py"))
    )
    assert only and {h.chunk.path for h in only} == {"app/billing/tax.py"}
    hinted = r.hierarchical(Query("circle radius area", k=5, hints=(Location("app/auth/tokens.py", 13),)))
    assert hinted[0].chunk.path == "app/auth/tokens.py"
    assert hinted[0].chunk.symbol == "verify_token"


def _node_vectors(index: RepoIndex) -> dict[str, np.ndarray[Any, Any]]:
    tree = index.store.scroll(index.tree_collection, None)
    return {str(h.payload["path"]): np.asarray(h.vector) for h in tree if h.vector is not None}


def _mean_of_chunks(index: RepoIndex, prefix: str) -> np.ndarray[Any, Any]:
    chunks = index.store.scroll(index.collection, None)
    vecs = [
        np.asarray(h.vector)
        for h in chunks
        if h.vector is not None and (str(h.payload["path"]) + "/").startswith(prefix)
    ]
    mean = np.mean(np.stack(vecs), axis=0)
    return np.asarray(mean / np.linalg.norm(mean))


def test_node_vectors_are_the_mean_of_their_chunks(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo)
    index.embedder.reset_counters()
    stats = index.refresh()
    assert index.embedder.embedded == stats.chunks  # the tree nodes cost no model call
    nodes = _node_vectors(index)
    assert np.allclose(nodes["app/billing/tax.py"], _mean_of_chunks(index, "app/billing/tax.py/"), atol=1e-5)
    manifest = index.load_manifest()
    assert manifest is not None
    for path in ("app/billing", ""):  # directories: files' vectors weighted by their chunk counts
        prefix = path + "/" if path else ""
        total = sum(
            len(e.ids) * nodes[p] for p, e in manifest.files.items() if p.startswith(prefix) and e.ids
        )
        assert np.allclose(nodes[path], total / np.linalg.norm(total), atol=1e-5), path
    # a body edit keeps the abstracts but changes the chunks: the derived vectors follow
    tax = sample_repo / "app/billing/tax.py"
    tax.write_text(tax.read_text().replace("round(amount * rate, 2)", "round(amount * rate * rate, 2)"))
    index.refresh()
    after = _node_vectors(index)
    assert not np.allclose(after["app/billing/tax.py"], nodes["app/billing/tax.py"])
    assert np.allclose(after["app/billing/tax.py"], _mean_of_chunks(index, "app/billing/tax.py/"), atol=1e-5)
    assert np.allclose(after["lib/geometry"], nodes["lib/geometry"])
    assert not np.allclose(after[""], nodes[""])
    full = open_index(sample_repo, repo_id="fresh-build")
    full.refresh()
    rebuilt = _node_vectors(full)
    for path in ("app/billing/tax.py", "app/billing", ""):
        assert np.allclose(after[path], rebuilt[path], atol=1e-5), path  # incremental == from scratch


def test_node_vectors_from_abstracts_when_disabled(sample_repo: Path, open_index: OpenIndex) -> None:
    index = open_index(sample_repo)
    index.derive_node_vectors = False
    index.embedder.reset_counters()
    stats = index.refresh()
    nodes = len(index.store.scroll(index.tree_collection, None, with_vectors=False))
    assert index.embedder.embedded == stats.chunks + nodes
