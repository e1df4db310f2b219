"""A CI failure on known-flaky tests opens no pull request (issue #26), end to end.

A ``workflow_run.completed`` example of the pinned ``@octokit/webhooks-examples`` (pointed at the
double's repository and run) is signed and posted to the app; the job it enqueues runs through the
pipeline with the worker's GitHub wiring against the strict double and the SQL store as the test
history. The history knows the failing tests as flaky from an earlier attempt (failed, then passed
on re-run at one commit): no repair runs, no branch is pushed, no pull request is opened, the check
run gives the evidence, and with ``flaky.rerun_failed_jobs`` the failed jobs are re-run once.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
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
from jobs.repair.flaky import SANDBOX_ENV, TestRun
from runners.logs import analyze_log
from tests.bot.test_octokit_sweep import examples
from tests.bot.webhook_support import SECRET, encode, headers
from tests.fakes.github_double import ALL_PERMISSIONS, TEST_APP_ID, AppKey, FakeClock, GitHubDouble

REPO = "acme/widgets"
PYTEST_LOG = (
    Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "python_pytest_assert.log"
).read_text()
FAILING = analyze_log(PYTEST_LOG).test_ids
OLD_SHA = "0123456789abcdef" * 2 + "01234567"


@dataclass
class World:
    double: GitHubDouble
    store: Store
    repair: FakeRepairService
    deps: Deps
    installation: int
    sha: str
    post: Any


@pytest.fixture
def world_for(
    github_double: GitHubDouble,
    settings: Settings,
    test_app_key: AppKey,
    fake_clock: FakeClock,
    tmp_path: Path,
) -> Iterator[Any]:
    closers: list[Any] = []

    def make(arcs_yml: str, *, permissions: dict[str, str] | None = None) -> World:
        double = github_double
        inst = double.add_installation("acme", permissions=permissions or dict(ALL_PERMISSIONS))
        double.add_repo(REPO, {"app.py": "x = 1\n", ".arcs.yml": arcs_yml}, installation=inst)
        sha = str(double.branch_sha(REPO, "main"))
        configured = settings.model_copy(
            update={
                "app_id": TEST_APP_ID,
                "private_key": SecretStr(test_app_key.private_pem),
                "github_api_url": double.api_url,
                "webhook_secret": SecretStr(SECRET),
            }
        )
        store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}")
        app = GitHubApp.from_settings(
            configured, clock=fake_clock.time, monotonic=fake_clock.monotonic, sleep=fake_clock.sleep
        )
        github = gateway_factory(configured, app=app)
        repair = FakeRepairService()
        follow_ups: list[JobRequest] = []
        deps = Deps(
            settings=configured,
            store=store,
            github=github,
            repair=repair,
            enqueue=follow_ups.append,
            history=store,
        )
        closers.extend([github.close, app.close, store.close])

        def post(run_id: int, run_attempt: int) -> list[str]:
            """Deliver the run's failure and run its jobs (and their follow-ups)."""
            queue = ListEnqueuer()
            body = encode(_delivery(double, inst.id, run_id, sha, run_attempt))
            with TestClient(create_app(configured, store=store, enqueuer=queue, dashboard=False)) as client:
                reply = client.post(
                    "/webhooks/github",
                    content=body,
                    headers=headers("workflow_run", body, delivery=f"d-{run_id}-{run_attempt}"),
                )
            assert reply.status_code == 202, reply.text
            jobs = {j.idempotency_key: j for j in queue.jobs if j.actor == "repair_ci_failure"}
            outcomes = [pipeline.dispatch(deps, job) for job in jobs.values()]
            while follow_ups:
                outcomes.append(pipeline.dispatch(deps, follow_ups.pop(0)))
            return outcomes

        return World(double, store, repair, deps, inst.id, sha, post)

    yield make
    for close in reversed(closers):
        close()


def _delivery(
    double: GitHubDouble, installation: int, run_id: int, sha: str, run_attempt: int
) -> dict[str, Any]:
    (published,) = [
        p
        for event, _, p in examples("api.github.com")
        if event == "workflow_run" and p["action"] == "completed"
    ][:1]
    payload = copy.deepcopy(published)
    repo = double.repos[REPO]
    mine = {"id": repo.id, "name": repo.name, "full_name": REPO}
    payload["repository"].update(mine)
    run = payload["workflow_run"]
    found = repo.runs[run_id]
    run.update(
        id=run_id,
        name=found.name,
        head_sha=sha,
        head_branch="main",
        conclusion="failure",
        pull_requests=[],
        run_attempt=run_attempt,
        workflow_id=found.workflow_id,
    )
    run["head_repository"].update(mine)
    payload["installation"] = {"id": installation}
    return payload


def known_flaky(store: Store, tests: tuple[str, ...] = FAILING) -> None:
    """An earlier attempt at another commit saw each test fail, then pass twice on re-run."""
    store.record_test_runs(
        REPO,
        [
            TestRun(t, OLD_SHA, SANDBOX_ENV, "reproduction", n == 0, run_key=f"attempt:1:reproduction:{n}")
            for t in tests
            for n in range(3)
        ],
    )


def check_runs(double: GitHubDouble) -> list[dict[str, Any]]:
    return list(double.repos[REPO].check_runs.values())


def rerun_posts(double: GitHubDouble) -> list[str]:
    return [m.path for m in double.mutations if m.path.endswith("/rerun-failed-jobs")]


WITH_ACTIONS_WRITE = {**ALL_PERMISSIONS, "actions": "write"}


def test_a_failure_of_known_flaky_tests_opens_no_pr_and_is_re_run_once(world_for: Any) -> None:
    w = world_for("test: pytest -q\nflaky:\n  rerun_failed_jobs: true\n", permissions=WITH_ACTIONS_WRITE)
    known_flaky(w.store)
    run = w.double.add_workflow_run(
        REPO, head_sha=w.sha, head_branch="main", jobs=[("test", "failure", PYTEST_LOG)]
    )

    assert w.post(run.id, 1) == ["skipped"]
    assert w.repair.requests == []  # no repair, no model, no clone
    assert w.double.open_pulls(REPO) == [] and w.double.branch_sha(REPO, "arcs/fix-main") is None
    (check,) = check_runs(w.double)
    summary = str(check["output"]["summary"])
    assert check["conclusion"] == "neutral" and str(check["output"]["title"]).startswith(
        "Known flaky, not repaired: 4 failing tests"
    )
    assert (
        f"`{FAILING[0]}` failed 1 of 3 runs at {OLD_SHA[:7]}, passed here 2 of 3 in ARCS' sandbox" in summary
    )
    assert "ARCS asked GitHub to re-run the failed jobs" in summary
    assert rerun_posts(w.double) == [f"/repos/{REPO}/actions/runs/{run.id}/rerun-failed-jobs"]
    assert run.run_attempt == 2
    (attempt,) = w.store.attempts(repo=REPO)
    assert attempt.status == "skipped" and (attempt.reason or "").startswith("known flaky: ")
    # the CI failure itself is now in the history too
    assert {r.source for r in w.store.test_runs(REPO, FAILING[:1])} == {"reproduction", "ci"}

    # The re-run fails again: still no repair, no pull request, and no second re-run.
    w.post(run.id, 2)
    assert w.repair.requests == [] and w.double.open_pulls(REPO) == []
    assert len(rerun_posts(w.double)) == 1


def test_without_actions_write_the_check_run_says_the_re_run_failed(world_for: Any) -> None:
    w = world_for(
        "test: pytest -q\nflaky:\n  rerun_failed_jobs: true\n"
    )  # the default manifest: actions: read
    known_flaky(w.store)
    run = w.double.add_workflow_run(
        REPO, head_sha=w.sha, head_branch="main", jobs=[("test", "failure", PYTEST_LOG)]
    )
    assert w.post(run.id, 1) == ["skipped"]
    (check,) = check_runs(w.double)
    assert "ARCS could not re-run the failed jobs" in str(check["output"]["summary"])
    assert rerun_posts(w.double) == [] and w.double.open_pulls(REPO) == [] and w.repair.requests == []


def test_without_the_key_nothing_is_re_run(world_for: Any) -> None:
    w = world_for("test: pytest -q\n", permissions=WITH_ACTIONS_WRITE)
    known_flaky(w.store)
    run = w.double.add_workflow_run(
        REPO, head_sha=w.sha, head_branch="main", jobs=[("test", "failure", PYTEST_LOG)]
    )
    assert w.post(run.id, 1) == ["skipped"]
    (check,) = check_runs(w.double)
    assert "`flaky.rerun_failed_jobs: true` lets ARCS do it" in str(check["output"]["summary"])
    assert rerun_posts(w.double) == [] and w.double.open_pulls(REPO) == []


def test_a_mixed_failure_repairs_only_the_tests_not_known_flaky(world_for: Any) -> None:
    w = world_for("test: pytest -q\n")
    known_flaky(w.store, FAILING[:2])
    run = w.double.add_workflow_run(
        REPO, head_sha=w.sha, head_branch="main", jobs=[("test", "failure", PYTEST_LOG)]
    )
    assert w.post(run.id, 1) == ["fixed", "published"]
    (plan,) = w.repair.requests
    assert plan.ci_tests == tuple(FAILING[2:])
    assert len(w.double.open_pulls(REPO)) == 1


def test_without_flaky_evidence_the_failure_is_repaired(world_for: Any) -> None:
    w = world_for("test: pytest -q\n")
    run = w.double.add_workflow_run(
        REPO, head_sha=w.sha, head_branch="main", jobs=[("test", "failure", PYTEST_LOG)]
    )
    assert w.post(run.id, 1) == ["fixed", "published"]
    assert len(w.repair.requests) == 1 and len(w.double.open_pulls(REPO)) == 1
