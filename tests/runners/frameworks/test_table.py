"""The frameworks table is the one list of frameworks: types, fail-fast flags and parsers agree."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runners import frameworks
from runners.commands import JUNIT_PATH, resolve_test_command
from runners.failfast import FAIL_FAST_FLAGS, NO_FAIL_FAST_ADDED
from runners.frameworks.row import Row
from runners.frameworks.shell import append_to_last
from runners.results import TEXT_PARSERS, detect_framework
from runners.results_types import FRAMEWORKS, Parsed


def test_every_framework_has_one_row() -> None:
    names = [row.name for row in frameworks.TABLE]
    assert len(names) == len(set(names))
    assert set(names) == set(FRAMEWORKS)
    assert set(TEXT_PARSERS) == set(names)


def test_fail_fast_flags_come_from_the_rows() -> None:
    assert set(FAIL_FAST_FLAGS) == {f for row in frameworks.TABLE for f in row.fail_fast}
    assert all(f.runner == row.name for row in frameworks.TABLE for f in row.fail_fast)
    assert NO_FAIL_FAST_ADDED == {"cargo": "--no-fail-fast"}
    assert {f.flag for f in FAIL_FAST_FLAGS if f.runner == "mocha"} == {"--bail", "-b"}


def test_rows_that_select_tests() -> None:
    selecting = {row.name for row in frameworks.TABLE if row.select is not None}
    assert selecting == {"pytest", "unittest", "go", "cargo", "jest", "vitest", "mocha", "maven", "gradle"}


def test_node_runners() -> None:
    assert frameworks.on_runtime("node") == {"jest", "vitest", "mocha", "node", "tap"}


def test_first_row_wins() -> None:
    # `mocha --reporter tap` names both mocha and tap: mocha's row comes first.
    assert frameworks.of_command("mocha --reporter tap test") == "mocha"
    assert frameworks.of_packages({"tape", "jest"}) == "jest"
    assert detect_framework("  3 passing (12ms)\n") == ["mocha"]


def test_jest_25_durations_are_not_part_of_ids() -> None:
    from pathlib import Path

    from runners.results import parse_jest_text

    # chrono-node 2.0.0 under jest 25.5.4 (verbose): `✕ Test - Casual date range (24ms)` then its ● block.
    text = (Path(__file__).resolve().parents[2] / "fixtures/outputs/jest25_chrono.txt").read_text()
    parsed = parse_jest_text(text)
    failed = sorted(r.id for r in parsed.results if r.outcome == "failed")
    assert failed == [
        "test/en/en_casual.test.js::Test - Casual date range",
        "test/en/en_weekday.test.js::Test - Single Expression",
    ]
    assert all(r.failure and r.failure.message for r in parsed.results if r.outcome == "failed")
    assert not [r.id for r in parsed.results if r.id.endswith("ms)")]
    # A title's own parentheses stay.
    assert "test/en/en_slash.test.js::Test - Impossible Dates and Unexpected Results" in {
        r.id for r in parsed.results
    }
    # jest 27's "(28 ms)" as well.
    spaced = "PASS a.test.js\n  ✓ adds (28 ms)\n  ✓ subs (1.2 s)\n"
    assert [r.id for r in parse_jest_text(spaced).results] == ["a.test.js::adds", "a.test.js::subs"]


def test_jest_26_and_29_ids_match_without_durations() -> None:
    from pathlib import Path

    from runners.results import parse_jest_text

    # jest 26.6.3 and 29.7.0, the same file: `✓ slow (really) (41 ms)`; the title's own parentheses stay.
    outputs = Path(__file__).resolve().parents[2] / "fixtures/outputs"
    want = {
        "./sum.test.js::calc adds": "passed",
        "./sum.test.js::calc slow (really)": "passed",
        "./sum.test.js::calc subs": "failed",
    }
    for major in (26, 29):
        parsed = parse_jest_text((outputs / f"jest{major}_verbose_durations.txt").read_text())
        assert {r.id: r.outcome for r in parsed.results} == want


def test_reports_come_from_the_rows() -> None:
    reports = {row.name: row.report for row in frameworks.TABLE if row.report != "text"}
    assert reports == {
        "pytest": "junit",
        "go": "go-json",
        "vitest": "junit",
        "jest": "junit",
        "node": "junit",
        "maven": "junit",
        "gradle": "junit",
    }
    assert frameworks.on_runtime("python") == {"pytest", "unittest"}


def test_a_new_framework_is_one_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A framework runners.commands has never heard of: its row alone decides the report and its needs.
    row = Row(
        name="ava",  # type: ignore[arg-type]  # not (yet) a Framework literal
        command=re.compile(r"\bava\b"),
        signature=None,
        parse=lambda text: Parsed(),
        runtime="node",
        adapt=lambda command, last: append_to_last(command, "--tap-junit"),
        report="junit",
        report_env=(("AVA_JUNIT_NAME", "junit.xml"),),
        report_exports='export AVA_OUT="$ARCS_OUT"; ',
        report_package="ava-junit",
        report_via_yarn=False,
    )
    monkeypatch.setattr(frameworks, "TABLE", (row, *frameworks.TABLE))
    monkeypatch.setattr(frameworks, "BY_NAME", {**frameworks.BY_NAME, "ava": row})
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"test": "ava"}}), encoding="utf-8")

    missing = resolve_test_command(tmp_path, explicit="ava")
    assert (missing.framework, missing.report, missing.shell) == ("ava", "text", "ava")
    assert "ava-junit is not installed: reading ava's text output" in missing.note

    (tmp_path / "node_modules" / "ava-junit").mkdir(parents=True)
    found = resolve_test_command(tmp_path, explicit="ava")
    assert found.report == "junit" and found.collect == (JUNIT_PATH,)
    assert found.shell.endswith('export AVA_OUT="$ARCS_OUT"; ava --tap-junit')
    assert found.env["AVA_JUNIT_NAME"] == "junit.xml"
    assert resolve_test_command(tmp_path, explicit="yarn ava").report == "text"
