"""Python test-runner text: parses pytest's terminal output (:func:`parse_pytest_text`) and
``python -m unittest`` output (:func:`parse_unittest_text`) into :class:`Parsed` results.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from runners.results_frames import _clip, _failure, extract_frames
from runners.results_junit import _exception_type_from_text, _first_message_line
from runners.results_types import (
    MAX_MESSAGE_LINES,
    Frame,
    Outcome,
    Parsed,
    TestFailure,
    TestResult,
    strip_ansi,
)

# --------------------------------------------------------------------------- pytest text

_PYTEST_BANNER = re.compile(r"^=+ (?P<title>.+?) =+$")
_PYTEST_SECTION = re.compile(r"^_{3,} (?P<title>.+?) _{3,}$")
_PYTEST_SUMMARY = re.compile(
    r"^(?P<kind>FAILED|ERROR|PASSED|XPASS|XFAIL|SKIPPED) (?P<id>\S+(?:\[[^\]]*\])?)(?: - (?P<msg>.*))?$"
)
_PYTEST_VERBOSE = re.compile(
    r"^(?P<id>\S+::\S+?(?:\[.*\])?) (?P<kind>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b.*?(?:\[\s*\d+%\])?$"
)
_PYTEST_KIND: dict[str, Outcome] = {
    "PASSED": "passed",
    "XPASS": "passed",
    "XFAIL": "skipped",
    "SKIPPED": "skipped",
    "FAILED": "failed",
    "ERROR": "error",
}


def parse_pytest_text(text: str) -> Parsed:
    """Parse pytest's terminal output (any ``--tb`` style; ``-v``/``-rA`` add passed tests)."""
    lines = strip_ansi(text).splitlines()
    outcomes: dict[str, Outcome] = {}
    summary_msg: dict[str, str] = {}
    for line in lines:
        if m := _PYTEST_VERBOSE.match(line):
            outcomes.setdefault(m["id"], _PYTEST_KIND[m["kind"]])
        elif (m := _PYTEST_SUMMARY.match(line)) and m["kind"] != "SKIPPED":
            kind = _PYTEST_KIND[m["kind"]]
            if outcomes.get(m["id"]) != "failed":
                outcomes[m["id"]] = kind
            if m["msg"]:
                summary_msg.setdefault(m["id"], m["msg"])

    # Sections inside "== FAILURES ==" / "== ERRORS ==".
    sections: list[tuple[str, list[str]]] = []
    in_block = False
    current: tuple[str, list[str]] | None = None
    for line in lines:
        if m := _PYTEST_BANNER.match(line):
            in_block = m["title"] in ("FAILURES", "ERRORS")
            current = None
            continue
        if not in_block:
            continue
        if m := _PYTEST_SECTION.match(line):
            current = (m["title"], [])
            sections.append(current)
            continue
        if current is not None:
            current[1].append(line)

    errors: list[TestFailure] = []
    details: dict[str, TestFailure] = {}
    for title, body in sections:
        body = _drop_captured(body)
        text_body = "\n".join(body)
        frames = extract_frames(text_body)
        type_ = _exception_type_from_text(text_body)
        e_lines = [ln[1:].strip() for ln in body if ln.startswith("E ")]
        if title.startswith("ERROR collecting "):
            target = title.removeprefix("ERROR collecting ").strip()
            message = "\n".join(e_lines) or _first_message_line(text_body, type_)
            if type_ and message.startswith(type_ + ": "):
                message = message[len(type_) + 2 :]
            errors.append(_failure(target, type_=type_, message=message, frames=frames, file=target))
            outcomes.pop(target, None)
            continue
        name = re.sub(r"^ERROR at (?:setup|teardown|call) of ", "", title)
        test_id = _pytest_section_id(name, outcomes, frames)
        message = summary_msg.get(test_id) or "\n".join(e_lines) or _native_message(body)
        if type_ is None and e_lines and e_lines[0].startswith("assert"):
            type_ = "AssertionError"
        if type_ is None:
            type_ = _native_type(body)
        if type_ and message.startswith(type_ + ": "):
            message = message[len(type_) + 2 :]
        details[test_id] = _failure(test_id, type_=type_, message=message, frames=frames)
        if test_id not in outcomes:
            outcomes[test_id] = "error" if title.startswith("ERROR at") else "failed"

    results: list[TestResult] = []
    for test_id, outcome in list(outcomes.items()):
        if "::" not in test_id and outcome == "error":
            # "ERROR tests/test_x.py" with no section (e.g. --tb=no): a collection error.
            if not any(e.id == test_id for e in errors):
                errors.append(
                    TestFailure(id=test_id, file=test_id, message=_clip(summary_msg.get(test_id, "")))
                )
            continue
        failure = None
        if outcome in ("failed", "error"):
            failure = details.get(test_id) or TestFailure(
                id=test_id, message=_clip(summary_msg.get(test_id, "")), file=test_id.split("::")[0]
            )
        results.append(TestResult(test_id, outcome, None, failure))
    return Parsed(tuple(results), tuple(errors))


def _drop_captured(body: list[str]) -> list[str]:
    out: list[str] = []
    skipping = False
    for line in body:
        if re.match(r"^-+ Captured .* -+$", line):
            skipping = True
            continue
        if re.match(r"^-{3,} .+ -{3,}$", line):
            continue  # "--- generated xml file: ... ---" and similar banners
        if not skipping:
            out.append(line)
    return out


def _native_type(body: Sequence[str]) -> str | None:
    for line in reversed(body):
        m = re.match(r"^(?P<type>[A-Za-z_][\w.]*)(?::|$)", line)
        if m and line[:1].isalpha() and not line.startswith(("Traceback", "Hint")):
            return m["type"]
    return None


def _native_message(body: Sequence[str]) -> str:
    for i in range(len(body) - 1, -1, -1):
        line = body[i]
        m = re.match(r"^(?P<type>[A-Za-z_][\w.]*): (?P<msg>.*)$", line)
        if m:
            return "\n".join([line, *body[i + 1 : i + MAX_MESSAGE_LINES]])
    return ""


def _pytest_section_id(name: str, outcomes: Mapping[str, Outcome], frames: Sequence[Frame]) -> str:
    # Section titles are "test_x", "TestCls.test_x[param]"; node ids are "path::TestCls::test_x[param]".
    base, bracket, params = name.partition("[")
    tail = "::".join(base.split(".")) + (bracket + params)
    for test_id in outcomes:
        if test_id == tail or test_id.endswith("::" + tail):
            return test_id
    func = base.split(".")[-1]
    for fr in frames:
        if fr.function == func:
            return f"{fr.file}::{tail}"
    if frames:
        return f"{frames[0].file}::{tail}"
    return tail


# --------------------------------------------------------------------------- unittest text

_UT_HEADER = re.compile(
    r"^(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<name>\S+) \((?P<where>[\w.]+)\)(?P<extra>.*)$"
)
_UT_VERBOSE = re.compile(
    r"^(?P<name>\w+) \((?P<where>[\w.]+)\)(?: \[.*\])? \.\.\. (?P<status>ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$"
)


def _ut_id(name: str, where: str) -> str:
    return where if where.endswith("." + name) else f"{where}.{name}"


def parse_unittest_text(text: str) -> Parsed:
    """Parse ``python -m unittest`` output (verbose lines add passed tests)."""
    lines = strip_ansi(text).splitlines()
    outcomes: dict[str, Outcome] = {}
    for line in lines:
        if m := _UT_VERBOSE.match(line):
            status = m["status"]
            outcome: Outcome = (
                "passed"
                if status in ("ok", "unexpected success")
                else "failed"
                if status == "FAIL"
                else "error"
                if status == "ERROR"
                else "skipped"
            )
            outcomes[_ut_id(m["name"], m["where"])] = outcome
    details: dict[str, TestFailure] = {}
    errors: list[TestFailure] = []
    i = 0
    while i < len(lines):
        m = _UT_HEADER.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        if j < len(lines) and lines[j].startswith("-----"):
            j += 1
        body: list[str] = []
        while j < len(lines) and not lines[j].startswith("=" * 20) and not lines[j].startswith("-" * 20):
            body.append(lines[j])
            j += 1
        i = j
        name, where = m["name"], m["where"]
        frames = extract_frames("\n".join(body))
        type_ = _native_type([b for b in body if b.strip()])
        message = ""
        for k in range(len(body) - 1, -1, -1):
            mm = re.match(r"^(?P<type>[A-Za-z_][\w.]*)(?:: (?P<msg>.*))?$", body[k])
            if mm and not body[k].startswith(" "):
                message = "\n".join([mm["msg"] or "", *[b for b in body[k + 1 :] if b.strip()]])
                break
        if where.startswith("unittest.loader._FailedTest") or name in (
            "setUpClass",
            "tearDownClass",
            "setUpModule",
        ):
            target = name if where.startswith("unittest.loader") else where
            errors.append(_failure(target, type_=type_, message=message, frames=frames))
            continue
        test_id = _ut_id(name, where)
        test_frames = [f for f in frames if not f.file.endswith("unittest/case.py")]
        details[test_id] = _failure(test_id, type_=type_, message=message, frames=test_frames)
        outcomes[test_id] = "failed" if m["kind"] != "ERROR" else "error"
    results = [
        TestResult(
            tid, oc, None, details.get(tid) or TestFailure(id=tid) if oc in ("failed", "error") else None
        )
        for tid, oc in outcomes.items()
    ]
    return Parsed(tuple(results), tuple(errors))
