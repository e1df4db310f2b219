"""The Workbench port: where the loop applies candidate edits and runs the tests.

Pure protocol and value types. The real implementation (private workspace copies, the sandboxed
runner, result parsing) lives outside the core in :mod:`jobs.sandbox_workbench`; the in-repo fake
is :class:`jobs.repair.fakes.FakeWorkbench`.

Every :meth:`Workbench.run_tests` call is one sandboxed execution: the loop counts them against
``Budget.executions`` itself, so the bound is proved by the trace, not by the implementation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from jobs.repair.edits import AppliedEdits
from jobs.repair.model import Edit, Failure, Frame
from jobs.repair.ports import SourceView

RUN_ERROR_PREFIX = "<"
"""Run-level error ids look like ``<run>``/``<setup>``; collection errors use the file path."""


@dataclass(frozen=True, slots=True)
class TestOutcome:
    """One test command's outcome, reduced to what the loop needs (ids, observed failures).

    ``failures`` holds the failure of every failed test and every run-level error (collection,
    build, setup, timeout), in the runner's order. ``errors`` are the ids of the run-level ones.
    """

    __test__: ClassVar[bool] = False  # not a pytest test class

    passed: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    failures: tuple[Failure, ...] = ()
    exit_code: int = 0
    duration_s: float = 0.0
    timed_out: bool = False
    skipped: tuple[str, ...] = ()
    selected: bool = False
    """True when the command was narrowed to the requested tests (else the whole suite ran)."""
    command: str = ""
    environment: str = ""
    """One line when the run could not test the code at all (a missing command, runner or
    third-party module, a failed setup step; :mod:`runners.environment`), else ''."""
    hang_s: float = 0.0
    """On a run the hang probe stopped early: how long the hung test ran (the rest of
    :attr:`duration_s` did not hang); 0 otherwise."""

    @property
    def ran(self) -> tuple[str, ...]:
        """Ids that ran to a verdict (passed or failed)."""
        return self.passed + self.failed

    @property
    def ok(self) -> bool:
        """Nothing failed, nothing errored, not killed."""
        return not self.failed and not self.errors and not self.timed_out

    @property
    def broken(self) -> bool:
        """The run failed as a whole (errors or a kill): unreported tests count as failing."""
        return bool(self.errors) or self.timed_out

    def summary(self) -> str:
        """``3 passed, 1 failed, 1 error`` (one line)."""
        parts = [f"{len(self.passed)} passed", f"{len(self.failed)} failed"]
        if self.errors:
            parts.append(f"{len(self.errors)} error{'s' if len(self.errors) != 1 else ''}")
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        if self.timed_out:
            parts.append("timed out")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping (stable keys)."""
        return {
            "command": self.command,
            "passed": list(self.passed),
            "failed": list(self.failed),
            "errors": list(self.errors),
            "skipped": list(self.skipped),
            "failures": [failure_to_json(f) for f in self.failures],
            "exit_code": self.exit_code,
            "duration_s": round(self.duration_s, 3),
            "timed_out": self.timed_out,
            "selected": self.selected,
            **({"environment": self.environment} if self.environment else {}),
            **({"hang_s": round(self.hang_s, 3)} if self.hang_s else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TestOutcome:
        """Inverse of :meth:`to_json`."""
        return cls(
            passed=tuple(str(x) for x in data.get("passed", ())),
            failed=tuple(str(x) for x in data.get("failed", ())),
            errors=tuple(str(x) for x in data.get("errors", ())),
            failures=tuple(failure_from_json(f) for f in data.get("failures", ())),
            exit_code=int(data.get("exit_code", 0)),
            duration_s=float(data.get("duration_s", 0.0)),
            timed_out=bool(data.get("timed_out", False)),
            skipped=tuple(str(x) for x in data.get("skipped", ())),
            selected=bool(data.get("selected", False)),
            command=str(data.get("command", "")),
            environment=str(data.get("environment", "")),
            hang_s=float(data.get("hang_s", 0.0)),
        )

    @property
    def failing(self) -> frozenset[str]:
        """Ids that failed or errored."""
        return frozenset((*self.failed, *self.errors))


def failure_to_json(f: Failure) -> dict[str, Any]:
    """A :class:`Failure` as a JSON-ready mapping."""
    return {
        "test_id": f.test_id,
        "type": f.type,
        "message": f.message,
        "path": f.path,
        "line": f.line,
        "frames": [[fr.path, fr.line, fr.function] for fr in f.frames],
    }


def failure_from_json(data: Mapping[str, Any]) -> Failure:
    """Inverse of :func:`failure_to_json`."""
    return Failure(
        test_id=str(data.get("test_id", "")),
        type=str(data.get("type", "")),
        message=str(data.get("message", "")),
        path=str(data.get("path", "")),
        line=int(data.get("line", 0)),
        frames=tuple(Frame(str(p), int(n), str(fn)) for p, n, fn in data.get("frames", ())),
    )


@dataclass(frozen=True, slots=True)
class CandidateRun:
    """The executions of one candidate: the target tests, then (if they pass) the regression suite.

    ``full`` is the same object as ``targets`` when the framework could not narrow the command
    (the whole suite ran once); ``executions`` counts sandboxed runs actually made.
    """

    targets: TestOutcome | None = None
    full: TestOutcome | None = None
    executions: int = 0
    stopped: str = ""
    """Why a run that was due did not happen (``budget: executions``…), or ''."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping; ``full`` is ``"targets"`` when it is the same run."""
        full: object = None
        if self.full is not None:
            full = "targets" if self.full is self.targets else self.full.to_json()
        return {
            "targets": None if self.targets is None else self.targets.to_json(),
            "full": full,
            "executions": self.executions,
            "stopped": self.stopped,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CandidateRun:
        """Inverse of :meth:`to_json`."""
        targets = None if data.get("targets") is None else TestOutcome.from_json(data["targets"])
        raw_full = data.get("full")
        full = (
            targets
            if raw_full == "targets"
            else (None if raw_full is None else TestOutcome.from_json(raw_full))
        )
        return cls(targets, full, int(data.get("executions", 0)), str(data.get("stopped", "")))


@runtime_checkable
class Workbench(Protocol):
    """Applies edits to private copies of the base tree and runs the repository's tests there.

    Implementations never write to the user's work tree and never raise for test trouble
    (timeouts, crashes, unparsable output are a :class:`TestOutcome` with ``errors``).
    """

    @property
    def framework(self) -> str:
        """The test framework (``pytest``, ``go``, ``jest``…), or '' when unknown."""
        ...

    def source(self) -> SourceView:
        """Read-only view of the base tree (what proposers read)."""
        ...

    def preview(self, edits: Sequence[Edit]) -> AppliedEdits:
        """Apply ``edits`` to a scratch copy of the base tree and report the change, running nothing.

        Raises :class:`jobs.repair.edits.EditError` (with a model-facing reason) when an edit does
        not apply; the base tree is never modified.
        """
        ...

    def run_tests(
        self, change: AppliedEdits | None, *, select: Sequence[str] | None = None, timeout_s: float
    ) -> TestOutcome:
        """Run the tests on the base tree plus ``change`` (None: the base itself), in a fresh copy.

        ``select`` narrows the run to those test ids when the framework can (``selected`` says
        whether it did); None runs the whole suite. One call is one sandboxed execution.

        This is the *diagnosis* command: the test command without its fail-fast flags
        (:mod:`runners.failfast`), so that every test is observed.
        """
        ...


@runtime_checkable
class Verifier(Protocol):
    """A workbench that can also run the *exact* test command (fail-fast flags included).

    The loop's final verification: ``fixed`` means this run exited 0 on the patched tree.
    Workbenches without it are verified with :meth:`Workbench.run_tests` (no selection).
    """

    def verify(self, change: AppliedEdits | None, *, timeout_s: float) -> TestOutcome:
        """Run the exact command on base + ``change`` in a fresh copy."""
        ...

    @property
    def commands(self) -> Mapping[str, Any]:
        """``{diagnosis, verification, removed, added, complete, note, toolchain}`` for the trace."""
        ...


__all__ = [
    "RUN_ERROR_PREFIX",
    "CandidateRun",
    "TestOutcome",
    "Verifier",
    "Workbench",
    "failure_from_json",
    "failure_to_json",
]
