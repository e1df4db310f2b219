"""The publishing layer against the double: idempotent PRs, a status comment edited in place,
reactions, the check-run lifecycle, the branch push."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.github import GitHubError, RefusedPush
from bot.github.client import GitHubApp, InstallationClient
from bot.github.git import BotIdentity
from bot.github.publish import (
    add_issue_reaction,
    add_reaction,
    create_check_run,
    ensure_branch_pushed,
    find_status_comment,
    open_or_update_pr,
    read_file,
    update_check_run,
    upsert_status_comment,
)
from jobs.render import check_run_output, status_comment, status_marker
from tests.fakes.github_double import GitHubDouble

REPO = "acme/widgets"
BOT = "arcs[bot]"


@pytest.fixture
def base_sha(github_double: GitHubDouble) -> str:
    inst = github_double.add_installation("acme")
    github_double.add_repo(REPO, {"app.py": "VALUE = 1\n", ".arcs.yml": "draft: false\n"}, installation=inst)
    github_double.add_issue(REPO, "Totals are wrong", "see CI")
    sha = github_double.branch_sha(REPO, "main")
    assert sha is not None
    return sha


@pytest.fixture
def client(github_app: GitHubApp, base_sha: str) -> Iterator[InstallationClient]:
    iid = github_app.repo_installation_id("acme", "widgets")
    with github_app.installation(iid, repository=REPO) as c:
        yield c


@pytest.fixture
def identity(github_double: GitHubDouble) -> BotIdentity:
    return BotIdentity.for_app(github_double.bot_user_id)


def _push(
    client: InstallationClient, identity: BotIdentity, base: str, value: int, branch: str = "arcs/k1"
) -> str:
    return ensure_branch_pushed(
        client,
        branch=branch,
        base_sha=base,
        files={"app.py": f"VALUE = {value}\n"},
        message="ARCS: fix VALUE",
        identity=identity,
        attempt="https://arcs.example/attempts/1",
    )


def test_read_file(client: InstallationClient) -> None:
    assert read_file(client, ".arcs.yml") == "draft: false\n"
    assert read_file(client, "missing.yml") is None
    assert read_file(client, "app.py", ref="main") == "VALUE = 1\n"


def test_branch_push_is_idempotent_and_updates_its_own_branch(
    client: InstallationClient, github_double: GitHubDouble, identity: BotIdentity, base_sha: str
) -> None:
    first = _push(client, identity, base_sha, 2)
    assert github_double.branch_sha(REPO, "arcs/k1") == first
    again = _push(client, identity, base_sha, 2)
    assert again == first
    assert len(github_double.mutations_matching("POST", r"git-receive-pack$")) == 1
    newer = _push(client, identity, base_sha, 3)
    assert newer != first and github_double.branch_sha(REPO, "arcs/k1") == newer
    assert github_double.read_file(REPO, "arcs/k1", "app.py") == "VALUE = 3\n"
    info = github_double.commit_info(REPO, "arcs/k1")
    assert info["author_name"] == BOT and "ARCS-Attempt: https://arcs.example/attempts/1" in info["message"]


def test_branch_push_refusals(
    client: InstallationClient, github_double: GitHubDouble, identity: BotIdentity, base_sha: str
) -> None:
    with pytest.raises(RefusedPush):
        _push(client, identity, base_sha, 2, branch="main")
    github_double.commit(
        REPO, {"app.py": "VALUE = 7\n"}, branch="arcs/human", author=("Dev", "dev@example.com")
    )
    with pytest.raises(RefusedPush):
        _push(client, identity, base_sha, 2, branch="arcs/human")
    with pytest.raises(GitHubError, match="not a path inside"):
        ensure_branch_pushed(
            client,
            branch="arcs/k2",
            base_sha=base_sha,
            files={"../escape.py": "x"},
            message="m",
            identity=identity,
            attempt="1",
        )
    assert github_double.mutations_matching("POST", r"git-receive-pack$") == []


def test_one_pull_request_per_branch(
    client: InstallationClient, github_double: GitHubDouble, identity: BotIdentity, base_sha: str
) -> None:
    _push(client, identity, base_sha, 2)
    first = open_or_update_pr(
        client, head="arcs/k1", base="main", title="ARCS: fix", body="body 1", draft=True, labels=["arcs"]
    )
    assert first.created and first.number == 2  # issue #1 exists
    second = open_or_update_pr(
        client, head="arcs/k1", base="main", title="ARCS: fix (v2)", body="body 2", labels=["arcs"]
    )
    assert (second.number, second.created, second.url) == (first.number, False, first.url)
    [pull] = github_double.open_pulls(REPO)
    assert pull["title"] == "ARCS: fix (v2)" and pull["body"] == "body 2" and pull["draft"] is True
    assert [label["name"] for label in github_double.repos[REPO].issues[first.number]["labels"]] == ["arcs"]
    assert len(github_double.mutations_matching("POST", r"/pulls$")) == 1
    assert len(github_double.mutations_matching("PATCH", rf"/pulls/{first.number}$")) == 1


def test_pull_request_errors_are_clear(client: InstallationClient, base_sha: str) -> None:
    with pytest.raises(GitHubError, match="422"):
        open_or_update_pr(client, head="arcs/missing", base="main", title="t", body="b")


def test_status_comment_is_edited_in_place(client: InstallationClient, github_double: GitHubDouble) -> None:
    # A person quoting the marker does not make their comment ARCS' status comment.
    github_double.add_comment(REPO, 1, f"> {status_marker(17)}", user="mallory")
    for i in range(120):  # the marker comment ends up on the second page
        github_double.add_comment(REPO, 1, f"noise {i}")
    first = upsert_status_comment(client, 1, status_comment("queued", attempt_id=17), bot_login=BOT)
    again = upsert_status_comment(client, 1, status_comment("working", attempt_id=17), bot_login=BOT)
    assert again == first
    done = upsert_status_comment(
        client, 1, status_comment("pr_opened", attempt_id=17, pr_url="https://x/pull/2"), bot_login=BOT
    )
    assert done == first
    mine = [c for c in github_double.comments_on(REPO, 1) if c["user"]["login"] == BOT]
    assert len(mine) == 1 and "https://x/pull/2" in mine[0]["body"]
    assert find_status_comment(client, 1, "17", bot_login=BOT) == first
    assert find_status_comment(client, 1, "18", bot_login=BOT) is None
    other = upsert_status_comment(client, 1, status_comment("queued", attempt_id=18), bot_login=BOT)
    assert other != first
    # Deleted by someone: the next edit creates a fresh one.
    del github_double.repos[REPO].comments[first]
    recreated = upsert_status_comment(
        client, 1, status_comment("no_fix", attempt_id=17, reason="x"), bot_login=BOT, comment_id=first
    )
    assert recreated not in (first, other)


def test_reactions(client: InstallationClient, github_double: GitHubDouble) -> None:
    cid = github_double.add_comment(REPO, 1, "/arcs fix", user="octocat")
    add_reaction(client, cid, "eyes")
    add_reaction(client, cid, "eyes")  # idempotent on GitHub's side too
    add_issue_reaction(client, 1, "eyes")
    assert github_double.reactions_on_comment(REPO, cid) == ["eyes"]
    assert github_double.reactions_on_issue(REPO, 1) == ["eyes"]
    with pytest.raises(ValueError, match="reaction"):
        add_reaction(client, cid, "thumbsup")


def test_check_run_lifecycle(client: InstallationClient, github_double: GitHubDouble, base_sha: str) -> None:
    check_id = create_check_run(
        client, head_sha=base_sha, status="queued", output=check_run_output("queued"), external_id="attempt-1"
    )
    update_check_run(client, check_id, status="in_progress", output=check_run_output("in_progress"))
    update_check_run(
        client,
        check_id,
        conclusion="neutral",
        output={"title": "No fix: budget", "summary": "s" * 70_000, "text": "t" * 70_000},
        details_url="https://arcs.example/attempts/1",
    )
    check = github_double.repos[REPO].check_runs[check_id]
    assert check["name"] == "ARCS" and check["head_sha"] == base_sha
    assert check["history"] == ["queued", "in_progress", "completed"]
    assert check["conclusion"] == "neutral"
    assert len(check["output"]["summary"]) <= 65535 and len(check["output"]["text"]) <= 65535
    assert check["details_url"] == "https://arcs.example/attempts/1"
