"""Measure the behaviour probe (issue #23) on the candidates the ``after`` run reported.

    .venv/bin/python -m bench.verdicts.probe

For every ``after`` record with a candidate (the returned ``fixed``/``partial`` patch, or the "best:
k of n" one), the case's buggy repository is materialized and this tree's
:class:`jobs.repair.behaviour.BehaviourProbe` runs on it in the real sandbox (two runs: base and
patched), as the loop does. The truth comes from the original package (commit 1, without the bug):
the same probe script run directly on the original tree and on the patched one
(:func:`bench.verdicts.run.truth`). Written to ``results/probe.jsonl``; the report crosses
"the probe names unchecked changes" with "the candidate differs from the original somewhere".
The probe's cost is given as a ratio to the case's own baseline test run of the ``after`` run
(both measured under the same shared load; the 1-minute load is recorded).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.verdicts.run import RESULTS, _cases, truth


def _edits(repo: Path, patch: str) -> list[Any]:
    """The patch as whole-file replace edits (``git apply`` in a scratch copy)."""
    from jobs.repair.diffing import parse_patch
    from jobs.repair.model import Edit

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "c"
        subprocess.run(["cp", "-a", str(repo), str(copy)], check=True)
        subprocess.run(
            ["git", "apply", "-"], cwd=copy, input=patch, text=True, check=True, capture_output=True
        )
        return [
            Edit(f.path, old=(repo / f.path).read_text("utf-8"), new=(copy / f.path).read_text("utf-8"))
            for f in parse_patch(patch)
        ]


def probe_one(case: dict[str, Any], patch: str, tmp: Path) -> dict[str, Any]:
    """The loop's probe of ``patch`` on the case's buggy tree, in the sandbox."""
    from bench.verdicts.corpus import materialize_repo
    from jobs.repair.behaviour import BehaviourProbe
    from jobs.repair.budget import Budget
    from jobs.repair.fakes import FakeClock
    from jobs.repair.meter import BudgetMeter
    from jobs.repair.state import RunState
    from jobs.repair.task import RepairTask
    from jobs.repair.trace import CandidateRecord, Trace
    from jobs.sandbox_workbench import SandboxWorkbench
    from runners.commands import resolve_test_command
    from runners.factory import make_runner

    repo = materialize_repo(case, tmp / "probe-repo")
    runner = make_runner(toolchain_paths=[Path(sys.prefix)])
    command = resolve_test_command(repo, explicit=case["test_command"])
    st = RunState(task=RepairTask(kind="ci"), trace=Trace(), meter=BudgetMeter(Budget(), FakeClock()))
    env = {"PATH": f"{sys.prefix}/bin:/usr/bin:/bin"}
    with SandboxWorkbench(repo, command, runner, env=env) as wb:
        return BehaviourProbe(wb).check(st, CandidateRecord(id="c", round=0, edits=_edits(repo, patch)))


def main() -> int:
    """Probe every reported candidate of ``results/after.jsonl``."""
    cases = {c["id"]: c for c in _cases([])}
    cases.update({c["id"]: c for c in _cases([], RESULTS.parent / "cases_release.jsonl")})
    after = [json.loads(line) for line in (RESULTS / "after.jsonl").read_text().splitlines() if line.strip()]
    out = RESULTS / "probe.jsonl"
    with out.open("w", encoding="utf-8") as f:
        for rec in after:
            patch = rec.get("patch") or (rec.get("best") or {}).get("patch") or ""
            if not patch:
                continue
            case = cases[rec["id"]]
            with tempfile.TemporaryDirectory(prefix="arcs-verdicts-probe-") as tmp_s:
                tmp = Path(tmp_s)
                row: dict[str, Any] = {
                    "id": rec["id"],
                    "verdict": rec["verdict"],
                    "load_1m": os.getloadavg()[0],
                }
                row["probe"] = probe_one(case, patch, tmp)
                t: dict[str, Any] = {"patch": rec.get("patch") or "", "best": rec.get("best")}
                truth(case, t, tmp)
                row["truth"] = t.get("truth")
                row["baseline_s"] = rec.get("baseline_s")
            f.write(json.dumps(row, sort_keys=True) + "\n")
            f.flush()
            print(
                f"{rec['id']}: {row['probe'].get('unchecked_changes', row['probe'].get('note'))} / {row['truth']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
