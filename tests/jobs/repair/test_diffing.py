"""Unified diffs: git-compatible output (checked with a real `git apply`), parsing, stats, patch keys."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from jobs.repair.diffing import (
    DiffStats,
    diff_stats,
    normalize_patch,
    parse_patch,
    patch_key,
    unified_diff,
)
from jobs.repair.edits import apply_edits
from jobs.repair.model import Edit
from tests.conftest import MakeRepo, git

BASE = {
    "src/calc.py": "".join(f"line {i}\n" for i in range(1, 21)),
    "src/old.py": "gone = True\n",
    "docs/no_newline.txt": "first\nlast",
    "dir with space/file name.txt": "a\nb\n",
    "unicodé/ñame.py": "x = 1\n",
    "crlf.txt": "a\r\nb\r\n",
}


def git_apply_check(repo: Path, diff: str) -> None:
    patch = repo.parent / f"{repo.name}.patch"
    patch.write_text(diff, encoding="utf-8")
    git(repo, "apply", "--check", "-v", str(patch))


def git_apply(repo: Path, diff: str) -> None:
    patch = repo.parent / f"{repo.name}.patch"
    patch.write_text(diff, encoding="utf-8")
    git(repo, "apply", str(patch))


def read(repo: Path, rel: str) -> str:
    return (repo / rel).read_bytes().decode("utf-8")


# --- writing: accepted by git ----------------------------------------------------------------


def test_modify_create_delete_are_accepted_by_git_apply(make_repo: MakeRepo) -> None:
    repo = make_repo(BASE)
    lines = BASE["src/calc.py"].split("\n")
    lines[1], lines[14] = "LINE 2", "LINE 15"
    after = {
        "src/calc.py": "\n".join(lines),
        "src/old.py": None,
        "src/new.py": "def f():\n    return 1\n",
        "docs/no_newline.txt": "first\nLAST",
        "dir with space/file name.txt": "a\nB\n",
        "unicodé/ñame.py": "x = 2\n",
        "crlf.txt": "a\r\nB\r\n",
    }
    before = {path: BASE.get(path) for path in after}
    diff = unified_diff(before, after)
    git_apply_check(repo, diff)
    git_apply(repo, diff)
    for path, text in after.items():
        if text is None:
            assert not (repo / path).exists()
        else:
            assert read(repo, path) == text
    # git itself agrees on what changed
    numstat = git(repo, "diff", "--numstat", "HEAD").strip().splitlines()
    assert len(numstat) == diff_stats(diff).files - 1  # the new file is untracked


def test_diff_produced_by_apply_edits_round_trips_through_git(make_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_repo(BASE)
    ws = tmp_path / "ws"
    subprocess.run(["cp", "-a", str(repo), str(ws)], check=True)
    applied = apply_edits(
        ws,
        [
            Edit("src/calc.py", old="line 10\n", new="line ten\nline ten-and-a-half\n"),
            Edit("docs/no_newline.txt", kind="insert", line=2, new="after last"),
            Edit("src/old.py", kind="delete_file"),
            Edit("pkg/__init__.py", kind="create", new=""),
            Edit("pkg/mod.py", kind="create", new="VALUE = 1"),
        ],
    )
    diff = applied.diff()
    git_apply_check(repo, diff)
    git_apply(repo, diff)
    for change in applied.changes:
        if change.after is None:
            assert not (repo / change.path).exists()
        else:
            assert read(repo, change.path) == change.after


def test_executable_mode_is_written_and_accepted(make_repo: MakeRepo) -> None:
    repo = make_repo({"run.sh": "#!/bin/sh\necho hi\n"})
    (repo / "run.sh").chmod(0o755)
    git(repo, "add", "run.sh")
    git(repo, "commit", "-q", "-m", "exec")
    diff = unified_diff({"run.sh": "#!/bin/sh\necho hi\n"}, {"run.sh": None}, modes={"run.sh": 0o100755})
    assert "deleted file mode 100755\n" in diff
    git_apply_check(repo, diff)


def test_empty_new_and_deleted_files_have_no_hunks(make_repo: MakeRepo) -> None:
    repo = make_repo({"empty.txt": "", "keep.txt": "k\n"})
    diff = unified_diff({"empty.txt": "", "new_empty.txt": None}, {"empty.txt": None, "new_empty.txt": ""})
    assert "---" not in diff and "@@" not in diff
    git_apply_check(repo, diff)
    git_apply(repo, diff)
    assert not (repo / "empty.txt").exists() and (repo / "new_empty.txt").read_text() == ""


def test_output_matches_git_diff_exactly(make_repo: MakeRepo) -> None:
    old = "".join(f"{i}\n" for i in range(1, 30))
    new = old.replace("5\n", "five\n").replace("25\n", "").replace("29\n", "29")
    repo = make_repo({"f.txt": old, "g.txt": "x\n"})
    (repo / "f.txt").write_text(new)
    (repo / "g.txt").unlink()
    (repo / "h.txt").write_text("new\n")
    git(repo, "add", "-A")
    expected = git(repo, "diff", "--cached", "--no-color", "--no-ext-diff", "-U3", "HEAD")
    ours = unified_diff({"f.txt": old, "g.txt": "x\n"}, {"f.txt": new, "g.txt": None, "h.txt": "new\n"})
    assert ours == expected


def test_ordering_is_by_path_and_unchanged_files_are_skipped() -> None:
    diff = unified_diff(
        {"b.py": "1\n", "a.py": "1\n", "same.py": "s\n"}, {"b.py": "2\n", "a.py": "2\n", "same.py": "s\n"}
    )
    assert [p.path for p in parse_patch(diff)] == ["a.py", "b.py"]
    assert unified_diff({"x": "1\n"}, {"x": "1\n"}) == ""
    assert unified_diff({}, {}) == ""


def test_context_is_three_lines() -> None:
    old = "".join(f"{i}\n" for i in range(1, 21))
    diff = unified_diff({"f": old}, {"f": old.replace("10\n", "ten\n")})
    assert "@@ -7,7 +7,7 @@\n 7\n 8\n 9\n-10\n+ten\n 11\n 12\n 13\n" in diff


# --- parsing and stats ------------------------------------------------------------------------


def test_stats_count_files_and_lines() -> None:
    diff = unified_diff(
        {"a.py": "1\n2\n3\n", "b.py": "x\n", "c.py": None},
        {"a.py": "1\nTWO\n3\n4\n", "b.py": None, "c.py": "n1\nn2\n"},
    )
    assert diff_stats(diff) == DiffStats(files=3, added=4, removed=2)
    assert diff_stats(diff).lines == 6
    assert diff_stats("") == DiffStats(0, 0, 0)


def test_stats_are_not_fooled_by_content_that_looks_like_headers() -> None:
    diff = unified_diff({"a.txt": "-- old\nkeep\n"}, {"a.txt": "++ new\nkeep\n"})
    assert "\n--- old\n+++ new\n" in diff  # content lines that look like file headers
    assert diff_stats(diff) == DiffStats(files=1, added=1, removed=1)


def test_parse_reports_line_numbers_and_status() -> None:
    diff = unified_diff(
        {"a.py": "1\n2\n3\n", "gone.py": "g\n"}, {"a.py": "1\n3\n4\n", "gone.py": None, "new.py": "n\n"}
    )
    patches = {p.path: p for p in parse_patch(diff)}
    assert {path: p.status for path, p in patches.items()} == {
        "a.py": "modified",
        "gone.py": "deleted",
        "new.py": "added",
    }
    assert [(x.text, x.old_line) for x in patches["a.py"].lines("-")] == [("2", 2)]
    assert [(x.text, x.new_line) for x in patches["a.py"].lines("+")] == [("4", 3)]


def test_parse_plain_unified_diff_and_rename_headers() -> None:
    plain = "--- a/x.py\t2024-01-01\n+++ b/x.py\t2024-01-02\n@@ -1 +1 @@\n-a\n+b\n"
    (p,) = parse_patch(plain)
    assert p.path == "x.py" and p.status == "modified" and diff_stats(plain) == DiffStats(1, 1, 1)
    renamed = (
        "diff --git a/tests/test_a.py b/lib/a.py\nsimilarity index 100%\n"
        "rename from tests/test_a.py\nrename to lib/a.py\n"
    )
    (r,) = parse_patch(renamed)
    assert (r.old_path, r.new_path, r.status) == ("tests/test_a.py", "lib/a.py", "renamed")


def test_parse_quoted_names_and_binary() -> None:
    diff = unified_diff({"ü.py": "1\n"}, {"ü.py": "2\n"})
    assert '"a/\\303\\274.py"' in diff
    assert parse_patch(diff)[0].path == "ü.py"
    binary = (
        "diff --git a/img.png b/img.png\nindex 1..2 100644\nBinary files a/img.png and b/img.png differ\n"
    )
    (b,) = parse_patch(binary)
    assert b.binary and b.path == "img.png"


def test_parse_tolerates_form_feed_and_crlf_content() -> None:
    diff = unified_diff({"a.txt": "x\x0cy\nz\n"}, {"a.txt": "x\x0cy\nZ\n"})
    assert diff_stats(diff) == DiffStats(1, 1, 1)


# --- normalization and keys ------------------------------------------------------------------

BASE_JS = "function f(a, b) {\n  const x = a + b;\n  return x;\n}\n\nfunction g() {\n  return 1;\n}\n"


def js_diff(new: str) -> str:
    return unified_diff({"src/f.js": BASE_JS}, {"src/f.js": new})


def test_whitespace_only_differences_share_a_key() -> None:
    a = js_diff(BASE_JS.replace("const x = a + b;", "const x = a * b;"))
    b = js_diff(BASE_JS.replace("  const x = a + b;", "    const x=a*b;   "))
    c = js_diff(BASE_JS.replace("const x = a + b;", "const x = a * b;\n").replace("return 1;", "return 1;  "))
    assert patch_key(a) == patch_key(b) == patch_key(c)
    assert normalize_patch(a) == "modified src/f.js\n@2\n-const x=a+b;\n+const x=a*b;\n"


def test_context_size_does_not_change_the_key() -> None:
    new = BASE_JS.replace("return 1;", "return 2;")
    wide = unified_diff({"src/f.js": BASE_JS}, {"src/f.js": new}, context=8)
    narrow = unified_diff({"src/f.js": BASE_JS}, {"src/f.js": new}, context=0)
    assert patch_key(wide) == patch_key(narrow)


def test_different_changes_have_different_keys() -> None:
    keys = {
        patch_key(js_diff(BASE_JS.replace("a + b", "a * b"))),
        patch_key(js_diff(BASE_JS.replace("a + b", "a - b"))),
        patch_key(js_diff(BASE_JS.replace("return 1;", "return 2;"))),
        # the same added line at two different places is two different changes
        patch_key(js_diff(BASE_JS.replace("  return x;\n", "  log(x);\n  return x;\n"))),
        patch_key(js_diff(BASE_JS.replace("  return 1;\n", "  log(x);\n  return 1;\n"))),
        patch_key(unified_diff({"src/f.js": BASE_JS}, {"src/f.js": None})),
        patch_key(unified_diff({"src/g.js": None}, {"src/g.js": BASE_JS})),
    }
    assert len(keys) == 7


def test_indentation_counts_in_python() -> None:
    base = "for x in xs:\n    a()\nb()\n"
    moved_in = unified_diff({"m.py": base}, {"m.py": base.replace("\nb()", "\n    b()")})
    assert normalize_patch(moved_in) != ""  # re-indenting a Python line is a real change
    reformatted = unified_diff({"m.py": base}, {"m.py": base.replace("a()", "a( )")})
    assert normalize_patch(reformatted) == ""  # spaces inside the line are not


def test_whitespace_only_patch_normalizes_to_nothing() -> None:
    diff = js_diff(BASE_JS.replace("return x;", "return x;   ").replace("\n\nfunction g", "\n\n\nfunction g"))
    assert diff_stats(diff).lines > 0
    assert normalize_patch(diff) == ""
    assert patch_key(diff) == patch_key("")


def test_patch_key_is_a_stable_short_hex() -> None:
    key = patch_key(js_diff(BASE_JS.replace("a + b", "a * b")))
    assert len(key) == 16 and int(key, 16) >= 0
    assert key == patch_key(js_diff(BASE_JS.replace("a + b", "a * b")))


@pytest.mark.parametrize("n", [1, 2, 5])
def test_keys_equal_whatever_the_file_order(n: int) -> None:
    before = {f"f{i}.py": "a = 1\n" for i in range(n)}
    after = {f"f{i}.py": "a = 2\n" for i in range(n)}
    forward = unified_diff(before, after)
    parts = forward.split("diff --git ")[1:]
    backward = "".join("diff --git " + p for p in reversed(parts))
    assert patch_key(forward) == patch_key(backward)


def _random_text(rng: random.Random) -> str:
    words = ["a", "b", "", "  indented", "x = 1", "}", "\tTAB", "same", "same"]
    lines = [rng.choice(words) for _ in range(rng.randint(0, 12))]
    newline = "\r\n" if rng.random() < 0.15 else "\n"
    text = newline.join(lines)
    if lines and rng.random() < 0.7:
        text += newline
    return text


def _mutate(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        at = rng.randint(0, len(lines))
        if op < 0.4:
            lines.insert(at, rng.choice(["new", "", "same", "  deeper"]))
        elif op < 0.7 and lines:
            lines.pop(min(at, len(lines) - 1))
        elif lines:
            lines[min(at, len(lines) - 1)] += "!"
    return "\n".join(lines)


def test_random_patches_round_trip_through_git(make_repo: MakeRepo) -> None:
    rng = random.Random(1234)
    for case in range(12):
        before: dict[str, str | None] = {f"f{k}.txt": _random_text(rng) for k in range(3)}
        before["absent.txt"] = None
        after: dict[str, str | None] = {
            path: _mutate(rng, text) if text is not None else None for path, text in before.items()
        }
        after["f2.txt"] = None if rng.random() < 0.5 else after["f2.txt"]
        after["absent.txt"] = _random_text(rng) if rng.random() < 0.7 else None
        repo = make_repo({p: t.encode() for p, t in before.items() if t is not None}, name=f"fuzz{case}")
        diff = unified_diff(before, after)
        if not diff:
            continue
        git_apply_check(repo, diff)
        git_apply(repo, diff)
        for path, text in after.items():
            assert (read(repo, path) if (repo / path).exists() else None) == text, (case, path, diff)
        # git's own reading of the patch text agrees with ours
        patch_file = str(repo.parent / f"{repo.name}.patch")
        numstat = [line.split("\t") for line in git(repo, "apply", "--numstat", patch_file).splitlines()]
        expected = DiffStats(len(numstat), sum(int(n[0]) for n in numstat), sum(int(n[1]) for n in numstat))
        assert diff_stats(diff) == expected


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # many interleaved changes in a large file: matched via unique lines (patience), not quadratically
        (
            "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(1500)),
            "".join(f"def f{i}(x):\n    return x - {i}\n\n" for i in range(1500)),
        ),
        # large and without any unique line: one replace block, still a correct patch
        ("x\n" * 6000, "x\ny\n" * 3000),
    ],
    ids=["interleaved", "no-unique-lines"],
)
def test_large_rewrites_stay_correct(make_repo: MakeRepo, old: str, new: str) -> None:
    repo = make_repo({"big.txt": old})
    diff = unified_diff({"big.txt": old}, {"big.txt": new})
    git_apply(repo, diff)
    assert read(repo, "big.txt") == new
    assert patch_key(diff) == patch_key(diff)
