"""The check run's annotations and buttons (pure builders, :mod:`jobs.render_checks`)."""

from __future__ import annotations

import pytest

from jobs import render_checks
from jobs.render_checks import (
    MAX_ANNOTATIONS,
    MAX_ANNOTATIONS_PER_REQUEST,
    annotation_batches,
    check_actions,
    check_annotations,
    failure_annotations,
    patch_annotations,
    repo_path,
)
from jobs.repair.diffing import unified_diff
from jobs.repair.model import Failure, Frame
from jobs.repair.report import FailureSpot, RepairReport, failure_spots
from jobs.summary import RepairSummary

OLD = "".join(f"line {i}\n" for i in range(1, 21))


def _changed(*lines: int) -> str:
    return "".join(f"line {i} changed\n" if i in lines else f"line {i}\n" for i in range(1, 21))


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("src/app.py", "src/app.py"),
        ("./src/app.py", "src/app.py"),
        ("/workspace/src/app.py", None),
        ("/home/runner/work/r/r/app.py", None),
        ("C:/src/app.py", None),
        ("src\\app.py", None),
        ("../outside.py", None),
        ("src/../../etc/passwd", None),
        (".git/config", None),
        ("", None),
        ("src//app.py", None),
    ],
)
def test_only_repository_relative_paths(path: str, expected: str | None) -> None:
    assert repo_path(path) == expected


def test_failure_annotations_at_the_failing_lines() -> None:
    spots = [
        FailureSpot("tests/test_a.py::test_x", "tests/test_a.py", 12, "AssertionError: assert 3 == 2"),
        FailureSpot("tests/test_a.py::test_x", "tests/test_a.py", 12, "again"),  # same place: once
        FailureSpot("t::host", "/tmp/sandbox/tests/test_a.py", 3, "host path"),  # never sent
        FailureSpot("t::zero", "tests/test_a.py", 0, "no line"),
    ]
    (note,) = failure_annotations(spots)
    assert note == {
        "path": "tests/test_a.py",
        "start_line": 12,
        "end_line": 12,
        "annotation_level": "failure",
        "message": "tests/test_a.py::test_x failed here: AssertionError: assert 3 == 2",
        "title": "tests/test_a.py::test_x",
    }


def test_patch_annotations_at_each_hunk_on_the_lines_it_replaces() -> None:
    diff = unified_diff({"app.py": OLD}, {"app.py": _changed(3, 15)}, context=1)
    notes = patch_annotations(diff)
    assert [(n["path"], n["start_line"], n["end_line"], n["annotation_level"]) for n in notes] == [
        ("app.py", 2, 4, "notice"),
        ("app.py", 14, 16, "notice"),
    ]
    assert notes[0]["title"] == "ARCS changed this"
    assert "lines 2-4 in the fix" in notes[0]["message"] and "+1 -1" in notes[0]["message"]


def test_inserted_lines_and_new_files() -> None:
    grown = OLD.replace("line 5\n", "line 5\nextra a\nextra b\n")
    diff = unified_diff({"app.py": OLD, "new.py": None}, {"app.py": grown, "new.py": "x = 1\n"}, context=0)
    (note,) = patch_annotations(diff)  # new.py is not on the commit the check run is on
    assert (note["path"], note["start_line"], note["end_line"]) == ("app.py", 5, 5)
    assert "lines 6-7 in the fix" in note["message"] and "+2 -0" in note["message"]


def test_deleted_file_and_unsafe_diff_paths() -> None:
    diff = unified_diff({"old.py": "a\nb\n"}, {"old.py": None})
    (note,) = patch_annotations(diff)
    assert (note["path"], note["start_line"], note["end_line"]) == ("old.py", 1, 2)
    assert "deletes this file" in note["message"]
    evil = "--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n"
    assert patch_annotations(evil) == []


def test_check_annotations_failures_first_then_hunks_capped() -> None:
    many_lines = "".join(f"v{i}\n" for i in range(1, 1001))
    changed = "".join(f"v{i}!\n" if i % 5 == 0 else f"v{i}\n" for i in range(1, 1001))
    diff = unified_diff({"big.py": many_lines}, {"big.py": changed}, context=0)
    assert len(patch_annotations(diff)) == 200
    spots = tuple(FailureSpot(f"t::{i}", "tests/t.py", i, "boom") for i in range(1, 80))
    notes = check_annotations(RepairSummary(verdict="fixed", fixed=True, diff=diff, failure_spots=spots))
    assert len(notes) == MAX_ANNOTATIONS
    levels = [n["annotation_level"] for n in notes]
    assert (
        levels[: render_checks.MAX_FAILURE_ANNOTATIONS] == ["failure"] * render_checks.MAX_FAILURE_ANNOTATIONS
    )
    assert set(levels[render_checks.MAX_FAILURE_ANNOTATIONS :]) == {"notice"}


def test_batches_of_fifty() -> None:
    notes = [{"n": i} for i in range(MAX_ANNOTATIONS + 7)]
    batches = annotation_batches(notes)
    assert [len(b) for b in batches] == [50, 50, 50]
    assert all(len(b) <= MAX_ANNOTATIONS_PER_REQUEST for b in batches)
    assert annotation_batches([]) == []
    assert [len(b) for b in annotation_batches(notes[:51])] == [50, 1]


def test_actions_within_githubs_limits() -> None:
    actions = check_actions(
        render_checks.ACTION_RERUN, "unknown", render_checks.ACTION_APPLY, render_checks.ACTION_RERUN
    )
    assert [a["identifier"] for a in actions] == ["arcs-rerun", "arcs-apply"]
    for label, description in render_checks.ACTIONS.values():
        assert len(label) <= 20 and len(description) <= 40
    assert all(len(identifier) <= 20 for identifier in render_checks.ACTIONS)


def test_failure_spots_from_a_run_and_the_report_round_trip() -> None:
    failures = [
        Failure(
            "t::a",
            "AssertionError",
            "assert 3 == 2\n  where 3 = f()",
            "tests/t.py",
            7,
            (Frame("tests/t.py", 7),),
        ),
        Failure("t::a", "AssertionError", "dup", "tests/t.py", 7),
        Failure("t::b", "", "no location"),
    ]
    spots = failure_spots(failures)
    assert spots == (FailureSpot("t::a", "tests/t.py", 7, "AssertionError: assert 3 == 2 where 3 = f()"),)
    report = RepairReport(verdict="no_fix", failures=spots)
    assert RepairReport.from_json(report.to_json()).failures == spots
    # A stored report from before the field, or a bad record, reads as none.
    data = report.to_json()
    data["failures"] = [{"path": "x.py", "line": "seven"}, "junk"]
    assert RepairReport.from_json(data).failures == ()
    del data["failures"]
    assert RepairReport.from_json(data).failures == ()
