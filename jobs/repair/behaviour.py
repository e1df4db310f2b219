"""The behaviour probe: does a patch change results that no test checks? (issue #23)

A candidate can pass the tests it was asked to fix and still break behaviour nobody tested: on
humanize 4.12.3, ``value % 100 in (11, 12, 13)`` broken to ``% 10`` and "repaired" as
``value // 10`` makes ``ordinal(111)`` pass and turns ``ordinal(121)`` into ``'121th'``. The cheap
check chosen here is differential: for each module-level Python function the patch changes, call
the original and the patched function on the same inputs and compare the results.

* **Inputs** come from the tests themselves (:func:`call_inputs`): the literal arguments of every
  call of the function in the test files (``assertRaises(E, f, x)`` included), with
  ``pytest.mark.parametrize`` rows, or the items of a ``for`` loop over a literal sequence, substituted
  for the names they bind, plus **neighbouring values** (:func:`neighbours`: an integer, or an
  integer written as a string, ±1, ±10 and +100; a float ±1), one argument varied at a time. At most
  :data:`MAX_INPUTS` calls.
* **Runs**: one small script (:func:`probe_script`) imports the function's module and prints each
  call's ``repr`` (or the exception's type), with a per-call alarm. It runs in the sandbox through
  the workbench's :class:`Prober` port, once on the base tree and once on the patched tree: two
  executions, counted on the meter. Repository code never runs on the host; the host only parses
  test files with :mod:`ast` and reads back a size-capped JSON file.
* **Decision** (:func:`compare`): a result that differs on an input a test passes itself is what
  the tests judge; a result that differs on an input no test uses is an *unchecked change*. The
  record lists how many and the first few (``ordinal('121'): '121st' -> '121th'``).

Unchecked changes are not a verdict: a correct fix changes results too (the bug's own neighbours,
``ordinal('112')`` here). They are shown with the candidate (``fixed``, ``partial`` or "best") for
a reviewer, and :func:`jobs.repair.judge.rank_key` prefers the candidate with fewer of them when
everything else ties. Measured in ``bench/verdicts`` against the original functions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from indexing.languages import is_test_path
from jobs.repair.behaviour_inputs import (
    MAX_INPUTS,
    MAX_REPR,
    Call,
    call_inputs,
    changed_functions,
    module_of,
    neighbours,
)
from jobs.repair.edits import AppliedEdits
from jobs.repair.ports import SourceView
from jobs.repair.state import RunState
from jobs.repair.trace import CandidateRecord
from jobs.repair.workbench import Workbench

MAX_FUNCTIONS = 3
MAX_TEST_FILES = 40
CALL_TIMEOUT_S = 2
OUTPUT = "probe/out.json"
"""The file the script writes, relative to the run's private folder (read back by the adapter)."""
OUTPUT_CAP = 1 << 20
"""The most of :data:`OUTPUT` the adapter reads (bytes)."""
SCRIPT = "probe/probe.py"
"""Where the adapter writes the script, relative to the run's private folder (never the copy)."""
EXAMPLES = 3


@dataclass(frozen=True, slots=True)
class ProbeRun:
    """What the sandboxed script left: its output file's text ('' when none) and a note."""

    output: str = ""
    note: str = ""
    duration_s: float = 0.0


@runtime_checkable
class Prober(Protocol):
    """A workbench that can run a probe script in the sandbox on base + ``change``."""

    def probe(self, change: AppliedEdits | None, script: str, *, timeout_s: float) -> ProbeRun:
        """Write ``script`` to :data:`SCRIPT` of the run's private folder, run it in a fresh copy
        (with ``change``) with the test command's interpreter and environment, return
        :data:`OUTPUT`'s text. One sandboxed
        execution; never raises for trouble in the script."""
        ...


@dataclass(frozen=True, slots=True)
class Target:
    """One function to probe: where it lives, how to import it, and the calls to make."""

    path: str
    module: str
    root: str
    """Folder to put first on ``sys.path`` ('' for the repository root)."""
    function: str
    calls: tuple[Call, ...]
    tested: int
    """How many of :attr:`calls` (the first ones) are the tests' own inputs."""


@dataclass
class ProbePlan:
    """The functions one candidate changes, with their calls."""

    targets: list[Target] = field(default_factory=list)
    note: str = ""


# --- planning (pure) -----------------------------------------------------------------------------


def plan_probe(applied: AppliedEdits, source: SourceView) -> ProbePlan:
    """The functions ``applied`` changes that the tests call with literal arguments."""
    plan = ProbePlan()
    tests = {p: t for p in source.files() if p.endswith(".py") and is_test_path(p) if (t := source.read(p))}
    for path, before in sorted(applied.before.items()):
        after = applied.after.get(path)
        if before is None or after is None or is_test_path(path):
            continue
        where = module_of(path, source)
        if where is None:
            continue
        for function in changed_functions(before, after)[:MAX_FUNCTIONS]:
            using = {p: t for p, t in tests.items() if function in t}
            using = dict(sorted(using.items())[:MAX_TEST_FILES])
            own = call_inputs(using, function)[:MAX_INPUTS]
            near = neighbours(own)[: max(0, MAX_INPUTS - len(own))]
            if own:
                plan.targets.append(Target(path, where[1], where[0], function, (*own, *near), len(own)))
    if not plan.targets:
        plan.note = "no changed Python function is called with literal arguments in the tests"
    return plan


def describe(function: str, call: Call) -> str:
    """``ordinal('121')``."""
    args, kwargs = call
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs]
    return f"{function}({', '.join(parts)})"


# --- the script (runs in the sandbox) -----------------------------------------------------------

_SCRIPT = '''\
"""ARCS behaviour probe (written by ARCS into the run's private folder; run in the copy's root; see jobs/repair/behaviour.py)."""
import importlib, json, os, re, signal, sys

ROOT = os.getcwd()
TARGETS = __TARGETS__
OUT = os.path.join(os.environ["ARCS_PRIVATE"], __OUTPUT__)


def _alarm(signum, frame):
    raise TimeoutError("probe call took too long")


def _show(value):
    text = re.sub(r" at 0x[0-9a-fA-F]+", " at 0x?", repr(value))
    return text[:__MAX__]


results = []
signal.signal(signal.SIGALRM, _alarm)
for root, module, function, calls in TARGETS:
    sys.path.insert(0, os.path.join(ROOT, root) if root else ROOT)
    try:
        fn = getattr(importlib.import_module(module), function)
    except BaseException as exc:  # noqa: BLE001 - the probe reports, never fails
        results.append({"function": function, "error": type(exc).__name__ + ": " + str(exc)[:200]})
        continue
    got = []
    for args, kwargs in calls:
        signal.alarm(__CALL_TIMEOUT__)
        try:
            got.append(["ok", _show(fn(*args, **dict(kwargs)))])
        except BaseException as exc:  # noqa: BLE001
            got.append(["raise", type(exc).__name__])
        finally:
            signal.alarm(0)
    results.append({"function": function, "results": got})
os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT + ".tmp", "w", encoding="utf-8") as f:
    json.dump({"v": 1, "targets": results}, f)
os.replace(OUT + ".tmp", OUT)
'''


def probe_script(plan: ProbePlan) -> str:
    """The script that calls every target's calls and writes :data:`OUTPUT`."""
    literal = repr(
        [
            (t.root, t.module, t.function, [(list(args), list(kwargs)) for args, kwargs in t.calls])
            for t in plan.targets
        ]
    )
    return (
        _SCRIPT.replace("__TARGETS__", literal)
        .replace("__OUTPUT__", repr(OUTPUT))
        .replace("__MAX__", str(MAX_REPR))
        .replace("__CALL_TIMEOUT__", str(CALL_TIMEOUT_S))
    )


def parse_output(text: str, plan: ProbePlan) -> list[list[tuple[str, str]]] | None:
    """Per target, per call: ``(kind, shown)``; None when the output is missing or malformed."""
    try:
        data = json.loads(text) if text else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("v") != 1 or not isinstance(data.get("targets"), list):
        return None
    rows = data["targets"]
    if len(rows) != len(plan.targets):
        return None
    out: list[list[tuple[str, str]]] = []
    for row, target in zip(rows, plan.targets, strict=True):
        got = row.get("results") if isinstance(row, dict) else None
        if not isinstance(got, list) or len(got) != len(target.calls):
            out.append([])
            continue
        out.append(
            [
                (str(r[0]), str(r[1])[:MAX_REPR]) if isinstance(r, list) and len(r) == 2 else ("?", "?")
                for r in got
            ]
        )
    return out


def compare(
    plan: ProbePlan, old: Sequence[Sequence[tuple[str, str]]], new: Sequence[Sequence[tuple[str, str]]]
) -> dict[str, Any]:
    """The probe's record: per function the calls made, and the results that changed — on the
    tests' own inputs (the tests judge those) and on the others (``unchecked_changes``)."""
    functions: list[dict[str, Any]] = []
    examples: list[str] = []
    changed = unchecked = calls = 0
    for target, before, after in zip(plan.targets, old, new, strict=True):
        if not before or not after:
            functions.append({"function": target.function, "path": target.path, "note": "no results"})
            continue
        calls += len(target.calls)
        mine = 0
        for i, (call, a, b) in enumerate(zip(target.calls, before, after, strict=True)):
            if a == b:
                continue
            changed += 1
            if i < target.tested:
                continue
            unchecked += 1
            mine += 1
            if len(examples) < EXAMPLES:
                examples.append(f"{describe(target.function, call)}: {_shown(a)} -> {_shown(b)}")
        functions.append(
            {
                "function": target.function,
                "path": target.path,
                "calls": len(target.calls),
                "test_inputs": target.tested,
                "unchecked_changes": mine,
            }
        )
    return {
        "functions": functions,
        "calls": calls,
        "changed": changed,
        "unchecked_changes": unchecked,
        "examples": examples,
    }


# --- the probe of one candidate (two sandboxed executions) ---------------------------------------


class BehaviourProbe:
    """Probes a candidate through ``workbench`` when it is a :class:`Prober` (see the module
    docstring); ``timeout_s`` bounds each of the two runs."""

    def __init__(self, workbench: object, *, timeout_s: float = 30.0) -> None:
        self.workbench = workbench
        self.timeout_s = timeout_s

    def check(self, st: RunState, rec: CandidateRecord) -> dict[str, Any]:
        """The probe's record of ``rec`` (:func:`compare`, plus ``duration_s`` and ``executions``),
        ``{"note": …}`` when nothing could be probed, ``{}`` when the workbench cannot probe."""
        bench = self.workbench
        if not isinstance(bench, Prober) or not isinstance(bench, Workbench):
            return {}
        try:
            applied = bench.preview(rec.edits)
        except Exception as exc:  # it applied before; trouble now means no probe
            return {"note": f"could not re-apply the patch: {type(exc).__name__}"}
        plan = plan_probe(applied, bench.source())
        if not plan.targets:
            return {"note": plan.note}
        if st.meter.runs_allowed(2) < 2:
            return {
                "note": f"not probed: no budget for two runs ({st.meter.execution_stop() or 'executions'})"
            }
        timeout = max(5.0, min(self.timeout_s, st.meter.wall_left() / 4))
        script = probe_script(plan)
        runs = 0
        try:
            st.meter.count_runs(1)  # counted before each run starts, like every test run
            runs += 1
            before = bench.probe(None, script, timeout_s=timeout)
            st.meter.count_runs(1)
            runs += 1
            after = bench.probe(applied, script, timeout_s=timeout)
        except Exception as exc:  # errors are data: the verdict stands without the probe
            return {"note": f"probe failed: {type(exc).__name__}: {exc}"[:300], "executions": runs}
        old, new = parse_output(before.output, plan), parse_output(after.output, plan)
        if old is None or new is None:
            why = (before.note if old is None else after.note) or "no output"
            return {"note": f"probe gave no results ({why})"[:300], "executions": 2}
        record = compare(plan, old, new)
        record["duration_s"] = round(before.duration_s + after.duration_s, 3)
        record["executions"] = 2
        return record


def _shown(result: tuple[str, str]) -> str:
    kind, text = result
    return text if kind == "ok" else f"raises {text}"


def behaviour_line(record: Mapping[str, Any]) -> str:
    """One clause for a reason: ``changes 2 results no test checks, e.g. ordinal('121'): …``."""
    n = record.get("unchecked_changes") if record else None
    if not isinstance(n, int) or n <= 0:
        return ""
    examples = [str(e) for e in record.get("examples") or ()][:2]
    return f"changes {n} result{'s' if n != 1 else ''} no test checks" + (
        f", e.g. {'; '.join(examples)}" if examples else ""
    )


__all__ = [
    "CALL_TIMEOUT_S",
    "MAX_INPUTS",
    "OUTPUT",
    "SCRIPT",
    "BehaviourProbe",
    "Call",
    "ProbePlan",
    "ProbeRun",
    "Prober",
    "Target",
    "behaviour_line",
    "call_inputs",
    "changed_functions",
    "compare",
    "describe",
    "module_of",
    "neighbours",
    "parse_output",
    "plan_probe",
    "probe_script",
]
