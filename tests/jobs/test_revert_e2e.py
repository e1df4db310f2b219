"""``on_no_fix: revert`` end to end (#14): a red ``workflow_run`` on the default branch that no
forward fix repairs yields a revert pull request of the culprit, verified by the exact command.

The culprit commit changes ``ages/rules.py`` *and* a lockfile, and the (scripted) test passes only
with both as they were at the green commit: a single-hunk revert is not enough, the whole-commit
revert candidate is refused by the policy gate (lockfiles are never edited by a fix), so the
repair ends without a fix — and, because ``.arcs.yml`` asks for it, the worker reverts the
culprit, runs the exact command on the reverted tree and the publisher opens the revert PR.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bot.settings import Settings
from jobs import pipeline
from jobs.messages import JobRequest
from jobs.repair.report import RepairReport
from runners.base import Execution
from runners.commands import JUNIT_PATH
from runners.fake import FakeCall, FakeRunner, fake_execution
from tests.bot.test_cli_fix import BOUNDARY_TESTS, RULES, junit
from tests.fakes.github_double import AppKey, FakeClock, GitHubDouble
from tests.jobs.test_change_signal_e2e import (
    BROKEN,
    FIXED,
    RED_LOG,
    REPO,
    _delivery,
    _tree,
    double,
    signed_run,
)

__all__ = ["double"]  # the fixture, imported

LOCK = "poetry.lock"
GREEN_LOCK = "# pinned\nages-core==1.0\n"
RED_LOCK = "# pinned\nages-core==2.0\n"


def _pytest_needing(green_rules: str) -> Callable[[FakeCall], Execution]:
    """Every test passes only with the green rules *and* the green lockfile."""

    def run(call: FakeCall) -> Execution:
        ok = (call.workspace / RULES).read_text() == green_rules and (
            call.workspace / LOCK
        ).read_text() == GREEN_LOCK
        results = {test: (line, ok) for test, (line, _) in BOUNDARY_TESTS.items()}
        return fake_execution(exit_code=0 if ok else 1, artifacts={JUNIT_PATH: junit(results)})

    return run


def _run(
    github_double: GitHubDouble,
    settings: Settings,
    test_app_key: AppKey,
    fake_clock: FakeClock,
    tmp_path: Path,
    on_no_fix: str,
) -> tuple[str, list[JobRequest], RepairReport, dict[str, str]]:
    """The red run, its repair and every follow-up job: outcome, follow-ups, stored report, shas."""
    inst = github_double.add_installation("acme")
    tree = _tree()
    tree[LOCK] = GREEN_LOCK
    tree[".arcs.yml"] = f"test: pytest -q\non_no_fix: {on_no_fix}\n"
    github_double.add_repo(REPO, tree, installation=inst)
    c0 = str(github_double.branch_sha(REPO, "main"))
    c1 = github_double.commit(REPO, {"docs/notes.md": "Ages.\n"}, branch="main", message="docs: a note")
    c2 = github_double.commit(
        REPO,
        {RULES: tree[RULES].replace(FIXED, BROKEN), LOCK: RED_LOCK},
        branch="main",
        message="deps: ages-core 2",
        author=("Mallory", "m@example.com"),
    )
    c3 = github_double.commit(REPO, {"docs/notes.md": "More.\n"}, branch="main", message="docs: more")
    github_double.add_workflow_run(REPO, head_sha=c0, head_branch="main", jobs=[("test", "success", "ok")])
    red = github_double.add_workflow_run(
        REPO, head_sha=c3, head_branch="main", jobs=[("test", "failure", RED_LOG)]
    )
    payload = _delivery(github_double, inst.id, red.id, red.workflow_id, c3)
    runner = FakeRunner().on("pytest", _pytest_needing(tree[RULES]))
    with signed_run(github_double, settings, test_app_key, fake_clock, tmp_path, payload, runner) as (
        deps,
        job,
        follow_ups,
    ):
        outcome = pipeline.dispatch(deps, job)
        for follow_up in list(follow_ups):
            pipeline.dispatch(deps, follow_up)
        (attempt,) = deps.store.attempts(repo=REPO, limit=5)
        report = RepairReport.from_json(attempt.trace or {})
    return outcome, follow_ups, report, {"c0": c0, "c1": c1, "c2": c2, "c3": c3}


def test_no_forward_fix_opens_a_verified_revert_pr_of_the_culprit(
    double: GitHubDouble, settings: Settings, test_app_key: AppKey, fake_clock: FakeClock, tmp_path: Path
) -> None:
    outcome, follow_ups, report, c = _run(double, settings, test_app_key, fake_clock, tmp_path, "revert")
    assert outcome == "no_fix" and len(follow_ups) == 1  # the publish job of the revert
    assert report.culprit is not None and report.culprit.sha == c["c2"]
    assert report.revert is not None and report.revert.sha == c["c2"]
    assert report.revert.verification is not None and report.revert.verification.exit_code == 0
    [pull] = double.open_pulls(REPO)
    assert pull["head"]["ref"] == f"arcs/revert/{c['c2'][:7]}" and pull["base"]["ref"] == "main"
    assert pull["title"] == 'Revert "deps: ages-core 2"'
    assert c["c2"][:7] in str(pull["body"])
    head = pull["head"]["ref"]
    assert double.read_file(REPO, head, LOCK) == GREEN_LOCK
    assert FIXED in str(double.read_file(REPO, head, RULES))
    assert double.read_file(REPO, head, "docs/notes.md") == "More.\n"  # later commits kept


def test_under_report_the_culprit_is_named_and_no_pr_opened(
    double: GitHubDouble, settings: Settings, test_app_key: AppKey, fake_clock: FakeClock, tmp_path: Path
) -> None:
    outcome, follow_ups, report, c = _run(double, settings, test_app_key, fake_clock, tmp_path, "report")
    assert outcome == "no_fix" and follow_ups == [] and double.open_pulls(REPO) == []
    assert report.culprit is not None and report.culprit.sha == c["c2"] and report.revert is None
