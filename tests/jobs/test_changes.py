"""Last green -> red: the ChangeSet value, read from a real git history."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.history import GitChangeError, merge_base, read_changeset, resolve
from jobs.repair.changes import ChangeSet, head_range
from tests.conftest import MakeRepo, git

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def commit(
    repo: Path, files: dict[str, str | None], title: str, author: str = "Ada <ada@example.com>"
) -> str:
    for rel, text in files.items():
        target = repo / rel
        if text is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--author", author, "-m", title)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def history(make_repo: MakeRepo) -> tuple[Path, str, list[str]]:
    repo = make_repo({"calc.py": CALC, "notes.txt": "a\n"})
    green = git(repo, "rev-parse", "HEAD").strip()
    shas = [
        commit(repo, {"notes.txt": "a\nb\n"}, "docs: notes"),
        commit(
            repo, {"calc.py": CALC.replace("a - b", "a + b")}, "calc: faster sub", "Bob <bob@example.com>"
        ),
        commit(repo, {"new.py": "X = 1\n", "notes.txt": None}, "add new, drop notes"),
    ]
    return repo, green, shas


def test_read_changeset_between_green_and_red(history: tuple[Path, str, list[str]]) -> None:
    repo, green, shas = history
    cs = read_changeset(repo, green)
    assert cs.base == green and cs.head == shas[-1]
    assert [c.sha for c in cs.commits] == shas  # oldest first
    assert [c.title for c in cs.commits] == ["docs: notes", "calc: faster sub", "add new, drop notes"]
    assert cs.commits[1].author == "Bob" and cs.commits[1].email == "bob@example.com"
    assert cs.commits[1].paths == ("calc.py",)
    assert cs.commits[2].paths == ("new.py", "notes.txt")
    assert {f.path: f.status for f in cs.files} == {
        "calc.py": "modified",
        "new.py": "added",
        "notes.txt": "deleted",
    }
    assert cs.changed_lines("calc.py") == ((3, 6),)  # -U3 context around line 6
    assert cs.touches("calc.py", 6) and not cs.touches("calc.py", 1)
    assert cs.introduced_by(shas[1][:7]) == f"introduced by {shas[1][:7]} (calc: faster sub, Bob)"
    assert cs.introduced_by("0000000") == ""
    assert not cs.truncated


def test_json_round_trip_and_summary(history: tuple[Path, str, list[str]]) -> None:
    repo, green, _ = history
    cs = read_changeset(repo, green, "HEAD")
    back = ChangeSet.from_json(cs.to_json())
    assert back == cs
    text = cs.summary()
    assert "calc: faster sub, Bob" in text and "modified calc.py lines 3-6" in text
    assert len(cs.summary(max_chars=80)) <= 80


def test_bounds_mark_the_changeset_truncated(history: tuple[Path, str, list[str]]) -> None:
    repo, green, shas = history
    cs = read_changeset(repo, green, max_commits=1)
    assert cs.truncated
    assert [c.sha for c in cs.commits] == shas  # every commit listed ...
    assert [bool(c.files) for c in cs.commits] == [False, False, True]  # ... the newest with its patch


def test_refs_are_checked(history: tuple[Path, str, list[str]]) -> None:
    repo, green, shas = history
    assert resolve(repo, "HEAD~3") == green
    with pytest.raises(GitChangeError):
        read_changeset(repo, "no-such-ref")
    with pytest.raises(GitChangeError):
        resolve(repo, "--output=/tmp/x")
    git(repo, "checkout", "-q", "-b", "side", green)
    side = commit(repo, {"side.txt": "s\n"}, "side")
    assert merge_base(repo, side, shas[-1]) == green


def test_head_range_of_a_pure_deletion_is_the_line_it_sits_at() -> None:
    from jobs.repair.diffing import parse_patch

    (patch,) = parse_patch("--- a/x\n+++ b/x\n@@ -2,1 +1,0 @@\n-gone\n")
    assert head_range(patch.hunks[0]) == (1, 1)
