"""JUnit XML reports: parses pytest, jest-junit, vitest, ``node --test``, surefire/gradle and
go-junit-report XML (one document or several concatenated) into :class:`Parsed` results
(:func:`parse_junit_xml`), plus the message/number helpers the text parsers share with it.
"""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import replace

from runners.results_frames import _PYTEST_LONG_FRAME, _failure, extract_frames
from runners.results_types import Outcome, Parsed, TestFailure, TestResult, strip_ansi

# --------------------------------------------------------------------------- JUnit XML

_XML_DECL = re.compile(r"<\?xml[^>]*\?>")


def _split_documents(text: str) -> list[str]:
    # Several reports concatenated (maven/gradle write one file per class; the runner cats them).
    starts = [m.start() for m in _XML_DECL.finditer(text)]
    if len(starts) <= 1:
        return [text]
    bounds = [*starts, len(text)]
    head = text[: starts[0]].strip()
    docs = [text[a:b] for a, b in itertools.pairwise(bounds)]
    return [head, *docs] if head else docs


def _junit_id(case: ET.Element, framework: str | None, suites: Sequence[str] = ()) -> str:
    classname = (case.get("classname") or "").strip()
    name = (case.get("name") or "").strip()
    file = (case.get("file") or "").strip()
    if framework == "node":
        # classname is always "test"; describe() blocks are nested <testsuite> elements.
        title = " ".join(part.strip() for part in [*suites, name] if part.strip())
        return f"{file}::{title}" if file else title
    if framework == "pytest":
        return _pytest_junit_id(classname, name, file)
    if framework in ("jest", "vitest") or (framework is None and "›" in name):
        base = file or classname
        title = " ".join(part.strip() for part in re.split(r" > | › ", name) if part.strip())
        return f"{base}::{title}" if base else title
    if framework in ("maven", "gradle"):
        return f"{classname}#{name}" if classname else name
    if framework == "go":
        return f"{classname}::{name}" if classname else name
    if framework == "cargo" or not classname:
        return name
    return f"{classname}::{name}"


def _node_suites(root: ET.Element) -> dict[ET.Element, tuple[str, ...]]:
    """The names of the ``<testsuite>`` elements around each ``<testcase>`` (node's describe blocks)."""
    out: dict[ET.Element, tuple[str, ...]] = {}

    def walk(node: ET.Element, names: tuple[str, ...]) -> None:
        for child in node:
            if child.tag == "testcase":
                out[child] = names
            elif child.tag == "testsuite":
                walk(child, (*names, (child.get("name") or "").strip()))

    if root.tag == "testsuite":
        walk(root, ((root.get("name") or "").strip(),))
    else:
        walk(root, ())
    return out


# "cause: AssertionError [ERR_ASSERTION]: Expected ..." or "cause: ReferenceError [Error]: x is not defined"
# (node's JUnit), "AssertionError [ERR_ASSERTION]: ..."
# (spec) or "Error: division by zero": the error a node test threw.
_NODE_ERROR_HEAD = re.compile(
    r"^\s*(?:cause: )?(?P<type>[A-Z][\w$]*(?:Error|Exception)|Error)(?: \[(?P<code>[A-Za-z0-9_]+)\])?: (?P<msg>.*)$"
)


def _node_error(body: str) -> tuple[str | None, str]:
    """(type, message) of the innermost error in a node failure text (the ``cause`` when there is one)."""
    lines = body.splitlines()
    heads = [i for i, ln in enumerate(lines) if _NODE_ERROR_HEAD.match(ln)]
    causes = [i for i in heads if lines[i].lstrip().startswith("cause: ")]
    if not heads:
        return None, ""
    start = causes[-1] if causes else heads[0]
    m = _NODE_ERROR_HEAD.match(lines[start])
    assert m is not None
    indent = len(lines[start]) - len(lines[start].lstrip())
    message = [m["msg"]]
    for ln in lines[start + 1 :]:
        if ln.strip().startswith("at "):
            break
        # Keep the diff's own indentation, drop the nesting of the report.
        cut = min(indent, len(ln) - len(ln.lstrip()))
        message.append(ln[cut:].rstrip())
    return m["type"], "\n".join(message)


def _node_is_path(name: str) -> bool:
    return bool(re.match(r"^(?:/|[A-Za-z]:[\\/]|file://)", name.strip()))


def _node_junit_failure(test_id: str, case: ET.Element, problem: ET.Element) -> TestFailure:
    body = strip_ansi(problem.text or "")
    type_, message = _node_error(body)
    if not message:
        message = problem.get("message") or ""
    name = (case.get("name") or "").strip()
    frames = extract_frames(body)
    if _node_is_path(name):
        # node names a test file that could not run (syntax error, missing module) by its path; the
        # reason is on stderr, not in the report.
        path = name.removeprefix("file://")
        return _failure(path, type_=type_ or "load", message=message, frames=frames, file=path, line=None)
    return _failure(test_id, type_=type_, message=message, frames=frames)


def _pytest_junit_id(classname: str, name: str, file: str) -> str:
    parts = classname.split(".") if classname else []
    if file:
        module = file[:-3] if file.endswith(".py") else file
        mod_parts = module.replace("\\", "/").split("/")
        # classname is "<module dotted>[.<Class>...]"; whatever follows the module is classes.
        if parts[: len(mod_parts)] == mod_parts:
            return "::".join([file.replace("\\", "/"), *parts[len(mod_parts) :], name])
        dotted = ".".join(mod_parts)
        if classname == dotted or classname.startswith(dotted + "."):  # a folder name with a dot
            rest = classname[len(dotted) + 1 :].split(".") if classname != dotted else []
            return "::".join([file.replace("\\", "/"), *rest, name])
        if len(_trailing_classes(parts)) < len(parts):
            # ``file`` is where the test *function* is defined: a test class inherited from or
            # imported out of a helper module. The test runs (and is selected) under the module
            # that collected it, which the classname names.
            file = ""
        else:
            return "::".join([file.replace("\\", "/"), *_trailing_classes(parts), name])
    cls = _trailing_classes(parts)
    parts = parts[: len(parts) - len(cls)]
    path = "/".join(parts) + ".py" if parts else ""
    return "::".join([p for p in [path, *cls, name] if p])


def _trailing_classes(parts: Sequence[str]) -> list[str]:
    cls: list[str] = []
    for part in reversed(parts):
        if not part[:1].isupper():
            break
        cls.insert(0, part)
    return cls


def _exception_type_from_text(text: str) -> str | None:
    for line in reversed(text.splitlines()):
        m = _PYTEST_LONG_FRAME.match(line.rstrip())
        if m and m["exc"]:
            return m["exc"]
    for line in text.splitlines():
        m = re.match(
            r"^\s*(?:E\s+)?(?P<type>(?:[A-Za-z_][\w.$]*)?(?:Error|Exception|Failure|Exit|Interrupt|Timeout))\b",
            line,
        )
        if m:
            return m["type"]
    return None


def parse_junit_xml(text: str, *, framework: str | None = None) -> Parsed:
    """Parse JUnit XML (one document, or several concatenated) into results.

    Understands pytest (``-o junit_family=xunit1`` adds ``file``/``line``), jest-junit, vitest,
    surefire/gradle and go-junit-report output. Raises ``ValueError`` when the text is not XML.
    """
    results: list[TestResult] = []
    errors: list[TestFailure] = []
    for doc in _split_documents(text):
        if not doc.strip():
            continue
        try:
            root = ET.fromstring(doc.strip())
        except ET.ParseError as exc:
            raise ValueError(f"not JUnit XML: {exc}") from exc
        suites = _node_suites(root) if framework == "node" else {}
        for case in root.iter("testcase"):
            test_id = _junit_id(case, framework, suites.get(case, ()))
            duration = _float(case.get("time"))
            problem = case.find("failure")
            kind: Outcome = "failed"
            if problem is None:
                problem = case.find("error")
                kind = "error"
            if problem is not None and framework == "node":
                failure = _node_junit_failure(test_id, case, problem)
                if _node_is_path(case.get("name") or ""):
                    errors.append(failure)  # a test file that failed to load
                else:
                    results.append(TestResult(test_id, kind, duration, failure))
            elif problem is not None:
                body = strip_ansi(problem.text or "")
                message = problem.get("message") or ""
                type_ = problem.get("type") or _exception_type_from_text(body)
                if type_ and type_.startswith("pytest."):
                    type_ = _exception_type_from_text(body)
                wrapped = re.match(r'^failed on (?:setup|teardown) with "(?P<inner>.*)"$', message, re.S)
                if wrapped:
                    message = wrapped["inner"]
                if not message:
                    message = _first_message_line(body, type_)
                elif type_ and message.startswith(type_ + ": "):
                    message = message[len(type_) + 2 :]
                frames = extract_frames(body)
                file = case.get("file")
                line = _int(case.get("line"))
                if framework == "pytest" and line is not None:
                    line += 1  # pytest writes the 0-based location of the test function
                failure = _failure(test_id, type_=type_, message=message, frames=frames, file=file, line=line)
                if message == "collection failure":
                    errors.append(
                        replace(failure, id=case.get("file") or test_id, message=_collection_message(body))
                    )
                    continue
                results.append(TestResult(test_id, kind, duration, failure))
            elif case.find("skipped") is not None:
                results.append(TestResult(test_id, "skipped", duration))
            else:
                results.append(TestResult(test_id, "passed", duration))
    return Parsed(tuple(results), tuple(errors))


def _collection_message(body: str) -> str:
    e_lines = [ln[1:].strip() for ln in body.splitlines() if ln.startswith("E ")]
    message = "\n".join(e_lines) if e_lines else _first_message_line(body, None)
    return re.sub(r"^[A-Za-z_][\w.]*(?:Error|Exception): ", "", message)


def _first_message_line(body: str, type_: str | None) -> str:
    for line in body.splitlines():
        s = line.strip()
        if not s or s.startswith("at ") or s.startswith("❯"):
            continue
        if type_ and s.startswith(type_ + ":"):
            return s[len(type_) + 1 :].strip()
        return s
    return ""


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None
