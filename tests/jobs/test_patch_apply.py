"""A stored patch applied to the files it was made against (:mod:`jobs.patch_apply`)."""

from __future__ import annotations

import pytest

from jobs.patch_apply import PatchDoesNotApply, patched_files
from jobs.repair.diffing import unified_diff

OLD = "".join(f"line {i}\n" for i in range(1, 31))


def test_modify_add_and_delete_round_trip() -> None:
    new = OLD.replace("line 3\n", "line 3\ninserted\n").replace("line 20\n", "").replace("line 29", "LINE 29")
    before = {"a.py": OLD, "gone.py": "bye\n"}
    after = {"a.py": new, "made.py": "hello\n"}
    patch = unified_diff(before, after, context=2)
    assert patched_files(patch, before.get) == {"a.py": new, "gone.py": None, "made.py": "hello\n"}


def test_zero_context_hunks() -> None:
    new = OLD.replace("line 1\n", "first\n").replace("line 30\n", "line 30\nlast\n")
    patch = unified_diff({"a.py": OLD}, {"a.py": new}, context=0)
    assert patched_files(patch, {"a.py": OLD}.get) == {"a.py": new}


def test_a_moved_on_file_is_refused() -> None:
    patch = unified_diff({"a.py": OLD}, {"a.py": OLD.replace("line 5", "five")})
    with pytest.raises(PatchDoesNotApply, match=r"a\.py: line"):
        patched_files(patch, {"a.py": OLD.replace("line 4", "four")}.get)
    with pytest.raises(PatchDoesNotApply, match="does not exist"):
        patched_files(patch, {}.get)


def test_paths_outside_the_repository_and_existing_new_files() -> None:
    evil = "--- a/../x.py\n+++ b/../x.py\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(PatchDoesNotApply, match="not a path inside the repository"):
        patched_files(evil, {"../x.py": "a\n"}.get)
    made = unified_diff({}, {"n.py": "x\n"})
    with pytest.raises(PatchDoesNotApply, match="already exists"):
        patched_files(made, {"n.py": "y\n"}.get)
    with pytest.raises(PatchDoesNotApply, match="no file"):
        patched_files("", {}.get)
