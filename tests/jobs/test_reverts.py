"""Tier-0 revert candidates: undo one hunk or one commit, ranked by the failing frames."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jobs.repair.edits import apply_edits
from jobs.repair.model import Failure, Frame
from jobs.repair.tier0.reverts import revert_candidates
from runners.gitchanges import read_changeset
from tests.conftest import MakeRepo, git

BASE = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(12))


def commit(repo: Path, files: dict[str, str | None], title: str) -> str:
    for rel, text in files.items():
        if text is None:
            (repo / rel).unlink()
        else:
            (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", title)
    return git(repo, "rev-parse", "HEAD").strip()


def reader(repo: Path) -> Callable[[str], str | None]:
    def read(path: str) -> str | None:
        target = repo / path
        return target.read_text() if target.is_file() else None

    return read


def test_hunk_touching_the_failing_frame_ranks_first_and_reverts_exactly(make_repo: MakeRepo) -> None:
    repo = make_repo({"m.py": BASE, "other.py": "A = 1\n"})
    green = git(repo, "rev-parse", "HEAD").strip()
    broken = BASE.replace("return x + 1\n", "return x - 1\n").replace("return x + 10\n", "return x * 10\n")
    c1 = commit(repo, {"m.py": broken}, "tweak f1 and f10")
    c2 = commit(repo, {"other.py": "A = 2\n"}, "bump A")
    cs = read_changeset(repo, green)
    line_f10 = broken.splitlines().index("    return x * 10") + 1
    failure = Failure(
        "t::test_f10",
        "AssertionError",
        path="tests/t.py",
        line=3,
        frames=(Frame("tests/t.py", 3, "test_f10"), Frame("m.py", line_f10, "f10")),
    )

    cands = revert_candidates(cs, [failure], read=reader(repo))

    kinds = [(c.kind, c.label) for c in cands]
    assert kinds[0][0] == "hunk" and f"m.py:{line_f10 - 3}-" in kinds[0][1]
    assert cands[0].sha == c1 and cands[0].score > 0
    # both hunks of c1, c1 itself, and c2's one hunk (c2 as a commit would be the same edit)
    assert sorted((c.kind, c.sha) for c in cands) == sorted(
        [("hunk", c1), ("hunk", c1), ("hunk", c2), ("commit", c1)]
    )
    assert cands[-1].score == 0 and cands[-1].sha == c2
    # the best candidate undoes the f10 change only
    applied = apply_edits(repo, cands[0].proposal.edits)
    text = (repo / "m.py").read_text()
    assert "return x + 10\n" in text and "return x - 1\n" in text
    assert applied.paths == ("m.py",)
    assert cands[0].proposal.proposer == "revert"


def test_commit_revert_restores_added_and_deleted_files(make_repo: MakeRepo) -> None:
    repo = make_repo({"a.py": "A = 1\n", "gone.py": "G = 1\nH = 2\n"})
    green = git(repo, "rev-parse", "HEAD").strip()
    commit(repo, {"a.py": "A = 2\n"}, "change a")
    c2 = commit(repo, {"new.py": "N = 1\n", "gone.py": None}, "add new, remove gone")
    cs = read_changeset(repo, green)
    cands = revert_candidates(cs, [], read=reader(repo))
    (revert_c2,) = [c for c in cands if c.kind == "commit" and c.sha == c2]
    apply_edits(repo, revert_c2.proposal.edits)
    assert not (repo / "new.py").exists()
    assert (repo / "gone.py").read_text() == "G = 1\nH = 2\n"
    assert (repo / "a.py").read_text() == "A = 2\n"


def test_a_hunk_a_later_commit_rewrote_gives_no_commit_candidate(make_repo: MakeRepo) -> None:
    repo = make_repo({"a.py": "X = 1\n"})
    green = git(repo, "rev-parse", "HEAD").strip()
    c1 = commit(repo, {"a.py": "X = 2\n"}, "two")
    commit(repo, {"a.py": "X = 3\n"}, "three")
    cs = read_changeset(repo, green)
    cands = revert_candidates(cs, [], read=reader(repo))
    assert all(c.sha != c1 or c.kind != "commit" for c in cands)  # X = 2 is no longer there to undo
    assert [c.label for c in cands if c.kind == "hunk"] == ["hunk a.py:1-1"]


def test_limit(make_repo: MakeRepo) -> None:
    repo = make_repo({"m.py": BASE})
    green = git(repo, "rev-parse", "HEAD").strip()
    text = BASE
    for i in range(0, 12, 3):
        text = text.replace(f"return x + {i}\n", f"return x - {i}\n")
        commit(repo, {"m.py": text}, f"c{i}")
    cs = read_changeset(repo, green)
    assert len(revert_candidates(cs, [], read=reader(repo), limit=3)) == 3


def test_a_hunk_is_blamed_on_the_commit_that_introduced_it_not_the_last_to_touch_the_file(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo({"m.py": BASE})
    green = git(repo, "rev-parse", "HEAD").strip()
    step1 = BASE.replace("return x + 10\n", "return x * 10\n")
    culprit = commit(repo, {"m.py": step1}, "f10: multiply")
    commit(repo, {"m.py": step1.replace("return x + 1\n", "return x + 1  # one\n")}, "f1: comment")
    cs = read_changeset(repo, green)
    cands = revert_candidates(cs, [], read=reader(repo))
    (f10,) = [c for c in cands if c.kind == "hunk" and "x * 10" in c.proposal.edits[0].old]
    assert f10.sha == culprit
    assert f10.proposal.explanation.endswith(f"introduced by {culprit[:7]} (f10: multiply, ARCS Test)")
