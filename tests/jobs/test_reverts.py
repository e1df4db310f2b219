"""Tier-0 revert candidates: undo one hunk or one commit, ranked by the failing frames."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jobs.history import read_changeset
from jobs.repair.edits import apply_edits
from jobs.repair.model import Failure, Frame
from jobs.repair.tier0.reverts import frame_culprit, revert_candidates
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

    # c1 added the line the failing frame points at: the likely culprit, its revert first, then
    # its own hunks best first (the f10 one), then the rest (c2's one hunk; c2 as a commit and the
    # cumulative hunks of m.py would be the same edits)
    assert [(c.kind, c.sha) for c in cands] == [("commit", c1), ("hunk", c1), ("hunk", c1), ("hunk", c2)]
    assert f"m.py:{line_f10 - 3}-" in cands[1].label and cands[1].score > cands[2].score
    assert cands[-1].score == 0 and cands[-1].sha == c2
    # the best hunk undoes the f10 change only
    applied = apply_edits(repo, cands[1].proposal.edits)
    text = (repo / "m.py").read_text()
    assert "return x + 10\n" in text and "return x - 1\n" in text
    assert applied.paths == ("m.py",)
    assert cands[1].proposal.proposer == "revert"


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


# --- culprit first (#14, session 5) ---------------------------------------------------------------


def test_a_bisected_culprits_own_hunks_replace_the_cumulative_ones_of_a_shared_file(
    make_repo: MakeRepo,
) -> None:
    repo = make_repo({"m.py": BASE})
    green = git(repo, "rev-parse", "HEAD").strip()
    # the culprit breaks f3 and renames nothing else; a later feature rewrites the lines around it
    step1 = BASE.replace("return x + 3\n", "return x - 3\n").replace(
        "return x + 9\n", "return x + 9  # nine\n"
    )
    culprit = commit(repo, {"m.py": step1}, "f3 and f9")
    feature = step1.replace("def f2(x):\n    return x + 2\n", "def f2(x):\n    return x + 22\n")
    feature = feature.replace("def f4(x):\n    return x + 4\n", "def f4(x):\n    return x + 44\n")
    commit(repo, {"m.py": feature}, "feature: f2 and f4")
    cs = read_changeset(repo, green)
    (cumulative,) = [f for f in cs.files if f.path == "m.py"]
    mixed = [h for h in cumulative.hunks if any("x - 3" in ln.text for ln in h.lines)]
    assert mixed and any("x + 22" in ln.text for ln in mixed[0].lines)  # the feature's lines are in it

    cands = revert_candidates(cs, [], read=reader(repo), culprit=culprit)

    assert cands[0].kind == "commit" and cands[0].sha == culprit
    assert [c.label.split(" of ")[-1] for c in cands[1:3]] == [culprit[:7], culprit[:7]]
    for cand in cands:
        if cand.sha == culprit:  # nothing of the culprit's undoes the feature's lines
            assert all("x + 22" not in e.old and "x + 44" not in e.old for e in cand.proposal.edits)
    f3_only = next(c for c in cands[1:3] if any("x - 3" in e.old for e in c.proposal.edits))
    apply_edits(repo, f3_only.proposal.edits)
    text = (repo / "m.py").read_text()
    assert "return x + 3\n" in text and "return x + 22\n" in text and "return x + 44\n" in text
    assert "return x + 9  # nine\n" in text


def test_a_culprit_whose_context_a_later_commit_reindented_is_still_reverted(make_repo: MakeRepo) -> None:
    src = "function f(a) {\n  if (a > 1) {\n    return a;\n  }\n  return 0;\n}\n"
    repo = make_repo({"index.js": src})
    green = git(repo, "rev-parse", "HEAD").strip()
    culprit = commit(repo, {"index.js": src.replace("a > 1", "a > 10")}, "stricter")
    tabs = "function f(a) {\n\tif (a > 10) {\n\t\treturn a;\n\t}\n\treturn 0;\n}\n"
    commit(repo, {"index.js": tabs}, "style: tabs")
    cs = read_changeset(repo, green)

    cands = revert_candidates(cs, [], read=reader(repo), culprit=culprit)

    assert cands[0].kind == "commit" and cands[0].sha == culprit
    apply_edits(repo, cands[0].proposal.edits)
    assert (repo / "index.js").read_text() == tabs.replace("a > 10", "a > 1")


def test_an_ambiguous_anchor_gives_no_candidate(make_repo: MakeRepo) -> None:
    src = "x = 1\ny = 2\nz = 3\n\nx = 1\n"
    repo = make_repo({"a.py": src})
    green = git(repo, "rev-parse", "HEAD").strip()
    culprit = commit(repo, {"a.py": src.replace("y = 2", "y = 5")}, "five")
    commit(repo, {"a.py": "x = 1\ny = 5\n\nq = 0\ny = 5\n"}, "rewrite")  # y = 5 twice, context gone
    cs = read_changeset(repo, green)
    cands = revert_candidates(cs, [], read=reader(repo), culprit=culprit)
    assert all(c.sha != culprit or c.kind != "commit" for c in cands)


def test_when_no_anchor_holds_the_three_way_revert_of_the_culprit_is_offered(make_repo: MakeRepo) -> None:
    src = "x = 1\ny = 2\nz = 3\n\nw = 4\n"
    repo = make_repo({"a.py": src})
    green = git(repo, "rev-parse", "HEAD").strip()
    culprit = commit(repo, {"a.py": src.replace("y = 2", "y = 5")}, "five")
    head = "x = 0\ny = 5\nz = 3\n\nw = 4\ny = 5\nz = 3\n"  # context changed, the line twice: no anchor
    commit(repo, {"a.py": head}, "copy")
    cs = read_changeset(repo, green)
    plain = revert_candidates(cs, [], read=reader(repo), culprit=culprit)
    assert all(c.kind != "commit" or c.sha != culprit for c in plain)
    asked: list[str] = []

    def three_way(sha: str) -> dict[str, str | None]:
        asked.append(sha)
        return {"a.py": head.replace("y = 5\nz = 3\n\n", "y = 2\nz = 3\n\n", 1)}

    cands = revert_candidates(cs, [], read=reader(repo), culprit=culprit, fallback=three_way)
    assert asked == [culprit] and cands[0].kind == "commit" and cands[0].sha == culprit
    apply_edits(repo, cands[0].proposal.edits)
    assert (repo / "a.py").read_text() == "x = 0\ny = 2\nz = 3\n\nw = 4\ny = 5\nz = 3\n"


def test_a_failing_tests_own_line_does_not_name_the_commit_that_added_the_test(make_repo: MakeRepo) -> None:
    repo = make_repo({"m.py": BASE, "test_m.py": "def test_f1():\n    assert True\n"})
    green = git(repo, "rev-parse", "HEAD").strip()
    tests = "def test_f1():\n    assert True\n\n\ndef test_f3():\n    assert f3(0) == 3\n"
    commit(repo, {"test_m.py": tests}, "test f3")
    culprit = commit(repo, {"m.py": BASE.replace("return x + 3\n", "return x - 3\n")}, "f3")
    cs = read_changeset(repo, green)
    at_test = Failure("test_m.py::test_f3", "AssertionError", path="test_m.py", line=6)
    assert frame_culprit(cs, [at_test], reader(repo)) == ""
    line = BASE.splitlines().index("    return x + 3") + 1
    at_code = Failure("test_m.py::test_f3", frames=(Frame("test_m.py", 6), Frame("m.py", line)))
    assert frame_culprit(cs, [at_code], reader(repo)) == culprit


# --- the bump is kept (#27) -----------------------------------------------------------------------

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "depupdate"


def test_a_revert_that_only_undoes_a_dependency_bump_is_not_offered(make_repo: MakeRepo) -> None:
    repo = make_repo(
        {
            "package.json": (FIX / "package.old.json").read_text(),
            "package-lock.json": (FIX / "package-lock.old.json").read_text(),
            "m.py": BASE,
        }
    )
    green = git(repo, "rev-parse", "HEAD").strip()
    code = commit(repo, {"m.py": BASE.replace("return x + 4\n", "return x - 4\n")}, "f4")
    bump = commit(
        repo,
        {
            "package.json": (FIX / "package.new.json").read_text(),
            "package-lock.json": (FIX / "package-lock.new.json").read_text(),
        },
        "build(deps): bump lodash and ms",
    )
    cs = read_changeset(repo, green)

    kept = revert_candidates(cs, [], read=reader(repo))
    every = revert_candidates(cs, [], read=reader(repo), keep_bumps=False)

    touches = {e.path for c in every for e in c.proposal.edits}
    assert {"package.json", "package-lock.json", "m.py"} <= touches  # without the guard: offered
    assert any(c.sha == bump for c in every)
    assert [(c.kind, c.sha) for c in kept] == [("hunk", code)]
    assert {e.path for c in kept for e in c.proposal.edits} == {"m.py"}
