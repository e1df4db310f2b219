"""A ``flaky`` verdict is recorded in the test history and its check run gives the evidence."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.settings import Settings
from bot.store.store import Store
from jobs import pipeline
from jobs.fakes import FakeGitHubGateway, FakeRepairService
from jobs.pipeline import Deps
from jobs.repair.flaky import Observation
from jobs.repair.report import RepairReport
from tests.jobs.test_pipeline import LOGS, REPO, SHA, ci_job

T = "tests/test_calc.py::test_add"
FLAKY = RepairReport(
    verdict="flaky",
    reason="1 failing test passed when re-run on the unmodified code: flaky, not repaired",
    tier="small",
    test_runs=(
        Observation(T, True, "reproduction", 0),
        Observation(T, False, "reproduction", 1),
        Observation(T, False, "reproduction", 2),
    ),
)


@pytest.fixture
def world(
    settings: Settings, tmp_path: Path, migrated_db: Path
) -> Iterator[tuple[Deps, FakeGitHubGateway, Store]]:
    gh = FakeGitHubGateway()
    gh.logs[555] = (LOGS / "python_pytest_assert.log").read_text(encoding="utf-8")
    shutil.copyfile(migrated_db, tmp_path / "arcs.db")
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}", upgrade=False)
    repair = FakeRepairService(outcome=FLAKY)
    deps = Deps(settings=settings, store=store, github=lambda _i: gh, repair=repair, enqueue=lambda _j: None)
    yield dataclasses.replace(deps, history=store), gh, store
    store.close()


def test_the_flaky_stop_is_kept_as_evidence_and_said_on_the_check_run(
    world: tuple[Deps, FakeGitHubGateway, Store],
) -> None:
    deps, gh, store = world
    assert pipeline.repair_ci_failure(deps, ci_job(555)) == "no_fix"
    (attempt,) = store.attempts(repo=REPO)
    sentence = f"`{T}` failed 2 of 4 runs at {SHA[:7]}, passed here 2 of 3 in ARCS' sandbox"
    assert sentence in (attempt.reason or "")
    final = gh.calls_to("update_check_run")[-1]
    assert "Evidence: " + sentence in str(final["summary"])
    rows = store.test_runs(REPO, [T])
    assert sorted((r.source, r.failed) for r in rows) == [
        ("ci", True),
        ("reproduction", False),
        ("reproduction", False),
        ("reproduction", True),
    ]
    assert {r.run_key for r in rows if r.source == "reproduction"} == {
        f"attempt:{attempt.id}:reproduction:{n}" for n in range(3)
    }


def test_without_a_history_the_attempts_own_runs_are_the_evidence(
    world: tuple[Deps, FakeGitHubGateway, Store],
) -> None:
    deps, _gh, store = world
    assert pipeline.repair_ci_failure(dataclasses.replace(deps, history=None), ci_job(555)) == "no_fix"
    (attempt,) = store.attempts(repo=REPO)
    assert f"Evidence: `{T}` failed 1 of 3 runs at {SHA[:7]}, passed here 2 of 3" in (attempt.reason or "")
    assert store.test_runs(REPO, [T]) == []
