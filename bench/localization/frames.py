"""Stack-frame extraction from tracebacks, test output and CI logs.

Two uses: the corpus builder turns frames into ``hints`` (repository-relative ``path:line``), and the
checker verifies that every frame's line falls inside the function the frame names. The parser is a
handful of regular expressions, the same kind of "simple regex" a bot would apply to a CI log:

* a generic ``<path>.<ext>:<line>`` / ``File "<path>", line <n>`` pattern finds locations;
* language-specific patterns attach the function name when the format gives one (CPython, pytest
  ``--tb=short``, V8/Node ``at fn (path:l:c)``, vitest ``❯ fn path:l:c``, Go panics and race reports,
  Rust backtraces).

Absolute or ``./``-prefixed paths are mapped to repository files by the longest path suffix; bare file
names (``retry_test.go:17`` in ``go test`` output) map when exactly one repository file has that name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

_EXT = r"(?:py|pyi|ts|tsx|js|mjs|cjs|jsx|go|rs|java|kt|rb)"
_GENERIC = re.compile(rf"(?P<path>(?:file://)?[\w./@~+-]*[\w@~+-]\.{_EXT})(?:\", line |:)(?P<line>\d+)(?!\d)")
_PY_FILE = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
_PYTEST = re.compile(rf"^(?P<path>[\w./-]+\.{_EXT}):(?P<line>\d+): in (?P<func>\S+)", re.M)
_NODE = re.compile(
    rf"\bat (?:(?P<func>[^\s(][^(]*?) \()?(?:file://)?(?P<path>[^\s()]+\.{_EXT}):(?P<line>\d+):\d+\)?"
)
_VITEST = re.compile(rf"❯ (?:(?P<func>[^\s]+) )?(?P<path>[^\s]+\.{_EXT}):(?P<line>\d+):\d+")
# Go: "pkg.(*T).Method(args)\n\t/abs/path/file.go:123 +0x1f"; race reports indent both lines.
_GO = re.compile(r"^[ \t]*(?P<func>\S[^\n]*)\n\s+(?P<path>\S+\.go):(?P<line>\d+)(?: \+0x[0-9a-f]+)?$", re.M)
# Rust: "  6: tally::journal::Transaction::balance\n             at ./src/journal.rs:41:32"
_RUST = re.compile(r"^\s*\d+: (?P<func>.+)\n\s+at (?P<path>\S+\.rs):(?P<line>\d+):\d+$", re.M)


@dataclass(frozen=True, slots=True)
class Frame:
    """One location mentioned by the text; ``func`` is the frame's function when the format names it."""

    path: str
    line: int
    func: str | None = None


def _strip_call_args(sig: str) -> str:
    """``pkg.(*T).M(0xc0, {...})`` -> ``pkg.(*T).M``: drop one balanced trailing argument list."""
    if pattern_is_go_call(sig):
        depth = 0
        for i in range(len(sig) - 1, -1, -1):
            if sig[i] == ")":
                depth += 1
            elif sig[i] == "(":
                depth -= 1
                if depth == 0:
                    return sig[:i]
    return sig


def pattern_is_go_call(sig: str) -> bool:
    """A Go frame label ends with its argument list (possibly empty)."""
    return sig.endswith(")") and "::" not in sig and " (" not in sig


def _clean_path(raw: str) -> str:
    path = raw.removeprefix("file://")
    while path.startswith("./"):
        path = path[2:]
    return path


def parse_frames(text: str) -> list[Frame]:
    """Every ``path:line`` in ``text``, in order of appearance, with function names where known."""
    named: dict[tuple[int, str, int], str] = {}
    for pattern in (_PY_FILE, _PYTEST, _NODE, _VITEST, _GO, _RUST):
        for m in pattern.finditer(text):
            func = _strip_call_args((m.group("func") or "").strip()) or None
            if func:
                named[(m.start("path"), _clean_path(m.group("path")), int(m.group("line")))] = func
    frames: list[Frame] = []
    for m in _GENERIC.finditer(text):
        path = _clean_path(m.group("path"))
        line = int(m.group("line"))
        frames.append(Frame(path, line, named.get((m.start("path"), path, line))))
    return frames


def resolve_path(raw: str, repo_files: Iterable[str]) -> str | None:
    """Map a path from a log to a repository-relative path, or None when it is not in the repository."""
    files = list(repo_files)
    raw = _clean_path(raw)
    best: str | None = None
    for f in files:
        if (raw == f or raw.endswith("/" + f)) and (best is None or len(f) > len(best)):
            best = f
    if best is not None:
        return best
    if "/" not in raw:
        same_name = [f for f in files if PurePosixPath(f).name == raw]
        if len(same_name) == 1:
            return same_name[0]
    return None


def innermost_last(text: str) -> bool:
    """True for CPython/pytest output, which prints the innermost frame last (Go, Rust, V8: first)."""
    return "Traceback (most recent call last)" in text or _PYTEST.search(text) is not None


def extract_hints(text: str, repo_files: Iterable[str], limit: int = 20) -> list[tuple[str, int]]:
    """Repository-relative ``(path, line)`` pairs from ``text``, most important first, deduplicated.

    "Most important" is the innermost frame first (where the error surfaced), then outwards, which
    is the order the retriever's hint decay expects; for CPython/pytest output the frames are read
    bottom-up. Frames outside the repository (stdlib, site-packages, toolchain) are dropped.
    """
    files = list(repo_files)
    seen: set[tuple[str, int]] = set()
    hints: list[tuple[str, int]] = []
    frames = parse_frames(text)
    if innermost_last(text):
        frames.reverse()
    for frame in frames:
        path = resolve_path(frame.path, files)
        if path is None or (path, frame.line) in seen:
            continue
        seen.add((path, frame.line))
        hints.append((path, frame.line))
        if len(hints) >= limit:
            break
    return hints


def simple_func_name(func: str) -> str | None:
    """The function's simple name from a frame label, ignoring closures; None when anonymous.

    ``pkg.(*Worker).handleResult`` -> ``handleResult``; ``server.AccessLog.func1.1`` -> ``AccessLog``;
    ``tally::query::matches::{{closure}}`` -> ``matches``; ``<&Amount as Add>::add`` -> ``add``;
    ``TransformSchema._parse`` -> ``_parse``; ``<module>`` / ``<genexpr>`` -> None.
    """
    func = func.strip()
    if func.startswith("<") and func.endswith(">") and "::" not in func:
        return None
    if "::" in func:  # Rust
        parts = [p for p in func.split("::") if p and p != "{{closure}}"]
        return parts[-1] if parts else None
    func = func.removesuffix("-fm")
    func = re.sub(r"(\.func\d+)+(\.\d+)*$", "", func)  # Go closures
    func = re.sub(r"\[.*\]$", "", func).strip()  # Node "fn [as alias]"
    if func.startswith("get ") or func.startswith("set "):
        func = func[4:]
    last = func.rsplit(".", 1)[-1].strip("()*")
    if not last or last.startswith("<"):
        return None
    return last
