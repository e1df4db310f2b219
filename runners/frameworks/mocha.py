"""mocha: its default ``spec`` reporter read per test, with message and frames; its ``tap`` reporter
goes to :func:`runners.results_js.parse_tap_text` (which keeps mocha's indented error text).

Ids are mocha's *full title*: the describe blocks and the test title joined by spaces, what
``--grep`` matches and what the ``tap`` reporter prints, so both reporters give the same ids.

The ``spec`` reporter lists every test under its suites (``✔ title``, ``✔ title (52ms)``,
``1) title``, ``- title`` for pending), then one block per failure::

      1) sprintfjs
           should return formated strings:

          AssertionError [ERR_ASSERTION]: 'ff' == '120'
          + expected - actual
          ...
          at Context.<anonymous> (test/test.js:30:16)

The title path of a block is one line per level (the last ends with ``:``; mocha < 6 prints it on
one line, ✓ for passed); a hook failure names
the hook (``"before each" hook for "adds"``): the test it ran for fails, a ``before all``/``after
all`` hook is a run-level error of its suite.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from runners.frameworks.row import Row, flags
from runners.frameworks.shell import NPM_TEST, quote_all, regex_escape
from runners.results_frames import _failure, extract_frames
from runners.results_js import parse_tap_text
from runners.results_types import Outcome, Parsed, TestFailure, TestResult, strip_ansi
from runners.tap import looks_like_tap

SIGNATURE = re.compile(r"^ {2}\d+ passing \(\d+(?:\.\d+)?(?:ms|s|m|h)\)$", re.M)
"""The spec (and dot, list) reporters' summary line: ``  2 passing (12ms)``."""

_CASE = re.compile(
    r"^(?P<indent> +)(?:(?P<ok>[✔✓√]) |(?P<num>\d+)\) |(?P<pending>-) )(?P<title>.+?)"
    r"(?: \(\d+(?:\.\d+)?m?s\))?$"
)
_SUMMARY = re.compile(r"^ {2}\d+ (?:passing|failing|pending)\b")
_BLOCK_HEAD = re.compile(r"^ {2}(?P<num>\d+)\) (?P<title>.*)$")
_HOOK = re.compile(r'^"(?P<when>before|after) (?P<scope>all|each)" hook(?:: [^"]*)?(?: for "(?P<test>.*)")?$')
_ERROR_HEAD = re.compile(r"^(?P<type>[A-Z]\w*(?:Error|Exception)|Error)(?: \[\w+\])?(?:: (?P<msg>.*))?$")


def parse_mocha_text(text: str) -> Parsed:
    """Parse mocha's ``spec`` reporter (or its ``tap`` reporter, handed to the TAP parser)."""
    plain = strip_ansi(text)
    if not SIGNATURE.search(plain) and looks_like_tap(plain):
        return _tap_hooks(parse_tap_text(plain))
    lines = plain.splitlines()
    summary = next((i for i, ln in enumerate(lines) if _SUMMARY.match(ln)), len(lines))
    outcomes: dict[str, Outcome] = {}
    by_number: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in lines[:summary]:
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or indent < 2:
            continue  # mocha indents its whole report: a line at the margin is the tests' own output
        while stack and stack[-1][0] >= indent:
            stack.pop()
        m = _CASE.match(line)
        if m is None:
            if indent >= 2:
                stack.append((indent, line.strip()))
            continue
        suites = [t for _, t in stack]
        title = m["title"].strip()
        if m["num"]:
            target = _hook_target(suites, title)
            by_number[m["num"]] = target or " ".join([*suites, title])
            if target is not None:
                outcomes[target] = "failed"
            elif not _HOOK.match(title):
                outcomes[" ".join([*suites, title])] = "failed"
            continue
        oc: Outcome = "passed" if m["ok"] else "skipped"
        outcomes.setdefault(" ".join([*suites, title]), oc)
    details: dict[str, TestFailure] = {}
    errors: list[TestFailure] = []
    for num, path, body in _blocks(lines[summary:]):
        *suites, last = path
        # mocha < 6 prints the whole title path on the block's first line.
        hook = _HOOK_IN_ID.search(" " + " ".join(path))
        test_id = by_number.get(num) or _hook_target(suites, last) or " ".join(path)
        if hook and not (hook["scope"] == "each" and hook["test"]):
            errors.append(_block_failure(" ".join(path), body, type_="hook"))
            outcomes.pop(test_id, None)
            continue
        details[test_id] = _block_failure(test_id, body)
        outcomes[test_id] = "failed"
    results = [
        TestResult(tid, oc, None, (details.get(tid) or TestFailure(id=tid)) if oc == "failed" else None)
        for tid, oc in outcomes.items()
    ]
    return Parsed(tuple(results), tuple(errors))


_HOOK_IN_ID = re.compile(
    r' "(?P<when>before|after) (?P<scope>all|each)" hook(?:: [^"]*)?(?: for "(?P<test>.*)")?$'
)


def _tap_hooks(parsed: Parsed) -> Parsed:
    """The tap reporter's hook points as the spec reporter reads them: an each-hook fails its
    test, an all-hook is a run-level error of its suite."""
    results: dict[str, TestResult] = {}
    errors = list(parsed.errors)
    for r in parsed.results:
        m = _HOOK_IN_ID.search(" " + r.id)
        if m is None:
            results.setdefault(r.id, r)
            continue
        failure = r.failure or TestFailure(id=r.id)
        suites = (" " + r.id)[: m.start()].strip()
        if m["scope"] == "each" and m["test"]:
            target = f"{suites} {m['test']}".strip()
            results[target] = TestResult(target, "failed", r.duration_s, replace(failure, id=target))
        else:
            errors.append(replace(failure, type="hook"))
    return Parsed(tuple(results.values()), tuple(errors))


def _hook_target(suites: Sequence[str], title: str) -> str | None:
    """The test a ``before each``/``after each`` hook failed for, as an id; else None."""
    m = _HOOK.match(title)
    if m is None or m["scope"] != "each" or not m["test"]:
        return None
    return " ".join([*suites, m["test"]])


def _blocks(lines: Sequence[str]) -> list[tuple[str, list[str], list[str]]]:
    """The failure blocks after the summary: (number, title path, body lines)."""
    out: list[tuple[str, list[str], list[str]]] = []
    i = 0
    while i < len(lines):
        m = _BLOCK_HEAD.match(lines[i])
        if m is None:
            i += 1
            continue
        path = [m["title"].strip()]
        i += 1
        # Title lines until the one ending in ':' (the head line itself may end there).
        while not path[-1].endswith(":") and i < len(lines) and lines[i].strip():
            path.append(lines[i].strip())
            i += 1
        path[-1] = path[-1].removesuffix(":")
        body: list[str] = []
        while i < len(lines) and not _BLOCK_HEAD.match(lines[i]):
            body.append(lines[i])
            i += 1
        out.append((m["num"], path, body))
    return out


def _block_failure(test_id: str, body: Sequence[str], *, type_: str | None = None) -> TestFailure:
    message: list[str] = []
    kind: str | None = None
    for line in body:
        s = line.strip()
        if s.startswith("at "):
            break
        if not message and not s:
            continue
        if not message and (m := _ERROR_HEAD.match(s)):
            kind = m["type"]
            message.append(m["msg"] or "")
            continue
        message.append(s)
    while message and not message[-1]:
        message.pop()
    return _failure(
        test_id,
        type_=type_ or kind,
        message="\n".join(message),
        frames=extract_frames("\n".join(body)),
    )


def select(head: str, last: str, tokens: list[str], ids: list[str]) -> str | None:
    """``--grep '^(?:id|id)$'``: it matches the full title, which is the id (through ``npm test --``)."""
    pattern = "^(?:" + "|".join(regex_escape(i) for i in dict.fromkeys(ids)) + ")$"
    dashes = ["--"] if NPM_TEST.match(last) and "--" not in tokens else []
    return head + quote_all([*tokens, *dashes, "--grep", pattern])


ROW = Row(
    name="mocha",
    command=re.compile(r"(?:^|[\s/;&|(])_?mocha(?=\s|$)"),
    signature=SIGNATURE,
    parse=parse_mocha_text,
    runtime="node",
    fail_fast=flags("mocha", ("--bail", "none"), ("-b", "none")),
    packages=("mocha",),
    select=select,
)

__all__ = ["ROW", "SIGNATURE", "parse_mocha_text"]
