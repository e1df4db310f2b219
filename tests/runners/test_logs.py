"""CI log analysis: the corpus in tests/fixtures/logs (one sidecar of expectations per log) and edge cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runners.logs import (
    FAILURE_CLASSES,
    REPAIRABLE_DEFAULT,
    analyze_log,
    clean_log,
    extract_locations,
    split_steps,
)

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
CORPUS = sorted(LOGS.glob("*.log"))


def expected(log: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(log.with_name(log.stem + ".expected.json").read_text(encoding="utf-8"))
    return data


def test_corpus_is_big_and_covers_every_class() -> None:
    assert len(CORPUS) >= 15
    classes = {expected(log)["class"] for log in CORPUS}
    assert classes == set(FAILURE_CLASSES)
    for log in CORPUS:
        assert log.with_name(log.stem + ".expected.json").is_file(), log.name


@pytest.mark.parametrize("log", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus(log: Path) -> None:
    exp = expected(log)
    report = analyze_log(log.read_text(encoding="utf-8"), repo_files=exp.get("repo_files"))
    assert report.failure_class == exp["class"], report.reason
    assert report.repairable == exp["repairable"]
    assert report.repairable == (exp["class"] in REPAIRABLE_DEFAULT)
    assert report.reason and "\n" not in report.reason
    if "step" in exp:
        assert report.step is not None
        assert report.step.title == exp["step"]
    if "test_ids" in exp:
        assert sorted(report.test_ids) == sorted(exp["test_ids"])
    refs = [str(r) for r in report.locations]
    for ref in exp.get("locations", []):
        assert ref in refs, f"{ref} not in {refs}"
    for bad in exp.get("no_locations", []):
        assert not any(bad in r for r in refs), f"{bad} in {refs}"
    for snippet in exp.get("error_contains", []):
        assert any(snippet in line for line in report.error_lines), f"{snippet!r} not in {report.error_lines}"
    for key in ("tool", "framework", "flaky_suspect"):
        if key in exp:
            assert getattr(report, key) == exp[key], key
    if "reason_contains" in exp:
        assert exp["reason_contains"] in report.reason
    # Non-repairable classes point nowhere in the code.
    if not report.repairable:
        assert report.locations == ()
    json.dumps(report.to_dict())


def test_corpus_logs_look_like_real_actions_logs() -> None:
    for log in CORPUS:
        text = log.read_text(encoding="utf-8")
        first = text.splitlines()[0]
        assert first[:4].isdigit() and first[27:29] == "Z ", log.name  # 2024-03-01T12:00:00.1234567Z
        assert "##[group]Run " in text and "##[endgroup]" in text, log.name


def test_clean_log_strips_timestamps_and_ansi() -> None:
    text = "2024-03-01T12:00:01.1234567Z \x1b[31mFAILED\x1b[0m tests/a.py::t\r\n2024-03-01T12:00:02.0000000Z done\n"
    assert clean_log(text)[:2] == ["FAILED tests/a.py::t", "done"]


def test_gh_cli_log_format() -> None:
    # `gh run view --log` prefixes every line with the job and step names.
    raw = (LOGS / "node_tsc.log").read_text(encoding="utf-8")
    prefixed = "\n".join(f"typecheck\tRun npx tsc --noEmit -p .\t{line}" for line in raw.splitlines())
    report = analyze_log(prefixed)
    assert report.failure_class == "build"
    assert [str(r) for r in report.locations] == ["src/user.ts:7", "src/user.ts:11"]


def test_split_steps_reads_scripts_and_actions() -> None:
    lines = clean_log(
        "\n".join(
            [
                "Complete job name: test",
                "##[group]Run actions/checkout@v4",
                "with:",
                "  repository: o/r",
                "##[endgroup]",
                "##[group]Run pip install -e .",
                "\x1b[36;1mpip install -e .\x1b[0m",
                "\x1b[36;1mpytest -q\x1b[0m",
                "shell: /usr/bin/bash -e {0}",
                "env:",
                "  FOO: bar",
                "##[endgroup]",
                "1 failed",
                "##[error]Process completed with exit code 1.",
                "Post job cleanup.",
            ]
        )
    )
    steps = split_steps(lines)
    assert [s.title for s in steps] == [
        "Set up job",
        "actions/checkout@v4",
        "pip install -e .",
        "Post job cleanup.",
    ]
    assert steps[1].uses and steps[1].script == "actions/checkout@v4"
    assert steps[2].script == "pip install -e .\npytest -q"
    assert steps[2].exit_code == 1


def test_multi_line_step_command_and_first_failing_step() -> None:
    log = "\n".join(
        [
            "##[group]Run make deps",
            "make deps",
            "make test",
            "shell: /usr/bin/bash -e {0}",
            "##[endgroup]",
            "--- FAIL: TestX (0.00s)",
            "    x_test.go:9: boom",
            "FAIL\texample.com/x\t0.01s",
            "##[error]Process completed with exit code 2.",
            "##[group]Run echo later",
            "echo later",
            "##[endgroup]",
            "##[error]Process completed with exit code 1.",
        ]
    )
    report = analyze_log(log)
    assert report.step is not None
    assert report.step.command == "make deps\nmake test"
    assert report.step.exit_code == 2
    assert report.failure_class == "test"
    assert report.test_ids == ("example.com/x::TestX",)


def test_windows_runner_paths_are_made_relative() -> None:
    log = "\n".join(
        [
            "##[group]Run pytest",
            "pytest",
            "##[endgroup]",
            'E     File "D:\\a\\calc\\calc\\src\\calc\\core.py", line 12',
            "E   SyntaxError: invalid syntax",
            "##[error]Process completed with exit code 2.",
        ]
    )
    report = analyze_log(log)
    assert report.failure_class == "build"
    assert [str(r) for r in report.locations] == ["src/calc/core.py:12"]


def test_repo_files_filter_locations() -> None:
    lines = [
        "src/app.py:3: error: boom",
        "tests/test_app.py:9: in test_x",
        "/home/runner/work/r/r/vendored/lib.py:1: in f",
        '  File "/usr/lib/python3.11/json/decoder.py", line 337, in decode',
    ]
    everything = [str(r) for r in extract_locations(lines)]
    assert everything == ["src/app.py:3", "tests/test_app.py:9", "vendored/lib.py:1"]
    only_repo = [str(r) for r in extract_locations(lines, repo_files={"src/app.py", "tests/test_app.py"})]
    assert only_repo == ["src/app.py:3", "tests/test_app.py:9"]


def test_urls_and_versions_are_not_file_references() -> None:
    lines = [
        "Downloading https://registry.npmjs.org/react/-/react-18.2.0.tgz",
        "connect ETIMEDOUT 104.16.27.35:443",
    ]
    assert extract_locations(lines) == []


def test_no_failing_step() -> None:
    report = analyze_log("2024-03-01T12:00:00.0000000Z ##[group]Run true\ntrue\n##[endgroup]\nall good\n")
    assert report.failure_class == "unknown"
    assert not report.repairable
    assert report.step is None


def test_unclassifiable_failure_says_so() -> None:
    log = "##[group]Run ./deploy.sh\n./deploy.sh\n##[endgroup]\nsomething odd\n##[error]Process completed with exit code 3."
    report = analyze_log(log)
    assert report.failure_class == "unknown"
    assert "exited with code 3" in report.reason


def test_repairable_classes_are_configurable() -> None:
    log = (LOGS / "python_ruff.log").read_text(encoding="utf-8")
    report = analyze_log(log, repairable={"test", "build"})
    assert report.failure_class == "lint"
    assert not report.repairable
    assert "not enabled" in report.reason


def test_test_failures_beat_a_network_word_in_the_output() -> None:
    # A failing test that mentions a connection problem is still a test failure (triage decides on flakiness).
    log = (LOGS / "flaky_pytest_rerun.log").read_text(encoding="utf-8")
    report = analyze_log(log)
    assert report.failure_class == "test"
    assert report.flaky_suspect


def test_network_failure_while_resolving_dependencies_is_infrastructure() -> None:
    log = "\n".join(
        [
            "##[group]Run pip install -r requirements.txt",
            "pip install -r requirements.txt",
            "##[endgroup]",
            "WARNING: Retrying (Retry(total=0)) after connection broken by 'ReadTimeoutError(\"HTTPSConnectionPool(host='pypi.org', port=443): Read timed out.\")'",
            "ERROR: Could not find a version that satisfies the requirement flask==3.0.2 (from versions: none)",
            "ERROR: No matching distribution found for flask==3.0.2",
            "##[error]Process completed with exit code 1.",
        ]
    )
    report = analyze_log(log)
    assert report.failure_class == "infrastructure"
    assert "network" in report.reason


def test_report_json_shape() -> None:
    report = analyze_log((LOGS / "python_pytest_assert.log").read_text(encoding="utf-8"))
    data = report.to_dict()
    assert data["class"] == "test"
    assert data["step"]["exit_code"] == 1
    assert data["job"] == "test (3.11)"
    assert {"path", "line", "column", "ref"} == set(data["locations"][0])
