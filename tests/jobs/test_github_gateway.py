"""The real GitHubGateway against the strict double: the protocol, least privilege per operation,
a CI-repair flow end to end, tokens revoked at the end."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.github import GitHubError
from bot.github.auth import COMMENT_PERMISSIONS, PUBLISH_PERMISSIONS, READ_PERMISSIONS
from bot.github.client import GitHubApp
from bot.github.gateway import AppGitHubGateway, gateway_factory
from bot.settings import load_settings
from jobs.ports import GitHubGateway
from jobs.render import status_comment
from tests.fakes.github_double import TEST_APP_ID, AppKey, GitHubDouble

REPO = "acme/widgets"
PYTEST_LOG = (
    Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "python_pytest_assert.log"
).read_text()


@pytest.fixture
def world(github_double: GitHubDouble) -> dict[str, object]:
    inst = github_double.add_installation("acme")
    github_double.add_repo(
        REPO,
        {
            "src/calc.py": "def add(a, b):\n    return a - b\n",
            ".arcs.yml": "draft: false\npr_labels: [arcs, automated]\ntest: pytest -q\nbranches: [main]\n",
        },
        installation=inst,
        collaborators={"maintainer": "maintain", "reader": "read"},
    )
    github_double.add_user("stranger")
    sha = github_double.branch_sha(REPO, "main")
    run = github_double.add_workflow_run(
        REPO,
        head_sha=str(sha),
        head_branch="main",
        jobs=[("test", "failure", PYTEST_LOG), ("lint", "success", "")],
    )
    issue = github_double.add_issue(REPO, "add() subtracts", "2 + 2 is 0", user="reader")
    return {"installation": inst.id, "sha": sha, "run": run.id, "issue": issue}


@pytest.fixture
def gateway(github_app: GitHubApp, world: dict[str, object]) -> AppGitHubGateway:
    return AppGitHubGateway(
        github_app, int(str(world["installation"])), attempt="https://arcs.example/attempts/5"
    )


def test_it_implements_the_protocol() -> None:
    for name, member in inspect.getmembers(GitHubGateway, inspect.isfunction):
        if name.startswith("_"):
            continue
        mine = getattr(AppGitHubGateway, name)
        expected = list(inspect.signature(member).parameters)
        assert list(inspect.signature(mine).parameters)[: len(expected)] == expected, name


def test_ci_repair_flow_end_to_end(
    gateway: AppGitHubGateway, github_double: GitHubDouble, world: dict[str, object], tmp_path: Path
) -> None:
    gw: GitHubGateway = gateway
    head = gw.get_branch_head(REPO)
    assert (head.name, head.sha) == ("main", world["sha"])
    logs = gw.download_failed_logs(REPO, int(str(world["run"])))
    assert "===== ARCS: job 'test'" in logs and "'lint'" not in logs
    gw.clone(REPO, head.sha, tmp_path / "work")
    assert (tmp_path / "work" / "src" / "calc.py").exists()
    config = gw.load_repo_config(REPO, head.sha)
    assert config.test == "pytest -q" and config.extra["branches"] == ["main"]
    check_id = gw.create_check_run(REPO, head.sha, "ARCS", "Repairing…", "working on it")
    comment_id = gw.create_or_edit_status_comment(
        REPO, int(str(world["issue"])), status_comment("working", attempt_id=5)
    )
    commit = gw.push_branch(
        REPO,
        "arcs/attempt/5",
        head.sha,
        {"src/calc.py": "def add(a, b):\n    return a + b\n"},
        "ARCS: fix add",
    )
    again = gw.push_branch(
        REPO,
        "arcs/attempt/5",
        head.sha,
        {"src/calc.py": "def add(a, b):\n    return a + b\n"},
        "ARCS: fix add",
    )
    assert again == commit
    pr = gw.open_or_update_pr(REPO, "arcs/attempt/5", "main", "ARCS: fix add", "Fixes #1")
    assert pr.created
    assert gw.open_or_update_pr(REPO, "arcs/attempt/5", "main", "ARCS: fix add", "v2").number == pr.number
    gw.update_check_run(
        REPO, check_id, conclusion="success", title="Fix proposed", summary=pr.url, details="d"
    )
    edited = gw.create_or_edit_status_comment(
        REPO, int(str(world["issue"])), status_comment("pr_opened", attempt_id=5, pr_url=pr.url)
    )
    assert edited == comment_id
    gateway.close()

    [pull] = github_double.open_pulls(REPO)
    assert pull["draft"] is False  # .arcs.yml says draft: false
    assert [label["name"] for label in github_double.repos[REPO].issues[pr.number]["labels"]] == [
        "arcs",
        "automated",
    ]
    info = github_double.commit_info(REPO, "arcs/attempt/5")
    assert info["author_email"] == f"{github_double.bot_user_id}+arcs[bot]@users.noreply.github.com"
    assert "ARCS-Attempt: https://arcs.example/attempts/5" in info["message"]
    check = github_double.repos[REPO].check_runs[check_id]
    assert check["history"] == ["in_progress", "completed"] and check["conclusion"] == "success"
    assert len(github_double.mutations_matching("POST", r"git-receive-pack$")) == 1

    # Least privilege: one token per scope, each narrowed to the repository, all revoked.
    mints = github_double.mutations_matching("POST", r"/access_tokens$")
    assert sorted(tuple(sorted(m.body["permissions"].items())) for m in mints) == sorted(
        tuple(sorted(p.items())) for p in (READ_PERMISSIONS, COMMENT_PERMISSIONS, PUBLISH_PERMISSIONS)
    )
    assert all(m.body["repositories"] == ["widgets"] for m in mints)
    assert all(token.revoked for token in github_double.tokens.values())
    [push] = github_double.mutations_matching("POST", r"git-receive-pack$")
    assert github_double.tokens[str(push.token)].permissions == dict(PUBLISH_PERMISSIONS)
    clone_requests = [r for r in github_double.requests if r.path.endswith("git-upload-pack")]
    assert clone_requests
    with pytest.raises(GitHubError, match="closed"):
        gateway.get_branch_head(REPO)


def test_reads(gateway: AppGitHubGateway, github_double: GitHubDouble, world: dict[str, object]) -> None:
    assert gateway.get_permission(REPO, "maintainer") == "maintain"
    assert gateway.get_permission(REPO, "reader") == "read"
    assert gateway.get_permission(REPO, "stranger") == "none"
    issue = gateway.get_issue(REPO, int(str(world["issue"])))
    assert (issue.title, issue.body, issue.author, issue.state) == (
        "add() subtracts",
        "2 + 2 is 0",
        "reader",
        "open",
    )
    github_double.commit(REPO, {"src/calc.py": "x"}, branch="feature", message="f")
    gateway.push_branch(REPO, "arcs/p", str(world["sha"]), {"src/calc.py": "y\n"}, "m")
    pr = gateway.open_or_update_pr(REPO, "arcs/p", "main", "t", "b")
    info = gateway.get_pull_request(REPO, pr.number)
    assert (info.head_branch, info.base_branch, info.head_repo) == ("arcs/p", "main", REPO)
    assert info.head_sha == github_double.branch_sha(REPO, "arcs/p")
    assert gateway.get_branch_head(REPO, "feature").sha == github_double.branch_sha(REPO, "feature")
    with pytest.raises(GitHubError, match="404"):
        gateway.get_branch_head(REPO, "nope")
    gateway.close()


def test_reaction_and_status_comment(
    gateway: AppGitHubGateway, github_double: GitHubDouble, world: dict[str, object]
) -> None:
    cid = github_double.add_comment(REPO, int(str(world["issue"])), "/arcs fix", user="maintainer")
    gateway.add_reaction(REPO, cid, "eyes")
    assert github_double.reactions_on_comment(REPO, cid) == ["eyes"]
    first = gateway.create_or_edit_status_comment(REPO, 1, "plain text, no marker")
    second = gateway.create_or_edit_status_comment(REPO, 1, "edited", comment_id=first)
    assert second == first
    assert github_double.repos[REPO].comments[first]["body"] == "edited"
    gateway.close()


def test_malformed_config_names_the_key(
    gateway: AppGitHubGateway, github_double: GitHubDouble, world: dict[str, object]
) -> None:
    sha = github_double.commit(REPO, {".arcs.yml": "budget:\n  usd: lots\n"}, branch="main")
    with pytest.raises(ConfigError, match=r"budget\.usd: expected a number, got 'lots'"):
        gateway.load_repo_config(REPO, sha)
    # Publishing still works (safe defaults: draft).
    gateway.push_branch(REPO, "arcs/d", str(world["sha"]), {"src/calc.py": "z\n"}, "m")
    gateway._configs.clear()
    gateway.open_or_update_pr(REPO, "arcs/d", "main", "t", "b")
    assert github_double.open_pulls(REPO)[0]["draft"] is True
    gateway.close()


def test_installation_looked_up_when_unknown_and_factory(
    github_double: GitHubDouble, world: dict[str, object], test_app_key: AppKey, tmp_path: Path
) -> None:
    settings = load_settings(
        {
            "ARCS_HOME": str(tmp_path / "home"),
            "ARCS_APP_ID": TEST_APP_ID,
            "ARCS_PRIVATE_KEY": test_app_key.private_pem,
            "ARCS_GITHUB_API_URL": github_double.api_url,
        }
    )
    make = gateway_factory(settings)
    with make(None) as gw:
        assert gw.get_branch_head(REPO).sha == world["sha"]
    make.close()
    assert github_double.requests_matching("GET", rf"^/repos/{REPO}/installation$")
    assert all(token.revoked for token in github_double.tokens.values())
