"""``.arcs.yml`` ``auto_apply`` end to end (issue #28, item 6), and CI repairs charged to the run's
triggering actor (``ARCS_USER_DAILY_USD``).

A failed ``workflow_run`` on the pull request's branch goes in as the pinned
``@octokit/webhooks-examples`` ``workflow_run.completed`` payload, signed, through the real webhook
endpoint; the repair (a fake engine whose report points at a real trace file naming the selected
candidate's proposer) and the publishing run through the pipeline against the strict GitHub double.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from jobs.plan import RepairPlan
from jobs.repair.report import RepairReport
from jobs.repair.trace import CandidateRecord, Outcome, RoundRecord, Trace, dump_trace
from tests.bot import checks_world
from tests.bot.checks_world import APP_FILE, READER, REPO, WRITER, World, published

world = checks_world.world  # the fixture

FIXED = APP_FILE.replace("value_1 = 1", "value_1 = 2")
RED_LOG = """##[group]Run pytest
pytest
##[endgroup]
tests/test_app.py F                                                      [100%]
FAILED tests/test_app.py::test_value - assert 3 == 2
##[error]Process completed with exit code 1.
"""


def fix_made_by(world: World, proposer: str, variant: str = "") -> None:
    """The fake engine's fix, with a trace in the traces directory whose selected candidate was
    made by ``proposer``."""
    traces = world.settings.traces_dir
    traces.mkdir(parents=True, exist_ok=True)
    path = traces / f"{proposer}.json"
    trace = Trace(
        id=proposer,
        rounds=[RoundRecord(index=1, tier="0", candidates=[CandidateRecord("c1", 1, proposer, variant)])],
        outcome=Outcome(verdict="fixed", fixed=True, candidate="c1"),
    )
    path.write_text(dump_trace(trace), encoding="utf-8")
    world.repair.outcome = replace(
        world.repair.outcome,
        patch="--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-value_1 = 3\n+value_1 = 2\n",
        files={"app.py": FIXED},
        trace_path=str(path),
    )


def configure(world: World, text: str) -> None:
    """``.arcs.yml`` on the default branch."""
    world.double.commit(REPO, {".arcs.yml": text}, branch="main", message="configure ARCS")


def ci_failure(world: World, *, actor: str, sha: str | None = None, index: int = 0) -> Any:
    """A failed workflow run on the pull request's branch, started by ``actor``, delivered."""
    head = sha or world.head_sha
    run = world.double.add_workflow_run(
        REPO, head_sha=head, head_branch="feature", jobs=[("test", "failure", RED_LOG)], event="pull_request"
    )
    # The pinned example of a completed run that names its triggering actor (it succeeded: made red).
    payload = world.repo_payload(published("workflow_run", "completed", index=1), actor)
    repo_id = world.double.repos[REPO].id
    wr = payload["workflow_run"]
    wr.update(
        id=run.id,
        head_sha=head,
        head_branch="feature",
        workflow_id=run.workflow_id,
        run_attempt=1,
        conclusion="failure",
        pull_requests=[
            {
                "number": world.pull,
                "head": {"ref": "feature", "sha": head, "repo": {"id": repo_id}},
                "base": {"ref": "main", "sha": head, "repo": {"id": repo_id}},
            }
        ],
    )
    wr["head_repository"].update(id=repo_id, full_name=REPO)
    wr["actor"].update(login=actor, type="Bot" if actor.endswith("[bot]") else "User")
    wr["triggering_actor"].update(login=actor, type="Bot" if actor.endswith("[bot]") else "User")
    answer = world.post("workflow_run", payload)
    assert answer.status_code == 202, answer.text
    return answer


def test_a_formatter_fix_is_committed_to_the_pull_requests_branch(world: World) -> None:
    configure(world, "auto_apply: [format]\n")
    fix_made_by(world, "autofix", "ruff-format")
    ci_failure(world, actor=WRITER)
    assert world.drain() == [("repair_ci_failure", "fixed"), ("publish_result", "applied")]

    tip = world.double.branch_sha(REPO, "feature")
    assert tip != world.head_sha
    assert world.double.read_file(REPO, str(tip), "app.py") == FIXED
    assert world.double.read_file(REPO, f"{tip}^", "app.py") == world.double.read_file(
        REPO, world.head_sha, "app.py"
    )  # one commit on top of the head the fix was made on
    info = world.double.commit_info(REPO, str(tip))
    assert "auto_apply" in info["message"] and "ARCS-Attempt:" in info["message"]
    assert world.double.open_pulls(REPO) == [world.double.repos[REPO].pulls[world.pull]]  # no fix PR
    (attempt,) = world.store.attempts(repo=REPO)
    assert attempt.requested_by == WRITER and attempt.publish_state == "published"
    (notice,) = [e for e in world.store.events(kind="notice") if (e.data or {}).get("policy") == "auto_apply"]
    assert notice.data is not None and (notice.data["fix_kind"], notice.data["commit"]) == ("format", tip)
    (check,) = world.checks()
    assert check["conclusion"] == "success"
    assert f"committed a formatter's fix to `feature` as {str(tip)[:7]}" in check["output"]["summary"]


@pytest.mark.parametrize(
    ("arcs_yml", "proposer", "variant", "actor", "why"),
    [
        ("auto_apply: [format]\n", "anthropic", "", WRITER, "the fix's kind (llm) is not in `auto_apply`"),
        ("auto_apply: [format]\n", "autofix", "ruff-check", WRITER, "the fix's kind (lint)"),
        ("auto_apply: [format, llm]\n", "autofix", "black", READER, f"@{READER} has read permission"),
        ("auto_apply: [format]\n", "autofix", "black", "dependabot[bot]", "no person with write access"),
    ],
)
def test_other_fixes_are_published_as_a_pull_request(
    world: World, arcs_yml: str, proposer: str, variant: str, actor: str, why: str
) -> None:
    configure(world, arcs_yml)
    fix_made_by(world, proposer, variant)
    ci_failure(world, actor=actor)
    assert world.drain() == [("repair_ci_failure", "fixed"), ("publish_result", "published")]
    assert world.double.branch_sha(REPO, "feature") == world.head_sha  # untouched
    fix_pr = [p for p in world.double.open_pulls(REPO) if p["number"] != world.pull]
    assert [p["base"]["ref"] for p in fix_pr] == ["feature"]
    (notice,) = [e for e in world.store.events(kind="notice") if (e.data or {}).get("policy") == "auto_apply"]
    assert why in notice.message


def test_a_pull_request_cannot_grant_itself_auto_apply(world: World) -> None:
    """``auto_apply`` is read from the default branch only: the pull request's own file is ignored."""
    head = world.double.commit(REPO, {".arcs.yml": "auto_apply: [format, llm]\n"}, branch="feature")
    world.head_sha = head
    fix_made_by(world, "autofix", "black")
    ci_failure(world, actor=WRITER, sha=head)
    assert world.drain() == [("repair_ci_failure", "fixed"), ("publish_result", "published")]
    assert world.double.branch_sha(REPO, "feature") == head
    assert not [e for e in world.store.events(kind="notice") if (e.data or {}).get("policy") == "auto_apply"]


def test_a_branch_that_moved_gets_a_pull_request_instead(world: World) -> None:
    configure(world, "auto_apply: [format]\n")
    fix_made_by(world, "autofix", "black")
    pushed: list[str] = []

    def repair_while_the_author_pushes(plan: RepairPlan) -> RepairReport:
        # The author pushes while ARCS repairs: their commit is never built upon or overwritten.
        pushed.append(world.double.commit(REPO, {"notes.txt": "wip\n"}, branch="feature"))
        return world.repair.outcome

    world.repair.behaviour = repair_while_the_author_pushes
    ci_failure(world, actor=WRITER)
    assert world.drain() == [("repair_ci_failure", "fixed"), ("publish_result", "published")]
    assert world.double.branch_sha(REPO, "feature") == pushed[0]
    (notice,) = [e for e in world.store.events(kind="notice") if (e.data or {}).get("policy") == "auto_apply"]
    assert "`feature` moved on" in notice.message


# --- ARCS_USER_DAILY_USD: a CI repair counts against the run's triggering actor -------------------


def test_ci_repairs_count_against_the_runs_triggering_actor(world: World) -> None:
    # Each CI repair reserves ARCS' default $2.00 and spends $0.05: the second would pass $2.00.
    world.deps.settings = world.settings.model_copy(update={"user_daily_usd": 2.0})
    world.repair.outcome = replace(world.repair.outcome, spend=replace(world.repair.outcome.spend, usd=0.05))
    ci_failure(world, actor=WRITER)
    assert world.drain()[0] == ("repair_ci_failure", "fixed")
    second = world.double.commit(REPO, {"other.py": "y = 1\n"}, branch="feature")
    ci_failure(world, actor=WRITER, sha=second)
    assert world.drain() == [("repair_ci_failure", "refused")]
    refused = world.store.attempts(repo=REPO)[0]
    assert refused.requested_by == WRITER and (refused.reason or "").startswith(
        f"@{WRITER}'s daily repair budget (ARCS_USER_DAILY_USD, $2.00 in 24 h) would be exceeded: "
        "$0.05 used, this repair reserves $2.00"
    )
    (event,) = world.store.events(kind="refusal")
    assert event.data is not None and (event.data["policy"], event.data["user"]) == ("user_daily_usd", WRITER)
    # A bot's run counts against nobody.
    third = world.double.commit(REPO, {"other.py": "y = 2\n"}, branch="feature")
    ci_failure(world, actor="dependabot[bot]", sha=third)
    assert world.drain()[0] == ("repair_ci_failure", "fixed")
    assert world.store.attempts(repo=REPO)[0].requested_by is None
