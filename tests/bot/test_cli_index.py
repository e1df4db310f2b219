from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import indexing.index as index_mod
from bot.cli import main
from bot.cli.index_cmd import parse_hint
from bot.errors import UsageError
from bot.settings import Settings
from indexing.model import Location
from tests.conftest import MakeRepo, qdrant_folder_held

FILES = {
    "app/tax.py": 'def compute_vat(amount, rate):\n    """Value added tax."""\n    return amount * rate\n',
    "app/shapes.py": (
        "import math\n\n\nclass Circle:\n    def __init__(self, r):\n        self.r = r\n\n"
        "    def area(self):\n        return math.pi * self.r ** 2\n"
    ),
    "README.md": "# Demo\n\nTax and shapes.\n",
}


@pytest.fixture
def repo(make_repo: MakeRepo) -> Path:
    return make_repo(FILES, name="demo")


def test_index_prints_one_summary_line(
    repo: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", str(repo)], settings=settings) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert out.startswith("indexed 3 files, ")
    assert "(embedded " in out and "(full build)" in out
    assert main(["index", str(repo)], settings=settings) == 0
    again = capsys.readouterr().out
    assert "embedded 0, cached 0" in again and "full build" not in again


def test_index_json_is_the_stats(repo: Path, settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(repo), "--json", "--mode", "eager"], settings=settings) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["files"] == 3 and data["full"] is True
    assert data["embedded"] == data["chunks"] > 0
    assert set(data) >= {
        "files",
        "chunks",
        "embedded",
        "cached",
        "removed_files",
        "changed_files",
        "seconds",
        "commit",
        "full",
    }
    assert main(["index", str(repo), "--json", "--full", "--mode", "eager"], settings=settings) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["full"] is True and again["embedded"] == 0 and again["cached"] == data["chunks"]


def test_lazy_index_defers_chunk_bodies_until_fill(
    repo: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", str(repo), "--json", "--mode", "lazy"], settings=settings) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "lazy" and data["deferred"] == data["chunks"] > 0
    assert main(["index", str(repo), "--mode", "lazy", "--fill"], settings=settings) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and f"filled {data['chunks']} in " in out and "deferred" not in out
    assert main(["index", str(repo), "--json", "--mode", "lazy", "--fill"], settings=settings) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["deferred"] == 0 and again["fill"]["embedded"] == 0 and again["fill"]["remaining"] == 0


def test_search_json_is_exactly_the_hit_list(
    repo: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", str(repo), "value added tax", "-k", "2", "--json"], settings=settings) == 0
    hits = json.loads(capsys.readouterr().out)
    assert isinstance(hits, list) and len(hits) == 2
    assert list(hits[0]) == ["path", "start_line", "end_line", "symbol", "kind", "score"]
    assert hits[0]["path"] == "app/tax.py" and hits[0]["symbol"].endswith("compute_vat")


def test_search_human_table(repo: Path, settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(repo), "circle area", "-k", "3"], settings=settings) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["#", "score", "location", "kind", "symbol"]
    assert len(lines) == 4
    assert "app/shapes.py:" in lines[1]


def test_search_options(repo: Path, settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["search", str(repo), "tax shapes area", "--json", "-k", "10"]
    assert main([*args, "--language", "markdown"], settings=settings) == 0
    assert {h["path"] for h in json.loads(capsys.readouterr().out)} == {"README.md"}
    assert main([*args, "--path-prefix", "app/shapes.py", "--kind", "method"], settings=settings) == 0
    assert {h["kind"] for h in json.loads(capsys.readouterr().out)} == {"method"}
    assert main([*args, "--hint", "app/tax.py:3", "-k", "1"], settings=settings) == 0
    assert json.loads(capsys.readouterr().out)[0]["symbol"].endswith("compute_vat")
    for mode in ("dense", "sparse", "hierarchical"):
        assert main([*args, "--mode", mode, "--no-refresh"], settings=settings) == 0
        assert json.loads(capsys.readouterr().out)


def test_search_builds_a_missing_index(
    repo: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", str(repo), "circle", "--no-refresh", "--json"], settings=settings) == 0
    assert json.loads(capsys.readouterr().out)


def test_parse_hint() -> None:
    assert parse_hint("app/x.py:42") == Location("app/x.py", 42)
    assert parse_hint("app/x.py") == Location("app/x.py", 0)
    assert parse_hint("C:/src/x.py:7") == Location("C:/src/x.py", 7)
    with pytest.raises(UsageError):
        parse_hint(":12")


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("arcs: error: ")]
    assert len(lines) == 1, err
    return lines[0]


def test_not_a_git_repository_is_exit_2(
    tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for argv in (["index", str(plain)], ["search", str(plain), "x"]):
        assert main(argv, settings=settings) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "not a git repository" in _one_error_line(err)
    assert not settings.index_dir.exists() or not any(settings.index_dir.iterdir())


def test_bad_search_arguments_are_exit_2(
    repo: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (
        ["search", str(repo), "x", "-k", "0"],
        ["search", str(repo), "x", "--mode", "psychic"],
        ["search", str(repo), "x", "--hint", ":3"],
        ["search", str(repo), "   "],
    ):
        assert main(argv, settings=settings) == 2, argv
        assert capsys.readouterr().err.startswith("arcs: error: search")


def test_locked_qdrant_folder_is_exit_2(
    repo: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", str(repo)], settings=settings) == 0
    manifest_before = {p.name: p.read_bytes() for p in settings.index_dir.iterdir()}
    capsys.readouterr()
    with qdrant_folder_held(settings.qdrant_path):
        (repo / "app/new.py").write_text("def added():\n    pass\n")
        assert main(["index", str(repo)], settings=settings) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "in use by another process" in _one_error_line(err)
        assert main(["search", str(repo), "tax", "--json"], settings=settings) == 2
        assert json.loads(capsys.readouterr().out)["exit_code"] == 2
    # nothing was half-written, and the next run picks up the change
    assert {p.name: p.read_bytes() for p in settings.index_dir.iterdir()} == manifest_before
    assert main(["index", str(repo), "--json"], settings=settings) == 0
    assert json.loads(capsys.readouterr().out)["changed_files"] == 1


def test_unreadable_file_is_exit_2_with_the_rest_indexed(
    repo: Path, settings: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = repo / "app/tax.py"
    if os.geteuid() == 0:  # root reads anything: simulate what a normal user would meet
        real_discover = index_mod.discover_files
        monkeypatch.setattr(
            index_mod,
            "discover_files",
            lambda *a, **k: [p for p in real_discover(*a, **k) if p != "app/tax.py"],
        )
        monkeypatch.setattr(index_mod, "_is_readable", lambda p: Path(p) != secret)
    else:
        secret.chmod(0)
    try:
        assert main(["index", str(repo), "--json"], settings=settings) == 2
    finally:
        secret.chmod(0o644)
    captured = capsys.readouterr()
    stats = json.loads(captured.out)
    assert stats["files"] == 2 and stats["unreadable"] == ["app/tax.py"]
    assert "warning: cannot read app/tax.py" in captured.err
    assert "app/tax.py" in _one_error_line(captured.err)
    monkeypatch.undo()
    assert main(["search", str(repo), "value added tax", "-k", "1", "--json"], settings=settings) == 0
    assert json.loads(capsys.readouterr().out)[0]["path"] == "app/tax.py"
