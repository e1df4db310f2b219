"""The failing tests' call path: which lines the failing and the passing tests executed (issue #15).

A name lookup cannot follow dynamic dispatch (``getattr(self, "visit_" + kind)``, registries,
callbacks): the code to change is often 3-8 calls below the failing test, behind such a call. One
traced run of the tests (:class:`Profiler`, a workbench capability; the sandboxed implementation
is :mod:`runners.spectrum`) says exactly which lines each failing and passing test executed.
Spectrum-based fault localization ranks the lines the failing tests ran by how much more the
failing tests ran them than the passing ones (Ochiai), and the loop shows the best-ranked
functions to the model from round 1.

This module holds the value types, the port and the ranking (:func:`suspects`, pure); the
evidence shown to the model and the loop's one call of the port live in
:mod:`jobs.repair.spectrum_context`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from indexing.languages import is_test_path
from jobs.repair.call_path import CallPath
from jobs.repair.callees import block_end, enclosing_def
from jobs.repair.ports import SourceView

SpectrumScope = Literal["suite", "files", "tests"]
"""``suite``: the diagnosis command as is; ``files``: narrowed to the failing tests' files;
``tests``: narrowed to the failing tests and the passing neighbours the loop named (a slow suite)."""


@dataclass(frozen=True, slots=True)
class Spectrum:
    """What one traced test run observed, reduced to counts per executed line.

    ``lines[path][line] = (ef, ep)``: how many failing (``ef``) and passing (``ep``) tests executed
    that line of that repository-relative file. Only lines at least one failing test executed are
    kept (the others cannot be suspects); test files are kept too (the ranking skips them).
    """

    failed: int
    """Failing tests traced (a test counts as failing when any of its phases failed)."""
    passed: int
    """Passing tests traced (skipped tests count as neither)."""
    lines: Mapping[str, Mapping[int, tuple[int, int]]] = field(default_factory=dict)
    scope: SpectrumScope = "suite"
    duration_s: float = 0.0
    complete: bool = True
    """False when the run was cut short (timeout, crash): the counts cover the tests that finished."""
    note: str = ""
    """One line on trouble ('' when none)."""


@runtime_checkable
class Profiler(Protocol):
    """A workbench that can run the tests once more with line tracing (Python ``pytest`` only)."""

    def spectrum(
        self, failing: Sequence[str], *, suite: bool, timeout_s: float, also: Sequence[str] = ()
    ) -> Spectrum | None:
        """Trace the base tree's tests (no candidate change) in a fresh copy.

        ``failing``: the failing test ids the loop knows (tests that hung are left out by the
        implementation). ``suite``: run the diagnosis command's whole selection, else only the files
        of ``failing``. Returns None when tracing is not possible here (not pytest, no Python test
        ids); never raises for test trouble. One call is one sandboxed execution. ``also`` (with
        ``suite`` False): passing tests to trace beside ``failing`` — the run is then narrowed to
        those ids instead of the files (scope ``tests``), so a slow suite still gets a contrast.
        """
        ...


# --- ranking -------------------------------------------------------------------------------------

TOP_LINES = 5
"""Lines kept per suspect (the lines with its best score)."""
MODULE = "<module>"
"""Name of the group of a file's lines outside any function."""


def ochiai(ef: int, ep: int, failed: int) -> float:
    """Ochiai suspiciousness of a line run by ``ef`` of ``failed`` failing tests and ``ep`` passing
    ones: ``ef / sqrt(failed * (ef + ep))`` (1.0: every failing test and no passing test ran it)."""
    if failed <= 0 or ef <= 0:
        return 0.0
    return ef / math.sqrt(failed * (ef + ep))


@dataclass(frozen=True, slots=True)
class Suspect:
    """A function (or a file's module-level lines) the failing tests ran, ranked by its best line."""

    path: str
    start: int
    """First line: the ``def`` line (for module-level lines, the first one executed)."""
    end: int
    name: str
    """Qualified function name (``Class.method``), or :data:`MODULE`."""
    score: float
    """Ochiai of its best line (rounded to 4 decimals)."""
    ef: int
    """Failing tests that ran its best line."""
    ep: int
    """Passing tests that ran its best line."""
    lines: tuple[int, ...] = ()
    """Its lines with the best score (at most :data:`TOP_LINES`, ascending)."""
    ran: tuple[tuple[int, float], ...] = ()
    """Every line of it a failing test ran, with that line's Ochiai (ascending by line): tier 0 ranks
    its edit sites by them (issue #29); its other lines did not run on a failing path."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping (the trace's record of the suspect)."""
        return {
            "path": self.path,
            "start": self.start,
            "end": self.end,
            "name": self.name,
            "score": self.score,
            "ef": self.ef,
            "ep": self.ep,
            "lines": list(self.lines),
            **({"ran": [[line, score] for line, score in self.ran]} if self.ran else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Suspect:
        """Inverse of :meth:`to_json`."""
        return cls(
            path=str(data.get("path", "")),
            start=int(data.get("start", 0)),
            end=int(data.get("end", 0)),
            name=str(data.get("name", "")),
            score=float(data.get("score", 0.0)),
            ef=int(data.get("ef", 0)),
            ep=int(data.get("ep", 0)),
            lines=tuple(int(n) for n in data.get("lines", ())),
            ran=tuple((int(line), float(score)) for line, score in data.get("ran", ())),
        )


_NAME = re.compile(r"\s*(?:export\s+)?(?:async\s+)?(?:def|function\*?|class)\s+(\w+)|\s*(\w+)\s*[=(]")


def _def_name(lines: Sequence[str], start: int) -> str:
    """The name defined at line ``start``, qualified by the classes around it (by indentation)."""
    m = _NAME.match(lines[start - 1])
    name = (m.group(1) or m.group(2)) if m else "?"
    text = lines[start - 1]
    width = len(text) - len(text.lstrip())
    for i in range(start - 2, -1, -1):
        if width == 0:
            break
        stripped = lines[i].lstrip()
        indent = len(lines[i]) - len(stripped)
        if not stripped or indent >= width:
            continue
        width = indent
        owner = re.match(r"(?:class|def|async\s+def)\s+(\w+)", stripped)
        if owner:
            name = f"{owner.group(1)}.{name}"
    return name


def _group(lines: Sequence[str], line: int, cache: dict[int, int]) -> int:
    """The ``def`` line of the function holding ``line`` (0: module level). ``cache``: def -> end."""
    start = enclosing_def(lines, line)
    if not start:
        return 0
    if start not in cache:
        text = lines[start - 1]
        cache[start] = block_end(lines, start, text[: len(text) - len(text.lstrip())])
    return start if cache[start] >= line else 0


def suspects(spectrum: Spectrum, source: SourceView) -> tuple[Suspect, ...]:
    """The functions the failing tests ran, most suspicious first (pure, deterministic).

    Each executed line of a non-test file (:func:`indexing.languages.is_test_path`) is scored by
    :func:`ochiai`; lines are grouped into their innermost enclosing function (a file's lines outside
    any function form one :data:`MODULE` group spanning them). A group scores its best line. Ties
    go to the group more failing tests ran, then to the one with fewer lines passing tests ran
    (deeper, more specific code), then by path and line. Unreadable files are skipped.
    """
    ranked: list[tuple[tuple[float, int, int, str, int], Suspect]] = []
    for path in sorted(spectrum.lines):
        if is_test_path(path):
            continue
        text = source.read(path)
        if text is None:
            continue
        lines = text.splitlines()
        ends: dict[int, int] = {}
        groups: dict[int, list[tuple[int, float, int, int]]] = {}
        for line, (ef, ep) in sorted(spectrum.lines[path].items()):
            if ef <= 0 or not 1 <= line <= len(lines):
                continue
            # Scores are compared at the precision recorded (4 decimals): float noise makes no order.
            groups.setdefault(_group(lines, line, ends), []).append(
                (line, round(ochiai(ef, ep, spectrum.failed), 4), ef, ep)
            )
        for start, rows in groups.items():
            best = max(score for _, score, _, _ in rows)
            top = [r for r in rows if r[1] == best]
            line, _, ef, ep = max(top, key=lambda r: (r[2], -r[0]))
            first, end, name = (
                (start, ends[start], _def_name(lines, start)) if start else (rows[0][0], rows[-1][0], MODULE)
            )
            suspect = Suspect(
                path=path,
                start=first,
                end=end,
                name=name,
                score=best,
                ef=ef,
                ep=ep,
                lines=tuple(sorted(r[0] for r in top)[:TOP_LINES]),
                ran=tuple((r[0], r[1]) for r in rows),
            )
            most_failing = max(r[2] for r in rows)
            passing_lines = sum(1 for r in rows if r[3] > 0)
            ranked.append(((-best, -most_failing, passing_lines, path, first), suspect))
    ranked.sort(key=lambda item: item[0])
    return tuple(s for _, s in ranked)


@dataclass(frozen=True, slots=True)
class Localization:
    """What the loop took from the spectrum (the trace's top-level ``spectrum`` entry): the run's
    counts and the best suspects. A replay rebuilds it from the trace and never traces again."""

    scope: str = ""
    failed: int = 0
    passed: int = 0
    duration_s: float = 0.0
    complete: bool = False
    note: str = ""
    executions: int = 0
    """Sandboxed executions it cost (0: it was not run)."""
    suspects: tuple[Suspect, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The trace entry."""
        return {
            "scope": self.scope,
            "failed": self.failed,
            "passed": self.passed,
            "duration_s": round(self.duration_s, 3),
            "complete": self.complete,
            "note": self.note,
            "executions": self.executions,
            "suspects": [s.to_json() for s in self.suspects],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Localization:
        """Inverse of :meth:`to_json`."""
        return cls(
            scope=str(data.get("scope", "")),
            failed=int(data.get("failed", 0)),
            passed=int(data.get("passed", 0)),
            duration_s=float(data.get("duration_s", 0.0)),
            complete=bool(data.get("complete", False)),
            note=str(data.get("note", "")),
            executions=int(data.get("executions", 0)),
            suspects=tuple(Suspect.from_json(s) for s in data.get("suspects", ())),
        )


def call_path(loc: Localization | None, *, recorded: int) -> CallPath | None:
    """Tier 0's view of ``loc`` (None without suspects, or from a trace recorded before the suspects
    kept their lines); ``recorded``: the most suspects a localization keeps (fewer: all were kept)."""
    if loc is None or not loc.suspects or not any(s.ran for s in loc.suspects):
        return None
    lines: dict[str, dict[int, float]] = {}
    for s in loc.suspects:
        lines.setdefault(s.path, {}).update(s.ran)
    spans = tuple((s.path, s.start, s.end) for s in loc.suspects if s.name != MODULE)
    return CallPath(lines, spans, loc.complete and len(loc.suspects) < recorded)


__all__ = [
    "MODULE",
    "TOP_LINES",
    "Localization",
    "Profiler",
    "Spectrum",
    "SpectrumScope",
    "Suspect",
    "call_path",
    "ochiai",
    "suspects",
]
