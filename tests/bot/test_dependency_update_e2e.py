"""A red Dependabot pull request end to end (issue #27) against the strict GitHub double.

The pull request is authored by ``dependabot[bot]`` from ``dependabot/pip/textlib-2.1.0``; its CI
goes red as the pinned ``@octokit/webhooks-examples`` ``workflow_run.completed`` payload (made a
failure, run by ``dependabot[bot]``), signed, through the real webhook endpoint. The repair is a
fake engine whose report carries the dependency update as the engine records it; what ARCS then
says and delivers runs through the pipeline and the App's gateway.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from jobs import pipeline
from jobs.repair.depupdate.detect import Bump
from jobs.repair.depupdate.record import DependencyUpdate
from jobs.repair.report import RepairReport
from jobs.repair_service import FixRepairService
from tests.bot import checks_world
from tests.bot.checks_world import REPO, World, published
from tests.jobs.test_dependency_stage import APP, TEST, LocalFetch, installed_runner, versions

world = checks_world.world  # the fixture

DEPENDABOT = "dependabot[bot]"
BRANCH = "dependabot/pip/textlib-2.1.0"
RED_LOG = """##[group]Run pytest
pytest
##[endgroup]
app.py:1: in <module>
    from textlib import soft_unicode
E   ImportError: cannot import name 'soft_unicode' from 'textlib'
##[error]Process completed with exit code 1.
"""
SHOUT_TEST = "from app import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n"
SHOUT_LOG = f"""##[group]Run pytest -q
pytest -q
##[endgroup]
FAILED {TEST} - ImportError: cannot import name 'soft_unicode' from 'textlib'
##[error]Process completed with exit code 1.
"""
SECTION = (
    "### Dependency update\n\n- `textlib.soft_unicode` removed, used at `app.py:1`\n\n"
    "**What ARCS did:** `dependency_updates: comment` in `.arcs.yml`: ARCS names what broke."
)


def dependabot_pull(world: World, arcs_yml: str = "", *, author: str = DEPENDABOT) -> tuple[int, str]:
    """Dependabot's pull request bumping textlib (``.arcs.yml`` on main first); (number, head sha)."""
    files = {"requirements.txt": "textlib==2.0.1\n"} | ({".arcs.yml": arcs_yml} if arcs_yml else {})
    world.double.commit(REPO, files, branch="main")
    head = world.double.commit(
        REPO,
        {"requirements.txt": "textlib==2.1.0\n"},
        branch=BRANCH,
        base="main",
        message="Bump textlib from 2.0.1 to 2.1.0",
    )
    number = world.double.add_pull(
        REPO, BRANCH, "main", title="Bump textlib from 2.0.1 to 2.1.0", user=author
    )
    return number, head


def red_ci(world: World, number: int, head: str, *, delivery: str | None = None, log: str = RED_LOG) -> Any:
    """Dependabot's pull request's workflow run failed; delivered as GitHub sends it."""
    run = world.double.add_workflow_run(
        REPO, head_sha=head, head_branch=BRANCH, jobs=[("test", "failure", log)], event="pull_request"
    )
    payload = world.repo_payload(published("workflow_run", "completed", index=1), DEPENDABOT)
    repo_id = world.double.repos[REPO].id
    wr = payload["workflow_run"]
    wr.update(
        id=run.id,
        head_sha=head,
        head_branch=BRANCH,
        workflow_id=run.workflow_id,
        run_attempt=1,
        conclusion="failure",
        pull_requests=[
            {
                "number": number,
                "head": {"ref": BRANCH, "sha": head, "repo": {"id": repo_id}},
                "base": {"ref": "main", "sha": head, "repo": {"id": repo_id}},
            }
        ],
    )
    wr["head_repository"].update(id=repo_id, full_name=REPO)
    for who in ("actor", "triggering_actor"):
        wr[who].update(login=DEPENDABOT, type="Bot")
    answer = world.post("workflow_run", payload, delivery=delivery)
    assert answer.status_code == 202, answer.text
    return answer


def update(mode: str) -> DependencyUpdate:
    return DependencyUpdate(
        bumps=(Bump("pypi", "textlib", "2.0.1", "2.1.0", "requirements.txt"),),
        mode=mode,
        title="Dependency update: textlib 2.0.1 -> 2.1.0 (pypi), breaking changes named",
        markdown=SECTION,
        breaking="**textlib 2.0.1 -> 2.1.0** breaks code this repository uses:\n- `textlib.soft_unicode` at `app.py:1`",
    )


def no_fix(mode: str) -> RepairReport:
    return RepairReport(
        verdict="exhausted", fixed=False, reason="no candidate", tier="0", dependency=update(mode)
    )


def test_comment_mode_names_what_broke_in_its_own_comment_edited_in_place_on_a_retry(world: World) -> None:
    number, head = dependabot_pull(world, "dependency_updates: comment\n")
    world.repair.outcome = no_fix("comment")
    red_ci(world, number, head)
    (job,) = world.queue.jobs
    assert pipeline.dispatch(world.deps, job, message_id="m-1") == "no_fix"

    assert sorted(p["number"] for p in world.double.open_pulls(REPO)) == [world.pull, number]  # none opened
    assert world.double.branch_sha(REPO, BRANCH) == head  # nothing pushed
    (plan,) = world.repair.requests
    assert plan.dependency_updates == "comment"  # from .arcs.yml at the update's head
    ours = [
        c
        for c in world.double.comments_on(REPO, number)
        if "arcs:status attempt=dependency-" in str(c["body"])
    ]
    (comment,) = ours
    assert "textlib.soft_unicode" in str(comment["body"]) and "`app.py:1`" in str(comment["body"])
    assert str(comment["body"]).startswith("**Dependency update: textlib 2.0.1 -> 2.1.0")

    # The job's message again (the broker retries it after a crash): the attempt resumes and its
    # comment is edited in place, not posted twice.
    world.repair.outcome = replace(
        no_fix("comment"), dependency=replace(update("comment"), markdown=SECTION + "\n\nagain")
    )
    (attempt,) = world.store.attempts(repo=REPO)
    world.store.update_attempt(attempt.id, status="running")
    assert pipeline.dispatch(world.deps, job, message_id="m-1") == "no_fix"
    ours = [
        c
        for c in world.double.comments_on(REPO, number)
        if "arcs:status attempt=dependency-" in str(c["body"])
    ]
    assert len(ours) == 1 and str(ours[0]["body"]).count("again") == 1 and ours[0]["id"] == comment["id"]


def test_off_mode_posts_no_dependency_comment(world: World) -> None:
    number, head = dependabot_pull(world)
    world.repair.outcome = RepairReport(verdict="exhausted", fixed=False, reason="no candidate", tier="0")
    red_ci(world, number, head)
    assert world.drain() == [("repair_ci_failure", "no_fix")]
    assert not [c for c in world.double.comments_on(REPO, number) if "attempt=dependency-" in str(c["body"])]


MIGRATED = "from textlib import soft_str\n"


def fixed(world: World) -> RepairReport:
    """The engine's fix of the update: a migration, with a real trace in the traces directory."""
    traces = world.settings.traces_dir
    traces.mkdir(parents=True, exist_ok=True)
    trace = traces / "depupdate.json"
    trace.write_text("{}", encoding="utf-8")
    return RepairReport(
        verdict="fixed",
        fixed=True,
        reason="all target tests pass",
        patch="--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-value_1 = 1\n+from textlib import soft_str\n",
        files={"app.py": MIGRATED},
        tier="0",
        trace_path=str(trace),
        dependency=replace(update("fix"), title="Dependency update: textlib 2.0.1 -> 2.1.0 (pypi), migrated"),
    )


def test_fix_mode_commits_the_migration_on_the_updates_own_branch(world: World) -> None:
    number, head = dependabot_pull(world, "dependency_updates: fix\n")
    world.repair.outcome = fixed(world)
    red_ci(world, number, head)
    assert world.drain() == [("repair_ci_failure", "fixed"), ("publish_result", "applied")]

    tip = world.double.branch_sha(REPO, BRANCH)
    assert tip != head and world.double.read_file(REPO, str(tip), "app.py") == MIGRATED
    assert (
        world.double.read_file(REPO, f"{tip}^", "requirements.txt") == "textlib==2.1.0\n"
    )  # on top of the bump
    assert "migrate the code to the dependency update" in world.double.commit_info(REPO, str(tip))["message"]
    assert sorted(p["number"] for p in world.double.open_pulls(REPO)) == [world.pull, number]  # no stacked PR
    (attempt,) = world.store.attempts(repo=REPO)
    assert attempt.requested_by is None and attempt.publish_state == "published"
    (notice,) = [
        e for e in world.store.events(kind="notice") if (e.data or {}).get("policy") == "dependency_updates"
    ]
    assert notice.data is not None and notice.data["commit"] == tip


@pytest.mark.parametrize(
    ("arcs_yml", "author", "why"),
    [
        # The default value is not explicit configuration: a bot's branch is pushed to only when asked.
        ("tier: auto\n", DEPENDABOT, "`dependency_updates: fix` is not written"),
        # A person's pull request from a branch named like Dependabot's is not an update bot's.
        ("dependency_updates: fix\n", "maintainer", "is not a Dependabot or Renovate pull request"),
    ],
)
def test_otherwise_the_fix_is_a_pull_request_stacked_on_the_update(
    world: World, arcs_yml: str, author: str, why: str
) -> None:
    number, head = dependabot_pull(world, arcs_yml, author=author)
    world.repair.outcome = fixed(world)
    red_ci(world, number, head)
    assert world.drain() == [("repair_ci_failure", "fixed"), ("publish_result", "published")]
    assert world.double.branch_sha(REPO, BRANCH) == head  # untouched
    stacked = [p for p in world.double.open_pulls(REPO) if p["number"] not in (world.pull, number)]
    assert [p["base"]["ref"] for p in stacked] == [BRANCH]
    (notice,) = [
        e for e in world.store.events(kind="notice") if (e.data or {}).get("policy") == "dependency_updates"
    ]
    assert why in notice.message


# --- the real engine: the migration found by tier 0, verified, committed on Dependabot's branch ----


def engine_world(world: World, tmp_path: Path, arcs_yml: str) -> tuple[LocalFetch, int, str]:
    """The worker's real repair service (tier 0, the fetch port on local folders, the tests run
    for real) on a repository whose Dependabot pull request bumps textlib past a rename."""
    roots = versions(tmp_path)
    fetch = LocalFetch(roots)
    world.deps.repair = FixRepairService(
        settings=world.settings,
        runner=installed_runner(roots),
        fetch=fetch,
        toolchains=(),
        use_index=False,
        parallel=1,
    )
    world.double.commit(
        REPO,
        {"app.py": APP, "tests/test_app.py": SHOUT_TEST, "requirements.txt": "textlib==2.0.1\n"},
        branch="main",
    )
    number, head = dependabot_pull(world, arcs_yml)
    return fetch, number, head


def test_a_red_dependabot_pull_request_gets_the_engines_migration_on_its_branch(
    world: World, tmp_path: Path
) -> None:
    fetch, number, head = engine_world(world, tmp_path, "dependency_updates: fix\ntest: pytest -q\n")
    red_ci(world, number, head, log=SHOUT_LOG)
    assert world.drain() == [("repair_ci_failure", "fixed"), ("publish_result", "applied")]

    assert sorted(fetch.asked) == [("pypi", "textlib", "2.0.1"), ("pypi", "textlib", "2.1.0")]
    tip = world.double.branch_sha(REPO, BRANCH)
    assert tip != head
    migrated = world.double.read_file(REPO, str(tip), "app.py") or ""
    assert "from textlib import soft_str" in migrated and "soft_unicode" not in migrated
    assert world.double.read_file(REPO, str(tip), "requirements.txt") == "textlib==2.1.0\n"  # the bump kept
    assert sorted(p["number"] for p in world.double.open_pulls(REPO)) == [world.pull, number]
    (check,) = [c for c in world.checks() if c["head_sha"] == head]
    assert "### Dependency update" in check["output"]["summary"]
    assert "ARCS migrated" in check["output"]["summary"] and check["conclusion"] == "success"


def test_comment_mode_with_the_engine_names_the_removed_symbol_and_its_call_site(
    world: World, tmp_path: Path
) -> None:
    _, number, head = engine_world(world, tmp_path, "dependency_updates: comment\ntest: pytest -q\n")
    red_ci(world, number, head, log=SHOUT_LOG)
    assert world.drain() == [("repair_ci_failure", "no_fix")]
    assert world.double.branch_sha(REPO, BRANCH) == head
    assert sorted(p["number"] for p in world.double.open_pulls(REPO)) == [world.pull, number]
    (comment,) = [
        c for c in world.double.comments_on(REPO, number) if "attempt=dependency-" in str(c["body"])
    ]
    body = str(comment["body"])
    assert "textlib.soft_unicode" in body and "app.py:1" in body and "dependency_updates: comment" in body
