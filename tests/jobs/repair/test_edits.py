"""apply_edits: validation before writing, atomicity, path safety, newline and mode preservation."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from jobs.repair.edits import MAX_FILE_BYTES, AppliedEdits, EditError, FileChange, apply_edits
from jobs.repair.model import Edit
from runners import wsfs
from tests.conftest import write_tree


def snapshot(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` (symlinks not followed) -> bytes."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            if not p.is_symlink():
                out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    write_tree(
        root,
        {
            "src/calc.py": "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
            "src/util.py": "X = 1\nY = 2\n",
            "README.md": "# demo\n",
        },
    )
    return root


def expect_error(ws: Path, edits: list[Edit]) -> EditError:
    before = snapshot(ws)
    with pytest.raises(EditError) as info:
        apply_edits(ws, edits)
    assert snapshot(ws) == before, "a failed apply must leave the workspace unchanged"
    return info.value


# --- replace ---------------------------------------------------------------------------------


def test_replace_unique_match(ws: Path) -> None:
    out = apply_edits(
        ws,
        [Edit("src/calc.py", old="def add(a, b):\n    return a - b", new="def add(a, b):\n    return a + b")],
    )
    assert (
        ws / "src/calc.py"
    ).read_text() == "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    assert out.paths == ("src/calc.py",)
    change = out.changes[0]
    assert change.before is not None and "return a - b\n\n\ndef sub" in change.before
    assert change.after == (ws / "src/calc.py").read_text()


def test_replace_ambiguous_match_names_count_and_lines(ws: Path) -> None:
    err = expect_error(ws, [Edit("src/calc.py", old="return a - b", new="return a + b")])
    assert err.index == 0 and err.path == "src/calc.py"
    assert err.reason.startswith("old text occurs 2 times in src/calc.py (at lines 2, 6)")
    assert "include more context" in err.reason
    assert str(err).startswith("edit #1 (src/calc.py): old text occurs 2 times")


def test_overlapping_occurrences_count_as_ambiguous(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("aaa\n")
    err = expect_error(tmp_path, [Edit("a.txt", old="aa", new="b")])
    assert "occurs 2 times" in err.reason


def test_replace_not_found_reports_closest_match(ws: Path) -> None:
    err = expect_error(ws, [Edit("src/calc.py", old="def add(a, c):\n    return a - c", new="x")])
    assert err.reason.startswith(
        "old text not found in src/calc.py (closest match at line 1: 'def add(a, b):'"
    )


def test_replace_not_found_notes_whitespace_only_difference(ws: Path) -> None:
    err = expect_error(ws, [Edit("src/calc.py", old="def sub(a, b):\n  return a - b", new="x")])
    assert "closest match at line 5" in err.reason
    assert "differs only in whitespace" in err.reason


def test_replace_not_found_without_similar_text(ws: Path) -> None:
    err = expect_error(ws, [Edit("src/util.py", old="completely unrelated words here", new="x")])
    assert err.reason == "old text not found in src/util.py"


def test_replace_empty_old_and_noop_are_errors(ws: Path) -> None:
    assert "old text is empty" in expect_error(ws, [Edit("src/util.py", old="", new="Z = 3\n")]).reason
    assert "identical" in expect_error(ws, [Edit("src/util.py", old="X = 1", new="X = 1")]).reason


def test_replace_missing_file(ws: Path) -> None:
    err = expect_error(ws, [Edit("src/nope.py", old="a", new="b")])
    assert err.reason == "file not found: src/nope.py"


def test_sequential_edits_to_one_file_see_each_other(ws: Path) -> None:
    out = apply_edits(
        ws,
        [
            Edit("src/util.py", old="X = 1", new="X = 10"),
            Edit("src/util.py", old="X = 10\nY = 2", new="X = 10\nY = 20"),  # only exists after edit 1
            Edit("src/util.py", kind="insert", line=0, new="# header"),
        ],
    )
    assert (ws / "src/util.py").read_text() == "# header\nX = 10\nY = 20\n"
    assert out.before["src/util.py"] == "X = 1\nY = 2\n"
    assert len(out.changes) == 1


def test_multi_file_edits(ws: Path) -> None:
    out = apply_edits(
        ws,
        [
            Edit("src/util.py", old="Y = 2", new="Y = 3"),
            Edit(
                "src/calc.py", old="def sub(a, b):\n    return a - b", new="def sub(a, b):\n    return b - a"
            ),
            Edit("docs/new.md", kind="create", new="hello"),
        ],
    )
    assert out.paths == ("docs/new.md", "src/calc.py", "src/util.py")  # sorted, whatever the edit order
    assert out.after["docs/new.md"] == "hello\n"
    assert out.before["docs/new.md"] is None


def test_edit_undone_by_later_edit_is_not_reported(ws: Path) -> None:
    out = apply_edits(
        ws, [Edit("src/util.py", old="X = 1", new="X = 9"), Edit("src/util.py", old="X = 9", new="X = 1")]
    )
    assert out.empty and out.changes == ()
    assert out.diff() == ""


def test_empty_edit_list_changes_nothing(ws: Path) -> None:
    before = snapshot(ws)
    assert apply_edits(ws, []) == AppliedEdits()
    assert snapshot(ws) == before


# --- atomicity ---------------------------------------------------------------------------------


def test_failure_in_later_edit_leaves_everything_unchanged(ws: Path) -> None:
    err = expect_error(
        ws,
        [
            Edit("src/util.py", old="X = 1", new="X = 2"),
            Edit("new/file.py", kind="create", new="pass\n"),
            Edit("README.md", kind="delete_file"),
            Edit("src/calc.py", old="no such text", new="y"),
        ],
    )
    assert err.index == 3
    assert not (ws / "new").exists()


def test_write_failure_rolls_back_files_already_written(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Writes go in path order; the last one (zz.txt) fails after a delete, a create (with a new
    # directory) and a modification were done: all three must be undone.
    write_tree(ws, {"a.txt": "one\n", "zz.txt": "two\n"})
    real_write = wsfs.write_bytes

    def failing_write(root: Path, rel: str, data: bytes, **kwargs: Any) -> None:
        if rel == "zz.txt":
            raise OSError(28, "No space left on device")
        real_write(root, rel, data, **kwargs)

    monkeypatch.setattr(wsfs, "write_bytes", failing_write)
    before = snapshot(ws)
    with pytest.raises(EditError) as info:
        apply_edits(
            ws,
            [
                Edit("a.txt", old="one", new="ONE"),
                Edit("README.md", kind="delete_file"),
                Edit("new/dir/x.py", kind="create", new="x = 1\n"),
                Edit("zz.txt", old="two", new="TWO"),
            ],
        )
    assert info.value.index == 3 and info.value.path == "zz.txt"
    assert info.value.reason == "could not write zz.txt: No space left on device"
    assert snapshot(ws) == before
    assert not (ws / "new").exists()


# --- create / insert / delete -----------------------------------------------------------------


def test_create_makes_parents_and_adds_final_newline(ws: Path) -> None:
    apply_edits(ws, [Edit("pkg/sub/mod.py", kind="create", new="x = 1")])
    assert (ws / "pkg/sub/mod.py").read_text() == "x = 1\n"


def test_create_existing_file_fails(ws: Path) -> None:
    assert expect_error(ws, [Edit("src/util.py", kind="create", new="x")]).reason.startswith(
        "file exists: src/util.py"
    )


def test_create_twice_in_one_batch_fails(ws: Path) -> None:
    err = expect_error(ws, [Edit("n.py", kind="create", new="a"), Edit("n.py", kind="create", new="b")])
    assert err.index == 1 and err.reason.startswith("file exists")


def test_create_under_a_file_fails(ws: Path) -> None:
    assert (
        "a parent path is a file" in expect_error(ws, [Edit("README.md/x.py", kind="create", new="a")]).reason
    )


def test_create_then_replace_in_same_batch(ws: Path) -> None:
    apply_edits(ws, [Edit("n.py", kind="create", new="a = 1\n"), Edit("n.py", old="a = 1", new="a = 2")])
    assert (ws / "n.py").read_text() == "a = 2\n"


def test_create_empty_file(ws: Path) -> None:
    out = apply_edits(ws, [Edit("empty.txt", kind="create", new="")])
    assert (ws / "empty.txt").read_text() == ""
    assert out.after == {"empty.txt": ""}


def test_insert_positions(ws: Path) -> None:
    apply_edits(ws, [Edit("src/util.py", kind="insert", line=1, new="Z = 0\n")])
    assert (ws / "src/util.py").read_text() == "X = 1\nZ = 0\nY = 2\n"
    apply_edits(ws, [Edit("src/util.py", kind="insert", line=3, new="END = 1")])
    assert (ws / "src/util.py").read_text() == "X = 1\nZ = 0\nY = 2\nEND = 1\n"


def test_insert_line_out_of_range(ws: Path) -> None:
    err = expect_error(ws, [Edit("src/util.py", kind="insert", line=3, new="x")])
    assert err.reason == "line out of range: src/util.py has 2 lines; insert after line 0..2"
    assert (
        "line out of range" in expect_error(ws, [Edit("src/util.py", kind="insert", line=-1, new="x")]).reason
    )


def test_insert_empty_text_fails(ws: Path) -> None:
    assert (
        "nothing to insert" in expect_error(ws, [Edit("src/util.py", kind="insert", line=0, new="")]).reason
    )


def test_delete_file(ws: Path) -> None:
    out = apply_edits(ws, [Edit("README.md", kind="delete_file")])
    assert not (ws / "README.md").exists()
    assert out.changes == (FileChange("README.md", "# demo\n", None),)


def test_delete_missing_file_fails(ws: Path) -> None:
    assert expect_error(ws, [Edit("gone.md", kind="delete_file")]).reason == "file not found: gone.md"


def test_delete_then_create_same_path(ws: Path) -> None:
    out = apply_edits(
        ws, [Edit("README.md", kind="delete_file"), Edit("README.md", kind="create", new="# new\n")]
    )
    assert (ws / "README.md").read_text() == "# new\n"
    assert out.changes[0].before == "# demo\n"


def test_unknown_kind(ws: Path) -> None:
    err = expect_error(ws, [Edit("README.md", kind="rename", old="a", new="b")])  # type: ignore[arg-type]
    assert "unknown edit kind 'rename'" in err.reason


# --- path safety ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("../outside.py", "path escapes the workspace"),
        ("src/../../outside.py", "path escapes the workspace"),
        ("/etc/passwd", "path escapes the workspace"),
        ("C:/x.py", "path escapes the workspace"),
        (".git/config", "inside .git"),
        ("sub/.git/hooks/pre-commit", "inside .git"),
        (".GIT/config", "inside .git"),
        ("", "empty path"),
        ("./", "empty path"),
        ("src\\calc.py", "forward slashes"),
    ],
)
def test_unsafe_paths_are_rejected(ws: Path, path: str, fragment: str) -> None:
    for kind in ("replace", "create", "delete_file"):
        err = expect_error(ws, [Edit(path, kind=kind, old="a", new="b")])  # type: ignore[arg-type]
        assert fragment in err.reason


def test_symlinked_directory_to_outside_is_rejected(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("KEY = 1\n")
    (ws / "link").symlink_to(outside, target_is_directory=True)
    for edit in (
        Edit("link/secret.py", old="KEY = 1", new="KEY = 2"),
        Edit("link/new.py", kind="create", new="x"),
    ):
        err = expect_error(ws, [edit])
        assert "path escapes the workspace" in err.reason and "symlink" in err.reason
    assert (outside / "secret.py").read_text() == "KEY = 1\n"
    assert not (outside / "new.py").exists()


def test_symlinked_file_to_outside_is_rejected(ws: Path, tmp_path: Path) -> None:
    (tmp_path / "target.txt").write_text("data\n")
    (ws / "f.txt").symlink_to(tmp_path / "target.txt")
    assert "path escapes the workspace" in expect_error(ws, [Edit("f.txt", old="data", new="x")]).reason
    assert "path escapes the workspace" in expect_error(ws, [Edit("f.txt", kind="delete_file")]).reason


def test_symlink_inside_workspace_names_its_target(ws: Path) -> None:
    (ws / "alias.py").symlink_to(ws / "src/util.py")
    err = expect_error(ws, [Edit("alias.py", old="X = 1", new="X = 2")])
    assert err.reason == "alias.py is a symlink to src/util.py; edit src/util.py instead"


def test_symlink_into_git_dir_is_rejected(ws: Path) -> None:
    (ws / ".git").mkdir()
    (ws / ".git/config").write_text("[core]\n")
    (ws / "cfg").symlink_to(ws / ".git", target_is_directory=True)
    assert "inside .git" in expect_error(ws, [Edit("cfg/config", old="[core]", new="[x]")]).reason


def test_symlinked_directory_inside_resolves_to_canonical_path(ws: Path) -> None:
    (ws / "lib").symlink_to(ws / "src", target_is_directory=True)
    out = apply_edits(
        ws, [Edit("lib/util.py", old="X = 1", new="X = 5"), Edit("src/util.py", old="Y = 2", new="Y = 6")]
    )
    assert out.paths == ("src/util.py",)
    assert (ws / "src/util.py").read_text() == "X = 5\nY = 6\n"


def test_dot_segments_are_normalized(ws: Path) -> None:
    out = apply_edits(ws, [Edit("./src//util.py", old="X = 1", new="X = 3")])
    assert out.paths == ("src/util.py",)


def test_directory_is_not_a_file(ws: Path) -> None:
    assert expect_error(ws, [Edit("src", old="a", new="b")]).reason == "src is a directory"


# --- file kinds ------------------------------------------------------------------------------


def test_binary_and_non_utf8_files_are_refused(ws: Path) -> None:
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (ws / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    assert "binary file" in expect_error(ws, [Edit("img.png", old="PNG", new="GIF")]).reason
    assert "not UTF-8" in expect_error(ws, [Edit("latin1.txt", old="caf", new="bar")]).reason


def test_large_file_is_refused(ws: Path) -> None:
    (ws / "big.txt").write_text("x" * (MAX_FILE_BYTES + 1))
    assert "too large" in expect_error(ws, [Edit("big.txt", old="x", new="y")]).reason


def test_lone_surrogate_in_new_text_is_an_edit_error(ws: Path) -> None:
    assert (
        "not valid Unicode" in expect_error(ws, [Edit("src/util.py", old="X = 1", new="X = '\ud800'")]).reason
    )


# --- newline style and mode ----------------------------------------------------------------------


def test_crlf_file_keeps_crlf_and_matches_lf_old_text(tmp_path: Path) -> None:
    (tmp_path / "w.py").write_bytes(b"a = 1\r\nb = 2\r\nc = 3\r\n")
    out = apply_edits(tmp_path, [Edit("w.py", old="a = 1\nb = 2\n", new="a = 1\nb = 20\nb2 = 3\n")])
    assert (tmp_path / "w.py").read_bytes() == b"a = 1\r\nb = 20\r\nb2 = 3\r\nc = 3\r\n"
    assert out.after["w.py"] == "a = 1\r\nb = 20\r\nb2 = 3\r\nc = 3\r\n"
    apply_edits(tmp_path, [Edit("w.py", kind="insert", line=1, new="z = 0")])
    assert (tmp_path / "w.py").read_bytes() == b"a = 1\r\nz = 0\r\nb = 20\r\nb2 = 3\r\nc = 3\r\n"


def test_missing_trailing_newline_is_preserved(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_bytes(b"one\ntwo")
    apply_edits(tmp_path, [Edit("n.txt", old="two\n", new="TWO\n")])  # `old` may end with the missing newline
    assert (tmp_path / "n.txt").read_bytes() == b"one\nTWO"
    apply_edits(tmp_path, [Edit("n.txt", kind="insert", line=2, new="three\n")])
    assert (tmp_path / "n.txt").read_bytes() == b"one\nTWO\nthree"


def test_trailing_newline_is_kept_when_new_text_drops_it(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_bytes(b"one\ntwo\n")
    apply_edits(tmp_path, [Edit("n.txt", old="two\n", new="2")])
    assert (tmp_path / "n.txt").read_bytes() == b"one\n2\n"


def test_mixed_newlines_are_matched_byte_for_byte(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_bytes(b"a\r\nb\nc\n")
    apply_edits(tmp_path, [Edit("m.txt", old="b\nc", new="B\nC")])
    assert (tmp_path / "m.txt").read_bytes() == b"a\r\nB\nC\n"


def test_created_file_with_crlf_text_keeps_it(tmp_path: Path) -> None:
    apply_edits(tmp_path, [Edit("w.bat", kind="create", new="echo 1\r\necho 2")])
    assert (tmp_path / "w.bat").read_bytes() == b"echo 1\r\necho 2\r\n"


def test_file_mode_is_preserved(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    out = apply_edits(tmp_path, [Edit("run.sh", old="echo hi", new="echo bye")])
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert out.modes == {"run.sh": 0o100755}
    assert "index " in out.diff() and " 100755\n" in out.diff()


def test_no_temporary_files_are_left_behind(ws: Path) -> None:
    apply_edits(ws, [Edit("src/util.py", old="X = 1", new="X = 2")])
    assert sorted(p.name for p in (ws / "src").iterdir()) == ["calc.py", "util.py"]


def test_edit_error_round_trips_through_pickle() -> None:
    import pickle

    err = EditError(2, "a.py", "file not found: a.py")
    back = pickle.loads(pickle.dumps(err))
    assert (back.index, back.path, back.reason) == (2, "a.py", "file not found: a.py")
    assert str(back) == "edit #3 (a.py): file not found: a.py"
