"""JavaScript test-runner text and TAP: parses jest's and vitest's reporters
(:func:`parse_jest_text`, :func:`parse_vitest_text`), ``node --test``'s TAP reporter
(:func:`parse_node_tap`) and any other TAP stream such as ``tape``/``tap`` (:func:`parse_tap_text`,
on top of :mod:`runners.tap`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from runners.results_frames import _VITEST_FRAME, _failure, extract_frames
from runners.results_junit import _float, _node_is_path
from runners.results_types import Frame, Outcome, Parsed, TestFailure, TestResult, strip_ansi
from runners.tap import TapStream, TapTest, parse_tap, tap_yaml

# --------------------------------------------------------------------------- jest / vitest

_JEST_FILE = re.compile(r"^\s*(?P<status>PASS|FAIL)\s+(?P<file>\S+)(?: \([\d.]+ ?m?s\))?\s*$")
_JEST_CASE = re.compile(r"^(?P<indent>\s+)(?P<mark>[✓✕○√×✔✘✎]) (?P<title>.+?)(?: \(\d+(?:\.\d+)? ?m?s\))?$")
_JEST_BULLET = re.compile(r"^\s+● (?P<title>.+)$")
_JEST_CODE = re.compile(r"^\s*(?:>\s*)?\d+ \|")


def parse_jest_text(text: str) -> Parsed:
    """Parse jest's default reporter (verbose ``✓``/``✕`` lines add passed tests)."""
    lines = strip_ansi(text).splitlines()
    outcomes: dict[str, Outcome] = {}
    details: dict[str, TestFailure] = {}
    errors: list[TestFailure] = []
    current_file = ""
    stack: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := _JEST_FILE.match(line):
            current_file, stack = m["file"], []
            i += 1
            continue
        if line.startswith(("Test Suites:", "Tests:", "Snapshots:", "Time:", "Ran all test suites")):
            i += 1
            continue
        if m := _JEST_BULLET.match(line):
            title = m["title"].strip()
            if title == "Console":
                i += 1
                continue
            j = i + 1
            body: list[str] = []
            while (
                j < len(lines)
                and not _JEST_BULLET.match(lines[j])
                and not _JEST_FILE.match(lines[j])
                and not lines[j].startswith("Test Suites:")
            ):
                body.append(lines[j])
                j += 1
            i = j
            if title == "Test suite failed to run":
                errors.append(_jest_failure(current_file or "suite", body, default_file=current_file or None))
                continue
            full = " ".join(part.strip() for part in title.split(" › "))
            test_id = f"{current_file}::{full}" if current_file else full
            details[test_id] = _jest_failure(test_id, body)
            outcomes[test_id] = "failed"
            continue
        if current_file and (m := _JEST_CASE.match(line)):
            indent = len(m["indent"])
            while stack and stack[-1][0] >= indent:
                stack.pop()
            full = " ".join([*(t for _, t in stack), m["title"].strip()])
            mark = m["mark"]
            oc: Outcome = "passed" if mark in "✓√✔" else "failed" if mark in "✕×✘" else "skipped"
            outcomes.setdefault(f"{current_file}::{full}", oc)
            i += 1
            continue
        if current_file and line.strip() and line.startswith("  ") and not line.lstrip().startswith("●"):
            indent = len(line) - len(line.lstrip())
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, line.strip()))
        i += 1
    results = [
        TestResult(tid, oc, None, (details.get(tid) or TestFailure(id=tid)) if oc == "failed" else None)
        for tid, oc in outcomes.items()
    ]
    return Parsed(tuple(results), tuple(errors))


def _jest_failure(test_id: str, body: Sequence[str], default_file: str | None = None) -> TestFailure:
    message: list[str] = []
    for line in body:
        s = line.strip()
        if _JEST_CODE.match(line) or s.startswith("at ") or (s.startswith("|") and message):
            break
        if s or message:
            message.append(s)
    type_: str | None = None
    if message and (
        m := re.match(r"^(?P<type>[A-Z]\w*(?:Error|Exception)|Error)(?:: (?P<msg>.*))?$", message[0])
    ):
        type_ = m["type"]
        message[0] = m["msg"] or ""
    frames = extract_frames("\n".join(body))
    return _failure(test_id, type_=type_, message="\n".join(message), frames=frames, file=default_file)


_VITEST_FAIL = re.compile(r"^\s*FAIL\s+(?P<file>\S+) > (?P<title>.+?)\s*$")
_VITEST_SUITE_FAIL = re.compile(r"^\s*FAIL\s+(?P<file>\S+)(?: \[ (?P<where>\S+) \])?\s*$")
_VITEST_CASE = re.compile(r"^\s*(?P<mark>[✓×↓❯]) (?P<file>\S+) > (?P<title>.+?)(?: \d+(?:\.\d+)?m?s)?$")
_VITEST_RULE = re.compile(r"^\s*⎯{3,}")


def parse_vitest_text(text: str) -> Parsed:
    """Parse vitest's default/verbose reporter."""
    lines = strip_ansi(text).splitlines()
    outcomes: dict[str, Outcome] = {}
    details: dict[str, TestFailure] = {}
    errors: list[TestFailure] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _VITEST_FAIL.match(line)
        ms = None if m else _VITEST_SUITE_FAIL.match(line)
        if m or ms:
            j = i + 1
            body: list[str] = []
            while (
                j < len(lines) and not _VITEST_RULE.match(lines[j]) and not re.match(r"^\s*FAIL\s", lines[j])
            ):
                body.append(lines[j])
                j += 1
            i = j
            failure = _vitest_failure("", body)
            if m:
                title = " ".join(p.strip() for p in m["title"].split(" > "))
                test_id = f"{m['file']}::{title}"
                details[test_id] = replace(failure, id=test_id)
                outcomes[test_id] = "failed"
            elif ms:
                errors.append(replace(failure, id=ms["file"], file=failure.file or ms["file"]))
            continue
        if m2 := _VITEST_CASE.match(line):
            title = " ".join(p.strip() for p in m2["title"].split(" > "))
            test_id = f"{m2['file']}::{title}"
            mark = m2["mark"]
            oc: Outcome = "passed" if mark == "✓" else "skipped" if mark == "↓" else "failed"
            outcomes.setdefault(test_id, oc)
        i += 1
    results = [
        TestResult(tid, oc, None, (details.get(tid) or TestFailure(id=tid)) if oc == "failed" else None)
        for tid, oc in outcomes.items()
    ]
    return Parsed(tuple(results), tuple(errors))


def _vitest_failure(test_id: str, body: Sequence[str]) -> TestFailure:
    type_: str | None = None
    message: list[str] = []
    for line in body:
        s = line.strip()
        if _VITEST_FRAME.match(line) or re.match(r"^\d+\|", s):
            break
        if not message and (m := re.match(r"^(?P<type>[A-Z]\w*(?:Error|Exception)|Error): (?P<msg>.*)$", s)):
            type_ = m["type"]
            message.append(m["msg"])
            continue
        if message and s.startswith(("- Expected", "+ Received")):
            break
        if s or message:
            message.append(s)
    return _failure(test_id, type_=type_, message="\n".join(message), frames=extract_frames("\n".join(body)))


# --------------------------------------------------------------------------- node --test (TAP)

_TAP_SUBTEST = re.compile(r"^(?P<indent> *)# Subtest: (?P<name>.+)$")
_TAP_RESULT = re.compile(
    r"^(?P<indent> *)(?P<not>not )?ok \d+ - (?P<name>.+?)(?: # (?P<directive>SKIP|TODO)\b.*)?$"
)


def parse_node_tap(text: str) -> Parsed:
    """Parse ``node --test``'s TAP reporter (its default when stdout is not a terminal)."""
    lines = strip_ansi(text).splitlines()
    results: list[TestResult] = []
    errors: list[TestFailure] = []
    path: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := _TAP_SUBTEST.match(line):
            indent = len(m["indent"])
            while path and path[-1][0] >= indent:
                path.pop()
            path.append((indent, m["name"].strip()))
            i += 1
            continue
        m = _TAP_RESULT.match(line)
        if not m:
            i += 1
            continue
        indent = len(m["indent"])
        while path and path[-1][0] > indent:
            path.pop()
        suites = [name for ind, name in path if ind < indent]
        name = m["name"].strip()
        yaml_lines: list[str] = []
        j = i + 1
        if j < len(lines) and lines[j].strip() == "---":
            j += 1
            while j < len(lines) and lines[j].strip() != "...":
                yaml_lines.append(
                    lines[j][indent + 2 :] if lines[j].startswith(" " * (indent + 2)) else lines[j]
                )
                j += 1
            j += 1
        i = j
        if path and path[-1][0] == indent:
            path.pop()
        fields = tap_yaml(yaml_lines)
        if fields.get("type") == "suite":
            continue
        test_id = " ".join([*suites, name])
        if m["directive"]:
            results.append(TestResult(test_id, "skipped", _tap_duration(fields)))
            continue
        if not m["not"]:
            results.append(TestResult(test_id, "passed", _tap_duration(fields)))
            continue
        stack = "\n".join("at " + ln.strip() for ln in fields.get("stack", "").splitlines() if ln.strip())
        frames = extract_frames(stack)
        location = re.match(r"^(?P<file>.+):(?P<line>\d+):\d+$", fields.get("location", ""))
        raw_type = fields.get("name") or None
        type_ = raw_type if raw_type else ("Error" if fields.get("code") == "ERR_TEST_FAILURE" else None)
        failure = _failure(
            test_id,
            type_=type_,
            message=fields.get("error", ""),
            frames=frames,
            file=location["file"] if location else None,
            line=int(location["line"]) if location else None,
        )
        if _node_is_path(name):
            errors.append(replace(failure, id=name, type="load", line=None))
        else:
            results.append(TestResult(test_id, "failed", _tap_duration(fields), failure))
    if re.search(r"^TAP version \d+", text, re.M) and not (stream := parse_tap(strip_ansi(text))).complete:
        errors.append(_tap_incomplete(stream))
    return Parsed(tuple(results), tuple(errors))


def _tap_duration(fields: Mapping[str, str]) -> float | None:
    ms = _float(fields.get("duration_ms"))
    return ms / 1000 if ms is not None else None


# --------------------------------------------------------------------------- tape / tap (runners.tap)


def parse_tap_text(text: str) -> Parsed:
    """Parse a TAP stream (``tape``, ``tap``, any TAP producer): see :mod:`runners.tap`.

    An incomplete stream (bail-out, no plan, fewer points than planned) adds a run-level error:
    the tests that did not report are unknown, never passed.
    """
    stream = parse_tap(strip_ansi(text))
    results = tuple(
        TestResult(
            t.id,
            t.outcome,
            _tap_duration(t.diagnostics),
            _tap_failure(t) if t.outcome in ("failed", "error") else None,
        )
        for t in stream.tests
    )
    return Parsed(results, () if stream.complete else (_tap_incomplete(stream),))


def _tap_frames(fields: Mapping[str, str]) -> list[Frame]:
    """Frames of a TAP diagnostic: ``stack`` (with or without V8's ``at``), else ``at``/``location``."""
    stack = [ln.strip() for ln in fields.get("stack", "").splitlines() if ln.strip()]
    text = "\n".join(ln if ln.startswith("at ") else "at " + ln for ln in stack)
    frames = extract_frames(text)
    if not frames and fields.get("at"):
        frames = extract_frames("at " + fields["at"])
    return frames


def _tap_failure(test: TapTest) -> TestFailure:
    if test.crash:
        head = next((ln.strip() for ln in test.crash.splitlines() if _CRASH_LINE.match(ln.strip())), "")
        kind = head.split(":", 1)[0].removeprefix("Uncaught ").strip() or "crash"
        message = head.split(":", 1)[1].strip() if ":" in head else test.crash
        return _failure(test.id, type_=kind, message=message, frames=extract_frames(test.crash))
    fields = test.diagnostics
    if "error" in fields or "message" in fields:  # node --test / other producers
        message = fields.get("error") or fields.get("message", "")
    else:  # tape: the assertion, its operator, what it expected and got
        extra = [f"{k}: {fields[k]}" for k in ("expected", "actual", "wanted", "found") if k in fields]
        message = "\n".join([test.description, *extra])
    type_ = fields.get("name") or ("AssertionError" if fields.get("operator") else None)
    location = re.match(r"^(?P<file>.+):(?P<line>\d+):\d+$", fields.get("location", ""))
    return _failure(
        test.id,
        type_=type_,
        message=message,
        frames=_tap_frames(fields),
        file=location["file"] if location else None,
        line=int(location["line"]) if location else None,
    )


_CRASH_LINE = re.compile(r"^(?:Uncaught )?[A-Z]\w*(?:Error|Exception)\b:?")


def _tap_incomplete(stream: TapStream) -> TestFailure:
    """The run-level error of a TAP stream that stopped early (its crash report's frames, if any)."""
    errored = any(t.outcome == "error" for t in stream.tests)
    frames = [] if errored or not stream.crash else extract_frames(stream.crash)
    lines = [stream.detail]
    if stream.crash and not errored:
        lines += [ln for ln in stream.crash.splitlines() if ln.strip()][:4]
    return _failure("<run>", type_=f"tap-{stream.stop}", message="\n".join(lines), frames=frames)
