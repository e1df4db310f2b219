"""``arcs triage`` finds the failing step whatever the form of the lines' timestamps (issue #23).

The recorded job log is re-stamped in the forms logs come in besides GitHub's own
(``2024-03-01T12:00:00.0137007Z``): no fraction, no zone, an offset, a space for the ``T``. On the
base commit only the forms ending in ``Z`` were stripped; with the others every line kept its
stamp, no ``##[group]Run`` fold was seen and the failing step was missed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runners.logs import analyze_log, clean_log

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
GITHUB_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)\.\d+Z ", re.M)


@pytest.mark.parametrize(
    "form",
    [
        r"\1T\2Z ",  # no fraction
        r"\1T\2 ",  # no fraction, no zone
        r"\1T\2+00:00 ",  # an offset
        r"\1T\2.123-0500 ",  # a fraction and a compact offset
        r"\1 \2 ",  # a space for the T
        r"\1 \2,123 ",  # a comma fraction (Python's logging)
    ],
)
def test_the_failing_step_is_found_whatever_the_timestamp_form(form: str) -> None:
    text = (LOGS / "python_pytest_assert.log").read_text(encoding="utf-8")
    expected = json.loads((LOGS / "python_pytest_assert.expected.json").read_text(encoding="utf-8"))
    stamped = GITHUB_STAMP.sub(form, text)
    assert stamped != text and GITHUB_STAMP.search(stamped) is None

    report = analyze_log(stamped, repo_files=expected["repo_files"])
    assert report.step is not None and report.step.command == expected["step"]
    assert report.failure_class == expected["class"] and list(report.test_ids) == expected["test_ids"]
    assert not any(re.match(r"\d{4}-\d\d-\d\d", line) for line in clean_log(stamped))


def test_only_the_leading_stamp_is_removed() -> None:
    line = "2024-03-01T12:00:00Z 2024-03-01 12:00:01,5 ERROR the app's own log line"
    assert clean_log(line) == ["2024-03-01 12:00:01,5 ERROR the app's own log line"]
