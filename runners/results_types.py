"""Per-test result value types (:class:`Frame`, :class:`TestFailure`, :class:`TestResult`,
:class:`Parsed`, :class:`TestRun`), the framework/outcome literals and message limits.

The lowest of the ``runners.results*`` modules: it parses nothing but ANSI escapes
(:func:`strip_ansi`), and every parser module builds these values. Import them from
:mod:`runners.results`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

Framework = Literal[
    "pytest", "unittest", "go", "cargo", "jest", "vitest", "mocha", "maven", "gradle", "node", "tap"
]
FRAMEWORKS: tuple[Framework, ...] = (
    "pytest",
    "unittest",
    "go",
    "cargo",
    "jest",
    "vitest",
    "mocha",
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
MAX_OUTPUT_CHARS = 64_000

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
    hint: str = ""
    """One line about how the run went that is not a test's failure (it stopped in an npm
    ``pretest`` hook before any test ran), else ''."""
    output: str = ""
    """The command's output (stdout then stderr), its last :data:`MAX_OUTPUT_CHARS` characters:
    what ``arcs test`` shows."""

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
            "hint": self.hint or None,
            "output": self.output,
        }
