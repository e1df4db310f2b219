"""The one result of a repair: :class:`RepairReport` (pure value, versioned JSON).

It flows back from a repair to the store and the publisher: the engine builds it from the
loop's :class:`jobs.repair.loop.RepairResult` (:meth:`RepairReport.from_result`), the store keeps
:meth:`RepairReport.to_json` in ``attempts.trace``, and the PR body, check run, comments and the
Action's summary are rendered from it. :meth:`RepairReport.from_json` also reads the shape stored
before it existed (v1: the ``trace_summary`` dict of ``jobs.repair_service.outcome_from_report``,
without a ``v`` key; see tests/fixtures/report), so attempts recorded by an older ARCS still render.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobs.repair.budget import Budget, Spend
from jobs.repair.depupdate.record import DependencyUpdate
from jobs.repair.flaky import MAX_OBSERVATIONS, Observation, observations
from jobs.repair.trace_read import (
    Commands,
    GateRecord,
    Interruption,
    TestTally,
    TraceDoc,
    Verification,
    integer,
    mapping,
    number,
    text,
    texts,
)

if TYPE_CHECKING:
    from jobs.repair.loop import RepairResult
    from jobs.repair.workbench import TestOutcome

REPORT_VERSION = 2
"""Version of :meth:`RepairReport.to_json`; 1 is the older summary dict (no ``v`` key)."""
MAX_FAILURE_LOG_CHARS = 4_000
"""Characters of the CI failure log kept with the report."""
MAX_TARGET_TESTS = 50
MAX_FAILURE_SPOTS = 50
"""Failure locations kept with the report (one check-run request carries 50 annotations)."""
MAX_SPOT_MESSAGE_CHARS = 300
MAX_MARKDOWN_CHARS = 1_000_000
"""What is read back of the trace's Markdown (a PR body keeps far less)."""


def _spend(data: object) -> Spend:
    d = mapping(data)
    return Spend(
        iterations=integer(d.get("iterations")) or 0,
        tokens=integer(d.get("tokens")) or 0,
        usd=number(d.get("usd")) or 0.0,
        wall_s=number(d.get("wall_s")) or 0.0,
        executions=integer(d.get("executions")) or 0,
    )


def _budget(data: object) -> Budget | None:
    d = mapping(data)
    if not d:
        return None
    values = Budget().as_dict()
    for name, default in values.items():
        value = number(d.get(name))
        values[name] = default if value is None or value < 0 else value
    return Budget(
        iterations=int(values["iterations"]),
        tokens=int(values["tokens"]),
        usd=values["usd"],
        wall_s=values["wall_s"],
        executions=int(values["executions"]),
    )


CULPRIT_FOUND_BY = ("bisect", "single_commit")
"""How a culprit commit was named: bisected in the sandbox, or the only commit since green."""


@dataclass(frozen=True, slots=True)
class Culprit:
    """The first bad commit between the last green run and the red one."""

    sha: str
    title: str = ""
    author: str = ""
    found_by: str = "single_commit"
    """``bisect`` (located by test runs in the sandbox) or ``single_commit`` (the only one)."""
    runs: int = 0
    """Test runs the bisection spent (0 for a single commit)."""
    probability: float | None = None
    """A flake-aware bisection (#26): the culprit's posterior probability (None: one-run probes)."""

    @property
    def short(self) -> str:
        """The abbreviated sha (7 characters)."""
        return self.sha[:7]

    def to_json(self) -> dict[str, Any]:
        """The stored shape."""
        return {
            "sha": self.sha,
            "title": self.title,
            "author": self.author,
            "found_by": self.found_by,
            "runs": self.runs,
            **({"probability": self.probability} if self.probability is not None else {}),
        }

    @classmethod
    def read(cls, data: object) -> Culprit | None:
        """The record, or None (no mapping, or no sha)."""
        d = mapping(data)
        sha = text(d.get("sha"), 64).strip()
        if not sha:
            return None
        found_by = text(d.get("found_by"), 50)
        return cls(
            sha=sha,
            title=text(d.get("title"), 500),
            author=text(d.get("author"), 200),
            found_by=found_by if found_by in CULPRIT_FOUND_BY else "single_commit",
            runs=max(integer(d.get("runs")) or 0, 0),
            probability=_probability(d.get("probability")),
        )


def _probability(value: object) -> float | None:
    p = number(value)
    return p if p is not None and 0.0 <= p <= 1.0 else None


@dataclass(frozen=True, slots=True)
class FailureSpot:
    """Where one failing test failed: a repository-relative file and line, the test's id and
    a one-line message (what the check run annotates at that line)."""

    test_id: str
    path: str
    line: int
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        """The stored shape."""
        return {"test_id": self.test_id, "path": self.path, "line": self.line, "message": self.message}

    @classmethod
    def read(cls, data: object) -> FailureSpot | None:
        """The record, or None (no path, or no positive line)."""
        d = mapping(data)
        path = text(d.get("path"), 500).strip()
        line = integer(d.get("line"))
        if not path or line is None or line < 1:
            return None
        return cls(
            test_id=text(d.get("test_id"), 500),
            path=path,
            line=line,
            message=text(d.get("message"), MAX_SPOT_MESSAGE_CHARS),
        )

    @classmethod
    def read_all(cls, data: object) -> tuple[FailureSpot, ...]:
        """Every readable record of a list (others skipped), at most :data:`MAX_FAILURE_SPOTS`."""
        if not isinstance(data, list):
            return ()
        spots = (cls.read(item) for item in data[: MAX_FAILURE_SPOTS * 2])
        return tuple(spot for spot in spots if spot is not None)[:MAX_FAILURE_SPOTS]


def failure_spots(failures: Sequence[Any]) -> tuple[FailureSpot, ...]:
    """The located failures of a run (:class:`jobs.repair.model.Failure`, or their recorded
    mappings: ``path``/``line`` is the innermost repository frame), one per test and location, at
    most :data:`MAX_FAILURE_SPOTS`."""
    spots: list[FailureSpot] = []
    seen: set[tuple[str, str, int]] = set()
    for failure in failures:
        d = failure if isinstance(failure, Mapping) else {}

        def field_of(name: str, failure: Any = failure, d: Mapping[str, Any] = d) -> Any:
            return d.get(name) if d else getattr(failure, name, None)

        line = field_of("line")
        line = line if isinstance(line, int) and not isinstance(line, bool) else 0
        path, test_id = text(field_of("path"), 500), text(field_of("test_id"), 500)
        if not path or line < 1 or (test_id, path, line) in seen:
            continue
        seen.add((test_id, path, line))
        kind = text(field_of("type"), 200)
        message = " ".join(text(field_of("message"), 5_000).split())
        if kind and not message.startswith(kind):
            message = f"{kind}: {message}" if message else kind
        spots.append(FailureSpot(test_id, path, line, message[:MAX_SPOT_MESSAGE_CHARS]))
        if len(spots) >= MAX_FAILURE_SPOTS:
            break
    return tuple(spots)


@dataclass(frozen=True, slots=True)
class RevertResult:
    """The ``on_no_fix: revert`` fallback: the culprit commit undone, verified by the final run."""

    sha: str
    """The reverted (culprit) commit."""
    patch: str = ""
    """The unified diff of the revert."""
    files: Mapping[str, str | None] = field(default_factory=dict)
    """New contents of the files the revert changes (``None``: deleted)."""
    verification: Verification | None = None
    """The exact final verification run on the reverted tree."""

    def to_json(self, *, with_files: bool = True) -> dict[str, Any]:
        """The stored shape (``with_files=False``: contents left out)."""
        return {
            "sha": self.sha,
            "patch": self.patch,
            "files": dict(self.files) if with_files else {},
            "verification": None if self.verification is None else self.verification.to_json(),
        }

    @classmethod
    def read(cls, data: object) -> RevertResult | None:
        """The record, or None (no mapping, or no sha). The patch and files are read whole."""
        d = mapping(data)
        sha = text(d.get("sha"), 64).strip()
        if not sha:
            return None
        patch = d.get("patch")
        return cls(
            sha=sha,
            patch=patch if isinstance(patch, str) else "",
            files=_files(d.get("files")),
            verification=Verification.read(d.get("verification")),
        )


def _failed_passed(run: TestOutcome) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A test run's ``(failed and errored, passed)`` ids."""
    return (*run.failed, *run.errors), tuple(run.passed)


def _observations(data: object) -> tuple[Observation, ...]:
    if not isinstance(data, list):
        return ()
    found = (Observation.read(item) for item in data[:MAX_OBSERVATIONS])
    return tuple(o for o in found if o is not None)


def _files(data: object) -> dict[str, str | None]:
    return {
        str(path): content if isinstance(content, str) else None for path, content in mapping(data).items()
    }


@dataclass(frozen=True, slots=True)
class RepairReport:
    """What one repair produced, everything the store, the publisher and the Action need."""

    verdict: str
    """The loop's verdict (``fixed``, ``partial``, ``environment``, ``interrupted``, …; '' when the
    stored shape did not record it: v1 kept it in the attempt's columns)."""
    fixed: bool = False
    reason: str = ""
    explanation: str = ""
    tier: str = ""
    """The last tier that ran (else the requested one)."""
    tiers: tuple[str, ...] = ()
    rounds: int = 0
    candidates: int = 0
    spend: Spend = field(default_factory=Spend)
    budget: Budget | None = None
    """The bounds the loop ran under (None: not recorded)."""
    stopped_by: str = ""
    """What ended the search without a fix: a budget dimension, ``rounds``, ``candidates`` or ''."""
    usd_capped: bool = False
    """The owner's monthly budget lowered the attempt's own USD budget."""
    patch: str = ""
    """The unified diff of a ``fixed`` or ``partial`` result ('' otherwise)."""
    files: Mapping[str, str | None] = field(default_factory=dict)
    """New contents of the changed files (``None``: deleted), read back by the engine; empty when
    the patch was not applied."""
    tests_before: TestTally | None = None
    tests_after: TestTally | None = None
    target_tests: tuple[str, ...] = ()
    gates: tuple[GateRecord, ...] = ()
    verification: Verification | None = None
    pre_existing: tuple[str, ...] = ()
    """``partial``: the tests that still fail, each proven failing at the known-good baseline."""
    notices: tuple[str, ...] = ()
    interrupt: Interruption | None = None
    failure_class: str = ""
    failures: tuple[FailureSpot, ...] = ()
    """Where the failing tests failed (the reproduction's baseline run, else the task's failures
    from the CI log): repository-relative paths only (the engine drops the others)."""
    failure_log: str = ""
    """The start of the CI failure log (at most :data:`MAX_FAILURE_LOG_CHARS`)."""
    commands: Commands | None = None
    trace_id: str = ""
    trace_path: str = ""
    trace_markdown: str = ""
    """The trace rendered as Markdown (``jobs.repair.trace.render_markdown``)."""
    changes: str = ""
    """The change signal in one line (``abc1234..def5678, 3 commits, 4 files``; '' when none)."""
    culprit: Culprit | None = None
    """The commit that turned CI red, when known (bisected, or the only one since green)."""
    revert: RevertResult | None = None
    """``on_no_fix: revert``: the verified revert of the culprit (None when not attempted or
    when its verification failed)."""
    on_no_fix: str = ""
    """The ``.arcs.yml`` ``on_no_fix`` the repair ran under (``report``/``revert``; '' unknown)."""
    revert_skipped: str = ""
    """Under ``on_no_fix: revert`` with no fix and no :attr:`revert`: why, in one line."""
    test_runs: tuple[Observation, ...] = ()
    """The failing tests' outcomes in this attempt's runs (:func:`jobs.repair.flaky.observations`),
    recorded in the repository's test history after the attempt."""
    dependency: DependencyUpdate | None = None
    """A dependency update in the change (#27): the bumps and the section the messages append
    (None: no bump, or a report from before #27)."""
    v: int = REPORT_VERSION

    # -- building -------------------------------------------------------------------------------

    @classmethod
    def from_result(
        cls,
        result: RepairResult,
        *,
        trace_path: str,
        trace_markdown: str,
        files: Mapping[str, str | None] | None = None,
        target_tests: Sequence[str] = (),
        failure_class: str = "",
        failure_log: str = "",
        usd_capped: bool = False,
    ) -> RepairReport:
        """The report of a loop's result (pure).

        ``trace_markdown`` is ``render_markdown(result.trace)``, passed in so this value module
        does not import the renderers. ``target_tests`` are used when the trace's reproduction
        named none (the CI log's tests). ``files``: what the applied patch left in the tree.
        """
        trace = result.trace
        keep_patch = result.fixed or result.verdict == "partial"
        targets = tuple(trace.reproduction.targets) or tuple(target_tests)
        baseline = trace.reproduction.baseline
        located = failure_spots(baseline.failures if baseline is not None else ())
        if not located and trace.task is not None:
            located = failure_spots(trace.task.failures)
        checked = Verification.read(result.verification)
        test_runs = observations(
            None if baseline is None else _failed_passed(baseline),
            [_failed_passed(run) for run in trace.reproduction.reruns],
            verification=None
            if checked is None
            else (checked.new_failures, targets if checked.passed_verification else ()),
        )
        return cls(
            verdict=str(result.verdict),
            fixed=bool(result.fixed),
            reason=result.reason,
            explanation=result.explanation,
            tier=result.tiers[-1] if result.tiers else trace.tier_requested,
            tiers=tuple(result.tiers),
            rounds=result.rounds,
            candidates=result.candidates,
            spend=result.spend,
            budget=result.budget,
            stopped_by=result.stopped_by,
            usd_capped=usd_capped,
            patch=result.patch if keep_patch else "",
            files=dict(files or {}),
            tests_before=TestTally.of(result.tests_before),
            tests_after=TestTally.of(result.tests_after),
            target_tests=targets[:MAX_TARGET_TESTS],
            gates=tuple(GateRecord(g.gate, g.passed, g.detail) for g in result.gates),
            verification=checked,
            pre_existing=tuple(result.pre_existing),
            notices=tuple(result.notices),
            interrupt=Interruption.read(trace.interrupt),
            failure_class=failure_class,
            failures=located,
            failure_log=failure_log[:MAX_FAILURE_LOG_CHARS],
            commands=Commands.read(trace.commands),
            trace_id=trace.id,
            trace_path=trace_path,
            trace_markdown=trace_markdown,
            test_runs=test_runs,
        )

    @classmethod
    def from_trace(cls, doc: TraceDoc, *, trace_path: str = "", trace_markdown: str = "") -> RepairReport:
        """The report a trace document records (read tolerantly: :meth:`TraceDoc.read`), for a
        trace file without a stored report. The budget and the CI context are not in a trace."""
        out = doc.outcome
        spend = doc.spend
        return cls(
            verdict=out.verdict,
            fixed=out.fixed,
            reason=out.reason,
            explanation=out.explanation,
            tier=doc.tiers[-1] if doc.tiers else doc.tier_requested,
            tiers=doc.tiers,
            rounds=len(doc.rounds),
            candidates=sum(1 for r in doc.rounds for c in r.candidates if not c.duplicate_of),
            spend=Spend(
                iterations=spend.iterations or 0,
                tokens=spend.tokens or 0,
                usd=spend.usd or 0.0,
                wall_s=spend.wall_s or 0.0,
                executions=spend.executions or 0,
            ),
            patch=out.patch if out.fixed or out.verdict == "partial" else "",
            tests_before=doc.reproduction.baseline,
            tests_after=out.tests_after,
            target_tests=doc.reproduction.targets[:MAX_TARGET_TESTS],
            failures=failure_spots(doc.failures),
            gates=out.gates,
            verification=out.verification,
            pre_existing=out.pre_existing,
            notices=doc.notices,
            interrupt=doc.interrupt,
            commands=doc.commands,
            trace_id=doc.id,
            trace_path=trace_path,
            trace_markdown=trace_markdown,
        )

    # -- derived --------------------------------------------------------------------------------

    @property
    def verification_line(self) -> str:
        """The final verification run in words ('' when none ran)."""
        return self.verification.line() if self.verification is not None else ""

    # -- JSON -----------------------------------------------------------------------------------

    def to_json(self, *, with_files: bool = True) -> dict[str, Any]:
        """The versioned JSON document (``attempts.trace``); ``with_files=False`` leaves the file
        contents out (the store keeps them in their own column)."""

        def opt(value: TestTally | Verification | Commands | Interruption | None) -> Any:
            return None if value is None else value.to_json()

        return {
            "v": self.v,
            "verdict": self.verdict,
            "fixed": self.fixed,
            "reason": self.reason,
            "explanation": self.explanation,
            "tier": self.tier,
            "tiers": list(self.tiers),
            "rounds": self.rounds,
            "candidates": self.candidates,
            "spend": self.spend.as_dict(),
            "budget": None if self.budget is None else self.budget.as_dict(),
            "stopped_by": self.stopped_by,
            "usd_capped": self.usd_capped,
            "patch": self.patch,
            "files": dict(self.files) if with_files else {},
            "tests_before": opt(self.tests_before),
            "tests_after": opt(self.tests_after),
            "target_tests": list(self.target_tests),
            "gates": [g.to_json() for g in self.gates],
            "verification": opt(self.verification),
            "pre_existing": list(self.pre_existing),
            "notices": list(self.notices),
            "interrupt": opt(self.interrupt),
            "failure_class": self.failure_class,
            "failures": [spot.to_json() for spot in self.failures],
            "failure_log": self.failure_log,
            "commands": opt(self.commands),
            "trace_id": self.trace_id,
            "trace_path": self.trace_path,
            "trace_markdown": self.trace_markdown,
            "changes": self.changes,
            "culprit": None if self.culprit is None else self.culprit.to_json(),
            # The revert keeps its files even without ``with_files``: the store has a column for
            # the forward fix's files only, and the publisher pushes the revert from here.
            "revert": None if self.revert is None else self.revert.to_json(),
            "on_no_fix": self.on_no_fix,
            "revert_skipped": self.revert_skipped,
            "test_runs": [o.to_json() for o in self.test_runs],
            "dependency": None if self.dependency is None else self.dependency.to_json(),
        }

    @classmethod
    def from_json(cls, data: object) -> RepairReport:
        """Read :meth:`to_json` output, or the v1 summary dict (no ``v``), tolerantly: a missing
        or mistyped field reads as its default. ValueError for a newer ``v`` or a non-mapping."""
        if not isinstance(data, Mapping):
            raise ValueError("a repair report is a JSON object")
        version = data.get("v", 1)
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"unsupported repair report version {version!r}")
        if version > REPORT_VERSION:
            raise ValueError(
                f"unsupported repair report version {version} (this ARCS reads up to {REPORT_VERSION})"
            )
        tiers = texts(data.get("tiers"), 50)
        common: dict[str, Any] = {
            "tiers": tiers,
            "candidates": integer(data.get("candidates")) or 0,
            "tests_before": TestTally.read(data.get("tests_before")),
            "tests_after": TestTally.read(data.get("tests_after")),
            "target_tests": texts(data.get("target_tests")),
            "gates": GateRecord.read_all(data.get("gates")),
            "verification": Verification.read(data.get("verification")),
            "pre_existing": texts(data.get("pre_existing")),
            "notices": texts(data.get("notices")),
            "interrupt": Interruption.read(data.get("interrupt")),
            "failure_class": text(data.get("failure_class"), 100),
            "failures": FailureSpot.read_all(data.get("failures")),
            "failure_log": text(data.get("failure_log"), MAX_FAILURE_LOG_CHARS),
            "commands": Commands.read(data.get("commands")),
            "trace_id": text(data.get("trace_id"), 200),
        }
        if version == 1:
            # outcome_from_report's dict: the verdict, reason, patch, tier… lived in the attempt's
            # columns; only the test run's duration and executions of the spend were kept.
            return cls(
                verdict="",
                tier=tiers[-1] if tiers else "",
                spend=Spend(
                    wall_s=number(data.get("duration_s")) or 0.0,
                    executions=integer(data.get("executions")) or 0,
                ),
                trace_markdown=text(data.get("markdown"), MAX_MARKDOWN_CHARS),
                v=1,
                **common,
            )
        # The patch and the files are what gets pushed: read whole, never cut.
        files = _files(data.get("files"))
        patch = data.get("patch")
        return cls(
            verdict=text(data.get("verdict"), 100),
            fixed=bool(data.get("fixed")),
            reason=text(data.get("reason"), 5_000),
            explanation=text(data.get("explanation"), 20_000),
            tier=text(data.get("tier"), 50),
            rounds=integer(data.get("rounds")) or 0,
            spend=_spend(data.get("spend")),
            budget=_budget(data.get("budget")),
            stopped_by=text(data.get("stopped_by"), 50),
            usd_capped=bool(data.get("usd_capped")),
            patch=patch if isinstance(patch, str) else "",
            files=files,
            trace_path=text(data.get("trace_path"), 4_000),
            trace_markdown=text(data.get("trace_markdown"), MAX_MARKDOWN_CHARS),
            changes=text(data.get("changes"), 500),
            culprit=Culprit.read(data.get("culprit")),
            revert=RevertResult.read(data.get("revert")),
            on_no_fix=text(data.get("on_no_fix"), 20),
            revert_skipped=text(data.get("revert_skipped"), 500),
            test_runs=_observations(data.get("test_runs")),
            dependency=DependencyUpdate.read(data.get("dependency")),
            v=version,
            **common,
        )


__all__ = [
    "CULPRIT_FOUND_BY",
    "MAX_FAILURE_LOG_CHARS",
    "MAX_FAILURE_SPOTS",
    "REPORT_VERSION",
    "Culprit",
    "FailureSpot",
    "RepairReport",
    "RevertResult",
    "failure_spots",
]
