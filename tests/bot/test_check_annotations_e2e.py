"""ARCS's check run points at the code (issue #28, item 2): annotations at the failing test's line
and at every hunk of the proposed patch, sent in batches of 50, repository paths only.

A maintainer's ``/arcs fix`` on a pull request goes in as a signed ``issue_comment`` delivery
through the real webhook endpoint; the command and the publishing job run through the pipeline
against the strict GitHub double, which refuses more than 50 annotations per request, a path
outside the repository or a malformed annotation.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from jobs.engine import repository_spots
from jobs.repair.diffing import unified_diff
from jobs.repair.report import FailureSpot
from tests.bot import checks_world
from tests.bot.checks_world import APP_FILE, REPO, WRITER, World

world = checks_world.world  # the fixture

FIXED = "".join(f"value_{i} = {i + 1000}\n" if i % 5 == 0 else f"value_{i} = {i}\n" for i in range(1, 301))
"""Every fifth line changed: 60 hunks (with no context lines), more than one request's 50."""
SPOTS = (
    FailureSpot("tests/test_app.py::test_value", "tests/test_app.py", 5, "AssertionError: assert 3 == 2"),
    FailureSpot("tests/test_app.py::test_value", "/sandbox/ws/tests/test_app.py", 5, "a sandbox path"),
)


def test_the_check_run_points_at_the_failure_and_every_hunk(world: World) -> None:
    diff = unified_diff({"app.py": APP_FILE}, {"app.py": FIXED}, context=0)
    world.repair.outcome = replace(world.repair.outcome, patch=diff, files={"app.py": FIXED}, failures=SPOTS)
    answer = world.post("issue_comment", world.pr_comment("/arcs fix", user=WRITER))
    assert answer.status_code == 202 and answer.json()["status"] == "queued", answer.text
    assert world.drain() == [("handle_command", "fixed"), ("publish_result", "published")]

    (check,) = world.double.repos[REPO].check_runs.values()
    assert check["name"] == "ARCS" and check["conclusion"] == "success"
    assert check["external_id"] == str(world.store.attempts()[0].id)
    notes = check["annotations"]
    failures = [n for n in notes if n["annotation_level"] == "failure"]
    hunks = [n for n in notes if n["annotation_level"] == "notice"]
    assert [(n["path"], n["start_line"], n["end_line"]) for n in failures] == [("tests/test_app.py", 5, 5)]
    assert failures[0]["title"] == "tests/test_app.py::test_value"
    assert len(hunks) == 60 and {n["path"] for n in hunks} == {"app.py"}
    assert [n["start_line"] for n in hunks] == list(range(5, 301, 5))
    assert not any(n["path"].startswith("/") for n in notes)
    # 61 annotations: the completing update carries 50, a follow-up update the other 11.
    patches = world.double.mutations_matching("PATCH", r"/check-runs/\d+$")
    sizes = [len((m.body or {}).get("output", {}).get("annotations") or []) for m in patches]
    assert sorted(s for s in sizes if s) == [11, 50]


def test_no_fix_still_points_at_the_failing_line(world: World) -> None:
    world.repair.outcome = replace(
        world.repair.outcome, verdict="no_fix", fixed=False, patch="", files={}, failures=SPOTS[:1]
    )
    world.post("issue_comment", world.pr_comment("/arcs fix", user=WRITER))
    assert world.drain() == [("handle_command", "no_fix")]
    (check,) = world.double.repos[REPO].check_runs.values()
    assert check["conclusion"] == "neutral"
    assert [(n["path"], n["start_line"], n["annotation_level"]) for n in check["annotations"]] == [
        ("tests/test_app.py", 5, "failure")
    ]


def test_the_engine_keeps_only_regular_files_of_the_commit(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_app.py").write_text("x\n")
    (tmp_path / "link.py").symlink_to(tmp_path / "tests" / "test_app.py")
    (tmp_path / "made.py").write_text("new\n")
    spots = (
        FailureSpot("a", "tests/test_app.py", 1),
        FailureSpot("b", "/etc/passwd", 1),
        FailureSpot("c", "../outside.py", 1),
        FailureSpot("d", "link.py", 1),
        FailureSpot("e", "missing.py", 1),
        FailureSpot("f", "made.py", 1),
        FailureSpot("g", "tests", 1),
    )
    created = unified_diff({"made.py": None}, {"made.py": "new\n"})
    assert [s.test_id for s in repository_spots(tmp_path, spots, created)] == ["a"]
