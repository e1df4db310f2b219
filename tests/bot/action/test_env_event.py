"""The Actions environment and the event: typed values, clear errors, what each event asks for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.action.env import read_action_env
from bot.action.event import target_for, with_pull
from bot.errors import ConfigError
from tests.bot.action.conftest import event

SHA = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"


def _environ(tmp_path: Path, name: str, payload: dict[str, Any], **extra: str) -> dict[str, str]:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    env = {
        "GITHUB_EVENT_NAME": name,
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REPOSITORY": "Codertocat/Hello-World",
        "GITHUB_SHA": SHA,
        "GITHUB_REF": "refs/heads/master",
        "GITHUB_RUN_ID": "42",
        "GITHUB_WORKSPACE": str(tmp_path),
        "GITHUB_API_URL": "https://ghe.example.com/api/v3",
        "GITHUB_SERVER_URL": "https://ghe.example.com",
        "RUNNER_TEMP": str(tmp_path / "tmp"),
        "INPUT_GITHUB_TOKEN": "ghs_secret",
    }
    env.update(extra)
    return env


def test_environment_is_read_into_typed_values(tmp_path: Path) -> None:
    env = read_action_env(
        _environ(
            tmp_path,
            "push",
            event("push"),
            INPUT_MODE="Suggest",
            INPUT_BUDGET_USD="$0.5",
            INPUT_DRAFT="false",
            INPUT_TIER="small",
        )
    )
    assert (env.repository, env.sha, env.run_id, env.run_attempt) == ("Codertocat/Hello-World", SHA, 42, 1)
    assert env.run_url == "https://ghe.example.com/Codertocat/Hello-World/actions/runs/42"
    assert env.api_url == "https://ghe.example.com/api/v3" and env.workspace == tmp_path.resolve()
    assert (env.inputs.mode, env.inputs.budget_usd, env.inputs.draft, env.inputs.tier) == (
        "suggest",
        0.5,
        False,
        "small",
    )
    assert env.inputs.token is not None and "ghs_secret" not in repr(env)
    assert env.event["ref"] == "refs/heads/master"


def test_every_missing_or_bad_variable_is_named(tmp_path: Path) -> None:
    environ = _environ(
        tmp_path, "push", event("push"), GITHUB_SHA="HEAD", INPUT_MODE="merge", INPUT_BUDGET_USD="lots"
    )
    del environ["GITHUB_RUN_ID"], environ["GITHUB_REPOSITORY"]
    with pytest.raises(ConfigError) as info:
        read_action_env(environ)
    message = info.value.message
    for needle in (
        "GITHUB_REPOSITORY, GITHUB_RUN_ID are not set",
        "GITHUB_SHA",
        "INPUT_MODE (mode)",
        "INPUT_BUDGET_USD",
    ):
        assert needle in message, message
    assert info.value.exit_code == 2


def test_an_unreadable_event_file_is_an_error(tmp_path: Path) -> None:
    environ = _environ(tmp_path, "push", event("push"))
    Path(environ["GITHUB_EVENT_PATH"]).write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigError, match="does not hold a JSON object"):
        read_action_env(environ)


def test_push_targets_the_pushed_branch(tmp_path: Path) -> None:
    target = target_for(read_action_env(_environ(tmp_path, "push", event("push"))))
    assert (target.decision, target.sha, target.branch, target.default_branch) == (
        "repair",
        SHA,
        "master",
        "master",
    )
    tag = target_for(read_action_env(_environ(tmp_path, "push", event("push"), GITHUB_REF="refs/tags/v1")))
    assert tag.decision == "skip" and "not a branch" in tag.reason
    own = target_for(
        read_action_env(_environ(tmp_path, "push", event("push"), GITHUB_REF="refs/heads/arcs/fix/abc"))
    )
    assert own.decision == "skip" and "ARCS's own branch" in own.reason


def test_pull_request_targets_its_head_and_refuses_forks(tmp_path: Path) -> None:
    payload = event("pull_request")
    target = target_for(read_action_env(_environ(tmp_path, "pull_request", payload)))
    head = payload["pull_request"]["head"]
    assert (target.decision, target.sha, target.branch, target.pr_number) == (
        "repair",
        head["sha"],
        "changes",
        2,
    )
    assert not target.fork
    payload["pull_request"]["head"]["repo"]["full_name"] = "mallory/Hello-World"
    fork = target_for(read_action_env(_environ(tmp_path, "pull_request_target", payload)))
    assert fork.decision == "skip" and fork.fork and "fork" in fork.reason
    payload["pull_request"]["head"]["repo"] = None  # the fork was deleted
    assert target_for(read_action_env(_environ(tmp_path, "pull_request", payload))).fork


def test_workflow_run_repairs_only_failed_runs_of_this_repository(tmp_path: Path) -> None:
    payload = event("workflow_run")
    success = target_for(read_action_env(_environ(tmp_path, "workflow_run", payload)))
    assert success.decision == "skip" and "success" in success.reason
    payload["workflow_run"]["conclusion"] = "failure"
    target = target_for(read_action_env(_environ(tmp_path, "workflow_run", payload)))
    run = payload["workflow_run"]
    assert (target.decision, target.sha, target.branch, target.failed_run_id) == (
        "repair",
        run["head_sha"],
        "master",
        run["id"],
    )
    payload["workflow_run"]["head_repository"]["full_name"] = "mallory/octo-repo"
    assert target_for(read_action_env(_environ(tmp_path, "workflow_run", payload))).decision == "skip"


@pytest.mark.parametrize(
    ("body", "association", "action", "decision", "needle"),
    [
        ("You are totally right!", "OWNER", "created", "skip", "no /arcs command"),
        ("/arcs fix", "NONE", "created", "refuse", "only OWNER, MEMBER or COLLABORATOR"),
        ("/arcs fix", "FIRST_TIME_CONTRIBUTOR", "created", "refuse", "FIRST_TIME_CONTRIBUTOR"),
        ("/arcs fix", "MEMBER", "edited", "skip", "edited"),
        ("/arcs stop", "OWNER", "created", "skip", "App"),
        ("/arcs fix tier=huge", "OWNER", "created", "skip", "not understood"),
        ("/arcs fix tier=0 budget=$1", "COLLABORATOR", "created", "repair", ""),
    ],
)
def test_issue_comment_commands(
    tmp_path: Path, body: str, association: str, action: str, decision: str, needle: str
) -> None:
    payload = event("issue_comment")
    payload.update(action=action)
    payload["comment"].update(body=body, author_association=association)
    target = target_for(read_action_env(_environ(tmp_path, "issue_comment", payload)))
    assert target.decision == decision and needle in target.reason, target
    if decision == "repair":
        # A comment on an issue: the default branch is repaired with the issue as the task.
        assert target.command is not None and target.command.tier == "0"
        assert target.issue_text is not None and target.issue_text.startswith(
            "Spelling error in the README file"
        )
        assert (target.sha, target.branch) == (SHA, "master")


def test_comment_on_a_pull_request_is_completed_through_the_api(tmp_path: Path) -> None:
    payload = event("issue_comment")
    payload["comment"]["body"] = "/arcs fix"
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"}
    target = target_for(read_action_env(_environ(tmp_path, "issue_comment", payload)))
    assert target.needs_pull_lookup and target.pr_number == 1 and target.issue_text is None
    same = with_pull(
        target,
        sha=SHA,
        branch="feature",
        head_repo="Codertocat/Hello-World",
        base_repo="Codertocat/Hello-World",
    )
    assert (same.decision, same.sha, same.branch) == ("repair", SHA, "feature")
    fork = with_pull(
        target, sha=SHA, branch="feature", head_repo="mallory/Hello-World", base_repo="Codertocat/Hello-World"
    )
    assert fork.decision == "skip" and fork.fork
