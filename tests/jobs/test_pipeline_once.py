"""One CI repair reads ``.arcs.yml`` once and computes its USD budget once (plan-12 a.4, a.5).

The real repair service (tier 0 with a scripted pytest) behind the real pipeline, with a fake
GitHub whose checkout is the ``boundary`` fixture and whose ``load_arcs_config`` reads the same
files, as the App's gateway reads them through the API.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import jobs.config
from bot.settings import Settings
from bot.store.store import Store
from jobs import pipeline
from jobs.config import ArcsConfig
from jobs.fakes import FakeGitHubGateway
from jobs.messages import JobRequest
from jobs.pipeline import Deps
from jobs.plan import RepairPlan
from jobs.repair.ports import Interrupt
from jobs.repair.report import RepairReport
from jobs.repair_service import FixRepairService
from runners.fake import FakeRunner
from tests.bot.test_cli_fix import FIXTURES, scripted_pytest

REPO = "octo/ages"
SHA = "b" * 40


class ApiGateway(FakeGitHubGateway):
    """The fake GitHub plus the App gateway's typed ``.arcs.yml`` read (from :attr:`api_files`)."""

    def __init__(self, files: dict[str, str], api_files: dict[str, str]) -> None:
        super().__init__(files=files)
        self.api_files = api_files

    def load_arcs_config(self, repo: str, ref: str | None = None) -> ArcsConfig:
        self._record("load_arcs_config", repo=repo, ref=ref)
        return jobs.config.load(self.api_files.get)


def boundary_files() -> dict[str, str]:
    root = FIXTURES / "boundary"
    return {
        str(path.relative_to(root)): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def ci_job() -> JobRequest:
    args: dict[str, Any] = {
        "repo": REPO,
        "installation_id": 7,
        "delivery_id": "d-9",
        "source": "workflow_run",
        "run_id": None,
        "head_sha": SHA,
        "head_branch": "main",
        "pull_requests": [],
        "retry_of": None,
    }
    return JobRequest("repair_ci_failure", args, idempotency_key=f"ci:{REPO}:{SHA}")


@pytest.fixture
def store(tmp_path: Path, migrated_db: Path) -> Iterator[Store]:
    shutil.copyfile(migrated_db, tmp_path / "arcs.db")
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}", upgrade=False)
    yield store
    store.close()


def deps_for(settings: Settings, store: Store, gh: FakeGitHubGateway) -> Deps:
    runner = FakeRunner().on("pytest", scripted_pytest)
    service = FixRepairService(settings, runner=runner, toolchains=(), use_index=False, parallel=1)
    return Deps(settings=settings, store=store, github=lambda _i: gh, repair=service, enqueue=lambda _j: None)


def counting(monkeypatch: pytest.MonkeyPatch, name: str, calls: list[str]) -> None:
    real: Callable[..., Any] = getattr(jobs.config, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(jobs.config, name, spy)


def test_one_ci_repair_parses_arcs_yml_exactly_once(
    settings: Settings, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    arcs_yml = "test: python -m pytest -q\nbudget: {usd: 0.7}\n"
    files = {**boundary_files(), ".arcs.yml": arcs_yml}
    gh = ApiGateway(files, {".arcs.yml": arcs_yml})
    calls: list[str] = []
    for name in ("parse", "parse_repo_config"):  # the strict and the lenient reader: all of them
        counting(monkeypatch, name, calls)

    assert pipeline.repair_ci_failure(deps_for(settings, store, gh), ci_job()) == "fixed"

    assert calls == ["parse"]
    assert [c["ref"] for c in gh.calls_to("load_arcs_config")] == [SHA]  # at the repaired commit


def test_the_reservation_asks_for_the_budget_the_loop_runs_with(
    settings: Settings, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file the repair was admitted with (at head_sha, through the API) is the one the loop
    # runs with, even when the checkout does not show it (no second reader to disagree).
    gh = ApiGateway(boundary_files(), {".arcs.yml": "budget: {usd: 0.7, iterations: 3}\n"})
    deps = deps_for(settings, store, gh)
    wanted: list[float] = []
    loop_usd: list[float | None] = []
    admit, repair = store.admit_repair, deps.repair.run

    def admit_spy(*args: Any, **kwargs: Any) -> Any:
        wanted.append(kwargs["want_usd"])
        return admit(*args, **kwargs)

    def repair_spy(plan: RepairPlan, *, interrupt: Interrupt | None = None) -> RepairReport:
        report = repair(plan, interrupt=interrupt)
        loop_usd.append(report.budget.usd if report.budget is not None else None)
        return report

    monkeypatch.setattr(store, "admit_repair", admit_spy)
    monkeypatch.setattr(deps.repair, "run", repair_spy)
    assert pipeline.repair_ci_failure(deps, ci_job()) == "fixed"

    # No monthly cap applies here, so the loop's budget is its own, before any cap.
    assert wanted == [0.7] and loop_usd == wanted
