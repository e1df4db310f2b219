"""``arcs action`` end to end against the strict GitHub double: a real tier-0 repair of a broken
project in the job's workspace, then the pull request, the review suggestions or the comment —
and the cases where nothing may be written (a fork, no token, a token without write access)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bot.cli import main
from tests.bot.action.conftest import BUGGY, FIXED, REPO, World, event, project_files
from tests.fakes.github_double import GitHubDouble


def _outputs(environ: dict[str, str]) -> dict[str, str]:
    text = Path(environ["GITHUB_OUTPUT"]).read_text(encoding="utf-8")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _summary(environ: dict[str, str]) -> str:
    return Path(environ["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8")


def _push_env(
    world: World, token: str | None, repo: str = REPO, before: str | None = None, **inputs: str
) -> tuple[dict[str, str], str]:
    sha = world.double.branch_sha(repo, "master")
    assert sha is not None
    payload = event("push")
    payload["after"] = sha
    if before is not None:
        payload["before"] = before
    payload["head_commit"]["id"] = sha
    environ = world.environ(
        event_name="push",
        payload=payload,
        sha=sha,
        ref=payload["ref"],
        workspace=world.workspace(sha, repo),
        token=token,
        repo=repo,
        inputs=inputs,
    )
    return environ, sha


def _writes(double: GitHubDouble) -> list[str]:
    return [f"{m.method} {m.path}" for m in double.mutations]


# --------------------------------------------------------------------------- mode: pr


def test_push_failure_becomes_one_verified_pull_request(world: World) -> None:
    environ, sha = _push_env(world, world.token())
    outcome = world.run(environ)

    assert outcome.verdict == "fixed" and outcome.exit_code == 0, outcome
    assert outcome.published is not None and outcome.published.ok, outcome.published
    branch = f"arcs/fix/{outcome.signature}"
    [pull] = world.double.open_pulls(REPO)
    assert pull["head"]["ref"] == branch and pull["base"]["ref"] == "master" and pull["draft"] is True
    assert "## Verification" in pull["body"] and "<!-- arcs:pr -->" in pull["body"]  # the App's PR body
    # The fix is one commit on the failing commit, by github-actions[bot]; master is untouched.
    assert world.double.read_file(REPO, branch, "ages/rules.py").count(FIXED) == 1
    assert world.double.branch_sha(REPO, "master") == sha
    info = world.double.commit_info(REPO, branch)
    assert (
        info["author_name"] == "github-actions[bot]"
        and f"ARCS-Attempt: {world.double.base_url}" in info["message"]
    )
    pushes = world.double.mutations_matching("POST", r"git-receive-pack$")
    assert [list(p.body["refs"]) for p in pushes] == [[branch]]
    # The workspace is left as the workflow had it.
    assert (Path(environ["GITHUB_WORKSPACE"]) / "ages/rules.py").read_text().count(BUGGY) == 1
    # Outputs and job summary.
    outputs = _outputs(environ)
    assert (
        outputs["verdict"] == "fixed"
        and outputs["pr-url"] == pull["html_url"]
        and outputs["published"] == "true"
    )
    assert (
        Path(outputs["trace"]).is_file()
        and json.loads(Path(outputs["trace"]).read_text())["outcome"]["verdict"] == "fixed"
    )
    summary = _summary(environ)
    assert "| Run | Command | Exit code | Passed | Failed | Errors |" in summary
    before = re.search(r"\| before \(reproduction\) \| `([^`]*)` \| (\d+) \| (\d+) \| (\d+) \|", summary)
    assert (
        before is not None
        and "pytest" in before.group(1)
        and before.group(2) != "0"
        and before.group(4) == "1"
    )
    assert re.search(r"\| after \([^)]*\) \| `[^`]*pytest[^`]*` \| 0 \| 3 \| 0 \| 0 \|", summary), summary
    assert "### Cost" in summary and pull["html_url"] in summary


def test_a_second_run_of_the_same_failure_updates_the_same_pull_request(world: World) -> None:
    first_env, _ = _push_env(world, world.token())
    first = world.run(first_env)
    second_env, _ = _push_env(world, world.token())
    second = world.run(second_env)

    assert first.signature == second.signature and second.exit_code == 0
    assert second.published is not None and "updated pull request" in second.published.detail
    assert len(world.double.open_pulls(REPO)) == 1
    assert len(world.double.mutations_matching("POST", r"/pulls$")) == 1
    # The same change on the same base is not pushed again.
    assert len(world.double.mutations_matching("POST", r"git-receive-pack$")) == 1


def test_token_without_contents_write_gets_a_clear_line_and_no_crash(world: World) -> None:
    read_only = {"metadata": "read", "contents": "read", "pull_requests": "write", "issues": "write"}
    environ, _ = _push_env(world, world.token(read_only))
    outcome = world.run(environ)

    assert outcome.verdict == "fixed" and outcome.exit_code == 1
    assert outcome.published is not None and not outcome.published.ok
    assert "403" in outcome.published.detail and "contents: write" in outcome.published.detail
    assert world.double.mutations == [] and world.double.open_pulls(REPO) == []
    assert any("403 contents:write not granted" in f for f in world.double.auth_failures)
    assert _outputs(environ)["published"] == "false" and _outputs(environ)["pr-url"] == ""
    assert "HTTP 403" in _summary(environ) and "```diff" in _summary(environ)


def test_missing_token_repairs_but_writes_nothing(world: World) -> None:
    environ, _ = _push_env(world, None)
    before = len(world.double.requests)
    outcome = world.run(environ)

    assert outcome.verdict == "fixed" and outcome.exit_code == 1
    assert outcome.published is not None and "no github-token" in outcome.published.detail
    assert len(world.double.requests) == before and world.double.mutations == []  # not one call
    assert FIXED.strip() in _summary(environ)  # the patch is in the job summary


# --------------------------------------------------------------------------- forks and refusals


def test_fork_pull_request_gets_a_summary_and_no_github_call(world: World) -> None:
    world.double.commit(REPO, {"README.md": "hi\n"}, branch="changes")
    head = world.double.branch_sha(REPO, "changes")
    assert head is not None
    payload = event("pull_request")
    payload["pull_request"]["head"]["repo"]["full_name"] = "mallory/Hello-World"
    payload["pull_request"]["head"]["sha"] = head
    environ = world.environ(
        event_name="pull_request",
        payload=payload,
        sha=head,
        ref="refs/pull/2/merge",
        head_ref="changes",
        workspace=world.workspace(head),
        token=world.token(),
    )
    before = len(world.double.requests)
    outcome = world.run(environ)

    assert outcome.verdict == "skipped" and outcome.exit_code == 0 and "fork" in outcome.reason
    assert len(world.double.requests) == before and world.double.mutations == []
    assert "mallory/Hello-World" in _summary(environ) and _outputs(environ)["verdict"] == "skipped"


def test_comment_by_someone_without_write_association_is_refused(world: World) -> None:
    sha = world.double.branch_sha(REPO, "master")
    assert sha is not None
    payload = event("issue_comment")
    payload["comment"]["body"] = "/arcs fix"
    payload["comment"]["author_association"] = "CONTRIBUTOR"
    environ = world.environ(
        event_name="issue_comment",
        payload=payload,
        sha=sha,
        ref="refs/heads/master",
        workspace=world.workspace(sha),
        token=world.token(),
    )
    before = len(world.double.requests)
    outcome = world.run(environ)
    assert outcome.verdict == "refused" and outcome.exit_code == 1 and "CONTRIBUTOR" in outcome.reason
    assert len(world.double.requests) == before and world.double.mutations == []


# --------------------------------------------------------------------------- mode: suggest / comment


def _pull_with_bug(world: World) -> tuple[int, str]:
    """master is correct; the pull request's branch ``changes`` introduces the bug."""
    rules = world.double.read_file(REPO, "master", "ages/rules.py")
    assert rules is not None
    world.double.commit(
        REPO, {"ages/rules.py": rules.replace(BUGGY, FIXED)}, branch="master", message="right"
    )
    world.double.commit(REPO, {"ages/rules.py": rules}, branch="changes", message="wrong", base="master")
    head = world.double.branch_sha(REPO, "changes")
    assert head is not None
    number = world.double.add_pull(REPO, "changes", "master", title="Update the rules")
    return number, head


def test_pull_request_suggestions_land_on_the_right_lines(world: World) -> None:
    number, head = _pull_with_bug(world)
    payload = event("pull_request")
    payload["number"] = number
    payload["pull_request"]["number"] = number
    payload["pull_request"]["head"]["sha"] = head
    environ = world.environ(
        event_name="pull_request",
        payload=payload,
        sha=head,
        ref=f"refs/pull/{number}/merge",
        head_ref="changes",
        workspace=world.workspace(head),
        token=world.token(),
        inputs={"INPUT_MODE": "suggest"},
    )
    outcome = world.run(environ)

    assert outcome.verdict == "fixed" and outcome.exit_code == 0, outcome
    [review] = world.double.reviews_on(REPO, number)
    assert review["commit_id"] == head and review["user"]["login"] == "github-actions[bot]"
    [comment] = review["comments"]
    line = BUGGY.rstrip("\n")
    lines = world.double.read_file(REPO, head, "ages/rules.py")
    assert lines is not None
    at = lines.splitlines().index(line) + 1
    assert comment == {
        "path": "ages/rules.py",
        "line": at,
        "side": "RIGHT",
        "body": f"```suggestion\n{FIXED.rstrip(chr(10))}\n```",
    }
    assert "## " not in review["body"] or "Verification" in review["body"]
    assert world.double.open_pulls(REPO)[0]["number"] == number and len(world.double.open_pulls(REPO)) == 1
    assert world.double.mutations_matching("POST", r"git-receive-pack$") == []  # suggestions push nothing
    # A re-run for the same failure on the same commit does not post the review again.
    again_env = dict(environ)
    assert world.run(again_env).published.detail.startswith("pull request")  # type: ignore[union-attr]
    assert len(world.double.reviews_on(REPO, number)) == 1


def test_suggest_with_a_token_that_cannot_review_says_which_permission(world: World) -> None:
    number, head = _pull_with_bug(world)
    payload = event("pull_request")
    payload["pull_request"]["number"] = number
    payload["pull_request"]["head"]["sha"] = head
    environ = world.environ(
        event_name="pull_request",
        payload=payload,
        sha=head,
        ref=f"refs/pull/{number}/merge",
        workspace=world.workspace(head),
        token=world.token({"metadata": "read", "contents": "read", "pull_requests": "read"}),
        inputs={"INPUT_MODE": "suggest"},
    )
    outcome = world.run(environ)
    assert outcome.verdict == "fixed" and outcome.exit_code == 1
    assert outcome.published is not None and not outcome.published.ok
    assert "HTTP 403" in outcome.published.detail and "pull-requests: write" in outcome.published.detail
    assert world.double.reviews_on(REPO, number) == [] and world.double.mutations == []


def test_comment_command_on_a_pull_request_comments_the_diff(world: World) -> None:
    number, head = _pull_with_bug(world)
    payload = event("issue_comment")
    payload["comment"]["body"] = "Thanks!\n\n/arcs fix tier=0"
    payload["issue"]["number"] = number
    payload["issue"]["pull_request"] = {"url": f"{world.double.api_url}/repos/{REPO}/pulls/{number}"}
    master = world.double.branch_sha(REPO, "master")
    assert master is not None
    environ = world.environ(
        event_name="issue_comment",
        payload=payload,
        sha=master,
        ref="refs/heads/master",
        workspace=world.workspace(head),  # the workflow checked out the pull request's head
        token=world.token(),
        inputs={"INPUT_MODE": "comment"},
    )
    outcome = world.run(environ)
    assert outcome.exit_code == 0 and outcome.published is not None and outcome.published.ok, outcome
    [mine] = [
        c for c in world.double.comments_on(REPO, number) if c["user"]["login"] == "github-actions[bot]"
    ]
    assert (
        "```diff" in mine["body"]
        and FIXED.strip() in mine["body"]
        and f"action-{outcome.signature}" in mine["body"]
    )
    # Run again: the same comment is edited, not a second one posted.
    world.run(environ)
    assert (
        len(
            [c for c in world.double.comments_on(REPO, number) if c["user"]["login"] == "github-actions[bot]"]
        )
        == 1
    )


# --------------------------------------------------------------------------- workflow_run


def test_workflow_run_reads_the_failed_step_and_opens_a_pull_request(world: World) -> None:
    sha = world.double.branch_sha(REPO, "master")
    assert sha is not None
    log = (
        "2024-01-01T00:00:00.0000000Z ##[group]Run python -m pytest -q tests\n"
        "2024-01-01T00:00:00.0000000Z python -m pytest -q tests\n"
        "2024-01-01T00:00:00.0000000Z ##[endgroup]\n"
        "2024-01-01T00:00:01.0000000Z FAILED tests/test_rules.py::test_eighteen_is_adult - assert False\n"
        "2024-01-01T00:00:01.0000000Z 1 failed, 2 passed in 0.02s\n"
        "2024-01-01T00:00:01.0000000Z ##[error]Process completed with exit code 1.\n"
    )
    run = world.double.add_workflow_run(
        REPO, head_sha=sha, head_branch="master", jobs=[("test", "failure", log)]
    )
    payload = event("workflow_run")
    payload["workflow_run"].update({"conclusion": "failure", "id": run.id, "head_sha": sha})
    payload["workflow_run"]["repository"]["full_name"] = REPO
    payload["workflow_run"]["head_repository"]["full_name"] = REPO
    payload["repository"]["full_name"] = REPO
    environ = world.environ(
        event_name="workflow_run",
        payload=payload,
        sha=sha,
        ref="refs/heads/master",
        workspace=world.workspace(sha),
        token=world.token(),
    )
    outcome = world.run(environ)

    assert outcome.verdict == "fixed" and outcome.exit_code == 0, outcome
    assert outcome.test_command == "python -m pytest -q tests"  # the failing step's command
    assert world.double.requests_matching("GET", rf"/actions/runs/{run.id}$")
    assert len(world.double.open_pulls(REPO)) == 1


def test_the_cli_runs_the_action_from_the_environment(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    environ, _ = _push_env(world, world.token(), INPUT_MODE="comment")
    for name in list(__import__("os").environ):
        if name.startswith(("GITHUB_", "INPUT_", "RUNNER_")):
            monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()  # the checkout's log lines
    code = main(["action", "--json", "--mode", "pr"], settings=world.settings)
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["verdict"] == "fixed" and out["pr-url"].endswith("/pull/1"), out
    assert out["published"] == "true" and out["exit_code"] == 0


# --------------------------------------------------------------------------- partial fixes


@pytest.mark.parametrize("asked", [True, False])
def test_a_partial_fix_is_published_only_when_arcs_yml_asks(world: World, asked: bool) -> None:
    repo = "Codertocat/partial"
    files = project_files()
    # The last green commit (the push's `before`) had the rule right and a test that already
    # failed there: the push breaks the rule; after the fix the command keeps failing on that test,
    # proven failing at the known-good baseline (#23).
    files["ages/rules.py"] = files["ages/rules.py"].replace(BUGGY, FIXED)
    files["tests/test_service.py"] = (
        "def test_needs_a_service():\n    raise ConnectionError('no service here')\n"
    )
    if asked:
        files[".arcs.yml"] = "open_pr_on_partial: true\n"
    world.double.add_repo(repo, files, default_branch="master", installation=world.installation)
    green = world.double.branch_sha(repo, "master")
    broken = project_files()["ages/rules.py"]
    world.double.commit(repo, {"ages/rules.py": broken}, branch="master", message="rules: adults are older")
    environ, _ = _push_env(world, world.token(repo=repo), repo, before=green)
    outcome = world.run(environ)

    assert outcome.verdict == "partial" and not outcome.fixed and outcome.exit_code == 1, outcome
    assert "at the last green commit" in outcome.reason
    pulls = world.double.open_pulls(repo)
    if asked:
        [pull] = pulls
        assert pull["title"].startswith("ARCS (partial fix)") and "test_needs_a_service" in pull["body"]
        assert outcome.published is not None and outcome.published.ok
    else:
        assert pulls == [] and outcome.published is None
        assert _writes(world.double) == []


def test_without_a_known_good_baseline_a_fix_of_some_targets_is_never_published(world: World) -> None:
    # The same failure with no last green commit to prove the service test older than the change:
    # every failing test is a target; fixing one of two is "best: 1 of 2 targets", not published
    # even though .arcs.yml asks for partial fixes (#23).
    repo = "Codertocat/partial"
    files = project_files()
    files["tests/test_service.py"] = (
        "def test_needs_a_service():\n    raise ConnectionError('no service here')\n"
    )
    files[".arcs.yml"] = "open_pr_on_partial: true\n"
    world.double.add_repo(repo, files, default_branch="master", installation=world.installation)
    environ, _ = _push_env(world, world.token(repo=repo), repo)
    outcome = world.run(environ)

    assert outcome.verdict != "partial" and not outcome.fixed and outcome.exit_code == 1, outcome
    assert "best: 1 of 2 targets" in outcome.reason
    assert world.double.open_pulls(repo) == [] and outcome.published is None
    assert _writes(world.double) == []
