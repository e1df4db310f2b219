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
- mocha: its full title, the describe blocks and title joined by spaces (what ``--grep`` matches)
- lint / type-check sites (run-level errors of a failing command no test parser read, see
  :mod:`runners.lintsites`): ``<tool>:<repo path>:<rule>``, e.g. ``ruff:pkg/mod.py:F401``

The parser of each framework is its row of :data:`runners.frameworks.TABLE`. This module picks the parser (:func:`parse_text`, :func:`parse_output`), compares runs and
re-exports the rest, which lives in :mod:`runners.results_types` (value types),
:mod:`runners.results_frames` (frames, paths, :func:`localize`), :mod:`runners.results_junit`,
:mod:`runners.results_python` (pytest, unittest), :mod:`runners.results_compiled` (go, cargo,
maven) and :mod:`runners.results_js` (jest, vitest, node --test, TAP).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from runners import frameworks
from runners.base import Execution
from runners.lintsites import parse_lint
from runners.npm_scripts import stopped_in_hook
from runners.results_compiled import parse_cargo_text, parse_go_json, parse_go_text, parse_maven_text
from runners.results_frames import (
    RepoPaths,
    _clip,
    _failure,
    extract_frames,
    hang_frames,
    is_third_party,
    localize,
    normalize_path,
)
from runners.results_js import parse_jest_text, parse_node_tap, parse_tap_text, parse_vitest_text
from runners.results_junit import parse_junit_xml
from runners.results_python import parse_pytest_text, parse_unittest_text
from runners.results_types import (
    FRAMEWORKS,
    MAX_FRAMES,
    MAX_MESSAGE_CHARS,
    MAX_MESSAGE_LINES,
    MAX_OUTPUT_CHARS,
    Frame,
    Framework,
    Outcome,
    Parsed,
    ReportSource,
    TestFailure,
    TestResult,
    TestRun,
    strip_ansi,
)

# Every public name of the parser modules stays importable from here: callers import them from
# ``runners.results``, not from the module that defines them.
__all__ = [
    "FRAMEWORKS",
    "MAX_FRAMES",
    "MAX_MESSAGE_CHARS",
    "MAX_MESSAGE_LINES",
    "TEXT_PARSERS",
    "Comparison",
    "Frame",
    "Framework",
    "Outcome",
    "Parsed",
    "RepoPaths",
    "ReportSource",
    "TestFailure",
    "TestResult",
    "TestRun",
    "compare",
    "detect_framework",
    "extract_frames",
    "framework_of_command",
    "hang_frames",
    "is_third_party",
    "lint_errors",
    "localize",
    "normalize_path",
    "parse_cargo_text",
    "parse_go_json",
    "parse_go_text",
    "parse_jest_text",
    "parse_junit_xml",
    "parse_maven_text",
    "parse_node_tap",
    "parse_output",
    "parse_pytest_text",
    "parse_tap_text",
    "parse_text",
    "parse_unittest_text",
    "parse_vitest_text",
    "strip_ansi",
]


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


# --------------------------------------------------------------------------- dispatch

TEXT_PARSERS: Mapping[str, Callable[[str], Parsed]] = {row.name: row.parse for row in frameworks.TABLE}
"""Each framework's text parser (from :data:`runners.frameworks.TABLE`)."""


def framework_of_command(command: str) -> Framework | None:
    """The test framework a shell command runs, judged from the command text alone."""
    return frameworks.of_command(command)


def detect_framework(text: str) -> list[str]:
    """Frameworks whose output signature appears in ``text`` (most specific first)."""
    plain = strip_ansi(text)
    if re.search(r'^\s*\{"Time":"[^"]*","Action":', plain, re.M):
        return ["go"]
    names = frameworks.detect(plain)
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
                # The limit and its value ("stopped: the sandbox reached its 512-process limit").
                message=execution.limit or f"the sandbox stopped the command ({execution.killed_by})",
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
    plain = strip_ansi(text)
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
        hint=stopped_in_hook(plain) if execution.exit_code != 0 and not parsed.results else "",
        output=plain[-MAX_OUTPUT_CHARS:],
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
