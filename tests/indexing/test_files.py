"""File discovery (git-aware, skipping what is not worth indexing), safe reading, language detection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from indexing.files import (
    discover_files,
    is_generated,
    is_indexable,
    is_minified,
    is_test_path,
    read_text,
)
from indexing.languages import code_languages, language_for_path
from tests.conftest import MakeRepo, git, write_tree

# ------------------------------------------------------------------------------------------ languages


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("pkg/mod.py", "python"),
        ("stubs/mod.pyi", "python"),
        ("a.js", "javascript"),
        ("a.mjs", "javascript"),
        ("a.cjs", "javascript"),
        ("ui/App.jsx", "javascript"),
        ("a.ts", "typescript"),
        ("types/index.d.ts", "typescript"),
        ("a.mts", "typescript"),
        ("a.cts", "typescript"),
        ("ui/App.tsx", "tsx"),
        ("cmd/main.go", "go"),
        ("src/lib.rs", "rust"),
        ("src/main/java/A.java", "java"),
        ("README.md", "markdown"),
        ("docs/x.markdown", "markdown"),
        ("docs/index.rst", "rst"),
        ("README", "text"),
        ("notes.txt", "text"),
        ("pyproject.toml", "text"),
        ("ci.yaml", "text"),
        ("ci.yml", "text"),
        ("package.json", "text"),
        ("setup.cfg", "text"),
        ("tox.ini", "text"),
        ("Dockerfile", "text"),
        ("docker/Dockerfile.dev", "text"),
        ("Makefile", "text"),
        ("requirements-dev.txt", "text"),
        ("native/ext.c", "text"),
        ("Main.PY", "python"),
        ("logo.png", None),
        ("archive.tar.gz", None),
        ("data.csv", None),
        ("package-lock.json", None),
        ("Cargo.lock", None),
        ("go.sum", None),
        ("LICENSE", None),
        ("dist/app.min.js", None),
        ("noextension", None),
    ],
)
def test_language_for_path(path: str, language: str | None) -> None:
    assert language_for_path(path) == language


def test_code_languages() -> None:
    assert sorted(code_languages()) == ["go", "java", "javascript", "python", "rust", "tsx", "typescript"]


# ---------------------------------------------------------------------------------------- discovery


def test_discovers_indexable_tracked_files_sorted(make_repo: MakeRepo) -> None:
    repo = make_repo(
        {
            "src/app.py": "print('hi')\n",
            "src/util.ts": "export const x = 1;\n",
            "README.md": "# Hi\n",
            "docs/guide.rst": "Guide\n=====\n",
            "assets/logo.png": b"\x89PNG\r\n\x1a\n\0\0\0",
            "LICENSE": "MIT\n",
            "Makefile": "all:\n\ttrue\n",
            "pkg/__init__.py": "",
        }
    )
    assert discover_files(repo) == [
        "Makefile",
        "README.md",
        "docs/guide.rst",
        "pkg/__init__.py",
        "src/app.py",
        "src/util.ts",
    ]


def test_respects_gitignore_including_nested(make_repo: MakeRepo) -> None:
    repo = make_repo(
        {
            ".gitignore": "*.log\nbuild/\n",
            "sub/.gitignore": "secret.py\n!keep.log\n",
            "main.py": "x = 1\n",
            "sub/code.py": "y = 2\n",
        }
    )
    write_tree(
        repo,
        {
            "build/gen.py": "z = 3\n",
            "debug.log.txt": "not ignored: different suffix\n",
            "notes.log": "ignored\n",
            "sub/secret.py": "token = 'x'\n",
            "sub/keep.log": "kept by negation but .log is not an indexable language\n",
            "sub/deeper/secret.py": "also ignored by the nested rule\n",
            "sub/new.py": "untracked and not ignored\n",
            "other/secret.py": "the nested rule does not reach here\n",
        },
    )
    assert discover_files(repo) == [
        ".gitignore",
        "debug.log.txt",
        "main.py",
        "other/secret.py",
        "sub/.gitignore",
        "sub/code.py",
        "sub/new.py",
    ]


def test_tracked_file_matching_gitignore_is_still_indexed(make_repo: MakeRepo) -> None:
    repo = make_repo({"vendored.py": "x = 1\n"})
    (repo / ".gitignore").write_text("vendored.py\n")
    assert "vendored.py" in discover_files(repo)  # git tracks it, so it is part of the code


def test_exclude_patterns(make_repo: MakeRepo) -> None:
    repo = make_repo(
        {
            "node_modules/lib/index.js": "module.exports = 1;\n",
            "web/node_modules/x/y.js": "1;\n",
            "web/app.js": "2;\n",
            "web/vendor.bundle.js": "3;\n",
            "docs/a.md": "# A\n",
            "docs/keep.md": "# Keep\n",
            "tests/test_a.py": "def test(): pass\n",
        }
    )
    found = discover_files(
        repo, exclude=["node_modules/", "*.bundle.js", "docs/*.md", "!docs/keep.md", "/tests"]
    )
    assert found == ["docs/keep.md", "web/app.js"]


def test_skips_binary_generated_minified_oversized_and_non_utf8(make_repo: MakeRepo) -> None:
    long_line = "var a=" + "1+" * 600 + "1;\n"
    repo = make_repo(
        {
            "ok.py": "x = 1\n",
            "nul.py": b"x = 1\n\0\0binary\n",
            "latin1.py": "caf\u00e9 = 1\n".encode("latin-1"),
            "gen.go": "// Code generated by stringer; DO NOT EDIT.\n\npackage p\n",
            "gen_pb.py": '# -*- coding: utf-8 -*-\n# Protocol buffers\n# @generated by protoc\n"""x"""\n',
            "late_marker.py": "a = 1\n" * 5 + "# DO NOT EDIT below\n",
            "bundle.js": long_line,
            "long_prose.md": "# Title\n\n" + "word " * 210 + "\n",
            "big.py": "x = 1\n" * 300,
            "bom.py": "\ufeffx = 1\n".encode(),
        }
    )
    assert discover_files(repo, max_file_bytes=1500) == [
        "bom.py",
        "late_marker.py",
        "long_prose.md",
        "ok.py",
    ]
    assert "big.py" in discover_files(repo)  # only oversized under the small limit


def test_dirty_tree_untracked_included_deleted_excluded_symlinks_skipped(make_repo: MakeRepo) -> None:
    repo = make_repo({"a.py": "a = 1\n", "gone.py": "g = 1\n", "dir/b.py": "b = 1\n"})
    (repo / "gone.py").unlink()  # deleted but still tracked
    (repo / "a.py").write_text("a = 2\n")  # modified
    (repo / "new.py").write_text("n = 1\n")  # untracked
    (repo / "link.py").symlink_to(repo / "a.py")
    (repo / "outside.py").symlink_to("/etc/hostname")
    (repo / "linkdir").symlink_to(repo / "dir", target_is_directory=True)
    assert discover_files(repo) == ["a.py", "dir/b.py", "new.py"]


def test_committed_symlink_is_skipped(make_repo: MakeRepo) -> None:
    repo = make_repo({"real.py": "x = 1\n"}, commit=False)
    (repo / "alias.py").symlink_to("real.py")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "with symlink")
    assert discover_files(repo) == ["real.py"]


def test_subdirectory_of_a_repo_lists_paths_relative_to_it(make_repo: MakeRepo) -> None:
    repo = make_repo({"top.py": "t = 1\n", "pkg/mod.py": "m = 1\n", "pkg/sub/x.py": "x = 1\n"})
    assert discover_files(repo / "pkg") == ["mod.py", "sub/x.py"]


def test_plain_directory_without_git_is_walked(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            ".gitignore": "dist/\n*.tmp.py\n",
            "a.py": "a = 1\n",
            "b.tmp.py": "b = 1\n",
            "dist/out.js": "1;\n",
            "src/c.ts": "export {};\n",
            "src/.gitignore": "private/\n",
            "src/private/d.py": "d = 1\n",
            "other/private/e.py": "e = 1\n",
            ".git-not-a-repo/f.py": "f = 1\n",
        },
    )
    (tmp_path / ".hg").mkdir()
    (tmp_path / ".hg" / "x.py").write_text("hg internals\n")
    assert discover_files(tmp_path) == [
        ".git-not-a-repo/f.py",
        ".gitignore",
        "a.py",
        "other/private/e.py",
        "src/.gitignore",
        "src/c.ts",
    ]


def test_generated_and_minified_predicates() -> None:
    assert is_generated("// Code generated by mockgen. DO NOT EDIT.\npackage x\n")
    assert is_generated("#!/bin/sh\n\n\n\n# @generated\n")
    assert not is_generated("\n" * 5 + "# @generated\n")  # only the first five lines count
    assert not is_generated("# generated docs live elsewhere\n")
    assert is_minified("a\n" + "x" * 1001 + "\n")
    assert not is_minified(("x" * 999 + "\n") * 10)


# --------------------------------------------------------------------------------------- read_text


def test_read_text(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "a.py": "x = 1\r\ny = 2\n",
            "bom.py": "\ufeffz = 3\n".encode(),
            "bin.dat": b"ab\0cd",
            "latin.txt": "\u00e9t\u00e9\n".encode("latin-1"),
        },
    )
    (tmp_path / "link.py").symlink_to(tmp_path / "a.py")
    (tmp_path / "dir").mkdir()
    assert read_text(tmp_path, "a.py") == "x = 1\r\ny = 2\n"  # line endings untouched
    assert read_text(tmp_path, "bom.py") == "z = 3\n"
    assert read_text(tmp_path, "bin.dat") is None
    assert read_text(tmp_path, "latin.txt") is None
    assert read_text(tmp_path, "missing.py") is None
    assert read_text(tmp_path, "link.py") is None
    assert read_text(tmp_path, "dir") is None
    assert read_text(tmp_path, "../outside.py") is None
    assert read_text(tmp_path, "/etc/hostname") is None


def test_read_text_escape_through_symlinked_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("s = 1\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "evil").symlink_to(outside, target_is_directory=True)
    assert read_text(repo, "evil/secret.py") is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of permissions")
def test_read_text_permission_denied(tmp_path: Path) -> None:
    target = tmp_path / "locked.py"
    target.write_text("x = 1\n")
    target.chmod(0)
    try:
        assert read_text(tmp_path, "locked.py") is None
    finally:
        target.chmod(0o644)


# ------------------------------------------------------------------------------- per-file checks


def test_is_indexable_agrees_with_discovery(make_repo: MakeRepo) -> None:
    long_line = "var a=" + "1+" * 600 + "1;\n"
    repo = make_repo(
        {
            "ok.py": "x = 1\n",
            "nul.py": b"x = 1\n\0\0binary\n",
            "gen.go": "// Code generated by stringer; DO NOT EDIT.\n\npackage p\n",
            "bundle.js": long_line,
            "big.py": "x = 1\n" * 300,
            "image.png": b"\x89PNG\r\n",
            "vendor/lib.py": "v = 1\n",
            "docs/a.md": "# A\n",
        }
    )
    (repo / "link.py").symlink_to(repo / "ok.py")
    exclude = ["vendor/"]
    paths = ["ok.py", "nul.py", "gen.go", "bundle.js", "big.py", "image.png", "vendor/lib.py", "docs/a.md"]
    paths += ["link.py", "missing.py", "../escape.py", "/etc/hostname", ".git/config"]
    found = set(discover_files(repo, exclude=exclude, max_file_bytes=1500))
    for rel in paths:
        assert is_indexable(repo, rel, exclude=exclude, max_file_bytes=1500) == (rel in found), rel
    assert found == {"ok.py", "docs/a.md"}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_pricing.py", True),
        ("pkg/test_util.py", True),
        ("pkg/util_test.py", True),
        ("conftest.py", True),
        ("internal/ratelimit/bucket_test.go", True),
        ("test/errors.test.ts", True),
        ("web/button.spec.tsx", True),
        ("src/__tests__/a.js", True),
        ("tests/journal.rs", True),
        ("src/test/java/com/acme/FooTest.java", True),
        ("src/main/java/com/acme/Foo.java", False),
        ("stockroom/services/pricing.py", False),
        ("internal/ratelimit/bucket.go", False),
        ("src/errors.ts", False),
        ("src/contest.py", False),
        ("docs/testing-guide.md", False),
        ("attestation/sign.py", False),
        # Go's own test framework in a frame; a Python project's `testing/` folder stays test code.
        ("/opt/hostedtoolcache/go/1.22.1/x64/src/testing/testing.go", False),
        ("testing/test_capture.py", True),
        ("testing/helpers.py", True),
        ("testdata/cases.go", True),
    ],
)
def test_is_test_path(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected
