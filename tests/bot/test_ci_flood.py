"""A flood of failing workflow runs on one commit is one repair per failure (issue #22, "Floods").

200 ``workflow_run.completed`` deliveries (the pinned ``@octokit/webhooks-examples`` payload,
pointed at the double's repository and runs) for one head commit are signed and posted to the real
webhook endpoint; the jobs go through a dramatiq worker with eight threads (the real actors, the
worker's GitHub wiring against the strict double, the SQL store on SQLite and PostgreSQL). Runs
whose logs fail the same way make one attempt, one clone and one repair, every other run recorded
against it; two different failures make two.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dramatiq
import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from bot.github.client import GitHubApp
from bot.github.gateway import gateway_factory
from bot.settings import Settings
from bot.store.store import Store
from bot.web.app import create_app
from jobs.broker import QUEUES, BrokerEnqueuer, make_broker
from jobs.fakes import FakeRepairService
from jobs.pipeline import Deps
from jobs.worker import setup
from tests.bot.test_octokit_sweep import examples
from tests.bot.webhook_support import SECRET, encode, headers
from tests.conftest import CreateDb
from tests.fakes.github_double import TEST_APP_ID, AppKey, FakeClock, GitHubDouble, WorkflowRun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

REPO = "acme/widgets"
LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
PYTEST_LOG = (LOGS / "python_pytest_assert.log").read_text(encoding="utf-8")
JEST_LOG = (LOGS / "node_jest.log").read_text(encoding="utf-8")
FLOOD = 200
MATRIX = [f"test ({py}, {os})" for py in ("3.9", "3.10", "3.11", "3.12") for os in ("ubuntu", "macos")]
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'arcs.db'}"
    create: CreateDb = request.getfixturevalue("pg_create_db")
    return create()


@dataclass
class Flood:
    double: GitHubDouble
    installation: int
    sha: str
    settings: Settings
    store: Store
    repair: FakeRepairService
    clones: list[str]
    post_all: Callable[[list[WorkflowRun]], None]


@pytest.fixture
def flood(
    github_double: GitHubDouble,
    settings: Settings,
    test_app_key: AppKey,
    fake_clock: FakeClock,
    db_url: str,
) -> Iterator[Flood]:
    double = github_double
    inst = double.add_installation("acme")
    double.add_repo(REPO, {"app.py": "x = 1\n", ".arcs.yml": "test: pytest -q\n"}, installation=inst)
    sha = str(double.branch_sha(REPO, "main"))
    configured = settings.model_copy(
        update={
            "app_id": TEST_APP_ID,
            "private_key": SecretStr(test_app_key.private_pem),
            "github_api_url": double.api_url,
            "webhook_secret": SecretStr(SECRET),
            # No delayed checks probe after publishing: `broker.join` below would wait for it.
            "checks_grace_s": 0.0,
        }
    )
    web_store = Store.open(db_url)
    worker_store = Store.open(db_url)  # a worker process has its own connections
    broker = make_broker(configured)
    enqueuer = BrokerEnqueuer(broker)
    app = GitHubApp.from_settings(
        configured, clock=fake_clock.time, monotonic=fake_clock.monotonic, sleep=fake_clock.sleep
    )
    repair = FakeRepairService()
    clones: list[str] = []
    github = gateway_factory(configured, app=app)
    deps = Deps(
        settings=configured,
        store=worker_store,
        github=lambda installation: CountingGateway(github(installation), clones),
        repair=repair,
        enqueue=enqueuer.enqueue,
        enqueue_later=enqueuer.enqueue_later,
    )
    previous = dramatiq.broker.global_broker
    setup(broker, lambda _broker: lambda: deps)
    worker = dramatiq.Worker(broker, worker_timeout=50, worker_threads=8)
    worker.start()
    deliveries = itertools.count(1)

    def post_all(runs: list[WorkflowRun]) -> None:
        with TestClient(
            create_app(configured, store=web_store, enqueuer=enqueuer, dashboard=False)
        ) as client:
            for run in runs:
                body = encode(_delivery(double, inst.id, run))
                delivery = f"flood-{next(deliveries)}"
                reply = client.post(
                    "/webhooks/github", content=body, headers=headers("workflow_run", body, delivery=delivery)
                )
                assert reply.status_code == 202 and reply.json()["status"] == "queued", reply.text
        for _ in range(3):  # the repairs, then their follow-ups (publishing)
            for queue in sorted(set(QUEUES.values())):
                broker.join(queue, fail_fast=True, timeout=300_000)
            worker.join()

    try:
        yield Flood(double, inst.id, sha, configured, worker_store, repair, clones, post_all)
    finally:
        worker.stop()
        broker.close()
        app.close()
        web_store.close()
        worker_store.close()
        dramatiq.broker.global_broker = previous


def _delivery(double: GitHubDouble, installation: int, run: WorkflowRun) -> dict[str, Any]:
    (published,) = [
        p
        for event, _, p in examples("api.github.com")
        if event == "workflow_run" and p["action"] == "completed"
    ][:1]
    payload = copy.deepcopy(published)
    repo = double.repos[REPO]
    mine = {"id": repo.id, "name": repo.name, "full_name": REPO}
    payload["repository"].update(mine)
    data = payload["workflow_run"]
    data.update(
        id=run.id,
        name=run.name,
        head_sha=run.head_sha,
        head_branch=run.head_branch,
        conclusion="failure",
        workflow_id=run.workflow_id,
        run_attempt=run.run_attempt,
        pull_requests=[],
    )
    data["head_repository"].update(mine)
    payload["installation"] = {"id": installation}
    return payload


def _runs(
    flood: Flood, count: int, log: str, *, workflows: tuple[str, ...] = ("CI", "CI (nightly)")
) -> list[WorkflowRun]:
    """``count`` failed runs of the flood's commit: matrix jobs of two workflows, one log."""
    return [
        flood.double.add_workflow_run(
            REPO,
            head_sha=flood.sha,
            head_branch="main",
            name=workflows[i % len(workflows)],
            jobs=[(MATRIX[i % len(MATRIX)], "failure", log)],
        )
        for i in range(count)
    ]


class CountingGateway:
    """The worker's real gateway, counting its checkouts (``clone``: a git fetch from the double)."""

    def __init__(self, inner: Any, clones: list[str]) -> None:
        self._inner = inner
        self._clones = clones

    def clone(self, repo: str, sha: str, dest: Path) -> None:
        self._clones.append(sha)
        self._inner.clone(repo, sha, dest)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_200_failing_runs_on_one_commit_are_one_attempt(flood: Flood) -> None:
    runs = _runs(flood, FLOOD, PYTEST_LOG)
    flood.post_all(runs)

    attempts = flood.store.attempts(repo=REPO, limit=1000)
    assert len(attempts) == 1, [(a.id, a.run_id, a.status) for a in attempts]
    (attempt,) = attempts
    assert attempt.status == "fixed"
    assert len(flood.repair.requests) == 1  # one repair (one sandbox, one model budget)
    assert flood.clones == [flood.sha]
    assert len(flood.double.open_pulls(REPO)) == 1
    # Every other run is recorded against the attempt, once.
    assert attempt.run_id is not None
    joined = [r.run_id for r in flood.store.joined_runs(attempt.id)]
    assert sorted([attempt.run_id, *joined]) == sorted(r.id for r in runs)


def test_two_different_failures_on_one_commit_are_two_attempts(flood: Flood) -> None:
    pytest_runs = _runs(flood, FLOOD // 2, PYTEST_LOG)
    jest_runs = _runs(flood, FLOOD // 2, JEST_LOG, workflows=("node",))
    mixed = [run for pair in zip(pytest_runs, jest_runs, strict=True) for run in pair]
    flood.post_all(mixed)

    attempts = flood.store.attempts(repo=REPO, limit=1000)
    assert len(attempts) == 2, [(a.id, a.run_id, a.status) for a in attempts]
    assert len(flood.repair.requests) == 2
    assert flood.clones == [flood.sha, flood.sha]
    groups = []
    for attempt in attempts:
        assert attempt.run_id is not None
        groups.append({attempt.run_id, *(r.run_id for r in flood.store.joined_runs(attempt.id))})
    assert sorted(map(sorted, groups)) == sorted(
        [sorted(r.id for r in pytest_runs), sorted(r.id for r in jest_runs)]
    )
