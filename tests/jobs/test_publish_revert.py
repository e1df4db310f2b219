"""``on_no_fix: revert`` (#14): a ``no_fix`` attempt whose report carries a verified revert of the
culprit opens a revert pull request through the real gateway against the strict GitHub double —
branch ``arcs/revert/<sha7>``, title ``Revert "<title>"``, a body with why, the culprit, the
verification and the patch; the pull-request limits, ``draft``, labels and one pull request per
branch apply; never on a pull request's branch or another branch than the default one. And the
``.arcs.yml`` key itself: default, values, errors that name it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from bot.github.gateway import AppGitHubGateway
from bot.settings import Settings
from bot.store.store import Store
from jobs.config import ArcsConfig, ArcsConfigError, parse
from jobs.fakes import FakeIndexService, FakeRepairService
from jobs.messages import Envelope, PublishResult
from jobs.publish import publish_result
from jobs.repair.report import Culprit, RepairReport, RevertResult
from jobs.repair.trace_read import Verification
from jobs.revert_pr import revert_branch, revert_refusal
from jobs.run import Deps
from tests.fakes.github_double import GitHubDouble

REPO = "acme/ages"
GOOD = "def is_adult(age):\n    return age >= 18\n"
BAD = "def is_adult(age):\n    return age > 18\n"
CONFIG = "on_no_fix: revert\ndraft: false\npr_labels: [arcs, revert]\nmax_open_prs: 2\n"
PATCH = "--- a/rules.py\n+++ b/rules.py\n@@ -1,2 +1,2 @@\n def is_adult(age):\n-    return age > 18\n+    return age >= 18\n"


@dataclass
class World:
    double: GitHubDouble
    store: Store
    deps: Deps
    installation: int
    culprit: str
    head: str
    check_run: int

    def attempt(self, key: str, report: RepairReport, **columns: Any) -> int:
        values: dict[str, Any] = {
            "repo": REPO,
            "trigger": "ci",
            "installation_id": self.installation,
            "head_sha": self.head,
            "head_branch": "main",
            "base_branch": "main",
            "branch": "arcs/fix/main",
            "status": "no_fix",
            "verdict": "exhausted",
            "reason": "exhausted: no candidate passed the gates",
            "trace": report.to_json(with_files=False),
            "check_run_id": self.check_run,
            **columns,
        }
        attempt, created = self.store.claim_attempt(key, **values)
        assert created
        return attempt.id

    def publish(self, attempt_id: int) -> str:
        job = Envelope.of(
            PublishResult(attempt_id=attempt_id, repo=REPO), idempotency_key=f"publish:{attempt_id}"
        )
        return publish_result(self.deps, job)

    def pushes(self) -> int:
        return len(self.double.mutations_matching("POST", r"git-receive-pack$"))


@pytest.fixture
def world(
    github_double: GitHubDouble, github_app: GitHubApp, settings: Settings, tmp_path: Path, migrated_db: Path
) -> Iterator[World]:
    inst = github_double.add_installation("acme")
    github_double.add_repo(REPO, {"rules.py": GOOD, ".arcs.yml": CONFIG}, installation=inst)
    culprit = github_double.commit(
        REPO,
        {"rules.py": BAD},
        branch="main",
        message="rules: adult from 18",
        author=("Ada", "ada@example.com"),
    )
    head = github_double.commit(REPO, {"README.md": "ages\n"}, branch="main", message="docs: readme")
    shutil.copyfile(migrated_db, tmp_path / "arcs.db")
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}", upgrade=False)
    deps = Deps(
        settings=settings,
        store=store,
        github=lambda iid: AppGitHubGateway(github_app, int(iid or 0)),
        repair=FakeRepairService(),
        enqueue=lambda _job: None,
        index=FakeIndexService(),
    )
    with AppGitHubGateway(github_app, inst.id) as gw:
        check = gw.create_check_run(REPO, head, "ARCS", "Repairing…", "working")
    yield World(github_double, store, deps, inst.id, culprit, head, check)
    store.close()


def reverting(world: World, *, exit_code: int = 0) -> RepairReport:
    culprit = Culprit(
        sha=world.culprit, title="rules: adult from 18", author="Ada", found_by="bisect", runs=2
    )
    verification = Verification(
        "python -m pytest -x", exit_code, 1.5, 3, 0, passed_verification=exit_code == 0, candidate="revert"
    )
    revert = RevertResult(sha=world.culprit, patch=PATCH, files={"rules.py": GOOD}, verification=verification)
    return RepairReport(
        verdict="exhausted",
        reason="no candidate passed the gates",
        changes=f"{world.culprit[:7]}^..{world.head[:7]}, 2 commits, 2 files",
        culprit=culprit,
        revert=revert,
    )


def test_a_verified_revert_opens_its_pull_request(world: World) -> None:
    attempt_id = world.attempt("k1", reverting(world))
    assert world.publish(attempt_id) == "published"

    short = world.culprit[:7]
    branch = f"arcs/revert/{short}"
    assert revert_branch(world.culprit) == branch
    [pull] = world.double.open_pulls(REPO)
    assert pull["title"] == 'Revert "rules: adult from 18"'
    assert pull["head"]["ref"] == branch and pull["base"]["ref"] == "main"
    assert pull["draft"] is False  # .arcs.yml draft: false, as for a fix
    labels = world.double.repos[REPO].issues[int(str(pull["number"]))]["labels"]
    assert [label["name"] for label in labels] == ["arcs", "revert"]
    body = str(pull["body"])
    assert "## Why" in body and "no forward fix" in body and "`on_no_fix: revert`" in body
    assert f"Introduced by {short} — rules: adult from 18 (Ada), found by bisect in 2 runs." in body
    assert f"Reverted commit: {world.culprit}." in body
    assert "python -m pytest -x" in body and "Exit code 0 in 1.5s (3 passed, 0 failed)." in body
    assert "-    return age > 18\n+    return age >= 18" in body  # the patch
    assert body.rstrip().endswith("<!-- arcs:pr -->")

    # The branch: one bot commit on the red head that restores the file, in git's words.
    assert world.double.read_file(REPO, branch, "rules.py") == GOOD
    assert world.double.read_file(REPO, branch, "README.md") == "ages\n"
    message = world.double.commit_info(REPO, branch)["message"]
    assert message.startswith(f'Revert "rules: adult from 18"\n\nThis reverts commit {world.culprit}.')
    assert world.double.branch_sha(REPO, "main") == world.head  # main itself is never written

    attempt = world.store.get_attempt(attempt_id)
    assert attempt is not None and attempt.publish_state == "published"
    assert (attempt.pr_number, attempt.branch) == (pull["number"], branch)
    check = world.double.repos[REPO].check_runs[world.check_run]
    assert check["conclusion"] == "neutral"
    assert check["output"]["title"] == 'Revert proposed: Revert "rules: adult from 18"'
    assert f"a revert of {short}" in check["output"]["summary"]


def test_a_second_revert_of_the_same_commit_updates_the_same_pull_request(world: World) -> None:
    assert world.publish(world.attempt("k1", reverting(world))) == "published"
    assert world.publish(world.attempt("k2", reverting(world))) == "published"
    assert len(world.double.open_pulls(REPO)) == 1
    assert len(world.double.mutations_matching("POST", r"/pulls$")) == 1
    # A redelivered publish job of a published attempt does nothing.
    assert world.publish(1) == "duplicate"


@pytest.mark.parametrize(
    ("columns", "why"),
    [
        ({"issue_number": 5}, "pull request #5"),
        ({"head_branch": "feature", "base_branch": "feature"}, "`feature` is not the default branch `main`"),
        ({"trigger": "issue", "head_branch": None}, "only for a CI failure"),
    ],
)
def test_never_on_a_pull_request_or_another_branch(world: World, columns: dict[str, Any], why: str) -> None:
    attempt_id = world.attempt("k1", reverting(world), **columns)
    assert world.publish(attempt_id) == "revert_refused"
    assert world.pushes() == 0 and world.double.open_pulls(REPO) == []
    [event] = world.store.events(kind="refusal")
    assert why in event.message
    attempt = world.store.get_attempt(attempt_id)
    assert attempt is not None and attempt.publish_state == "refused"
    assert world.publish(attempt_id) == "duplicate"  # not retried


def test_an_unverified_revert_is_never_published(world: World) -> None:
    attempt_id = world.attempt("k1", reverting(world, exit_code=1))
    assert world.publish(attempt_id) == "revert_refused"
    assert world.pushes() == 0
    [event] = world.store.events(kind="refusal")
    assert "not verified by the exact test command (exit 1)" in event.message
    summary = world.double.repos[REPO].check_runs[world.check_run]["output"]["summary"]
    assert "no revert pull request was opened" in summary


def test_the_pull_request_limits_apply_to_a_revert(world: World) -> None:
    for number in (100, 101):  # max_open_prs: 2 in .arcs.yml
        world.store.record_pr(repo=REPO, number=number, url=f"u{number}", branch=f"arcs/other-{number}")
    assert world.publish(world.attempt("k1", reverting(world))) == "revert_refused"
    assert world.pushes() == 0
    [event] = world.store.events(kind="refusal")
    assert "max_open_prs" in event.message


def test_the_default_branch_must_still_ask_for_revert(world: World) -> None:
    world.double.commit(REPO, {".arcs.yml": "draft: false\n"}, branch="main", message="back to report")
    assert world.publish(world.attempt("k1", reverting(world))) == "revert_refused"
    assert world.pushes() == 0
    [event] = world.store.events(kind="refusal")
    assert "does not say `on_no_fix: revert`" in event.message


def test_a_no_fix_without_a_revert_publishes_nothing(world: World) -> None:
    report = RepairReport(verdict="exhausted", culprit=reverting(world).culprit)
    assert world.publish(world.attempt("k1", report)) == "nothing_to_publish"
    assert world.pushes() == 0 and world.store.events(kind="refusal") == []


def test_revert_refusal_is_a_pure_rule() -> None:
    ok = RevertResult(sha="a" * 40, files={"x": "1"}, verification=Verification("t", 0))
    common: dict[str, Any] = {"trigger": "ci", "base_branch": "main", "pull_request": None}
    assert revert_refusal(ok, head_branch="main", default_branch="main", **common) is None
    assert revert_refusal(ok, head_branch="arcs/fix/main", default_branch="main", **common) is not None
    assert (
        revert_refusal(
            RevertResult(sha="a" * 40, verification=Verification("t", 0)),
            head_branch="main",
            default_branch="main",
            **common,
        )
        == "the revert changes no file"
    )
    timed_out = RevertResult(
        sha="a" * 40, files={"x": "1"}, verification=Verification("t", 0, timed_out=True)
    )
    assert revert_refusal(timed_out, head_branch="main", default_branch="main", **common) is not None


# --- the .arcs.yml key ---------------------------------------------------------------------------


def test_on_no_fix_defaults_to_report_and_reads_both_values() -> None:
    assert ArcsConfig().on_no_fix == "report" and parse("").on_no_fix == "report"
    assert parse("on_no_fix: revert\n").on_no_fix == "revert"
    assert parse("on_no_fix: Report\n").on_no_fix == "report"
    assert parse("on_no_fix:\n").on_no_fix == "report"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("on_no_fix: rollback\n", ".arcs.yml: on_no_fix: expected one of report, revert, got 'rollback'"),
        ("on_no_fix: true\n", ".arcs.yml: on_no_fix: expected one of report, revert, got True"),
        ("on_no_fix: [revert]\n", ".arcs.yml: on_no_fix: expected one of report, revert, got ['revert']"),
    ],
)
def test_on_no_fix_errors_name_the_key_and_the_allowed_values(text: str, message: str) -> None:
    with pytest.raises(ArcsConfigError) as caught:
        parse(text)
    assert str(caught.value) == message and caught.value.key == "on_no_fix"


def test_a_misspelt_on_no_fix_is_an_unknown_key_with_a_suggestion() -> None:
    with pytest.raises(ArcsConfigError, match=r"unknown key `on_nofix` \(did you mean `on_no_fix`\?\)"):
        parse("on_nofix: revert\n")
