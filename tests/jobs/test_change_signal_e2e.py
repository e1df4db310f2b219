"""Change-aware CI repair end to end (#14): a signed ``workflow_run`` failure on the GitHub double
whose branch has a green run three commits earlier.

The webhook (an ``@octokit/webhooks-examples`` payload pointed at the double's repository) is
signed and posted to the app; the job it enqueues runs through the worker's pipeline with the
worker's GitHub wiring (``gateway_factory`` on the double) and the real engine
(:class:`jobs.repair_service.FixRepairService`) on a scripted pytest runner that answers from the
workspace's actual source. Three commits after the green one, the middle one breaks the test:
the worker asks the Actions API for the last green run, deepens its shallow clone, reads the
change, fixes the failure and bisects the three commits to the middle one. Without a green run,
or when the Actions API answers 403, the repair still runs, without the signal.
"""

from __future__ import annotations

import contextlib
import copy
import json
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
from jobs.messages import JobRequest
from jobs.pipeline import Deps
from jobs.repair.report import RepairReport
from jobs.repair_service import FixRepairService
from runners.base import Runner
from runners.fake import FakeRunner
from tests.bot.test_cli_fix import FIXTURES, RULES, scripted_pytest
from tests.bot.test_octokit_sweep import examples
from tests.bot.webhook_support import SECRET, encode, headers
from tests.fakes.github_double import TEST_APP_ID, AppKey, FakeClock, GitHubDouble

REPO = "acme/ages"
RED_LOG = """##[group]Run pytest -q
pytest -q
##[endgroup]
F..
=================================== FAILURES ===================================
___________________________ test_eighteen_is_adult ____________________________
tests/test_rules.py:4: in test_eighteen_is_adult
    assert is_adult(18)
E   assert False
=========================== short test summary info ============================
FAILED tests/test_rules.py::test_eighteen_is_adult - assert False
1 failed, 2 passed in 0.05s
##[error]Process completed with exit code 1.
"""
BROKEN = "    return age > ADULT_AGE\n"
FIXED = "    return age >= ADULT_AGE\n"


def _tree() -> dict[str, str]:
    root = FIXTURES / "boundary"
    files = {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}
    files[RULES] = files[RULES].replace(BROKEN, FIXED)  # green: the fixture's bug is not there yet
    files[".arcs.yml"] = "test: pytest -q\n"
    return files


@pytest.fixture
def double(
    tmp_path: Path, test_app_key: AppKey, fake_clock: FakeClock, fresh_structlog: None
) -> Iterator[GitHubDouble]:
    github = GitHubDouble(
        tmp_path / "github",
        app_id=TEST_APP_ID,
        app_public_key_pem=test_app_key.public_pem,
        clock=fake_clock.time,
    )
    with github:
        yield github
    assert github.unexpected == [], "the GitHub double received unexpected requests"


def _delivery(
    github: GitHubDouble, installation: int, run_id: int, workflow_id: int, sha: str
) -> dict[str, Any]:
    (published,) = [
        p
        for event, _, p in examples("api.github.com")
        if event == "workflow_run" and p["action"] == "completed"
    ][:1]
    payload = copy.deepcopy(published)
    repo = github.repos[REPO]
    mine = {"id": repo.id, "name": repo.name, "full_name": REPO}
    payload["repository"].update(mine)
    run = payload["workflow_run"]
    run.update(
        id=run_id,
        head_sha=sha,
        head_branch="main",
        conclusion="failure",
        pull_requests=[],
        workflow_id=workflow_id,
    )
    run["head_repository"].update(mine)
    payload["installation"] = {"id": installation}
    return payload


@contextlib.contextmanager
def signed_run(
    double: GitHubDouble,
    settings: Settings,
    test_app_key: AppKey,
    fake_clock: FakeClock,
    tmp_path: Path,
    payload: dict[str, Any],
    runner: Runner | None,
    toolchains: tuple[Path, ...] | None = (),
) -> Iterator[tuple[Deps, JobRequest, list[JobRequest]]]:
    """Sign and post the ``workflow_run`` ``payload`` to the app; yield the worker's dependencies
    (the real gateway on the double, the real engine on ``runner`` — None: the settings' real
    sandbox), the queued repair job and the list the follow-up jobs land in."""
    configured = settings.model_copy(
        update={
            "app_id": TEST_APP_ID,
            "private_key": SecretStr(test_app_key.private_pem),
            "github_api_url": double.api_url,
            "webhook_secret": SecretStr(SECRET),
        }
    )
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}")
    queue = ListEnqueuer()
    body = encode(payload)
    with TestClient(create_app(configured, store=store, enqueuer=queue, dashboard=False)) as client:
        reply = client.post("/webhooks/github", content=body, headers=headers("workflow_run", body))
    assert reply.status_code == 202 and reply.json()["status"] == "queued", reply.json()
    job = queue.jobs[0]
    assert job.actor == "repair_ci_failure"
    app = GitHubApp.from_settings(
        configured, clock=fake_clock.time, monotonic=fake_clock.monotonic, sleep=fake_clock.sleep
    )
    github = gateway_factory(configured, app=app)
    service = FixRepairService(configured, runner=runner, toolchains=toolchains, use_index=False, parallel=1)
    follow_ups: list[JobRequest] = []
    deps = Deps(settings=configured, store=store, github=github, repair=service, enqueue=follow_ups.append)
    try:
        yield deps, job, follow_ups
    finally:
        github.close()
        app.close()
        store.close()


def _repair(
    double: GitHubDouble,
    settings: Settings,
    test_app_key: AppKey,
    fake_clock: FakeClock,
    tmp_path: Path,
    *,
    green: bool = True,
    forbidden: bool = False,
) -> tuple[RepairReport, dict[str, Any], dict[str, str]]:
    """Green commit, three more (the middle one breaks the test), a red run at the last; the
    signed webhook through the app and the worker. The stored report, the trace, the commits."""
    inst = double.add_installation("acme")
    double.add_repo(REPO, _tree(), installation=inst)
    c0 = str(double.branch_sha(REPO, "main"))
    c1 = double.commit(REPO, {"docs/notes.md": "Ages.\n"}, branch="main", message="docs: a note")
    rules = _tree()[RULES].replace(FIXED, BROKEN)
    c2 = double.commit(
        REPO,
        {RULES: rules},
        branch="main",
        message="rules: adults are older",
        author=("Mallory", "m@example.com"),
    )
    c3 = double.commit(REPO, {"docs/notes.md": "Ages, again.\n"}, branch="main", message="docs: more")
    if green:
        double.add_workflow_run(REPO, head_sha=c0, head_branch="main", jobs=[("test", "success", "ok")])
    red = double.add_workflow_run(REPO, head_sha=c3, head_branch="main", jobs=[("test", "failure", RED_LOG)])
    if forbidden:
        double.fail_next(
            "GET",
            r"/actions/workflows/\d+/runs",
            403,
            body={"message": "Resource not accessible by integration"},
        )
    payload = _delivery(double, inst.id, red.id, red.workflow_id, c3)
    runner = FakeRunner().on("pytest", scripted_pytest)
    with signed_run(double, settings, test_app_key, fake_clock, tmp_path, payload, runner) as (
        deps,
        job,
        follow,
    ):
        assert pipeline.dispatch(deps, job) == "fixed"
        (publish,) = follow
        assert pipeline.dispatch(deps, publish) == "published"
        (attempt,) = deps.store.attempts(repo=REPO, limit=5)
        assert attempt.trace is not None
        report = RepairReport.from_json(attempt.trace)
    trace = json.loads(Path(report.trace_path).read_text(encoding="utf-8"))
    listed = [
        r for r in double.requests if r.path == f"/repos/{REPO}/actions/workflows/{red.workflow_id}/runs"
    ]
    assert len(listed) == 1 and "status=success" in listed[0].query and "branch=main" in listed[0].query
    return report, trace, {"c0": c0, "c1": c1, "c2": c2, "c3": c3}


def test_a_green_run_three_commits_earlier_names_the_middle_commit(
    double: GitHubDouble, settings: Settings, test_app_key: AppKey, fake_clock: FakeClock, tmp_path: Path
) -> None:
    report, trace, c = _repair(double, settings, test_app_key, fake_clock, tmp_path)

    assert report.fixed and report.verdict == "fixed"
    culprit = report.culprit
    assert culprit is not None
    assert (culprit.sha, culprit.title, culprit.author) == (c["c2"], "rules: adults are older", "Mallory")
    assert culprit.found_by == "bisect" and culprit.runs == 2  # log2(3) rounded up: c1 passes, c2 fails
    assert report.changes == f"{c['c0'][:7]}..{c['c3'][:7]}, 3 commits, 2 files"
    # The diff signal in the trace: where the base came from, the range, the bisection.
    changes = trace["repo"]["changes"]
    assert changes["base"] == c["c0"] and changes["head"] == c["c3"]
    assert [x["sha"] for x in changes["commits"]] == [c["c1"], c["c2"], c["c3"]]
    assert changes["culprit"]["sha"] == c["c2"] and changes["bisect"]["status"] == "found"
    assert [sha for sha, _ in changes["bisect"]["probes"]] == [c["c1"], c["c2"]]
    assert any(n.startswith("change signal from the last green run") for n in trace["notices"])
    assert any(f"introduced by {c['c2'][:7]}" in n for n in trace["notices"])
    # The bisection's runs are counted in the budget's executions and the bound held.
    assert trace["spend"]["executions"] >= 2 + 1 and trace["bound_held"]
    # The fix pushed undoes the middle commit's hunk.
    [pull] = double.open_pulls(REPO)
    assert FIXED in str(double.read_file(REPO, pull["head"]["ref"], RULES))
    assert f"Introduced by {c['c2'][:7]}" in str(pull["body"])  # and the culprit's title
    assert "rules: adults are older" in str(pull["body"])


@pytest.mark.parametrize("case", ["no_green_run", "actions_forbidden"])
def test_without_the_signal_the_repair_still_runs(
    case: str,
    double: GitHubDouble,
    settings: Settings,
    test_app_key: AppKey,
    fake_clock: FakeClock,
    tmp_path: Path,
) -> None:
    report, trace, _ = _repair(
        double,
        settings,
        test_app_key,
        fake_clock,
        tmp_path,
        green=case != "no_green_run",
        forbidden=case == "actions_forbidden",
    )
    assert report.fixed and report.culprit is None and report.changes == ""
    assert "changes" not in trace["repo"]
    (note,) = [n for n in trace["notices"] if n.startswith("no change signal")]
    assert (
        ("no successful run" in note)
        if case == "no_green_run"
        else ("403" in note or "Forbidden" in note or "accessible" in note)
    )
