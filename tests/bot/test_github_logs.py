"""Failed-job log download (jobs of the latest attempt, 302 followed, caps) and analysis."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.github import GitHubError
from bot.github.auth import COMMENT_PERMISSIONS, READ_PERMISSIONS
from bot.github.client import GitHubApp, InstallationClient
from bot.github.logs import (
    analyze_jobs,
    concatenate,
    download_failed_job_logs,
    first_repairable,
    job_header,
)
from tests.fakes.github_double import GitHubDouble, WorkflowRun

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
REPO = "acme/widgets"


@pytest.fixture
def run(github_double: GitHubDouble) -> WorkflowRun:
    inst = github_double.add_installation("acme")
    github_double.add_repo(REPO, {"a.py": "x = 1\n"}, installation=inst)
    sha = github_double.branch_sha(REPO, "main")
    assert sha is not None
    return github_double.add_workflow_run(
        REPO,
        head_sha=sha,
        head_branch="main",
        run_attempt=2,
        jobs=[
            ("build", "success", "all good\n"),
            ("deps", "failure", (LOGS / "python_pip_resolution.log").read_text()),
            ("test (3.11)", "failure", (LOGS / "python_pytest_assert.log").read_text()),
            ("docs", "skipped", ""),
        ],
    )


@pytest.fixture
def client(github_app: GitHubApp, run: WorkflowRun) -> Iterator[InstallationClient]:
    iid = github_app.repo_installation_id("acme", "widgets")
    with github_app.installation(iid, repository=REPO, permissions=READ_PERMISSIONS) as c:
        yield c


def test_downloads_failed_jobs_of_the_latest_attempt_following_the_redirect(
    client: InstallationClient, github_double: GitHubDouble, run: WorkflowRun
) -> None:
    logs = download_failed_job_logs(client, run.id)
    assert [job.name for job in logs] == ["deps", "test (3.11)"]
    assert logs[1].text == (LOGS / "python_pytest_assert.log").read_text()
    assert not logs[1].truncated and logs[1].size == len(logs[1].text.encode())
    assert github_double.requests_matching("GET", rf"/actions/runs/{run.id}/attempts/2/jobs$")
    redirects = github_double.requests_matching("GET", r"/actions/jobs/\d+/logs$")
    assert [r.status for r in redirects] == [302, 302]
    assert [r.status for r in github_double.requests_matching("GET", r"^/_blobs/logs/")] == [200, 200]


def test_concatenation_and_analysis(client: InstallationClient, run: WorkflowRun) -> None:
    logs = download_failed_job_logs(client, run.id)
    text = concatenate(logs)
    assert text.index(job_header(logs[0])) < text.index(job_header(logs[1]))
    assert "===== ARCS: job 'test (3.11)'" in text
    reports = analyze_jobs(logs)
    assert [r.failure_class for _, r in reports] == ["dependency", "test"]
    picked = first_repairable(reports)
    assert picked is not None
    job, report = picked
    assert job.name == "test (3.11)" and "tests/test_calc.py::test_add" in report.test_ids
    assert report.job is not None


def test_logs_are_capped_keeping_the_end(client: InstallationClient, run: WorkflowRun) -> None:
    logs = download_failed_job_logs(client, run.id, max_job_bytes=2000)
    full = (LOGS / "python_pytest_assert.log").read_text()
    test_log = logs[1]
    assert test_log.truncated and test_log.size == len(full.encode())
    assert len(test_log.text.encode()) <= 2000
    assert full.endswith(test_log.text)
    assert full[len(full) - len(test_log.text) - 1] == "\n"  # starts at a line boundary
    assert "[ARCS: log truncated" in concatenate(logs)
    capped = download_failed_job_logs(client, run.id, max_job_bytes=10**6, max_total_bytes=3000)
    assert len(capped) <= 2 and sum(len(j.text.encode()) for j in capped) <= 3000


def test_a_token_without_actions_read_cannot_read_logs(
    github_app: GitHubApp, github_double: GitHubDouble, run: WorkflowRun
) -> None:
    iid = github_app.repo_installation_id("acme", "widgets")
    with (
        github_app.installation(iid, repository=REPO, permissions=COMMENT_PERMISSIONS) as client,
        pytest.raises(GitHubError, match="403"),
    ):
        download_failed_job_logs(client, run.id)
    github_double.auth_failures.clear()
