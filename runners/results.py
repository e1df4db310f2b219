"""Per-test results: value types, JUnit XML and text-output parsers, and run comparison.

Everything here is pure: parsers take text and return values. Test ids follow each framework's own
selector syntax so that a failing id can be fed back to the framework (see ``runners.triage``):

- pytest: the node id, ``tests/test_calc.py::TestCalc::test_add[1-2]``
- unittest: the dotted name, ``tests.test_calc.CalcTest.test_add``
- go: ``<import path>::<TestName>[/<subtest>]``, e.g. ``example.com/calc::TestAdd/negative``
- cargo: the libtest name, ``tests::it_adds``
- jest / vitest: ``<test file>::<describe blocks and title joined by spaces>`` (what ``-t`` matches)
- node (``node --test``): ``<describe blocks and title joined by spaces>``, prefixed ``<test file>::`` only
  when the report names the file (node 20's JUnit and TAP reporters do not for passing tests, and an id
  must not change with the outcome)
- maven / gradle (JUnit XML): ``<class>#<method>``, e.g. ``com.example.CalcTest#addsSmallNumbers``
- tap (``tape``, ``tap``, other TAP producers): the test name path (see :mod:`runners.tap`)
- lint / type-check sites (run-level errors of a failing command no test parser read, see
  :mod:`runners.lintsites`): ``<tool>:<repo path>:<rule>``, e.g. ``ruff:pkg/mod.py:F401``
"""

from __future__ import annotations

import itertools
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any, ClassVar, Literal

from runners.base import Execution
from runners.lintsites import parse_lint
from runners.tap import TapStream, TapTest, parse_tap, tap_yaml

Framework = Literal["pytest", "unittest", "go", "cargo", "jest", "vitest", "maven", "gradle", "node", "tap"]
FRAMEWORKS: tuple[Framework, ...] = (
    "pytest",
    "unittest",
    "go",
    "cargo",
    "jest",
    "vitest",
    "maven",
    "gradle",
    "node",
    "tap",
)
Outcome = Literal["passed", "failed", "error", "skipped"]
ReportSource = Literal["junit", "go-json", "text", "none"]

MAX_MESSAGE_CHARS = 600
MAX_MESSAGE_LINES = 8
MAX_FRAMES = 12

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def strip_ansi(text: str) -> str:
    """Remove ANSI colour/cursor escapes and carriage returns."""
    return _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")


# --------------------------------------------------------------------------- value types


@dataclass(frozen=True, slots=True)
class Frame:
    """One traceback frame: where the failure passed through."""

    file: str
    line: int
    function: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"file": self.file, "line": self.line, "function": self.function}


@dataclass(frozen=True, slots=True)
class TestFailure:
    """Why one test (or the run as a whole) did not pass.

    ``file``/``line`` is the innermost frame inside the repository (the crash site) when the
    frames are known, else the best location the output gives. ``frames`` run outermost first.
    """

    __test__: ClassVar[bool] = False  # not a pytest test class

    id: str
    file: str | None = None
    line: int | None = None
    type: str | None = None
    message: str = ""
    frames: tuple[Frame, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "id": self.id,
            "file": self.file,
            "line": self.line,
            "type": self.type,
            "message": self.message,
            "frames": [f.to_dict() for f in self.frames],
        }


@dataclass(frozen=True, slots=True)
class TestResult:
    """The outcome of one test."""

    __test__: ClassVar[bool] = False

    id: str
    outcome: Outcome
    duration_s: float | None = None
    failure: TestFailure | None = None


@dataclass(frozen=True, slots=True)
class Parsed:
    """What a parser found: per-test results and run-level errors (collection, build)."""

    results: tuple[TestResult, ...] = ()
    errors: tuple[TestFailure, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.results or self.errors)


@dataclass(frozen=True, slots=True)
class TestRun:
    """One test command's outcome, per test."""

    __test__: ClassVar[bool] = False

    command: str
    exit_code: int
    duration_s: float
    results: tuple[TestResult, ...] = ()
    errors: tuple[TestFailure, ...] = ()
    """Problems not tied to one test: collection/import/build errors, timeouts, unparsed failures."""
    truncated: bool = False
    killed_by: str | None = None
    source: ReportSource = "none"
    framework: str | None = None
    environment: str = ""
    """One line when the run could not test the code at all (:mod:`runners.environment`), else ''."""
    hang_s: float = 0.0
    """How long the test the hang probe stopped had run (:mod:`runners.hang`); 0 otherwise. The
    rest of :attr:`duration_s` is the part of the run that did not hang."""

    @property
    def passed_ids(self) -> list[str]:
        """Ids of tests that passed."""
        return [r.id for r in self.results if r.outcome == "passed"]

    @property
    def failed_ids(self) -> list[str]:
        """Ids of tests that failed or errored."""
        return [r.id for r in self.results if r.outcome in ("failed", "error")]

    @property
    def failures(self) -> list[TestFailure]:
        """The failure of every failed or errored test."""
        return [r.failure or TestFailure(id=r.id) for r in self.results if r.outcome in ("failed", "error")]

    def outcome_of(self, test_id: str) -> Outcome | None:
        """The outcome of ``test_id``, or None when the run did not report it."""
        for r in self.results:
            if r.id == test_id:
                return r.outcome
        return None

    @property
    def ok(self) -> bool:
        """Exited 0, was not killed, and no test failed."""
        return self.exit_code == 0 and self.killed_by is None and not self.failed_ids and not self.errors

    def to_dict(self) -> dict[str, Any]:
        """The ``arcs test --json`` document."""

        def brief(f: TestFailure) -> dict[str, Any]:
            return {"id": f.id, "file": f.file, "line": f.line, "type": f.type, "message": f.message}

        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "duration_s": round(self.duration_s, 3),
            "passed": self.passed_ids,
            "failed": [brief(f) for f in self.failures],
            "errors": [brief(f) for f in self.errors],
            "skipped": [r.id for r in self.results if r.outcome == "skipped"],
            "truncated": self.truncated,
            "killed_by": self.killed_by,
            "framework": self.framework,
            "report": self.source,
            "environment": self.environment or None,
        }


# --------------------------------------------------------------------------- frames and paths

_THIRD_PARTY_MARKERS = (
    "site-packages/",
    "dist-packages/",
    "node_modules/",
    "/lib/python3",
    "/rustc/",
    "/.cargo/registry/",
    "/go/pkg/mod/",
    "/usr/local/go/src/",
    "/opt/hostedtoolcache/",
    "<frozen ",
    "<string>",
    "<anonymous>",
    "node:internal",
    "(internal/",
)
_JAVA_THIRD_PARTY = (
    "java.",
    "javax.",
    "jdk.",
    "sun.",
    "com.sun.",
    "org.junit.",
    "junit.",
    "org.opentest4j.",
    "org.apache.maven.",
    "org.assertj.",
    "org.hamcrest.",
    "org.mockito.",
    "org.gradle.",
    "kotlin.",
    "scala.",
)

# GitHub-hosted runner checkouts: /home/runner/work/<repo>/<repo>/..., D:\a\<repo>\<repo>\...
_RUNNER_ROOT = re.compile(
    r"^(?:/home/runner/work|/Users/runner/work|/__w|[A-Za-z]:[\\/]a)[\\/][^\\/]+[\\/][^\\/]+[\\/]"
)


def is_third_party(path: str) -> bool:
    """Heuristic: the path is inside an installed package, toolchain or runtime, not the repository."""
    p = path.replace("\\", "/")
    # Node built-ins: node:internal/..., node:async_hooks, node:test.
    return p.startswith("node:") or any(marker in p for marker in _THIRD_PARTY_MARKERS)


class RepoPaths:
    """A repository's file list indexed by file name, for fast suffix matching of traceback paths."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files: frozenset[str] = frozenset(files)
        by_name: dict[str, list[str]] = {}
        for f in self.files:
            by_name.setdefault(f.rsplit("/", 1)[-1], []).append(f)
        self.by_name: Mapping[str, list[str]] = by_name

    def __contains__(self, path: object) -> bool:
        return path in self.files

    def __len__(self) -> int:
        return len(self.files)

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    @classmethod
    def of(cls, files: Collection[str]) -> RepoPaths:
        """``files`` itself when already indexed, else a new index."""
        return files if isinstance(files, RepoPaths) else cls(files)


def normalize_path(
    path: str,
    *,
    roots: Sequence[str] = (),
    repo_files: Collection[str] | None = None,
) -> str | None:
    """Map ``path`` to a repository-relative POSIX path, or None when it is outside the repository.

    Absolute paths under one of ``roots`` (the workspace as seen by the command) or under a GitHub
    runner checkout (``/home/runner/work/<r>/<r>/``) are made relative. With ``repo_files`` the
    result must name a repository file; a path that does not is matched by its longest suffix that
    does (``com/example/Calc.java`` -> ``src/main/java/com/example/Calc.java``).
    """
    p = path.strip().strip("'\"").replace("\\", "/")
    if not p or is_third_party(p):
        return None
    for root in roots:
        r = root.replace("\\", "/").rstrip("/") + "/"
        if p.startswith(r):
            p = p[len(r) :]
            break
    else:
        m = _RUNNER_ROOT.match(p)
        if m:
            p = p[m.end() :]
    while p.startswith("./"):
        p = p[2:]
    if repo_files is None:
        return None if p.startswith("/") or p.startswith("../") else p
    if p in repo_files:
        return p
    return _suffix_match(p, RepoPaths.of(repo_files))


def _suffix_match(path: str, repo_files: RepoPaths) -> str | None:
    parts = [part for part in PurePosixPath(path).parts if part not in ("/", "..", ".")]
    if not parts:
        return None
    name = parts[-1]
    candidates = repo_files.by_name.get(name, [])
    best: str | None = None
    best_len = 0
    tie = False
    for cand in candidates:
        cparts = cand.split("/")
        n = 0
        while n < min(len(cparts), len(parts)) and cparts[-1 - n] == parts[-1 - n]:
            n += 1
        if n > best_len:
            best, best_len, tie = cand, n, False
        elif n == best_len:
            tie = True
    # A bare file name shared by two files is ambiguous: refuse rather than guess.
    if best is None or (tie and best_len <= 1):
        return None
    return best


_PY_NATIVE_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')
_PYTEST_SHORT_FRAME = re.compile(r"^(?P<file>[^\s:][^:\s]*\.py):(?P<line>\d+): in (?P<func>\S+)$")
_PYTEST_LONG_FRAME = re.compile(
    r"^(?P<file>[^\s:][^:\s]*\.py):(?P<line>\d+):(?: (?P<exc>[A-Za-z_][\w.]*))?\s*$"
)
_PY_DEF = re.compile(r"^\s*(?:>\s*)?(?:async\s+)?def\s+(?P<func>\w+)\s*\(")
_JS_FRAME = re.compile(
    r"^\s*at (?:(?P<func>[^()]+?) \()?(?:file://)?(?P<file>[^()\s]+?):(?P<line>\d+):(?P<col>\d+)\)?\s*$"
)
_VITEST_FRAME = re.compile(r"^\s*❯ (?:(?P<func>\S+) )?(?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+)\s*$")
_JAVA_FRAME = re.compile(
    r"^\s*at (?:[\w.\-]+/)?(?P<func>[\w$.<>]+)\((?P<file>[\w$\-]+\.(?:java|kt|scala|groovy)):(?P<line>\d+)\)"
)
_RUST_AT = re.compile(r"^\s+at (?P<file>\S+?\.rs):(?P<line>\d+):(?P<col>\d+)$")
_RUST_FN = re.compile(r"^\s+\d+: (?P<func>.+)$")
_RUST_ARROW = re.compile(r"^\s*--> (?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+)")
_GO_STACK_FRAME = re.compile(r"^\t(?P<file>\S+\.go):(?P<line>\d+)(?: \+0x[0-9a-f]+)?$")
_GO_LOG_LINE = re.compile(r"^\s*(?P<file>[\w./\-]+\.go):(?P<line>\d+): (?P<msg>.*)$")


def _java_file(func: str, file: str) -> str:
    # "com.example.CalcTest.addsSmallNumbers" + "CalcTest.java" -> "com/example/CalcTest.java"
    parts = func.split(".")
    pkg = [p for p in parts[:-2] if p and p[0].islower()]
    return "/".join([*pkg, file])


def extract_frames(text: str) -> list[Frame]:
    """Traceback frames in ``text`` in any of the supported formats, outermost first.

    Third-party frames (site-packages, node_modules, the JDK, the Rust standard library, the Go
    module cache) are dropped; paths are returned as printed (see :func:`normalize_path`).
    """
    frames: list[Frame] = []
    last_def: str | None = None
    rust_fn: str | None = None
    go_fn: str | None = None
    rust_backtrace: list[Frame] = []
    go_stack: list[Frame] = []
    js_stack: list[Frame] = []
    for raw in strip_ansi(text).splitlines():
        line = raw.rstrip()
        if not _RUST_AT.match(line) and (m := _JS_FRAME.match(line) or _VITEST_FRAME.match(line)):
            # JS stacks (V8 "at ..." lines, vitest's "❯" lines with a code excerpt after the first)
            # run innermost first; reversed below.
            js_stack.append(Frame(m["file"], int(m["line"]), (m["func"] or "").strip() or None))
            continue
        m = _PY_DEF.match(line)
        if m:
            last_def = m["func"]
        if m := _PY_NATIVE_FRAME.match(line):
            frames.append(Frame(m["file"], int(m["line"]), (m["func"] or "").strip() or None))
            continue
        if m := _PYTEST_SHORT_FRAME.match(line):
            frames.append(Frame(m["file"], int(m["line"]), m["func"]))
            continue
        if m := _PYTEST_LONG_FRAME.match(line):
            frames.append(Frame(m["file"], int(m["line"]), last_def))
            last_def = None
            continue
        if m := _JAVA_FRAME.match(line):
            func = m["func"]
            if func.startswith(_JAVA_THIRD_PARTY):
                continue
            frames.append(Frame(_java_file(func, m["file"]), int(m["line"]), func))
            continue
        if m := _RUST_AT.match(line):
            # Rust backtraces run innermost first; reversed below.
            rust_backtrace.append(Frame(m["file"], int(m["line"]), rust_fn))
            rust_fn = None
            continue
        if m := _RUST_FN.match(line):
            rust_fn = m["func"].strip()
            continue
        if m := _RUST_ARROW.match(line):
            frames.append(Frame(m["file"], int(m["line"]), None))
            continue
        if m := _GO_STACK_FRAME.match(line):
            go_stack.append(Frame(m["file"], int(m["line"]), go_fn))
            continue
        if line and not line.startswith(("\t", " ")) and line.endswith(")") and "(" in line:
            go_fn = line[: line.index("(")] or None
        if m := _GO_LOG_LINE.match(line):
            frames.append(Frame(m["file"], int(m["line"]), None))
    frames.extend(reversed(js_stack))
    frames.extend(reversed(rust_backtrace))
    frames.extend(reversed(go_stack))
    kept = [f for f in frames if not is_third_party(f.file)]
    # Java frames repeat a lot (reflection); JS stacks carry test-runner internals.
    seen: set[tuple[str, int]] = set()
    unique: list[Frame] = []
    for f in kept:
        if (f.file, f.line) not in seen:
            seen.add((f.file, f.line))
            unique.append(f)
    return unique[-MAX_FRAMES:]


def _clip(message: str) -> str:
    lines = [ln.rstrip() for ln in message.strip("\n").splitlines()]
    while lines and not lines[-1].strip():
        lines.pop()
    text = "\n".join(lines[:MAX_MESSAGE_LINES]).strip()
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 1] + "…"
    return text


def _failure(
    test_id: str,
    *,
    type_: str | None,
    message: str,
    frames: Sequence[Frame],
    file: str | None = None,
    line: int | None = None,
) -> TestFailure:
    if frames:
        file, line = frames[-1].file, frames[-1].line
    return TestFailure(
        id=test_id,
        file=file,
        line=line,
        type=type_,
        message=_clip(message),
        frames=tuple(frames),
    )


def localize(
    run: TestRun,
    repo_files: Collection[str],
    *,
    roots: Sequence[str] = (),
    go_packages: Mapping[str, str] | None = None,
) -> TestRun:
    """Rewrite every frame to a repository-relative path and drop frames outside the repository.

    ``roots`` are absolute prefixes of the workspace as the command saw it; ``go_packages`` maps a
    Go import path to its directory in the repository (bare ``calc_test.go`` names are resolved
    against the failing test's package).
    """
    index = RepoPaths.of(repo_files)

    def fix(f: TestFailure) -> TestFailure:
        pkg_dir: str | None = None
        if go_packages is not None and "::" in f.id:
            pkg_dir = go_packages.get(f.id.split("::", 1)[0])
        new_frames: list[Frame] = []
        for fr in f.frames:
            raw = fr.file
            if pkg_dir is not None and "/" not in raw:
                raw = f"{pkg_dir}/{raw}" if pkg_dir else raw
            path = normalize_path(raw, roots=roots, repo_files=index)
            if path is not None:
                new_frames.append(Frame(path, fr.line, fr.function))
        file, line = f.file, f.line
        if new_frames:
            file, line = new_frames[-1].file, new_frames[-1].line
        elif file is not None:
            raw = f"{pkg_dir}/{file}" if pkg_dir and "/" not in file else file
            file = normalize_path(raw, roots=roots, repo_files=index)
            line = line if file is not None else None
        if f.type == "lint" and file is not None:
            # The id is tool:path:rule; its path as printed may be absolute (eslint, tsc -p).
            tool, _, rest = f.id.partition(":")
            return replace(
                f,
                id=f"{tool}:{file}:{rest.rpartition(':')[2]}",
                frames=tuple(new_frames),
                file=file,
                line=line,
            )
        return replace(f, frames=tuple(new_frames), file=file, line=line)

    results = tuple(replace(r, failure=fix(r.failure)) if r.failure else r for r in run.results)
    return replace(run, results=results, errors=tuple(fix(e) for e in run.errors))


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


# --------------------------------------------------------------------------- go test

_GO_RESULT = re.compile(r"^(?P<indent>\s*)--- (?P<status>PASS|FAIL|SKIP): (?P<name>\S+) \((?P<dur>[\d.]+)s\)")
_GO_RUN = re.compile(r"^=== (?:RUN|CONT|PAUSE|NAME)\s+(?P<name>\S+)")
_GO_PKG = re.compile(
    r"^(?P<status>ok|FAIL|\?)\s+(?P<pkg>\S+)\s+(?:(?P<dur>[\d.]+s)|\(cached\)|\[(?P<note>[^\]]+)\])"
)
_GO_BUILD_HEADER = re.compile(r"^# (?P<pkg>\S+)(?: \[.*\])?$")
_GO_COMPILE = re.compile(r"^(?P<file>[\w./\-]+\.go):(?P<line>\d+):(?P<col>\d+): (?P<msg>.*)$")


@dataclass
class _GoTest:
    name: str
    status: str = "RUN"
    duration: float | None = None
    output: list[str] = field(default_factory=list)


def _go_failure(test_id: str, output: Sequence[str]) -> TestFailure:
    text = "\n".join(output)
    messages: list[str] = []
    frames: list[Frame] = []
    panic: str | None = None
    for line in output:
        if m := _GO_LOG_LINE.match(line):
            frames.append(Frame(m["file"], int(m["line"]), None))
            messages.append(m["msg"].strip())
        elif line.startswith("panic: "):
            panic = line.removeprefix("panic: ").removesuffix(" [recovered]").strip()
        elif messages and line.startswith("        ") and not line.strip().startswith("---"):
            messages.append(line.strip())  # continuation of a multi-line t.Error message
    if panic is not None:
        stack = [f for f in extract_frames(text) if f.file.endswith(".go")]
        # The stack runs innermost first in the output; extract_frames reversed it already.
        stack_frames = [f for f in stack if f not in frames]
        return _failure(test_id, type_="panic", message=panic, frames=stack_frames or frames)
    return _failure(test_id, type_=None, message="\n".join(messages), frames=frames)


def _go_parent_messages(results: Sequence[TestResult]) -> tuple[TestResult, ...]:
    # A parent test fails because a subtest did; say so instead of an empty message.
    failed = [r.id for r in results if r.outcome == "failed"]
    out: list[TestResult] = []
    for r in results:
        if r.outcome == "failed" and r.failure is not None and not r.failure.message:
            subs = [f.split("::", 1)[-1] for f in failed if f.startswith(r.id + "/")]
            if subs:
                r = replace(r, failure=replace(r.failure, message="failed subtests: " + ", ".join(subs)))
        out.append(r)
    return tuple(out)


def parse_go_text(text: str) -> Parsed:
    """Parse plain ``go test`` / ``go test -v`` output."""
    lines = strip_ansi(text).splitlines()
    pending: dict[str, _GoTest] = {}
    order: list[str] = []
    results: list[TestResult] = []
    errors: list[TestFailure] = []
    running: str | None = None
    last_failed: str | None = None
    build_pkg: str | None = None
    build_lines: list[str] = []

    def flush_build() -> None:
        nonlocal build_pkg, build_lines
        if build_pkg is not None:
            errors.append(_go_build_error(build_pkg, build_lines))
        build_pkg, build_lines = None, []

    def get(name: str) -> _GoTest:
        if name not in pending:
            pending[name] = _GoTest(name)
            order.append(name)
        return pending[name]

    for line in lines:
        if m := _GO_BUILD_HEADER.match(line):
            flush_build()
            build_pkg = m["pkg"]
            continue
        if build_pkg is not None:
            if _GO_COMPILE.match(line) or line.startswith("\t") or line.startswith("    "):
                build_lines.append(line)
                continue
            flush_build()
        if m := _GO_RUN.match(line):
            running = m["name"]
            get(running)
            last_failed = None
            continue
        if m := _GO_RESULT.match(line):
            t = get(m["name"])
            t.status, t.duration = m["status"], float(m["dur"])
            last_failed = m["name"] if m["status"] == "FAIL" else None
            continue
        if m := _GO_PKG.match(line):
            pkg = m["pkg"]
            note = m["note"] or ""
            if ("build failed" in note or "setup failed" in note) and not any(e.id == pkg for e in errors):
                errors.append(TestFailure(id=pkg, type="build", message=note))
            for name in order:
                t = pending[name]
                test_id = f"{pkg}::{name}"
                if t.status == "PASS":
                    results.append(TestResult(test_id, "passed", t.duration))
                elif t.status == "SKIP":
                    results.append(TestResult(test_id, "skipped", t.duration))
                elif t.status == "FAIL" or (m["status"] == "FAIL" and t.status == "RUN"):
                    results.append(TestResult(test_id, "failed", t.duration, _go_failure(test_id, t.output)))
            if m["status"] == "FAIL" and not order and not note and not any(e.id == pkg for e in errors):
                errors.append(TestFailure(id=pkg, message="package failed outside any test"))
            pending.clear()
            order.clear()
            running = last_failed = None
            continue
        if line.strip() in ("FAIL", "PASS", "ok") or line.startswith("exit status "):
            continue
        owner = last_failed or running
        if owner is None and line.startswith("panic: ") and order:
            owner = order[-1]
        if owner is not None:
            get(owner).output.append(line)
        elif line.startswith("panic: "):
            # A panic outside t.Run: attributed to the most recent test, else held for the package.
            running = None
    flush_build()
    # Output cut short before the package line: report what we have without a package.
    for name in order:
        t = pending[name]
        if t.status == "PASS":
            results.append(TestResult(name, "passed", t.duration))
        elif t.status == "FAIL":
            results.append(TestResult(name, "failed", t.duration, _go_failure(name, t.output)))
    return Parsed(_go_parent_messages(results), tuple(errors))


def _go_build_error(pkg: str, lines: Sequence[str]) -> TestFailure:
    frames: list[Frame] = []
    messages: list[str] = []
    for line in lines:
        if m := _GO_COMPILE.match(line):
            frames.append(Frame(m["file"], int(m["line"]), None))
            messages.append(f"{m['file']}:{m['line']}:{m['col']}: {m['msg']}")
    first = frames[0] if frames else None
    return TestFailure(
        id=pkg,
        file=first.file if first else None,
        line=first.line if first else None,
        type="build",
        message=_clip("\n".join(messages)),
        frames=tuple(frames),
    )


def parse_go_json(text: str) -> Parsed:
    """Parse ``go test -json`` events (non-JSON lines, such as build errors on stderr, are read as text)."""
    outputs: dict[tuple[str, str], list[str]] = {}
    status: dict[tuple[str, str], tuple[str, float | None]] = {}
    pkg_fail: dict[str, list[str]] = {}
    plain: list[str] = []
    build_output: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("{"):
            plain.append(raw)
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            plain.append(raw)
            continue
        if not isinstance(ev, dict):
            continue
        action = ev.get("Action")
        pkg = str(ev.get("Package") or ev.get("ImportPath") or "")
        test = ev.get("Test")
        if action == "build-output":
            build_output.setdefault(pkg.split(" ")[0], []).append(str(ev.get("Output", "")).rstrip("\n"))
            continue
        if action == "build-fail":
            build_output.setdefault(pkg.split(" ")[0], [])
            continue
        if not test:
            if action == "output":
                pkg_fail.setdefault(pkg, []).append(str(ev.get("Output", "")).rstrip("\n"))
            elif action == "fail":
                pkg_fail.setdefault(pkg, []).append("<fail>")
            continue
        key = (pkg, str(test))
        if action == "output":
            out = str(ev.get("Output", "")).rstrip("\n")
            if not re.match(r"^\s*(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|FAIL|SKIP))", out):
                outputs.setdefault(key, []).append(out)
        elif action in ("pass", "fail", "skip"):
            status[key] = (action, _float(str(ev.get("Elapsed"))) if ev.get("Elapsed") is not None else None)
        elif action == "run":
            status.setdefault(key, ("run", None))
    results: list[TestResult] = []
    for (pkg, test), (action, elapsed) in status.items():
        test_id = f"{pkg}::{test}"
        if action == "pass":
            results.append(TestResult(test_id, "passed", elapsed))
        elif action == "skip":
            results.append(TestResult(test_id, "skipped", elapsed))
        else:
            # "run" with no end event: the package died (panic, timeout) while it was running.
            results.append(
                TestResult(test_id, "failed", elapsed, _go_failure(test_id, outputs.get((pkg, test), [])))
            )
    errors: list[TestFailure] = []
    for bpkg, bout in build_output.items():
        errors.append(
            _go_build_error(bpkg, bout)
            if bout
            else TestFailure(id=bpkg, type="build", message="build failed")
        )
    text_errors = parse_go_text("\n".join(plain)).errors
    seen = {e.id for e in errors}
    for err in text_errors:
        if err.id not in seen:
            errors.append(err)
            seen.add(err.id)
    for fpkg, fout in pkg_fail.items():
        if (
            "<fail>" in fout
            and fpkg not in seen
            and not any(r.id.startswith(fpkg + "::") and r.outcome == "failed" for r in results)
        ):
            note = next((o for o in fout if "[build failed]" in o or "[setup failed]" in o), "")
            errors.append(
                TestFailure(
                    id=fpkg,
                    type="build" if note else None,
                    message=_clip(note or "\n".join(o for o in fout if o != "<fail>")),
                )
            )
    return Parsed(_go_parent_messages(results), tuple(errors))


# --------------------------------------------------------------------------- cargo test

_CARGO_TEST = re.compile(r"^test (?P<name>.+?) \.\.\. (?P<status>ok|FAILED|ignored(?:, .*)?)$")
_CARGO_SECTION = re.compile(r"^---- (?P<name>.+?) stdout ----$")
_CARGO_PANIC_NEW = re.compile(
    r"^thread '(?P<name>[^']*)'(?: \(\d+\))? panicked at (?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+):$"
)
_CARGO_PANIC_OLD = re.compile(
    r"^thread '(?P<name>[^']*)' panicked at '(?P<msg>.*)', (?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+)$"
)
_RUST_ERROR = re.compile(r"^error(?:\[(?P<code>E\d+)\])?: (?P<msg>.+)$")
# Summary lines cargo prints after the real errors.
_CARGO_NOISE = re.compile(
    r"^(could not compile|aborting|test failed|\d+ targets? failed|build failed|process didn't exit)"
)


def parse_cargo_text(text: str) -> Parsed:
    """Parse ``cargo test`` output: libtest result lines, panics, and compile errors."""
    lines = strip_ansi(text).splitlines()
    outcomes: dict[str, Outcome] = {}
    details: dict[str, TestFailure] = {}
    errors: list[TestFailure] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := _CARGO_TEST.match(line):
            st = m["status"]
            outcomes[m["name"]] = "passed" if st == "ok" else "failed" if st == "FAILED" else "skipped"
            i += 1
            continue
        if m := _CARGO_SECTION.match(line):
            name = m["name"]
            j = i + 1
            body: list[str] = []
            while j < len(lines) and not _CARGO_SECTION.match(lines[j]) and lines[j] not in ("failures:",):
                if lines[j].startswith("test result:"):
                    break
                body.append(lines[j])
                j += 1
            details[name] = _cargo_failure(name, body)
            i = j
            continue
        if (m := _RUST_ERROR.match(line)) and not _CARGO_NOISE.match(m["msg"]):
            j = i + 1
            frame: Frame | None = None
            while j < len(lines) and j < i + 6:
                if mm := _RUST_ARROW.match(lines[j]):
                    frame = Frame(mm["file"], int(mm["line"]), None)
                    break
                j += 1
            errors.append(
                TestFailure(
                    id=f"{frame.file}:{frame.line}" if frame else "build",
                    file=frame.file if frame else None,
                    line=frame.line if frame else None,
                    type=m["code"] or "error",
                    message=_clip(m["msg"]),
                    frames=(frame,) if frame else (),
                )
            )
        i += 1
    results = []
    for name, oc in outcomes.items():
        failure = details.get(name) or (TestFailure(id=name) if oc == "failed" else None)
        results.append(TestResult(name, oc, None, failure if oc == "failed" else None))
    for name, failure in details.items():
        if name not in outcomes:
            results.append(TestResult(name, "failed", None, failure))
    return Parsed(tuple(results), tuple(errors))


def _cargo_failure(name: str, body: Sequence[str]) -> TestFailure:
    message_lines: list[str] = []
    panic_frame: Frame | None = None
    for k, line in enumerate(body):
        if m := _CARGO_PANIC_NEW.match(line):
            panic_frame = Frame(m["file"], int(m["line"]), None)
            for nxt in body[k + 1 :]:
                if not nxt.strip() or nxt.startswith(("note:", "stack backtrace:")):
                    break
                message_lines.append(nxt)
            break
        if m := _CARGO_PANIC_OLD.match(line):
            panic_frame = Frame(m["file"], int(m["line"]), None)
            message_lines.append(m["msg"])
            break
    frames = [f for f in extract_frames("\n".join(body)) if f.file.endswith(".rs")]
    if not frames and panic_frame is not None:
        frames = [panic_frame]
    failure = _failure(name, type_="panic", message="\n".join(message_lines), frames=frames)
    if panic_frame is not None:
        # The panic site is where the test failed even when the backtrace goes deeper.
        failure = replace(failure, file=panic_frame.file, line=panic_frame.line)
    return failure


# --------------------------------------------------------------------------- jest / vitest

_JEST_FILE = re.compile(r"^\s*(?P<status>PASS|FAIL)\s+(?P<file>\S+)(?: \([\d.]+ m?s\))?\s*$")
_JEST_CASE = re.compile(r"^(?P<indent>\s+)(?P<mark>[✓✕○√×✔✘✎]) (?P<title>.+?)(?: \(\d+(?:\.\d+)? m?s\))?$")
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


# --------------------------------------------------------------------------- lint / type-check sites (runners.lintsites)


def lint_errors(text: str) -> tuple[TestFailure, ...]:
    """One run-level error per ``tool:path:rule`` that a linter or type checker reported in ``text``.

    The id leaves the line out (an edit above a site moves it); :func:`localize` makes the path
    repository-relative. A rule's every site in the file is a frame (the first one last, so it
    is the failure's ``file``/``line``); the message lists them.
    """
    grouped: dict[str, list[Any]] = {}
    for site in parse_lint(strip_ansi(text)):
        grouped.setdefault(site.key, []).append(site)
    out: list[TestFailure] = []
    for key, sites in grouped.items():
        first = sites[0]
        listed = [f"{s.path}:{s.line}:{s.col or 0}: {s.code} {s.message}" for s in sites]
        out.append(
            TestFailure(
                id=key,
                file=first.path,
                line=first.line,
                type="lint",
                message=_clip("\n".join(listed)),
                frames=tuple(Frame(s.path, s.line, s.code) for s in reversed(sites))[-MAX_FRAMES:],
            )
        )
    return tuple(out)


# --------------------------------------------------------------------------- maven (surefire console)

_SUREFIRE_NEW = re.compile(
    r"^\[ERROR\] (?P<cls>[\w.$]+)\.(?P<method>[^.\s(]+)(?:\(.*?\))? -- Time elapsed: .*<<< (?P<kind>FAILURE|ERROR)!$"
)
_SUREFIRE_OLD = re.compile(
    r"^\[ERROR\] (?P<method>[^\s(]+)\((?P<cls>[\w.$]+)\)\s+Time elapsed: .*<<< (?P<kind>FAILURE|ERROR)!$"
)
_JAVAC_ERROR = re.compile(
    r"^\[ERROR\] (?P<file>\S+\.(?:java|kt)):\[(?P<line>\d+),(?P<col>\d+)\] (?P<msg>.+)$"
)


def parse_maven_text(text: str) -> Parsed:
    """Parse surefire's console report (test failures) and javac errors from ``mvn`` output."""
    lines = strip_ansi(text).splitlines()
    results: list[TestResult] = []
    errors: list[TestFailure] = []
    seen: set[str] = set()
    for i, line in enumerate(lines):
        m = _SUREFIRE_NEW.match(line) or _SUREFIRE_OLD.match(line)
        if m:
            test_id = f"{m['cls']}#{m['method']}"
            body: list[str] = []
            for nxt in lines[i + 1 :]:
                if not nxt.strip() or nxt.startswith("["):
                    break
                body.append(nxt)
            type_ = None
            message = ""
            if body and (mm := re.match(r"^(?P<type>[\w.$]+)(?:: (?P<msg>.*))?$", body[0])):
                type_, message = mm["type"], mm["msg"] or ""
            failure = _failure(test_id, type_=type_, message=message, frames=extract_frames("\n".join(body)))
            if test_id not in seen:
                seen.add(test_id)
                kind: Outcome = "failed" if m["kind"] == "FAILURE" else "error"
                results.append(TestResult(test_id, kind, None, failure))
            continue
        if (m := _JAVAC_ERROR.match(line)) and not any(
            e.file == m["file"] and e.line == int(m["line"]) for e in errors
        ):
            errors.append(
                TestFailure(
                    id=f"{m['file']}:{m['line']}",
                    file=m["file"],
                    line=int(m["line"]),
                    type="compile",
                    message=m["msg"],
                    frames=(Frame(m["file"], int(m["line"]), None),),
                )
            )
    return Parsed(tuple(results), tuple(errors))


# --------------------------------------------------------------------------- dispatch

TEXT_PARSERS: Mapping[str, Callable[[str], Parsed]] = {
    "pytest": parse_pytest_text,
    "unittest": parse_unittest_text,
    "go": parse_go_text,
    "cargo": parse_cargo_text,
    "jest": parse_jest_text,
    "vitest": parse_vitest_text,
    "maven": parse_maven_text,
    "gradle": parse_maven_text,
    "node": parse_node_tap,
    "tap": parse_tap_text,
}

_SIGNATURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "pytest",
        re.compile(
            r"^=+ (test session starts|FAILURES|ERRORS|short test summary info) =+$|^(FAILED|ERROR) \S+\.py",
            re.M,
        ),
    ),
    ("unittest", re.compile(r"^Ran \d+ tests? in ", re.M)),
    ("go", re.compile(r"^(--- (FAIL|PASS): |=== RUN |ok  \t|FAIL\t)", re.M)),
    ("cargo", re.compile(r"^(test result: |running \d+ tests?$)", re.M)),
    ("vitest", re.compile(r"^\s*Test Files\s+\d", re.M)),
    ("jest", re.compile(r"^Tests:\s+.*\btotal$|^\s+● ", re.M)),
    ("maven", re.compile(r"T E S T S|^\[(ERROR|INFO)\] Tests run: \d+", re.M)),
    ("node", re.compile(r"^TAP version \d+\n(?:.*\n)*?# Subtest: ", re.M)),
    (
        "tap",
        re.compile(
            r"^TAP version \d+$"
            r"|^(?:not )?ok 1\b(?=[\s\S]*^1\.\.\d+$)|^1\.\.\d+$(?=[\s\S]*^(?:not )?ok 1\b)",
            re.M,
        ),
    ),
)


def framework_of_command(command: str) -> Framework | None:
    """The test framework a shell command runs, judged from the command text alone."""
    c = command
    if re.search(r"\bpytest\b|\bpy\.test\b", c):
        return "pytest"
    if re.search(r"\bunittest\b", c):
        return "unittest"
    if re.search(r"\bgo test\b|\bgotestsum\b", c):
        return "go"
    if re.search(r"\bcargo (?:\+\S+ )?(?:test|nextest)\b", c):
        return "cargo"
    if re.search(r"\bvitest\b", c):
        return "vitest"
    if re.search(r"\bjest\b", c):
        return "jest"
    if re.search(r"(?:^|[\s/;&|(])node(?:\s+-{1,2}[\w-]+(?:=\S+|\s+[^-\s]\S*)?)*?\s+--test(?=\s|$)", c):
        return "node"
    if re.search(r"(?:^|[\s/;&|(])(?:tape|tap)(?=\s|$)", c):
        return "tap"
    if re.search(r"(?:^|[\s/])mvnw?\b", c):
        return "maven"
    if re.search(r"(?:^|[\s/])gradlew?\b", c):
        return "gradle"
    return None


def detect_framework(text: str) -> list[str]:
    """Frameworks whose output signature appears in ``text`` (most specific first)."""
    plain = strip_ansi(text)
    if re.search(r'^\s*\{"Time":"[^"]*","Action":', plain, re.M):
        return ["go"]
    names = [name for name, sig in _SIGNATURES if sig.search(plain)]
    # node --test prints TAP too: its own parser reads it (ids, suites, load errors).
    return [n for n in names if n != "tap"] if "node" in names else names


def parse_text(text: str, framework: str | None = None) -> Parsed:
    """Parse test-runner text with the parser for ``framework``, or every parser whose signature matches."""
    if framework == "go" and re.search(r'^\s*\{.*"Action"', text, re.M):
        return parse_go_json(text)
    names = [framework] if framework in TEXT_PARSERS else detect_framework(text)
    if framework is None and names == ["go"] and re.search(r'^\s*\{.*"Action"', text, re.M):
        return parse_go_json(text)
    results: dict[str, TestResult] = {}
    errors: list[TestFailure] = []
    for name in names:
        if name is None:
            continue
        parsed = TEXT_PARSERS[name](text)
        for r in parsed.results:
            results.setdefault(r.id, r)
        errors.extend(parsed.errors)
    return Parsed(tuple(results.values()), tuple(errors))


_FAULT_THREAD = re.compile(
    r"^(?P<current>Current thread|Thread) 0x[0-9a-f]+ .*\(most recent call first\):\s*$"
)
_FAULT_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)\s*$')


def hang_frames(text: str) -> list[Frame]:
    """Frames of a faulthandler dump in ``text`` (what a Python process printed when ARCS
    interrupted it at the deadline), outermost first, repository frames only.

    Of the dumped threads, the current (main) thread wins when it has frames outside third-party
    code; else the first thread that has.
    """
    threads: list[tuple[bool, list[Frame]]] = []
    for line in strip_ansi(text).splitlines():
        if m := _FAULT_THREAD.match(line):
            threads.append((m["current"] == "Current thread", []))
        elif threads and (m := _FAULT_FRAME.match(line)):
            threads[-1][1].append(Frame(m["file"], int(m["line"]), m["func"]))
    own = [(cur, [f for f in reversed(frames) if not is_third_party(f.file)]) for cur, frames in threads]
    own = [(cur, frames) for cur, frames in own if frames]
    if not own:
        return []
    own.sort(key=lambda item: not item[0])
    return own[0][1][-MAX_FRAMES:]


def _timeout_failure(execution: Execution, text: str) -> TestFailure:
    """The run-level ``timeout`` failure, with where it hung when the output tells."""
    frames = hang_frames(text)
    lines = [f"timed out after {execution.duration_s:.1f}s: the sandbox stopped the command"]
    if frames:
        inner = frames[-1]
        where = inner.file.removeprefix("/workspace/")
        lines[0] += f"; it was running {inner.function or '?'} ({where}:{inner.line})"
    if execution.hang:
        lines.append("processes at the deadline: " + execution.hang)
    return _failure("<run>", type_="timeout", message="\n".join(lines), frames=frames)


def parse_output(
    execution: Execution,
    framework_hint: str | None = None,
    *,
    junit_artifacts: Iterable[str] | None = None,
) -> TestRun:
    """Turn one test command's :class:`Execution` into a :class:`TestRun`.

    JUnit XML among ``execution.artifacts`` wins (all ``*.xml`` artifacts unless
    ``junit_artifacts`` names them); then ``go test -json`` events; then the text parser for the
    framework (or every parser whose signature matches). A failing exit with nothing parsed, a
    kill, or truncated output adds a run-level error so a broken run never reads as a pass.
    """
    text = execution.stdout + ("\n" if execution.stdout and execution.stderr else "") + execution.stderr
    names = (
        list(junit_artifacts)
        if junit_artifacts is not None
        else [k for k in execution.artifacts if k.endswith(".xml")]
    )
    parsed = Parsed()
    source: ReportSource = "none"
    for name in names:
        xml = execution.artifacts.get(name)
        if not xml or not xml.strip():
            continue
        try:
            got = parse_junit_xml(xml, framework=framework_hint)
        except ValueError:
            continue
        parsed = Parsed(parsed.results + got.results, parsed.errors + got.errors)
        source = "junit"
    if source == "junit":
        # Build/compile errors never reach a JUnit file; the text still has them.
        extra = parse_text(text, framework_hint).errors if not parsed.results else ()
        known = {e.id for e in parsed.errors}
        parsed = Parsed(parsed.results, parsed.errors + tuple(e for e in extra if e.id not in known))
    else:
        parsed = parse_text(text, framework_hint)
        if parsed:
            is_json = framework_hint == "go" and re.search(r'^\s*\{.*"Action"', text, re.M)
            source = "go-json" if is_json else "text"
    if not parsed and execution.exit_code != 0 and execution.killed_by is None:
        # No test output: a linter or type checker's sites, when that is what failed.
        parsed = Parsed((), lint_errors(text))
    errors = list(parsed.errors)
    failed = any(r.outcome in ("failed", "error") for r in parsed.results)
    if execution.killed_by == "timeout":
        errors.append(_timeout_failure(execution, text))
    elif execution.killed_by is not None:
        errors.append(
            TestFailure(
                id="<run>",
                type=execution.killed_by,
                message=f"the sandbox stopped the command ({execution.killed_by})",
            )
        )
    elif execution.exit_code != 0 and not failed and not errors:
        tail = [ln for ln in strip_ansi(text).splitlines() if ln.strip()][-MAX_MESSAGE_LINES:]
        errors.append(
            TestFailure(
                id="<run>",
                type="exit",
                message=_clip(f"exit code {execution.exit_code}\n" + "\n".join(tail)),
            )
        )
    detected = detect_framework(text)
    return TestRun(
        command=execution.command,
        exit_code=execution.exit_code,
        duration_s=execution.duration_s,
        results=parsed.results,
        errors=tuple(errors),
        truncated=execution.truncated,
        killed_by=execution.killed_by,
        source=source,
        framework=framework_hint or (detected[0] if detected else None),
    )


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True, slots=True)
class Comparison:
    """How a candidate run differs from the baseline run."""

    fixed: tuple[str, ...]
    """Target failures that now pass."""
    still_failing: tuple[str, ...]
    """Target failures that still fail (or vanished from a broken candidate run)."""
    regressions: tuple[str, ...]
    """Tests that passed in the baseline and now fail (or vanished from a broken candidate run)."""
    new_failures: tuple[str, ...]
    """Failing tests the baseline did not report at all."""
    missing: tuple[str, ...]
    """Baseline tests the candidate did not report although it ran cleanly (removed or renamed?)."""
    flaky: tuple[str, ...]
    """Known-flaky tests: reported here, never counted as fixed or as regressions."""
    candidate_errors: tuple[str, ...] = ()
    """Run-level errors of the candidate that the baseline did not have (e.g. a new import error)."""

    @property
    def ok(self) -> bool:
        """Every target fixed, nothing regressed, nothing new broke."""
        return (
            not self.still_failing
            and not self.regressions
            and not self.new_failures
            and not self.candidate_errors
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "ok": self.ok,
            "fixed": list(self.fixed),
            "still_failing": list(self.still_failing),
            "regressions": list(self.regressions),
            "new_failures": list(self.new_failures),
            "missing": list(self.missing),
            "flaky": list(self.flaky),
            "candidate_errors": list(self.candidate_errors),
        }


def compare(
    baseline: TestRun,
    candidate: TestRun,
    *,
    targets: Iterable[str] | None = None,
    flaky: Iterable[str] = (),
) -> Comparison:
    """Compare a candidate run (after a patch) with the baseline run (before it).

    ``targets`` are the failures the patch should fix (default: every baseline failure);
    ``flaky`` ids (from :func:`runners.triage.triage`) are set aside. A test missing from the
    candidate counts as failing when the candidate has run-level errors (it could not run).
    """
    flaky_set = set(flaky)
    base = {r.id: r.outcome for r in baseline.results}
    cand = {r.id: r.outcome for r in candidate.results}
    target_ids = [t for t in (targets if targets is not None else baseline.failed_ids) if t not in flaky_set]
    base_error_ids = {e.id for e in baseline.errors}
    new_errors = tuple(e.id for e in candidate.errors if e.id not in base_error_ids)
    broken = bool(candidate.errors) or candidate.killed_by is not None

    def failing(test_id: str) -> bool:
        oc = cand.get(test_id)
        return oc in ("failed", "error") or (oc is None and broken)

    fixed = tuple(t for t in target_ids if cand.get(t) == "passed")
    still = tuple(t for t in target_ids if t not in fixed)
    target_set = set(target_ids)
    regressions = tuple(
        t
        for t, oc in base.items()
        if oc == "passed" and t not in target_set and t not in flaky_set and failing(t)
    )
    new_failures = tuple(
        t for t, oc in cand.items() if oc in ("failed", "error") and t not in base and t not in flaky_set
    )
    missing = tuple(t for t in base if t not in cand and not broken and t not in target_set)
    return Comparison(
        fixed=fixed,
        still_failing=still,
        regressions=regressions,
        new_failures=new_failures,
        missing=missing,
        flaky=tuple(sorted(flaky_set & (set(base) | set(cand) | target_set))),
        candidate_errors=new_errors,
    )
