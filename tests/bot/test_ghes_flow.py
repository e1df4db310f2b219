"""GitHub Enterprise Server: a GHES delivery becomes API calls under ``ARCS_GITHUB_API_URL``.

A ``workflow_run.completed`` example of the pinned ``@octokit/webhooks-examples`` (as the GHES
release publishes it; only the ids and names the bot reads are pointed at the double's
repository) is signed and posted to the app, and the job it enqueues runs through the worker's
pipeline with the worker's GitHub wiring (``GitHubApp.from_settings``, on the fake clock so the
mutation gaps do not really sleep, and ``gateway_factory``). The strict double
serves its REST API under the prefix of that layout only: a request anywhere else is unexpected
and fails the test.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from bot.github.client import GitHubApp
from bot.github.gateway import gateway_factory
from bot.settings import Settings
from bot.store.store import Store
from bot.web.app import create_app
from bot.web.fakes import ListEnqueuer
from jobs import pipeline
from jobs.fakes import FakeRepairService
from jobs.messages import JobRequest
from jobs.pipeline import Deps
from tests.bot.test_octokit_sweep import examples
from tests.bot.webhook_support import SECRET, encode, headers
from tests.fakes.github_double import TEST_APP_ID, AppKey, FakeClock, GitHubDouble

REPO = "acme/widgets"
PYTEST_LOG = (
    Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "python_pytest_assert.log"
).read_text()


@pytest.fixture
def double(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    test_app_key: AppKey,
    fake_clock: FakeClock,
    fresh_structlog: None,
) -> Iterator[GitHubDouble]:
    prefix: str = request.param
    github = GitHubDouble(
        tmp_path / "github",
        app_id=TEST_APP_ID,
        app_public_key_pem=test_app_key.public_pem,
        clock=fake_clock.time,
        api_prefix=prefix,
    )
    with github:
        yield github
    assert github.unexpected == [], "the GitHub double received unexpected requests"


def _delivery(flavour: str, github: GitHubDouble, installation: int, run_id: int, sha: str) -> dict[str, Any]:
    (published,) = [
        p for event, _, p in examples(flavour) if event == "workflow_run" and p["action"] == "completed"
    ][:1]
    payload = copy.deepcopy(published)  # the bundle is cached for the sweep: leave it as published
    repo = github.repos[REPO]
    mine = {"id": repo.id, "name": repo.name, "full_name": REPO}
    payload["repository"].update(mine)
    run = payload["workflow_run"]
    run.update(id=run_id, head_sha=sha, head_branch="main", conclusion="failure", pull_requests=[])
    run["head_repository"].update(mine)
    payload["installation"] = {"id": installation}
    return payload


@pytest.mark.parametrize(
    ("double", "flavour", "prefix"),
    [
        ("/api/v3", "ghes-31", "/api/v3"),
        ("/api/v3", "ghes-35", "/api/v3"),
        ("", "api.github.com", ""),
    ],
    indirect=["double"],
    ids=["ghes-31", "ghes-35", "github.com"],
)
def test_a_workflow_run_failure_reaches_the_api_under_the_configured_prefix(
    double: GitHubDouble,
    flavour: str,
    prefix: str,
    settings: Settings,
    test_app_key: AppKey,
    fake_clock: FakeClock,
    tmp_path: Path,
) -> None:
    inst = double.add_installation("acme")
    double.add_repo(
        REPO,
        {"app.py": "x = 1\n", ".arcs.yml": "test: pytest -q\n"},
        installation=inst,
    )
    sha = str(double.branch_sha(REPO, "main"))
    run = double.add_workflow_run(
        REPO, head_sha=sha, head_branch="main", jobs=[("test", "failure", PYTEST_LOG)]
    )
    configured = settings.model_copy(
        update={
            "app_id": TEST_APP_ID,
            "private_key": SecretStr(test_app_key.private_pem),
            "github_api_url": double.api_url,
            "webhook_secret": SecretStr(SECRET),
        }
    )
    assert configured.github_api_url.endswith(f"127.0.0.1:{double.port}{prefix}")

    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}")
    queue = ListEnqueuer()
    body = encode(_delivery(flavour, double, inst.id, run.id, sha))
    with TestClient(create_app(configured, store=store, enqueuer=queue, dashboard=False)) as client:
        reply = client.post("/webhooks/github", content=body, headers=headers("workflow_run", body))
    assert reply.status_code == 202 and reply.json()["status"] == "queued", reply.json()
    # One job (the outbox relay may hand the same one over again: its key makes it one attempt).
    assert len({j.idempotency_key for j in queue.jobs}) == 1
    job = queue.jobs[0]
    assert job.actor == "repair_ci_failure" and job.args["installation_id"] == inst.id

    follow_ups: list[JobRequest] = []
    app = GitHubApp.from_settings(
        configured, clock=fake_clock.time, monotonic=fake_clock.monotonic, sleep=fake_clock.sleep
    )
    assert app.base_url == double.api_url + "/"
    github = gateway_factory(configured, app=app)
    deps = Deps(
        settings=configured,
        store=store,
        github=github,
        repair=FakeRepairService(),
        enqueue=follow_ups.append,
    )
    try:
        assert pipeline.dispatch(deps, job) == "fixed"
        (publish,) = follow_ups
        assert pipeline.dispatch(deps, publish) == "published"
    finally:
        github.close()
        app.close()
        store.close()

    rest = [r for r in double.requests if r.auth in ("jwt", "token")]
    assert any(r.path == f"/repos/{REPO}/actions/runs/{run.id}/attempts/1/jobs" for r in rest)
    assert any(r.method == "POST" and r.path == f"/repos/{REPO}/pulls" for r in rest)
    assert all(r.raw_path == prefix + r.path for r in rest)
    [pull] = double.open_pulls(REPO)
    assert pull["head"]["ref"].startswith("arcs/")
