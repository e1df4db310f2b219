"""Traceback frames and repository paths: parses stack frames out of any framework's failure text
(Python, pytest, V8/jest/vitest, the JVM, Rust, Go; :func:`extract_frames`) and faulthandler dumps
(:func:`hang_frames`), maps printed paths to repository paths (:func:`normalize_path`,
:func:`localize`), and builds a clipped :class:`TestFailure` from them (``_failure``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import PurePosixPath

from runners.results_types import (
    MAX_FRAMES,
    MAX_MESSAGE_CHARS,
    MAX_MESSAGE_LINES,
    Frame,
    TestFailure,
    TestRun,
    strip_ansi,
)

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
