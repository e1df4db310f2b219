"""Encode(f_t): execution feedback -> :class:`Feedback`, stable truncation, and ARKS query formulation.

Feedback encoding follows seed 000 (Enc_fb): *observed failures only* — exception type, the
failing input/assertion (the message), a trimmed stack of repository frames — plus the reasons
edits did not apply and the gates that rejected a candidate. Nothing is guessed.

Stable truncation (under context pressure): the latest round and its failing trace are always
kept whole; older rounds are dropped oldest first; evidence is dropped lowest-score first, never
the pinned items (interface invariants / the code at the failure). Orders are total, so the same
inputs always truncate the same way.

Query formulation follows ARKS (seed 003): besides the task *question*, the retrieval query of
round t+1 is built from round t's *execution feedback*, the *generated code* (the candidate's
added lines) and the *explained code* (a plain-language account of the candidate), each with the
``file:line`` hints of the failure. With a plan, subgoals are the sub-queries (seed 000, Eq. 11).
From the second round of a tier on (active query refinement, issue #15) the observed failures are
one more query (:func:`failure_query`), retrieval leaves out what earlier rounds showed so that new
code surfaces, and what was shown comes back below everything new (:func:`carried_evidence`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from indexing.languages import is_test_path
from jobs.repair.callees import enclosing_def, function_window
from jobs.repair.diffing import parse_patch
from jobs.repair.model import Evidence, Failure, Feedback
from jobs.repair.ports import SourceView
from jobs.repair.prompts import MAX_EVIDENCE_ITEM_CHARS, render_feedback
from jobs.repair.workbench import TestOutcome

MAX_MESSAGE_CHARS = 600
MAX_MESSAGE_LINES = 12
MAX_FRAMES = 6
MAX_FAILURES = 8
MAX_LISTED = 10
QUERY_CHARS = 1_000
REDUNDANCY_THRESHOLD = 0.85

Formulation = Literal["question", "subgoal", "feedback", "code", "explained", "failure"]
CARRIED_SCORE = 0.5
"""Highest score of evidence carried over from an earlier round (below new items: an item already
shown without a fix is worth less than one not yet shown)."""


# --- Encode(f_t) ---------------------------------------------------------------------------------


def trim_failure(
    failure: Failure, *, max_message: int = MAX_MESSAGE_CHARS, max_frames: int = MAX_FRAMES
) -> Failure:
    """``failure`` with its message cut (lines and characters) and only the innermost frames."""
    lines = failure.message.strip().splitlines()
    message = "\n".join(lines[:MAX_MESSAGE_LINES])
    if len(lines) > MAX_MESSAGE_LINES:
        message += f"\n[... {len(lines) - MAX_MESSAGE_LINES} more lines]"
    if len(message) > max_message:
        message = message[:max_message] + " [...]"
    return replace(failure, message=message, frames=failure.frames[-max_frames:] if max_frames else ())


def observed_failures(
    outcome: TestOutcome,
    *,
    targets: Sequence[str] = (),
    baseline_passed: Iterable[str] = (),
    baseline_errors: Iterable[str] = (),
    limit: int = MAX_FAILURES,
) -> tuple[Failure, ...]:
    """The failures worth showing: targets first (in target order), then regressions, then new
    run-level errors, then anything else that failed; trimmed and capped at ``limit``."""
    by_id: dict[str, Failure] = {}
    for f in outcome.failures:
        by_id.setdefault(f.test_id, f)
    failed = set(outcome.failed) | set(outcome.errors)
    passed_before = set(baseline_passed)
    errors_before = set(baseline_errors)
    order: list[str] = []
    order.extend(t for t in targets if t in failed)
    order.extend(t for t in outcome.failed if t in passed_before)
    order.extend(e for e in outcome.errors if e not in errors_before)
    order.extend(t for t in (*outcome.failed, *outcome.errors) if t not in order)
    out: list[Failure] = []
    for test_id in dict.fromkeys(order):
        out.append(trim_failure(by_id.get(test_id) or Failure(test_id=test_id)))
        if len(out) >= limit:
            break
    return tuple(out)


def encode(
    round_index: int,
    outcome: TestOutcome | None,
    *,
    targets: Sequence[str] = (),
    baseline_passed: Iterable[str] = (),
    baseline_errors: Iterable[str] = (),
    edit_errors: Sequence[str] = (),
    gate_failures: Sequence[str] = (),
) -> Feedback:
    """Encode(f_t) for one candidate: what was observed, nothing else."""
    baseline_passed = tuple(baseline_passed)
    failures = (
        observed_failures(
            outcome, targets=targets, baseline_passed=baseline_passed, baseline_errors=baseline_errors
        )
        if outcome is not None
        else ()
    )
    parts: list[str] = []
    if edit_errors:
        parts.append("the edits did not apply")
    if outcome is not None:
        failed = set(outcome.failed) | set(outcome.errors)
        still = [t for t in targets if t in failed or (outcome.broken and t not in outcome.passed)]
        if targets:
            parts.append(
                f"{len(still)} of {len(targets)} target tests still fail"
                if still
                else "all target tests pass"
            )
        regressions = [t for t in outcome.failed if t in set(baseline_passed)]
        if regressions:
            parts.append(f"{len(regressions)} previously passing tests now fail")
        if outcome.timed_out:
            parts.append("the test run timed out")
    if gate_failures:
        gates = sorted({g.split(":", 1)[0] for g in gate_failures})
        parts.append("rejected by " + ", ".join(gates))
    return Feedback(
        round=round_index,
        summary="; ".join(parts) or "no failures observed",
        failures=failures,
        edit_errors=tuple(edit_errors[:MAX_LISTED]),
        gate_failures=tuple(gate_failures[:MAX_LISTED]),
    )


def merge_round(round_index: int, items: Sequence[Feedback]) -> Feedback | None:
    """One feedback for a round of several candidates: failures of the best-placed candidate first
    (``items`` in preference order), everything deduplicated and capped; None when empty."""
    if not items:
        return None
    failures: list[Failure] = []
    seen: set[tuple[str, str, str]] = set()
    for fb in items:
        for f in fb.failures:
            key = (f.test_id, f.type, f.message)
            if key not in seen:
                seen.add(key)
                failures.append(f)
    summaries = list(dict.fromkeys(fb.summary for fb in items if fb.summary))
    summary = (
        summaries[0]
        if len(summaries) == 1
        else "; ".join(f"candidate {i + 1}: {s}" for i, s in enumerate(summaries[:3]))
    )
    return Feedback(
        round=round_index,
        summary=summary,
        failures=tuple(failures[:MAX_FAILURES]),
        edit_errors=tuple(dict.fromkeys(e for fb in items for e in fb.edit_errors))[:MAX_LISTED],
        gate_failures=tuple(dict.fromkeys(g for fb in items for g in fb.gate_failures))[:MAX_LISTED],
    )


# --- stable truncation ---------------------------------------------------------------------------


def fit_history(history: Sequence[Feedback], *, budget_chars: int) -> tuple[tuple[Feedback, ...], int]:
    """Keep the latest round whole and as many earlier rounds as fit, newest first; the rest are
    dropped oldest first. Returns (kept rounds oldest first, number dropped)."""
    if not history:
        return (), 0
    kept = [history[-1]]
    used = len(render_feedback(history[-1]))
    for fb in reversed(history[:-1]):
        size = len(render_feedback(fb, brief=True)) + 2
        if used + size > budget_chars:
            break
        kept.append(fb)
        used += size
    kept.reverse()
    return tuple(kept), len(history) - len(kept)


def _evidence_rank(item: Evidence) -> tuple[float, str, int, str]:
    return (-item.score, item.path, item.start_line, item.id)


def _cost(item: Evidence) -> int:
    return min(len(item.text), MAX_EVIDENCE_ITEM_CHARS)


def fit_evidence(
    evidence: Sequence[Evidence], *, budget_chars: int, pinned: Iterable[str] = ()
) -> tuple[tuple[Evidence, ...], tuple[str, ...]]:
    """Drop the lowest-score evidence first until the texts fit ``budget_chars``; ``pinned`` ids
    are kept regardless. Returns (kept, in input order; dropped ids, lowest score first). An item
    costs what the prompt shows of it: at most ``MAX_EVIDENCE_ITEM_CHARS`` (longer ones are
    condensed when rendered), so one long chunk does not push out several short ones."""
    pins = set(pinned)
    total = sum(_cost(e) for e in evidence)
    dropped: list[str] = []
    for item in sorted(evidence, key=_evidence_rank, reverse=True):
        if total <= budget_chars:
            break
        if item.id in pins:
            continue
        dropped.append(item.id)
        total -= _cost(item)
    gone = set(dropped)
    return tuple(e for e in evidence if e.id not in gone), tuple(dropped)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _tokens(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the identifier sets of two texts (0..1)."""
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return 1.0 if a.strip() == b.strip() else 0.0
    return len(ta & tb) / len(ta | tb)


def _covers(container: Evidence, item: Evidence) -> bool:
    """Whether ``container`` shows everything ``item`` would: same file, a range around it, a text
    the prompt shows whole that contains the item's text."""
    return (
        container.path == item.path
        and container.start_line <= item.start_line
        and item.end_line <= container.end_line
        and len(container.text) <= MAX_EVIDENCE_ITEM_CHARS
        and item.text.strip() in container.text
    )


def filter_redundancy(
    items: Sequence[Evidence], *, threshold: float = REDUNDANCY_THRESHOLD
) -> list[Evidence]:
    """FilterRedundancy (seed 000, Eq. 7) over a union of result lists, in their given order.

    Drops an item whose line range lies inside an earlier kept item of the same file that shows
    its text (a container longer than the prompt shows of an item — a class chunk of 600 lines —
    or one whose text leaves the lines out does not hide it), or whose text is more similar than
    ``threshold`` to an earlier kept item (identifier-set similarity; the per-query embedding
    filter already ran inside the retriever).
    """
    kept: list[Evidence] = []
    for item in items:
        if any(k.id == item.id for k in kept):
            continue
        if any(_covers(k, item) for k in kept):
            continue
        if any(similarity(k.text, item.text) > threshold for k in kept):
            continue
        kept.append(item)
    return kept


def carried_evidence(shown: Iterable[Evidence], current: Sequence[Evidence]) -> list[Evidence]:
    """Evidence shown in earlier rounds and not in ``current``, to keep showing it: scored at most
    :data:`CARRIED_SCORE` (so it is the first to go under budget pressure, before anything new),
    its order kept; items inside a current item's range are left out."""
    ids = {e.id for e in current}
    out: list[Evidence] = []
    for e in shown:
        if e.id in ids or any(
            c.path == e.path and c.start_line <= e.start_line and e.end_line <= c.end_line for c in current
        ):
            continue
        out.append(replace(e, score=round(min(e.score, 1.0) * CARRIED_SCORE, 6), why=_carried_why(e.why)))
    return out


def _carried_why(why: str) -> str:
    return (
        why
        if why.startswith("shown in an earlier round")
        else f"shown in an earlier round; {why}".rstrip("; ")
    )


# --- query formulation (ARKS) --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuerySpec:
    """One retrieval query and how it was formulated."""

    formulation: Formulation
    text: str


def _clip(text: str, limit: int = QUERY_CHARS) -> str:
    text = " ".join(text.split())
    return text[:limit]


def feedback_query(feedback: Feedback) -> str:
    """Execution-feedback formulation: error types, messages and the functions on the stacks."""
    parts: list[str] = []
    for f in feedback.failures[:4]:
        first = f.message.strip().splitlines()[0] if f.message.strip() else ""
        functions = " ".join(dict.fromkeys(fr.function for fr in f.frames if fr.function))
        name = f.test_id.rsplit("::", 1)[-1]
        parts.append(" ".join(p for p in (f.type, first, functions, name) if p))
    parts.extend(feedback.edit_errors[:2])
    return _clip(" ; ".join(parts))


def failure_query(failures: Sequence[Failure]) -> str:
    """The observed failures as one query (test names, types, first message lines, the functions
    on the stacks): used from the second round of a tier, when the plan's queries found no fix."""
    return feedback_query(Feedback(round=0, summary="", failures=tuple(failures)))


def code_query(diff: str) -> str:
    """Generated-code formulation: the lines the candidate added (or changed), without markers."""
    lines: list[str] = []
    try:
        patches = parse_patch(diff)
    except ValueError:
        return ""
    for patch in patches:
        lines.extend(line.text.strip() for line in patch.lines("+") if line.text.strip())
    return _clip("\n".join(lines))


def formulate_queries(
    question: str,
    *,
    plan: Sequence[str] = (),
    feedback: Feedback | None = None,
    candidate_diff: str = "",
    explanation: str = "",
    failure: str = "",
) -> list[QuerySpec]:
    """The queries of one round, deduplicated, in a fixed order.

    Without a plan: the question, then (after a round) feedback, code and explained code. With a
    plan: the subgoals, then the same feedback-driven formulations. ``failure``
    (:func:`failure_query`, later rounds): the observed failures themselves, last.
    """
    specs: list[QuerySpec] = []
    if plan:
        specs.extend(QuerySpec("subgoal", _clip(s)) for s in plan)
    else:
        specs.append(QuerySpec("question", _clip(question)))
    if feedback is not None:
        specs.append(QuerySpec("feedback", feedback_query(feedback)))
    if candidate_diff:
        specs.append(QuerySpec("code", code_query(candidate_diff)))
    if explanation:
        specs.append(QuerySpec("explained", _clip(explanation)))
    if failure:
        specs.append(QuerySpec("failure", _clip(failure)))
    out: list[QuerySpec] = []
    seen: set[str] = set()
    for spec in specs:
        if spec.text and spec.text not in seen:
            seen.add(spec.text)
            out.append(spec)
    return out


def failure_hints(
    failures: Iterable[Failure], extra: Iterable[tuple[str, int]] = (), *, limit: int = 8
) -> tuple[tuple[str, int], ...]:
    """``(path, line)`` hints, most specific first: innermost frames, then failure sites, then ``extra``.

    Frames in code come before frames in tests (a test helper is rarely what must change), and
    among test frames each failure's test function (its outermost test frame: the line that
    called the code under test) comes before the helpers it called (``test/common.py``)."""
    out: list[tuple[str, int]] = []
    tests: list[tuple[str, int]] = []
    helpers: list[tuple[str, int]] = []
    for f in failures:
        in_tests = [fr for fr in f.frames if is_test_path(fr.path)]
        outer = next(
            (fr for fr in in_tests if _is_test_function(fr.function)), in_tests[0] if in_tests else None
        )
        for fr in reversed(f.frames):
            if not is_test_path(fr.path):
                out.append((fr.path, fr.line))
            elif fr is outer:
                tests.append((fr.path, fr.line))
            else:
                helpers.append((fr.path, fr.line))
        if f.path:
            if not is_test_path(f.path):
                out.append((f.path, f.line))
            else:
                (helpers if outer is not None else tests).append((f.path, f.line))
    out.extend(tests)
    out.extend(helpers)
    out.extend(extra)
    return tuple(dict.fromkeys(h for h in out if h[0]))[:limit]


# --- knowledge soup ------------------------------------------------------------------------------


def frame_context(
    source: SourceView,
    hints: Sequence[tuple[str, int]],
    *,
    radius: int = 20,
    max_items: int = 6,
) -> list[Evidence]:
    """The code around each hinted line (merged per file): part of the observed failure, so shown
    to every tier. In code (not tests) a line's whole enclosing function is shown, or for a large
    one the region before the line (:func:`jobs.repair.callees.function_window`). Deterministic;
    unreadable paths are skipped."""
    windows: dict[str, list[tuple[int, int]]] = {}
    order: list[str] = []
    for path, line in hints:
        if line <= 0:
            continue
        if path not in windows:
            windows[path] = []
            order.append(path)
        windows[path].append((max(1, line - radius), line + radius))
        if not is_test_path(path):
            text = source.read(path)
            start, end = function_window(text.splitlines(), line) if text else (0, 0)
            if start:
                windows[path].append((start, end))
    out: list[Evidence] = []
    for rank, path in enumerate(order):
        text = source.read(path)
        if text is None:
            continue
        lines = text.splitlines()
        merged: list[tuple[int, int]] = []
        for start, end in sorted(windows[path]):
            end = min(end, len(lines))
            if merged and start <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        for start, end in merged:
            if start > end:
                continue
            body = "\n".join(lines[start - 1 : end])
            # A test helper's lines (an assertion helper, a fixture module) are shown, but after
            # the code the test calls: they say how it failed, not where the bug is.
            helper = is_test_path(path) and not any(
                _in_test_function(lines, n) for p, n in hints if p == path and start <= n <= end
            )
            out.append(
                Evidence(
                    id=f"frame:{path}:{start}-{end}",
                    source="test" if is_test_path(path) else "code",
                    path=path,
                    start_line=start,
                    end_line=end,
                    text=body,
                    score=round((1.0 if helper else 2.0) - rank * 0.01, 4),
                    why="test helper at the failure" if helper else "code at the failure",
                )
            )
            if len(out) >= max_items:
                return out
    return out


_TEST_DEF = re.compile(r"\s*(?:async\s+)?(?:def|function)\s+test|\s*(?:it|test|describe)\s*\(")


def _is_test_function(name: str) -> bool:
    return name.rsplit(".", 1)[-1].lower().startswith("test")


def _in_test_function(lines: Sequence[str], line: int) -> bool:
    """Whether ``line`` of a test file lies in a test function (not a helper or module code)."""
    start = enclosing_def(lines, line)
    return bool(start) and bool(_TEST_DEF.match(lines[start - 1]))


def verified_snippet(candidate_id: str, diff: str, *, tests_passed: int, round_index: int) -> Evidence:
    """A candidate that applied, parsed and improved the tests, as knowledge-soup evidence (ARKS
    "verified code snippets")."""
    first = parse_patch(diff)[0] if diff else None
    path = first.path if first is not None else ""
    line = first.hunks[0].old_start if first is not None and first.hunks else 0
    return Evidence(
        id=f"verified:{candidate_id}",
        source="verified",
        path=path,
        start_line=line,
        end_line=line,
        text=diff,
        score=1.5,
        why=f"an earlier candidate (round {round_index + 1}) that passed {tests_passed} tests",
    )


__all__ = [
    "MAX_FAILURES",
    "REDUNDANCY_THRESHOLD",
    "Formulation",
    "QuerySpec",
    "carried_evidence",
    "code_query",
    "encode",
    "failure_hints",
    "failure_query",
    "feedback_query",
    "filter_redundancy",
    "fit_evidence",
    "fit_history",
    "formulate_queries",
    "frame_context",
    "merge_round",
    "observed_failures",
    "similarity",
    "trim_failure",
    "verified_snippet",
]
