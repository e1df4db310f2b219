"""Compiled-language test-runner text: parses ``go test`` (plain, ``-v`` and ``-json``:
:func:`parse_go_text`, :func:`parse_go_json`), ``cargo test`` (:func:`parse_cargo_text`) and
maven/gradle's surefire console plus javac errors (:func:`parse_maven_text`), each with the
build/compile errors the toolchain prints before any test runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from runners.results_frames import _GO_LOG_LINE, _RUST_ARROW, _clip, _failure, extract_frames
from runners.results_junit import _float
from runners.results_types import Frame, Outcome, Parsed, TestFailure, TestResult, strip_ansi

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
