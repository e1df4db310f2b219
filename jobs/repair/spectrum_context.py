"""The failing tests' call path as context (issue #15): the loop's one traced run, and its evidence.

:func:`localize` asks the workbench's :class:`~jobs.repair.spectrum.Profiler` for one traced run of
the tests, once per repair, in the first round of an LLM tier that retrieves; it counts the run on
the budget meter like every sandboxed execution and records the result in the trace's top-level
``spectrum`` entry (:class:`~jobs.repair.spectrum.Localization`). A replay serves that entry
(:class:`RecordedSpectrum`) instead of tracing again, and counts the recorded executions.

:func:`spectrum_evidence` turns the ranked suspects into evidence: the best functions in order,
each whole when short, else windows around its best lines plus its ``def`` line; scored below the
failure's own code and the tools' finds, above second-hop callees and retrieval. Later rounds skip
what was shown already, so the next-ranked suspects come first.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jobs.repair.model import Evidence
from jobs.repair.prompts import MAX_EVIDENCE_ITEM_CHARS
from jobs.repair.spectrum import Localization, Profiler, Spectrum, Suspect, suspects
from jobs.repair.workbench import RUN_ERROR_PREFIX

if TYPE_CHECKING:
    from jobs.repair.loop_config import LoopConfig
    from jobs.repair.ports import SourceView
    from jobs.repair.state import RunState

WHOLE_LINES = 120
"""A suspect of at most this many lines is shown whole; a longer one as windows."""
RADIUS = 20
"""Lines shown before and after each best line of a long suspect."""
MAX_SUSPECTS = 6
"""Suspects shown per round (within the character budget)."""
RECORDED = 30
"""Suspects kept in the trace (and so the most a run can show)."""
SUITE_MAX_S = 20.0
"""The whole suite is traced when its baseline run took at most this long; else the failing
tests and up to :data:`NEIGHBOURS` passing tests next to them (same class, then same file)."""
NEIGHBOURS = 60
TIMEOUT_FACTOR = 8.0
TIMEOUT_FLOOR_S = 30.0
TOP_SCORE = 1.4
"""Evidence score of the first suspect with Ochiai 1.0 (below tool finds, 1.5, and the direct
callees, 1.9; above second-hop callees, 1.2)."""


# --- evidence ------------------------------------------------------------------------------------


def _windows(s: Suspect, lines: Sequence[str]) -> list[tuple[int, int]]:
    """The line ranges to show of ``s``: whole when short, else around its best lines (+ head)."""
    end = min(s.end, len(lines))
    if end < s.start:
        return []
    if end - s.start + 1 <= WHOLE_LINES and sum(len(t) + 1 for t in lines[s.start - 1 : end]) <= (
        MAX_EVIDENCE_ITEM_CHARS
    ):
        return [(s.start, end)]
    merged: list[tuple[int, int]] = []
    for n in sorted(s.lines or (s.start,)):
        a, b = max(s.start, n - RADIUS), min(end, n + RADIUS)
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    if s.name != "<module>" and merged and merged[0][0] > s.start:
        if merged[0][0] - s.start <= RADIUS:
            merged[0] = (s.start, merged[0][1])
        else:  # the signature: the def line up to the one that opens the body
            head = s.start
            while head < min(end, s.start + 5) and not lines[head - 1].rstrip().endswith((":", "{")):
                head += 1
            merged.insert(0, (s.start, head))
    return merged


def _why(s: Suspect, rank: int, failed: int, passed: int) -> str:
    line = s.lines[0] if s.lines else s.start
    runs = (
        f"run by {s.ef}/{failed} failing, {s.ep}/{passed} passing tests"
        if failed
        else f"run by {s.ef} failing, {s.ep} passing tests"
    )
    return f"suspect {rank + 1} on the failing tests' call path: line {line} {runs} (Ochiai {s.score:.2f})"


def spectrum_evidence(
    source: SourceView,
    ranked: Sequence[Suspect],
    *,
    budget_chars: int,
    failed: int = 0,
    passed: int = 0,
    skip: Collection[str] = (),
    covered: Sequence[Evidence] = (),
    max_suspects: int = MAX_SUSPECTS,
) -> list[Evidence]:
    """Evidence of the best ``ranked`` suspects, in rank order, within ``budget_chars``: each whole
    when it has at most :data:`WHOLE_LINES` lines, else windows of :data:`RADIUS` lines around its
    best lines plus its ``def`` line. Items whose id is in ``skip`` (shown in an earlier round)
    or whose range a ``covered`` item already shows whole are left out, so a later round reaches
    the next suspects. ``failed``/``passed``: the traced run's totals (for the ``why``). Pure."""
    out: list[Evidence] = []
    used = 0
    shown = 0
    for rank, s in enumerate(ranked):
        if shown >= max_suspects:
            break
        text = source.read(s.path)
        if text is None:
            continue
        lines = text.splitlines()
        items: list[Evidence] = []
        for start, end in _windows(s, lines):
            item_id = f"spectrum:{s.path}:{start}-{end}"
            if item_id in skip or any(
                c.path == s.path
                and c.start_line <= start
                and end <= c.end_line
                and len(c.text) <= MAX_EVIDENCE_ITEM_CHARS
                for c in covered
            ):
                continue
            score = max(0.6, 1.0 + (TOP_SCORE - 1.0) * s.score - 0.02 * shown)
            items.append(
                Evidence(
                    id=item_id,
                    source="code",
                    path=s.path,
                    start_line=start,
                    end_line=end,
                    text="\n".join(lines[start - 1 : end]),
                    symbol="" if s.name == "<module>" else s.name,
                    score=round(score, 4),
                    why=_why(s, rank, failed, passed),
                )
            )
        if not items:
            continue
        cost = sum(min(len(e.text), MAX_EVIDENCE_ITEM_CHARS) for e in items)
        if used + cost > budget_chars:
            break
        used += cost
        shown += 1
        out.extend(items)
    return out


# --- the loop's one traced run -------------------------------------------------------------------


class RecordedSpectrum:
    """A trace's ``spectrum`` entry, served by a replay instead of tracing (``entry`` None: the
    recorded run made none, and the replay makes none either)."""

    def __init__(self, entry: Localization | None) -> None:
        self.entry = entry
        self.served = False

    @classmethod
    def of(cls, data: Mapping[str, Any] | None) -> RecordedSpectrum:
        """From a trace's ``spectrum`` mapping (empty or None: nothing recorded)."""
        return cls(Localization.from_json(data) if data else None)


def failing_ids(st: RunState) -> tuple[str, ...]:
    """The failing test ids to trace: the targets, without run-level errors (``<run>``); none for a
    synthesized reproduction test (the base tree the profiler traces does not have it)."""
    if st.base.synthesized:
        return ()
    return tuple(t for t in st.base.targets if t and not t.startswith(RUN_ERROR_PREFIX))


def neighbours(failing: Sequence[str], passed: Sequence[str], *, limit: int = NEIGHBOURS) -> tuple[str, ...]:
    """Passing tests next to the failing ones, for a suite too slow to trace whole: those of the
    failing tests' classes first, then of their files (in the run's order), at most ``limit``.

    Ochiai needs passing tests that ran the shared code: without them every line the failing
    tests ran ties at 1.0. Tests of the same class or file exercise the same unit most often."""
    owners = {t.rsplit("::", 1)[0] for t in failing if "::" in t}
    files = {t.split("::", 1)[0] for t in failing}
    gone = set(failing)
    near = [t for t in passed if t not in gone and "::" in t and t.rsplit("::", 1)[0] in owners]
    same_file = [t for t in passed if t not in gone and t.split("::", 1)[0] in files]
    return tuple(dict.fromkeys([*near, *same_file]))[:limit]


def _timeout(st: RunState, config: LoopConfig) -> tuple[bool, float]:
    """Whether to trace the whole suite, and the timeout: a multiple of the baseline duration."""
    base = st.base.outcome
    known = base is not None and not base.timed_out and base.duration_s > 0
    duration = base.duration_s if base is not None and known else 0.0
    timeout = min(config.test_timeout_s, max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * duration))
    timeout = max(config.min_wall_s, min(timeout, st.meter.wall_left() - config.min_wall_s))
    return known and duration <= SUITE_MAX_S, timeout


def localize(
    st: RunState,
    workbench: object,
    source: SourceView,
    config: LoopConfig,
    *,
    replay: RecordedSpectrum | None = None,
) -> Localization | None:
    """The run's :class:`Localization`, made once (cached in ``st``): the recorded one on replay,
    else one traced run through ``workbench`` when it is a :class:`Profiler`, ``config.spectrum``
    is on, the targets name failing tests and the budget allows an execution beside one for a
    candidate (else a note and no run). None when there is nothing to localize with. The run is counted on ``st.meter`` before
    it starts and recorded in ``st.trace.spectrum``; a profiler error is a note, not a crash."""
    if st.localized:
        return st.spectrum
    st.localized = True
    failing = failing_ids(st)
    if not config.spectrum or not failing:
        return None
    if replay is not None:
        loc = replay.entry
        replay.served = True
        if loc is not None:
            st.meter.count_runs(loc.executions)
    elif not isinstance(workbench, Profiler):
        return None
    elif stop := st.meter.execution_stop() or ("executions" if st.meter.runs_allowed(2) < 2 else ""):
        # The trace is worth less than the round's candidate run: it needs one execution to spare.
        loc = Localization(note=f"not traced: the budget has no execution to spare ({stop})")
    else:
        suite, timeout = _timeout(st, config)
        st.meter.count_runs(1)
        note = ""
        try:
            also = () if suite or st.base.outcome is None else neighbours(failing, st.base.outcome.passed)
            spectrum: Spectrum | None = workbench.spectrum(failing, suite=suite, timeout_s=timeout, also=also)
        except Exception as exc:  # errors are data: the repair goes on without the call path
            spectrum, note = None, f"tracing failed: {type(exc).__name__}: {exc}"
        if spectrum is None:
            loc = Localization(executions=1, note=note or "tracing is not available for these tests")
        else:
            loc = Localization(
                scope=spectrum.scope,
                failed=spectrum.failed,
                passed=spectrum.passed,
                duration_s=round(spectrum.duration_s, 3),
                complete=spectrum.complete,
                note=spectrum.note,
                executions=1,
                suspects=suspects(spectrum, source)[:RECORDED],
            )
    if loc is not None:
        st.trace.spectrum = loc.to_json()
    st.spectrum = loc
    return loc


__all__ = [
    "MAX_SUSPECTS",
    "RADIUS",
    "RECORDED",
    "SUITE_MAX_S",
    "TOP_SCORE",
    "WHOLE_LINES",
    "RecordedSpectrum",
    "failing_ids",
    "localize",
    "neighbours",
    "spectrum_evidence",
]
