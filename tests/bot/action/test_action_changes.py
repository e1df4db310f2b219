"""The Action's change signal (#14) end to end on the strict GitHub double: the base each event
names (a push's ``before``, a pull request's merge base, the last successful run of the workflow),
the job's one-commit checkout deepened with the credentials ``actions/checkout`` left (or the token,
through the environment only), the culprit named in the job summary and the ``culprit`` output —
and the cases without a signal (a new branch, a 403 on the runs list), where the repair still runs.

The history: a green commit ``c0`` (the fixture's bug fixed), then three commits of which the middle
one (by Mallory) brings the bug back."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from bot.action.changes import change_signal
from bot.action.env import read_action_env
from bot.action.event import target_for
from tests.bot.action.conftest import BUGGY, FIXED, REPO, World, event, project_files

RULES = "ages/rules.py"
RED_LOG = (
    "2024-01-01T00:00:00.0000000Z ##[group]Run python -m pytest -q tests\n"
    "2024-01-01T00:00:00.0000000Z python -m pytest -q tests\n"
    "2024-01-01T00:00:00.0000000Z ##[endgroup]\n"
    "2024-01-01T00:00:01.0000000Z FAILED tests/test_rules.py::test_eighteen_is_adult - assert False\n"
    "2024-01-01T00:00:01.0000000Z 1 failed, 2 passed in 0.02s\n"
    "2024-01-01T00:00:01.0000000Z ##[error]Process completed with exit code 1.\n"
)


def _history(world: World) -> dict[str, str]:
    """``c0`` green, ``c1`` docs, ``c2`` breaks the rule (Mallory), ``c3`` docs; master at ``c3``."""
    buggy = project_files()[RULES]
    double = world.double
    c0 = double.commit(REPO, {RULES: buggy.replace(BUGGY, FIXED)}, branch="master", message="rules: fix")
    c1 = double.commit(REPO, {"docs/notes.md": "Ages.\n"}, branch="master", message="docs: a note")
    c2 = double.commit(
        REPO,
        {RULES: buggy},
        branch="master",
        message="rules: adults are older",
        author=("Mallory", "m@example.com"),
    )
    c3 = double.commit(REPO, {"docs/notes.md": "Ages, again.\n"}, branch="master", message="docs: more")
    return {"c0": c0, "c1": c1, "c2": c2, "c3": c3}


def _git(workspace: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(workspace), *args], capture_output=True, text=True, check=check)


def _has(workspace: Path, sha: str) -> bool:
    return _git(workspace, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0


def _persist_credentials(world: World, workspace: Path) -> str:
    """What ``actions/checkout`` (persist-credentials: true, its default) leaves in ``.git/config``."""
    token = world.token({"metadata": "read", "contents": "read"})
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    _git(
        workspace,
        "config",
        "--local",
        f"http.{world.double.base_url}/.extraheader",
        f"AUTHORIZATION: basic {basic}",
    )
    return token


def _summary(environ: dict[str, str]) -> str:
    return Path(environ["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8")


def _outputs(environ: dict[str, str]) -> dict[str, str]:
    text = Path(environ["GITHUB_OUTPUT"]).read_text(encoding="utf-8")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _push(world: World, before: str, after: str, workspace: Path) -> dict[str, str]:
    payload = event("push")
    payload.update(before=before, after=after)
    payload["head_commit"]["id"] = after
    return world.environ(
        event_name="push",
        payload=payload,
        sha=after,
        ref=payload["ref"],
        workspace=workspace,
        token=world.token(),
    )


def _workflow_run(world: World, c: dict[str, str], workspace: Path) -> tuple[dict[str, str], int]:
    """A red run at ``c3`` of workflow CI, whose last green run is at ``c0``."""
    world.double.add_workflow_run(
        REPO, head_sha=c["c0"], head_branch="master", jobs=[("test", "success", "ok")]
    )
    red = world.double.add_workflow_run(
        REPO, head_sha=c["c3"], head_branch="master", jobs=[("test", "failure", RED_LOG)]
    )
    payload = event("workflow_run")
    payload["workflow_run"].update(
        {"conclusion": "failure", "id": red.id, "head_sha": c["c3"], "workflow_id": red.workflow_id}
    )
    payload["workflow_run"]["repository"]["full_name"] = REPO
    payload["workflow_run"]["head_repository"]["full_name"] = REPO
    payload["repository"]["full_name"] = REPO
    environ = world.environ(
        event_name="workflow_run",
        payload=payload,
        sha=c["c3"],
        ref="refs/heads/master",
        workspace=workspace,
        token=world.token(),
    )
    return environ, red.workflow_id


# --------------------------------------------------------------------------- push


def test_a_push_names_the_culprit_in_the_summary_and_the_output(world: World) -> None:
    c = _history(world)
    workspace = world.workspace(c["c3"])  # actions/checkout: one commit
    token = _persist_credentials(world, workspace)
    assert _git(workspace, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    assert not _has(workspace, c["c0"])
    environ = _push(world, c["c0"], c["c3"], workspace)
    outcome = world.run(environ)

    assert outcome.verdict == "fixed" and outcome.exit_code == 0, outcome
    summary = _summary(environ)
    assert f"Introduced by {c['c2'][:7]} — rules: adults are older (Mallory), found by bisect" in summary
    assert f"Changes since the last green run: {c['c0'][:7]}..{c['c3'][:7]}, 3 commits, 2 files." in summary
    assert f"the push's previous tip {c['c0'][:7]}" in summary and "no change signal" not in summary
    assert _outputs(environ).get("culprit") == c["c2"]
    assert outcome.culprit is not None and outcome.culprit.found_by == "bisect"
    # The one-commit checkout was deepened with the credentials actions/checkout left (no new ones).
    assert _has(workspace, c["c0"]) and _has(workspace, c["c1"])
    config = (workspace / ".git" / "config").read_text(encoding="utf-8")
    assert config.lower().count("extraheader") == 1 and token not in config
    # The pull request body says it too (the App's renderer).
    [pull] = world.double.open_pulls(REPO)
    assert f"Introduced by {c['c2'][:7]}" in str(pull["body"])


def test_a_new_branch_has_no_signal_and_the_repair_still_runs(world: World) -> None:
    sha = world.double.branch_sha(REPO, "master")
    assert sha is not None
    workspace = world.workspace(sha)
    environ = _push(world, "0" * 40, sha, workspace)  # `before` of a push that created the branch
    outcome = world.run(environ)

    assert outcome.verdict == "fixed" and outcome.exit_code == 0, outcome
    summary = _summary(environ)
    assert "> no change signal: the push created the branch (its 'before' is all zeros)" in summary.replace(
        "`", "'"
    )
    assert "Introduced by" not in summary and "Changes since the last green run" not in summary
    assert _outputs(environ).get("culprit") == ""
    assert _git(workspace, "rev-list", "--count", "HEAD").stdout.strip() == "1"  # nothing fetched


def test_a_force_push_whose_before_is_not_an_ancestor_has_no_signal(world: World) -> None:
    c = _history(world)
    stray = world.double.commit(REPO, {"docs/x.md": "x\n"}, branch="stray", base=c["c0"], message="stray")
    workspace = world.workspace(c["c3"])
    _persist_credentials(world, workspace)
    env = read_action_env(_push(world, stray, c["c3"], workspace))
    signal = change_signal(env, target_for(env), None)
    assert signal is not None and signal.changes is None
    assert (
        signal.note
        == f"no change signal: {stray[:7]} is not an ancestor of {c['c3'][:7]} in the fetched history"
    )


# --------------------------------------------------------------------------- workflow_run


def test_workflow_run_uses_the_last_green_run_and_deepens_with_the_token(world: World) -> None:
    c = _history(world)
    workspace = world.workspace(c["c3"])  # persist-credentials: false, as the README's snippet (b)
    environ, workflow_id = _workflow_run(world, c, workspace)
    outcome = world.run(environ)

    assert outcome.verdict == "fixed" and outcome.exit_code == 0, outcome
    [listed] = world.double.requests_matching("GET", rf"/actions/workflows/{workflow_id}/runs$")
    assert "status=success" in listed.query and "branch=master" in listed.query
    summary = _summary(environ)
    assert f"Changes since the last green run: {c['c0'][:7]}..{c['c3'][:7]}, 3 commits, 2 files." in summary
    assert "the last green run" in summary and f"at {c['c0'][:7]}" in summary
    assert f"Introduced by {c['c2'][:7]} — rules: adults are older (Mallory)" in summary
    assert _outputs(environ).get("culprit") == c["c2"]
    # Deepened through the token in git's environment: nothing of it on disk.
    assert _has(workspace, c["c0"])
    config = (workspace / ".git" / "config").read_text(encoding="utf-8")
    assert "extraheader" not in config.lower() and "x-access-token" not in config


def test_a_403_on_the_runs_list_means_no_signal_and_a_repair_without_it(world: World) -> None:
    c = _history(world)
    workspace = world.workspace(c["c3"])
    environ, _ = _workflow_run(world, c, workspace)
    world.double.fail_next(
        "GET", r"/actions/workflows/\d+/runs", 403, body={"message": "Resource not accessible by integration"}
    )
    outcome = world.run(environ)

    assert outcome.verdict == "fixed" and outcome.exit_code == 0, outcome
    [note] = [n for n in outcome.notices if n.startswith("no change signal")]
    assert "403" in note and "actions: read" in note
    assert f"> {note}".replace("`", "") in _summary(environ).replace("`", "")
    assert _outputs(environ).get("culprit") == ""
    assert "Introduced by" not in _summary(environ)
    assert not _has(workspace, c["c0"])  # nothing fetched without a base


# --------------------------------------------------------------------------- pull_request


@pytest.mark.parametrize("name", ["pull_request", "issue_comment"])
def test_a_pull_request_compares_with_its_merge_base(world: World, name: str) -> None:
    """``pull_request``: the event's ``base.sha``; ``/arcs fix`` on it: the same, read through the API."""
    c = _history(world)
    double = world.double
    # The pull request's branch starts at c0; master moves on meanwhile (that change is not the PR's).
    f1 = double.commit(
        REPO,
        {RULES: project_files()[RULES]},
        branch="changes",
        base=c["c0"],
        message="rules: stricter",
        author=("Mallory", "m@example.com"),
    )
    f2 = double.commit(REPO, {"docs/pr.md": "PR.\n"}, branch="changes", message="docs: pr")
    number = double.add_pull(REPO, "changes", "master")
    payload = event(name)
    if name == "pull_request":
        payload["number"] = number
        payload["pull_request"]["number"] = number
        payload["pull_request"]["head"]["sha"] = f2
        payload["pull_request"]["base"]["sha"] = c["c3"]
        sha, ref = f2, f"refs/pull/{number}/merge"
    else:
        payload["comment"]["body"] = "/arcs fix"
        payload["issue"]["number"] = number
        payload["issue"]["pull_request"] = {"url": f"{double.api_url}/repos/{REPO}/pulls/{number}"}
        sha, ref = c["c3"], "refs/heads/master"
    environ = world.environ(
        event_name=name,
        payload=payload,
        sha=sha,
        ref=ref,
        head_ref="changes" if name == "pull_request" else "",
        workspace=world.workspace(f2),
        token=world.token(),
        inputs={"INPUT_MODE": "comment"},
    )
    outcome = world.run(environ)

    assert outcome.verdict == "fixed", outcome
    summary = _summary(environ)
    assert f"Changes since the last green run: {c['c0'][:7]}..{f2[:7]}, 2 commits, 2 files." in summary
    assert f"the merge base {c['c0'][:7]} of pull request #{number}" in summary
    assert f"Introduced by {f1[:7]} — rules: stricter (Mallory)" in summary
    assert _outputs(environ).get("culprit") == f1
