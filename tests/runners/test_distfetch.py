"""Fetching and unpacking a dependency's published version without building or running it."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from runners import distfetch
from runners.distfetch import FetchError, choose_pypi_file, fetch, member_path, read_texts, safe_extract


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tf.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def _file(name: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(name)


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def test_a_plain_sdist_unpacks_and_its_sources_and_changelog_are_read(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "pkg-1.0.tar.gz",
        [
            (_file("pkg-1.0/src/pkg/__init__.py"), b"x = 1\n"),
            (_file("pkg-1.0/CHANGES.rst"), b"Version 1.0\n"),
            (_file("pkg-1.0/data.bin"), b"\xff\xfe"),
        ],
    )
    assert safe_extract(archive, tmp_path / "out") == 3
    assert read_texts(tmp_path / "out") == {
        "pkg-1.0/src/pkg/__init__.py": "x = 1\n",
        "pkg-1.0/CHANGES.rst": "Version 1.0\n",
    }


@pytest.mark.parametrize(
    "member",
    [
        _link("pkg/evil", "/etc/passwd"),
        _link("pkg/hard", "../../outside", tarfile.LNKTYPE),
        _file("../outside.py"),
        _file("/abs.py"),
        _file("pkg/../../x.py"),
    ],
)
def test_links_and_paths_out_of_the_destination_are_refused(tmp_path: Path, member: tarfile.TarInfo) -> None:
    archive = _tar(tmp_path / "bad.tar.gz", [(_file("pkg/ok.py"), b""), (member, b"boom")])
    with pytest.raises(FetchError, match="refused member"):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "outside.py").exists() and not (tmp_path / "x.py").exists()


def test_a_zip_member_with_a_symlink_mode_is_refused_and_caps_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whl = tmp_path / "p-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        info = zipfile.ZipInfo("p/link.py")
        info.external_attr = 0o120777 << 16
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(FetchError, match="refused member"):
        safe_extract(whl, tmp_path / "out")
    many = _tar(tmp_path / "many.tar.gz", [(_file(f"p/{i}.py"), b"x") for i in range(5)])
    monkeypatch.setattr(distfetch, "MAX_MEMBERS", 3)
    with pytest.raises(FetchError, match="caps"):
        safe_extract(many, tmp_path / "out2")
    assert member_path("a/./b.py") == member_path("a/b.py")
    assert member_path("a\\..\\b") is None


FILES: list[dict[str, object]] = [
    {"filename": "MarkupSafe-2.1.0-cp39-cp39-manylinux_2_17_x86_64.whl", "url": "u1"},
    {"filename": "MarkupSafe-2.1.0.tar.gz", "url": "u2"},
    {"filename": "MarkupSafe-2.1.0.post1.tar.gz", "url": "u3"},
    {"filename": "MarkupSafe-2.0.1.tar.gz", "url": "u4", "yanked": "broken"},
    {"filename": "markupsafe-2.0.1-py3-none-any.whl", "url": "u5"},
    {"filename": "markupsafe-2.0.1-cp39-cp39-win32.whl", "url": "u6"},
]


def test_the_sdist_is_chosen_else_a_pure_wheel_and_yanked_files_never() -> None:
    assert choose_pypi_file(FILES, "markupsafe", "2.1.0") == FILES[1]
    assert choose_pypi_file(FILES, "MarkupSafe", "2.0.1") == FILES[4]
    assert choose_pypi_file(FILES, "markupsafe", "9.9") is None


def test_fetch_checks_the_index_hash_unpacks_once_and_serves_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _tar(tmp_path / "pkg-1.0.tar.gz", [(_file("pkg-1.0/pkg/__init__.py"), b"def f():\n    pass\n")])
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    calls: list[str] = []

    def files(package: str, index_url: str = "") -> list[dict[str, object]]:
        calls.append(package)
        return [{"filename": "pkg-1.0.tar.gz", "url": archive.as_uri(), "hashes": {"sha256": sha}}]

    monkeypatch.setattr(distfetch, "pypi_files", files)
    with pytest.raises(FetchError, match="refused download URL"):
        fetch("pypi", "pkg", "1.0", cache_dir=tmp_path / "cache")  # a file:// URL from a remote index
    local = tmp_path.as_uri()
    got = fetch("pypi", "pkg", "1.0", cache_dir=tmp_path / "cache", index_url=local)
    assert read_texts(got.root) == {"pkg-1.0/pkg/__init__.py": "def f():\n    pass\n"}
    again = fetch("pypi", "pkg", "1.0", cache_dir=tmp_path / "cache", index_url=local)
    assert again == got and calls == ["pkg", "pkg"]

    def wrong(package: str, index_url: str = "") -> list[dict[str, object]]:
        return [{"filename": "pkg-1.0.tar.gz", "url": archive.as_uri(), "hashes": {"sha256": "0" * 64}}]

    monkeypatch.setattr(distfetch, "pypi_files", wrong)
    with pytest.raises(FetchError, match="SHA-256"):
        fetch("pypi", "pkg", "1.0", cache_dir=tmp_path / "other", index_url=local)
    with pytest.raises(FetchError, match="refused package spec"):
        fetch("pypi", "pkg; rm -rf /", "1.0", cache_dir=tmp_path / "other")


def test_skipped_members_count_against_the_declared_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = _tar(tmp_path / "big.tar.gz", [(_file("p/data.bin"), b"\0" * 5000), (_file("p/a.py"), b"x")])
    monkeypatch.setattr(distfetch, "MAX_FILE_BYTES", 1000)  # the data file is skipped, not written...
    monkeypatch.setattr(distfetch, "MAX_DECLARED_BYTES", 4000)  # ...but still counted
    with pytest.raises(FetchError, match="caps"):
        safe_extract(big, tmp_path / "out")


def test_a_wheels_metadata_is_read_for_its_changelog(tmp_path: Path) -> None:
    whl = tmp_path / "p-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr("p/__init__.py", "")
        zf.writestr("p-1.0.dist-info/METADATA", "Name: p\n\nChanges\n=======\n\n1.0\n---\n- x\n")
    safe_extract(whl, tmp_path / "out")
    assert set(read_texts(tmp_path / "out")) == {"p/__init__.py", "p-1.0.dist-info/METADATA"}


@pytest.mark.parametrize(
    ("ecosystem", "package", "version"),
    [
        ("npm", "../../host-folder", "1.0.0"),  # `npm pack ../x` would pack a host folder
        ("npm", "/etc", "1.0.0"),
        ("npm", "..", ".."),
        ("pypi", "..", ".."),  # cache/dists/pypi/../.. is the cache itself (removed before a fetch)
        ("pypi", "pkg", ".."),
        ("npm", "lodash", "file:../x"),
        ("npm", "git+https://example.com/x.git", "1.0.0"),
    ],
)
def test_a_manifests_path_or_dots_never_reach_npm_or_leave_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ecosystem: str, package: str, version: str
) -> None:
    cache = tmp_path / "cache"
    keep = cache / "dists" / "kept.txt"
    keep.parent.mkdir(parents=True)
    keep.write_text("an earlier download")

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("nothing may be fetched for a refused spec")

    monkeypatch.setattr(distfetch, "pypi_files", never)
    monkeypatch.setattr(subprocess, "run", never)
    with pytest.raises(FetchError, match="refused package spec"):
        fetch(ecosystem, package, version, cache_dir=cache)
    assert keep.read_text() == "an earlier download"
