"""``jobs.index_jobs`` through :func:`jobs.pipeline.dispatch` (the CLI's and the tests' entry)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jobs import pipeline
from jobs.messages import DropIndex, Envelope


@dataclass
class DroppingDeps:
    """Just the index port ``drop_index`` needs."""

    index: Any


@dataclass
class DroppingIndex:
    dropped: list[str] = field(default_factory=list)

    def drop(self, repo: str) -> bool:
        existed = repo in self.dropped
        self.dropped.append(repo)
        return not existed


def test_dispatch_runs_drop_index_in_process() -> None:
    index = DroppingIndex()
    deps: Any = DroppingDeps(index)
    job = Envelope.of(DropIndex(repo="octo/app", installation_id=7, reason="removed"))
    assert pipeline.dispatch(deps, job) == "dropped"
    assert pipeline.dispatch(deps, job) == "absent"
    assert index.dropped == ["octo/app", "octo/app"]
    assert pipeline.dispatch(DroppingDeps(None), job) == "skipped"  # type: ignore[arg-type]
