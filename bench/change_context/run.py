"""Does the culprit reach the model? The change signal in the proposer's request (issue #14, item 2).

    .venv/bin/python -m bench.change_context.run [--seed 14] [--limit 6] [--label after]

Per case of the outside corpus (``bench/outside/cases``), the "red after a push" history of
:mod:`bench.change.history` is rebuilt with the same seed (the clean sdist as the last green
commit, 1..8 commits, one of which applies the case's mutation, the others harmless comment
lines). Then one ``large``-tier round of the real loop runs twice in the real sandbox, against a
scripted model that proposes nothing (no network) and with the repository's index (``hash``
embedder, offline): once *without* the change signal (``RepairTask.changes`` None: today's
request) and once *with* the :class:`~jobs.repair.changes.ChangeSet` from green to red.

Measured on round 1's proposer request (what the model would see first):

* ``evidence``: an evidence block covers the culprit line (retrieval, frames, callees);
* ``section``: the "what changed" section shows the culprit line (``+<mutated line>``);
* ``shown``: either of them;
* ``rank``: the culprit block's position among the request's code evidence (1 = first);
* ``chars``: the context block's size.

Writes ``bench/change_context/results/<label>.json`` and prints the summary.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.change.history import BUDGET, build, spread_cases
from indexing.config import IndexConfig
from indexing.index import RepoIndex
from jobs.history import read_changeset
from jobs.repair.budget import Budget
from jobs.repair.changes import ChangeSet
from jobs.repair.fakes import ScriptedLLM
from jobs.repair.llm import LLMRequest, LLMResponse, scripted_response
from jobs.repair.loop import LoopConfig, RepairLoop
from jobs.repair.ports import ProposalRequest
from jobs.repair.proposers.anthropic import PROPOSE_TOOL, AnthropicProposer
from jobs.repair.roles import PLAN_TOOL
from jobs.repair.task import RepairTask
from jobs.sandbox_workbench import SandboxWorkbench, SystemClock
from runners.base import Runner
from runners.commands import resolve_test_command
from runners.factory import make_runner

HERE = Path(__file__).resolve().parent
CASES = HERE.parent / "outside" / "cases"
RESULTS = HERE / "results"


def answer(request: LLMRequest) -> LLMResponse:
    """The scripted model: a fixed plan, and proposals without edits (the request is what counts)."""
    if request.purpose == "plan":
        return scripted_response(
            tool=(PLAN_TOOL.name, {"contract": "-", "sketch": "-", "subgoals": ["failing behaviour"]})
        )
    return scripted_response(tool=(PROPOSE_TOOL.name, {"explanation": "none", "edits": []}))


class Recorder:
    """The LLM proposer, keeping each :class:`ProposalRequest` and its context block."""

    name = "anthropic"

    def __init__(self, inner: AnthropicProposer) -> None:
        self.inner = inner
        self.requests: list[tuple[ProposalRequest, str]] = []

    def propose(self, request: ProposalRequest, remaining: Budget) -> list[Any]:
        out = self.inner.propose(request, remaining)
        context = self.inner.last_context.text if self.inner.last_context is not None else ""
        self.requests.append((request, context))
        return out


def culprit_line(repo: Path, mutation: dict[str, Any]) -> int:
    """The head-side line of the mutated text (comments inserted above may have moved it)."""
    lines = (repo / mutation["path"]).read_text().split("\n")
    hits = [i + 1 for i, line in enumerate(lines) if line == mutation["mutated"]]
    return min(hits, key=lambda n: abs(n - int(mutation["line"])))


def one_round(
    repo: Path, command: str, runner: Runner, index: RepoIndex, changes: ChangeSet | None
) -> tuple[ProposalRequest, str] | None:
    llm = ScriptedLLM([answer] * 40)
    proposer = Recorder(AnthropicProposer(llm))
    resolved = resolve_test_command(repo, explicit=command)
    with SandboxWorkbench(repo, resolved, runner) as wb:
        loop = RepairLoop(
            index.retriever(), proposer, wb, SystemClock(), llm=llm, config=LoopConfig(parallel=1)
        )
        task = RepairTask(kind="ci", test_command=command, changes=changes)
        loop.run(task, BUDGET.with_(iterations=1), "large")
    return proposer.requests[0] if proposer.requests else None


def measure(seen: tuple[ProposalRequest, str] | None, path: str, line: int, mutated: str) -> dict[str, Any]:
    if seen is None:
        return {"evidence": False, "section": False, "shown": False, "rank": None, "chars": 0}
    request, context = seen
    code = [e for e in request.evidence if e.source == "code"]
    rank = next(
        (i for i, e in enumerate(code, 1) if e.path == path and e.start_line <= line <= e.end_line), None
    )
    section = ("\n+" + mutated + "\n") in context
    return {
        "evidence": rank is not None,
        "section": section,
        "shown": rank is not None or section,
        "rank": rank,
        "chars": len(context),
    }


def run_case(case: dict[str, Any], seed: int, runner: Runner, work: Path) -> dict[str, Any]:
    rng = random.Random(f"{seed}:{case['id']}")
    repo, green, shas, _culprit = build(case, work / case["id"] / "repo", rng)
    mutation = case["source"]["mutation"]
    line = culprit_line(repo, mutation)
    changes = read_changeset(repo, green)
    config = IndexConfig.under(work / case["id"] / "home", embedder="hash")
    row: dict[str, Any] = {"case": case["id"], "commits": len(shas), "culprit": f"{mutation['path']}:{line}"}
    with RepoIndex.open(config, repo) as index:
        index.refresh()
        for arm, signal in (("without", None), ("with", changes)):
            start = time.monotonic()
            seen = one_round(repo, case["test_command"], runner, index, signal)
            row[arm] = {**measure(seen, mutation["path"], line, mutation["mutated"]),
                        "wall_s": round(time.monotonic() - start, 1)}  # fmt: skip
    return row


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def part(arm: str) -> dict[str, Any]:
        ranks = [r[arm]["rank"] for r in rows if r[arm]["rank"] is not None]
        return {
            "shown": sum(r[arm]["shown"] for r in rows),
            "in_evidence": sum(r[arm]["evidence"] for r in rows),
            "in_section": sum(r[arm]["section"] for r in rows),
            "ranks": [r[arm]["rank"] for r in rows],
            "mean_rank_when_shown": round(sum(ranks) / len(ranks), 2) if ranks else None,
            "median_chars": sorted(r[arm]["chars"] for r in rows)[len(rows) // 2] if rows else 0,
        }

    return {"cases": len(rows), "without": part("without"), "with": part("with")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--limit", type=int, default=6)
    parser.add_argument("--label", default="after")
    args = parser.parse_args(argv)
    runner = make_runner(toolchain_paths=[Path(sys.prefix)])
    cases = spread_cases(args.limit)  # as bench.change.history picks them
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="arcs-bench-change-context-") as tmp:
        for case in cases:
            row = run_case(case, args.seed, runner, Path(tmp))
            rows.append(row)
            print(f"{case['id']}: without {row['without']}, with {row['with']}", file=sys.stderr, flush=True)
    doc = {"label": args.label, "seed": args.seed, "summary": summarize(rows), "cases": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.label}.json").write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc["summary"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
