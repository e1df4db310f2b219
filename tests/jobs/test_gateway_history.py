"""The real gateway's two #14 operations against the strict double: the last green run of a
workflow on a branch (``actions: read``) and deepening the worker's shallow clone."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.github import GitHubError
from bot.github.client import GitHubApp
from bot.github.gateway import AppGitHubGateway
from tests.fakes.github_double import GitHubDouble

REPO = "acme/widgets"


@pytest.fixture
def gateway(github_app: GitHubApp, github_double: GitHubDouble) -> AppGitHubGateway:
    inst = github_double.add_installation("acme")
    github_double.add_repo(REPO, {"a.py": "A = 0\n"}, installation=inst)
    return AppGitHubGateway(github_app, inst.id)


def test_the_newest_successful_run_of_the_workflow_on_the_branch(
    gateway: AppGitHubGateway, github_double: GitHubDouble
) -> None:
    shas = [github_double.commit(REPO, {"a.py": f"A = {i}\n"}, branch="main") for i in range(1, 4)]
    ok = [("test", "success", "ok")]
    old = github_double.add_workflow_run(REPO, head_sha=shas[0], head_branch="main", jobs=ok)
    wid = old.workflow_id
    new = github_double.add_workflow_run(REPO, head_sha=shas[1], head_branch="main", jobs=ok)
    github_double.add_workflow_run(
        REPO, head_sha=shas[2], head_branch="main", jobs=[("test", "failure", "x")]
    )
    github_double.add_workflow_run(REPO, head_sha=shas[2], head_branch="other", jobs=ok)
    github_double.add_workflow_run(REPO, head_sha=shas[2], head_branch="main", jobs=ok, name="Lint")
    found = gateway.last_successful_run(REPO, wid, "main")
    assert found is not None and (found.id, found.head_sha, found.head_branch) == (new.id, shas[1], "main")
    assert gateway.last_successful_run(REPO, wid, "nowhere") is None
    github_double.fail_next(
        "GET", r"/actions/workflows/\d+/runs", 403, body={"message": "Resource not accessible"}
    )
    with pytest.raises(GitHubError):
        gateway.last_successful_run(REPO, wid, "main")
    gateway.close()


def test_fetch_history_deepens_the_shallow_clone(
    gateway: AppGitHubGateway, github_double: GitHubDouble, tmp_path: Path
) -> None:
    green = str(github_double.branch_sha(REPO, "main"))
    head = ""
    for i in range(3):
        head = github_double.commit(REPO, {"a.py": f"A = {i + 1}\n"}, branch="main")
    work = tmp_path / "work"
    gateway.clone(REPO, head, work)

    def count() -> str:
        done = subprocess.run(
            ["git", "-C", str(work), "rev-list", "--count", f"{green}..{head}"],
            capture_output=True,
            text=True,
        )
        return done.stdout.strip() if done.returncode == 0 else "unknown"

    assert count() == "unknown"  # the clone holds one commit: the green one is not there
    gateway.fetch_history(REPO, work, [head, green], depth=64)
    assert count() == "3"
    assert (work / "a.py").read_text() == "A = 3\n"  # the work tree is as it was
    assert "x-access-token" not in (work / ".git" / "config").read_text()
    gateway.close()
