"""The domain functions with a real (SQLite) store and fake GitHub / repair ports."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from bot.store.store import Store
from jobs import pipeline
from jobs.config import ArcsConfig, ArcsConfigError, Triggers
from jobs.fakes import FakeGitHubGateway, FakeIndexService, FakeRepairService
from jobs.messages import JobRequest, PublishResult
from jobs.pipeline import Deps
from jobs.plan import RepairPlan
from jobs.ports import IssueInfo, PullRequestInfo
from jobs.repair.report import RepairReport
from jobs.repair.trace_read import Verification
from runners.config import RepoConfig

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"
REPO = "octo/app"
SHA = "c" * 40


@dataclass
class Harness:
    """Deps over fakes; follow-up jobs are collected and run on :meth:`drain`."""

    deps: Deps
    gh: FakeGitHubGateway
    repair: FakeRepairService
    store: Store
    queued: list[JobRequest] = field(default_factory=list)

    def drain(self) -> list[str]:
        outcomes = []
        while self.queued:
            outcomes.append(pipeline.dispatch(self.deps, self.queued.pop(0)))
        return outcomes


@pytest.fixture
def h(settings: Settings, tmp_path: Path, migrated_db: Path) -> Iterator[Harness]:
    gh = FakeGitHubGateway()
    gh.logs[555] = (LOGS / "python_pytest_assert.log").read_text(encoding="utf-8")
    gh.logs[666] = (LOGS / "infra_disk_full.log").read_text(encoding="utf-8")
    repair = FakeRepairService()
    shutil.copyfile(migrated_db, tmp_path / "arcs.db")
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}", upgrade=False)
    queued: list[JobRequest] = []
    deps = Deps(
        settings=settings,
        store=store,
        github=lambda _installation: gh,
        repair=repair,
        enqueue=queued.append,
        index=FakeIndexService(),
    )
    yield Harness(deps, gh, repair, store, queued)
    store.close()


def ci_job(run_id: int = 555, *, prs: tuple[int, ...] = (), **extra: Any) -> JobRequest:
    args: dict[str, Any] = {
        "repo": REPO,
        "installation_id": 7,
        "delivery_id": "d-1",
        "source": "workflow_run",
        "run_id": run_id,
        "head_sha": SHA,
        "head_branch": "main",
        "conclusion": "failure",
        "pull_requests": list(prs),
        "retry_of": None,
        **extra,
    }
    return JobRequest(
        "repair_ci_failure",
        args,
        context={"delivery_id": "d-1", "repo": REPO},
        idempotency_key=f"ci:{REPO}:workflow_run:{run_id}",
    )


def command_job(
    verb: str | None = "fix", *, author: str = "maintainer", pr: bool = False, **extra: Any
) -> JobRequest:
    args: dict[str, Any] = {
        "repo": REPO,
        "installation_id": 7,
        "delivery_id": "d-2",
        "issue_number": 42,
        "is_pull_request": pr,
        "comment_id": 9001,
        "author": author,
        "command": {
            "verb": verb,
            "tier": None,
            "budget_usd": "0.50",
            "iterations": None,
            "instructions": None,
        }
        if verb
        else None,
        "error": None,
        "refusal": None,
        **extra,
    }
    return JobRequest("handle_command", args, idempotency_key=f"cmd:{REPO}:9001")


def only_attempt(store: Store) -> Any:
    attempts = store.attempts()
    assert len(attempts) == 1
    return attempts[0]


# --- CI failures ---------------------------------------------------------------------------------


def test_a_ci_failure_is_repaired_and_published_once(h: Harness) -> None:
    h.store.record_delivery("d-1", "workflow_run", "completed", 7, REPO, "0" * 64, "queued", None)
    received = h.store.get_delivery("d-1")
    assert pipeline.repair_ci_failure(h.deps, ci_job(prs=(5,))) == "fixed"
    attempt = only_attempt(h.store)
    assert received is not None and attempt.red_build_at == received.received_at
    assert (attempt.status, attempt.trigger, attempt.failure_class, attempt.tier) == (
        "fixed",
        "ci",
        "test",
        "small",
    )
    assert (attempt.rounds, attempt.tokens, attempt.cost_usd) == (2, 1234, 0.05)
    assert attempt.installation_id == 7 and attempt.owner == "octo" and attempt.delivery_id == "d-1"
    assert (
        attempt.red_build_at is not None
        and attempt.started_at is not None
        and attempt.finished_at is not None
    )
    assert attempt.branch == "arcs/fix/main" and attempt.base_branch == "main"
    assert attempt.title == "workflow_run failed on main"  # the dashboard's one-liner
    # The repair saw the checkout and the failure the log names.
    (plan,) = h.repair.requests
    assert plan.kind == "ci" and plan.head_sha == SHA and plan.failure_class == "test"
    assert plan.ci_tests and (plan.workdir / "README.md").is_file() is False  # removed afterwards
    assert [j.actor for j in h.queued] == ["publish_result"]
    # The follow-up job carries a typed message, not an untyped dict.
    (publish,) = h.queued
    assert publish.body == PublishResult(
        attempt_id=attempt.id, repo=REPO, installation_id=7, delivery_id="d-1"
    )

    assert h.drain() == ["published"]
    (push,) = h.gh.calls_to("push_branch")
    assert (push["branch"], push["base_sha"], push["files"]) == ("arcs/fix/main", SHA, {"app.py": "x = 2\n"})
    (opened,) = h.gh.calls_to("open_or_update_pr")
    assert (opened["head"], opened["base"]) == ("arcs/fix/main", "main")
    published = only_attempt(h.store)
    assert (published.pr_number, published.pr_state, published.publish_state) == (100, "open", "published")
    pr = h.store.get_pr(REPO, 100)
    assert pr is not None and pr.attempt_id == attempt.id
    # The check run ends green with the PR; the PR of the failing run gets one status comment.
    check = h.gh.check_runs[attempt.check_run_id]
    assert check["conclusion"] == "success" and "#100" in check["summary"]
    assert [n for n, _ in h.gh.comments.values()] == [5]

    # Publishing the same attempt again does nothing.
    assert (
        pipeline.publish_result(h.deps, JobRequest("publish_result", {"attempt_id": attempt.id}))
        == "duplicate"
    )
    assert len(h.gh.calls_to("push_branch")) == 1 and len(h.gh.calls_to("open_or_update_pr")) == 1


def test_a_redelivered_ci_failure_yields_no_second_attempt(h: Harness) -> None:
    assert pipeline.repair_ci_failure(h.deps, ci_job(), message_id="m-1") == "fixed"
    h.drain()
    calls_before = len(h.gh.calls)
    # GitHub redelivers the webhook: a new message with the same idempotency key.
    assert pipeline.repair_ci_failure(h.deps, ci_job(), message_id="m-2") == "duplicate"
    assert pipeline.repair_ci_failure(h.deps, ci_job()) == "duplicate"
    assert len(h.repair.requests) == 1
    assert len(h.store.attempts()) == 1
    assert len(h.gh.calls) == calls_before  # no side effect at all
    assert h.queued == []


def test_the_claiming_message_resumes_its_own_attempt(h: Harness) -> None:
    # The worker died mid-repair: the attempt is 'running' and the broker redelivers the message.
    attempt, _ = h.store.claim_attempt(
        f"ci:{REPO}:workflow_run:555", repo=REPO, trigger="ci", message_id="m-1", status="running"
    )
    assert pipeline.repair_ci_failure(h.deps, ci_job(), message_id="m-other") == "duplicate"
    assert pipeline.repair_ci_failure(h.deps, ci_job(), message_id="m-1") == "fixed"
    assert only_attempt(h.store).id == attempt.id
    assert len(h.repair.requests) == 1


def test_a_non_repairable_failure_is_recorded_silently_by_default(h: Harness) -> None:
    assert pipeline.repair_ci_failure(h.deps, ci_job(666, prs=(5,))) == "skipped"
    attempt = only_attempt(h.store)
    assert attempt.status == "skipped" and attempt.failure_class == "infrastructure"
    assert attempt.reason.startswith("infrastructure failure")
    assert h.repair.requests == [] and h.gh.calls_to("clone") == []
    # `notify_unrepairable` is off by default: nothing on GitHub, an event in the store.
    assert attempt.check_run_id is None and h.gh.calls_to("create_check_run") == [] and h.gh.comments == {}
    (event,) = h.store.events(attempt_id=attempt.id, kind="notice")
    assert event.data == {"policy": "unrepairable", "failure_class": "infrastructure"}


def test_a_non_repairable_failure_is_explained_when_the_repository_asks(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"notify_unrepairable": True})
    assert pipeline.repair_ci_failure(h.deps, ci_job(666, prs=(5,))) == "skipped"
    attempt = only_attempt(h.store)
    assert h.repair.requests == [] and h.gh.calls_to("clone") == []
    check = h.gh.check_runs[attempt.check_run_id]
    assert check["conclusion"] == "skipped"
    assert "infrastructure" in check["title"] and "`infrastructure` failure" in check["summary"]
    ((number, body),) = h.gh.comments.values()
    assert number == 5 and "does not repair this kind of failure" in body
    assert len(h.store.events(attempt_id=attempt.id, kind="notice")) == 1


def test_a_repair_error_is_recorded_and_told_never_silent(h: Harness) -> None:
    def explode(_plan: RepairPlan) -> RepairReport:
        raise RuntimeError("sandbox exploded at /secret/path")

    h.repair.behaviour = explode
    assert pipeline.repair_ci_failure(h.deps, ci_job(prs=(5,))) == "error"
    attempt = only_attempt(h.store)
    assert attempt.status == "error" and "RuntimeError" in attempt.reason and attempt.finished_at is not None
    (event,) = h.store.events(attempt_id=attempt.id, kind="error")
    assert "sandbox exploded" in event.message
    check = h.gh.check_runs[attempt.check_run_id]
    assert check["conclusion"] == "neutral" and "RuntimeError" in check["summary"]
    ((number, body),) = h.gh.comments.values()
    assert number == 5 and "RuntimeError" in body and "/secret/path" not in body
    assert h.queued == []


def test_an_unusable_github_gateway_is_recorded(h: Harness) -> None:
    def no_access(_installation: int | None) -> FakeGitHubGateway:
        raise PermissionError("installation suspended")

    h.deps.github = no_access
    assert pipeline.repair_ci_failure(h.deps, ci_job()) == "error"
    attempt = only_attempt(h.store)
    assert attempt.status == "error" and "installation suspended" in attempt.reason
    assert len(h.store.events(attempt_id=attempt.id, kind="error")) == 1
    assert h.repair.requests == []


def test_no_fix_is_reported_with_the_reason(h: Harness) -> None:
    h.repair.outcome = RepairReport(
        verdict="budget_exhausted", fixed=False, reason="budget usd exhausted", tier="large"
    )
    assert pipeline.repair_ci_failure(h.deps, ci_job()) == "no_fix"
    attempt = only_attempt(h.store)
    assert (attempt.status, attempt.verdict) == ("no_fix", "budget_exhausted")
    check = h.gh.check_runs[attempt.check_run_id]
    assert check["conclusion"] == "neutral" and "budget usd exhausted" in check["summary"]
    assert h.queued == []


def test_unwatched_branches_are_skipped_quietly(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"branches": ["release/*"]})
    assert pipeline.repair_ci_failure(h.deps, ci_job()) == "skipped"
    assert "not in .arcs.yml" in only_attempt(h.store).reason
    assert h.gh.calls_to("create_check_run") == [] and h.gh.comments == {}


def test_retries_on_arcs_branches_are_capped(h: Harness) -> None:
    for n in range(pipeline.MAX_BRANCH_RETRIES):
        h.store.claim_attempt(
            f"old-{n}", repo=REPO, trigger="ci", head_branch="arcs/fix/main", status="no_fix"
        )
    job = ci_job(777, head_branch="arcs/fix/main", retry_of="arcs/fix/main")
    assert pipeline.repair_ci_failure(h.deps, job) == "skipped"
    assert h.repair.requests == []
    (created,) = h.gh.calls_to("create_check_run")
    assert created["head_sha"] == SHA


def test_a_retry_on_an_arcs_branch_stacks_on_the_same_branch(h: Harness) -> None:
    h.store.claim_attempt(
        "first", repo=REPO, trigger="ci", branch="arcs/fix/main", base_branch="main", status="fixed"
    )
    h.gh.logs[778] = h.gh.logs[555]
    job = ci_job(778, head_branch="arcs/fix/main", retry_of="arcs/fix/main")
    assert pipeline.repair_ci_failure(h.deps, job) == "fixed"
    h.drain()
    (opened,) = h.gh.calls_to("open_or_update_pr")
    assert (opened["head"], opened["base"]) == ("arcs/fix/main", "main")


# --- issues and commands -------------------------------------------------------------------------


def issue_job(sender: str = "maintainer", label: str = "arcs") -> JobRequest:
    return JobRequest(
        "repair_issue",
        {
            "repo": REPO,
            "installation_id": 7,
            "issue_number": 42,
            "title": "t",
            "label": label,
            "sender": sender,
        },
        idempotency_key=f"issue:{REPO}#42:d-9",
    )


def test_an_issue_is_repaired_on_the_default_branch(h: Harness) -> None:
    h.gh.issues[42] = IssueInfo(42, "Totals are wrong", "Adding 1 and 1 gives 3.")
    h.gh.heads["main"] = "d" * 40
    assert pipeline.repair_issue(h.deps, issue_job()) == "fixed"
    (plan,) = h.repair.requests
    assert (plan.kind, plan.head_sha) == ("issue", "d" * 40)
    assert plan.issue_text is not None and plan.issue_text.startswith("Totals are wrong\n\n")
    assert only_attempt(h.store).title == "Totals are wrong"
    assert h.drain() == ["published"]
    (opened,) = h.gh.calls_to("open_or_update_pr")
    assert (opened["head"], opened["base"]) == ("arcs/issue/42", "main")
    assert "Fixes #42" in opened["body"]
    # One status comment on the issue, edited in place from "working" to "opened #100".
    ((number, body),) = h.gh.comments.values()
    assert number == 42 and "#100" in body


def test_a_user_without_write_permission_gets_no_reply_at_all(h: Harness) -> None:
    h.gh.permissions["visitor"] = "read"
    assert pipeline.handle_command(h.deps, command_job(author="visitor")) == "refused"
    attempt = only_attempt(h.store)
    assert attempt.status == "refused" and "read permission" in attempt.reason
    (event,) = h.store.events(kind="refusal")
    assert event.attempt_id == attempt.id and event.data == {"policy": "permission", "silent": True}
    # Nothing on GitHub: no comment, no reaction (anyone can comment; nobody can make ARCS talk).
    assert h.gh.comments == {} and h.gh.calls_to("add_reaction") == []
    assert h.repair.requests == []


def test_issue_labels_from_people_without_write_are_refused(h: Harness) -> None:
    h.gh.permissions["triager"] = "triage"
    assert pipeline.repair_issue(h.deps, issue_job(sender="triager")) == "refused"
    assert h.repair.requests == [] and len(h.store.events(kind="refusal")) == 1


def test_a_label_that_is_not_the_repository_label_is_skipped_silently(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"label": "autofix"})
    h.gh.permissions["visitor"] = "read"  # not even the permission is looked at
    assert pipeline.repair_issue(h.deps, issue_job(sender="visitor", label="arcs")) == "skipped"
    attempt = only_attempt(h.store)
    assert attempt.status == "skipped" and "'autofix'" in (attempt.reason or "")
    assert h.gh.comments == {} and h.gh.calls_to("create_check_run") == []
    assert h.gh.calls_to("get_permission") == [] and h.store.events() == []
    assert h.repair.requests == []


def test_a_custom_label_from_arcs_yml_triggers_a_repair(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"label": "autofix"})
    assert pipeline.repair_issue(h.deps, issue_job(label="AutoFix")) == "fixed"
    assert len(h.repair.requests) == 1


def test_random_labels_never_get_a_reply_even_with_a_broken_arcs_yml(h: Harness) -> None:
    h.gh.fail["load_repo_config"] = ArcsConfigError(".arcs.yml: unknown key `triger`", key="triger")
    assert pipeline.repair_issue(h.deps, issue_job(label="bug")) == "skipped"
    h.gh.fail["load_repo_config"] = ConnectionError("GitHub is down")
    job = issue_job(label="question")
    job = JobRequest(job.actor, job.args, idempotency_key="issue:other")
    assert pipeline.repair_issue(h.deps, job) == "skipped"
    assert h.gh.comments == {} and h.store.events() == [] and h.repair.requests == []


def test_fix_on_an_issue_runs_with_the_command_options(h: Harness) -> None:
    assert pipeline.handle_command(h.deps, command_job("fix")) == "fixed"
    (plan,) = h.repair.requests
    # The command's budget; tier 0: the fake engine has no model (the request asked for `auto`).
    assert (plan.kind, plan.budget.usd, plan.tier) == ("issue", 0.5, "0")
    assert h.gh.calls_to("add_reaction")[0]["content"] == "eyes"
    attempt = only_attempt(h.store)
    assert (
        attempt.trigger == "comment" and attempt.comment_id == 9001 and attempt.requested_by == "maintainer"
    )


def test_fix_on_a_pull_request_targets_its_branch(h: Harness) -> None:
    h.gh.pull_requests[42] = PullRequestInfo(42, "e" * 40, "feature/x", "main", "u", head_repo=REPO)
    assert pipeline.handle_command(h.deps, command_job("fix", pr=True)) == "fixed"
    h.drain()
    (opened,) = h.gh.calls_to("open_or_update_pr")
    assert (opened["head"], opened["base"]) == ("arcs/fix/feature/x", "feature/x")
    assert h.gh.calls_to("push_branch")[0]["base_sha"] == "e" * 40


def test_revise_updates_the_arcs_pull_request(h: Harness) -> None:
    h.gh.pull_requests[42] = PullRequestInfo(42, "e" * 40, "arcs/fix/main", "main", "u", head_repo=REPO)
    job = command_job("revise", pr=True)
    job.args["command"]["instructions"] = "Keep the public API."
    assert pipeline.handle_command(h.deps, job) == "fixed"
    assert h.repair.requests[0].instructions == "Keep the public API."
    assert only_attempt(h.store).trigger == "revise"
    h.drain()
    (opened,) = h.gh.calls_to("open_or_update_pr")
    assert (opened["head"], opened["base"]) == ("arcs/fix/main", "main")


def test_fork_pull_requests_are_refused(h: Harness) -> None:
    h.gh.pull_requests[42] = PullRequestInfo(42, "e" * 40, "patch-1", "main", "u", head_repo="mallory/app")
    assert pipeline.handle_command(h.deps, command_job("fix", pr=True)) == "refused"
    assert h.repair.requests == [] and h.gh.calls_to("clone") == []


def test_parse_errors_and_edited_comments_get_a_reply(h: Harness) -> None:
    job = command_job(None, error="Unknown tier `huge`.")
    assert pipeline.handle_command(h.deps, job) == "refused"
    ((_, body),) = h.gh.comments.values()
    assert "Unknown tier `huge`." in body
    edited = JobRequest("handle_command", {**command_job(None).args, "comment_id": 9002, "refusal": "edited"})
    assert pipeline.handle_command(h.deps, edited) == "refused"
    assert len(h.store.events(kind="refusal")) == 2 and h.repair.requests == []


def test_help_replies_with_the_commands(h: Harness) -> None:
    assert pipeline.handle_command(h.deps, command_job("help")) == "skipped"
    ((_, body),) = h.gh.comments.values()
    assert "/arcs fix" in body and h.repair.requests == []


def test_stop_cancels_queued_attempts(h: Harness) -> None:
    waiting, _ = h.store.claim_attempt("waiting", repo=REPO, trigger="issue", issue_number=42)
    assert pipeline.handle_command(h.deps, command_job("stop")) == "skipped"
    stopped = h.store.get_attempt(waiting.id)
    assert (
        stopped is not None
        and stopped.status == "skipped"
        and "stopped by @maintainer" in (stopped.reason or "")
    )


# --- publishing, PR outcomes, index --------------------------------------------------------------


def test_publishing_failures_are_recorded_and_retried(h: Harness) -> None:
    pipeline.repair_ci_failure(h.deps, ci_job())
    h.gh.fail["open_or_update_pr"] = ConnectionError("GitHub is down")
    job = h.queued.pop()
    with pytest.raises(ConnectionError):
        pipeline.dispatch(h.deps, job)
    attempt = only_attempt(h.store)
    assert attempt.publish_state == "failed" and attempt.pr_number is None
    assert any("publishing failed" in e.message for e in h.store.events(kind="error"))
    del h.gh.fail["open_or_update_pr"]
    assert pipeline.dispatch(h.deps, job) == "published"  # the queue's retry
    assert len(h.gh.opened) == 1


def test_pr_outcomes_are_recorded_for_arcs_pull_requests_only(h: Harness) -> None:
    pipeline.repair_ci_failure(h.deps, ci_job())
    h.drain()
    merged = JobRequest(
        "record_pr_outcome",
        {"repo": REPO, "number": 100, "merged": True, "merged_at": "2026-11-02T10:00:00Z"},
    )
    assert pipeline.dispatch(h.deps, merged) == "merged"
    assert only_attempt(h.store).pr_state == "merged"
    assert pipeline.dispatch(h.deps, merged) == "merged"  # idempotent
    other = JobRequest("record_pr_outcome", {"repo": REPO, "number": 7, "merged": False})
    assert pipeline.dispatch(h.deps, other) == "not_ours"


def test_refresh_index_clones_and_refreshes(h: Harness) -> None:
    job = JobRequest(
        "refresh_index", {"repo": REPO, "installation_id": 7, "mode": "incremental", "after": SHA}
    )
    assert pipeline.dispatch(h.deps, job) == "refreshed"
    assert h.gh.calls_to("clone")[0]["sha"] == SHA
    assert h.deps.index is not None
    assert h.deps.index.refreshed == [(REPO, False)]  # type: ignore[attr-defined]
    assert h.store.attempts() == []


def test_branch_names_are_git_safe() -> None:
    assert pipeline.branch_name("fix", "feature/x y") == "arcs/fix/feature/x-y"
    assert pipeline.branch_name("fix", "../../etc") == "arcs/fix/etc"
    assert ".." not in pipeline.branch_name("fix", "a..b")


# --- .arcs.yml policy: triggers, PR limits, malformed files --------------------------------------


def seed_prs(h: Harness, count: int, *, state: str = "open", first: int = 200) -> None:
    """``count`` pull requests ARCS opened "now" (per the store's clock) in REPO."""
    for i in range(count):
        attempt, _ = h.store.claim_attempt(f"seed-{first + i}", repo=REPO, trigger="ci", status="fixed")
        h.store.record_pr(
            repo=REPO,
            number=first + i,
            url=f"https://github.test/{REPO}/pull/{first + i}",
            branch=f"arcs/fix/seed-{first + i}",
            attempt_id=attempt.id,
            state=state,
        )


def nothing_spent(h: Harness) -> bool:
    return h.repair.requests == [] and h.gh.calls_to("clone") == [] and h.queued == []


@pytest.mark.parametrize(
    ("trigger", "job"),
    [("ci", ci_job()), ("issues", issue_job()), ("comments", command_job("fix"))],
    ids=["ci", "issues", "comments"],
)
def test_a_trigger_turned_off_skips_its_job_with_a_notice(h: Harness, trigger: str, job: JobRequest) -> None:
    h.gh.config = RepoConfig(extra={"triggers": {trigger: False}})
    assert pipeline.dispatch(h.deps, job) == "skipped"
    attempt = only_attempt(h.store)
    assert attempt.status == "skipped" and f"triggers.{trigger} is off" in (attempt.reason or "")
    (event,) = h.store.events(attempt_id=attempt.id, kind="notice")
    assert event.data == {"policy": f"triggers.{trigger}"}
    assert nothing_spent(h) and h.gh.calls_to("create_check_run") == []
    if trigger == "comments":
        # Someone asked in a comment: they get an answer (and only they do).
        ((number, body),) = h.gh.comments.values()
        assert number == 42 and "`triggers`" in body and "triggers.comments is off" in body
    else:
        assert h.gh.comments == {}


def test_other_triggers_stay_on_when_one_is_off(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"triggers": {"issues": False, "comments": False}})
    assert pipeline.repair_ci_failure(h.deps, ci_job()) == "fixed"
    assert len(h.repair.requests) == 1


def test_max_prs_per_day_refuses_a_ci_repair_on_the_check_run(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"max_prs_per_day": 2, "max_open_prs": 10})
    seed_prs(h, 2, state="closed")
    assert pipeline.repair_ci_failure(h.deps, ci_job(prs=(5,))) == "refused"
    attempt = h.store.attempts()[0]
    message = (
        "ARCS has opened 2 pull requests in octo/app today "
        "(limit 2 from .arcs.yml max_prs_per_day); skipping this repair"
    )
    assert attempt.status == "refused" and attempt.reason == message
    assert nothing_spent(h)
    check = h.gh.check_runs[attempt.check_run_id]
    assert check["conclusion"] == "skipped" and message in check["summary"]
    assert "max_prs_per_day" in check["title"]
    assert h.gh.comments == {}  # CI refusals stay on the check run: no comment per red build
    (event,) = h.store.events(attempt_id=attempt.id, kind="refusal")
    assert event.data == {"policy": "max_prs_per_day", "count": 2, "limit": 2}


def test_max_prs_per_day_counts_only_the_last_24_hours(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"max_prs_per_day": 2, "max_open_prs": 10})
    seed_prs(h, 2, state="closed")
    h.deps.clock = lambda: dt.datetime.now(dt.UTC) + dt.timedelta(hours=25)
    assert pipeline.repair_ci_failure(h.deps, ci_job()) == "fixed"
    assert len(h.repair.requests) == 1 and h.store.events(kind="refusal") == []


def test_under_max_prs_per_day_the_repair_runs(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"max_prs_per_day": 3, "max_open_prs": 10})
    seed_prs(h, 2, state="merged")
    assert pipeline.repair_ci_failure(h.deps, ci_job()) == "fixed"
    assert h.drain() == ["published"]
    # The PR it opened is the third of the day: the next repair is refused.
    job = ci_job(556, head_branch="develop", head_sha="e" * 40)
    h.gh.logs[556] = h.gh.logs[555]
    assert pipeline.repair_ci_failure(h.deps, job) == "refused"
    assert len(h.repair.requests) == 1


def test_max_open_prs_refuses_an_issue_repair_with_a_comment(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"max_open_prs": 2})
    seed_prs(h, 2)
    seed_prs(h, 1, state="closed", first=300)
    assert pipeline.repair_issue(h.deps, issue_job()) == "refused"
    assert nothing_spent(h)
    ((number, body),) = h.gh.comments.values()
    assert number == 42 and "`max_open_prs`" in body
    assert "ARCS has 2 pull requests open in octo/app (limit 2 from .arcs.yml max_open_prs)" in body
    (event,) = h.store.events(kind="refusal")
    assert event.data == {"policy": "max_open_prs", "count": 2, "limit": 2}


def test_a_closed_pull_request_frees_a_max_open_prs_slot(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"max_open_prs": 2})
    seed_prs(h, 2)
    h.store.set_pr_state(REPO, 200, "closed")
    assert pipeline.handle_command(h.deps, command_job("fix")) == "fixed"
    assert len(h.repair.requests) == 1


def test_pr_limits_refuse_commands_too(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"max_prs_per_day": 1})
    seed_prs(h, 1)
    assert pipeline.handle_command(h.deps, command_job("fix", pr=True)) == "refused"
    assert nothing_spent(h)
    ((_, body),) = h.gh.comments.values()
    assert (
        "ARCS has opened 1 pull requests in octo/app today (limit 1 from .arcs.yml max_prs_per_day)" in body
    )


def test_updating_an_open_arcs_pull_request_is_not_limited(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"max_prs_per_day": 1, "max_open_prs": 1})
    seed_prs(h, 1)  # its branch is arcs/fix/seed-200
    h.gh.pull_requests[42] = PullRequestInfo(42, "e" * 40, "arcs/fix/seed-200", "main", "u", head_repo=REPO)
    assert pipeline.handle_command(h.deps, command_job("revise", pr=True)) == "fixed"
    assert len(h.repair.requests) == 1


def test_count_arcs_prs_counts_pull_requests_not_attempts(h: Harness) -> None:
    seed_prs(h, 1)
    again, _ = h.store.claim_attempt("again", repo=REPO, trigger="revise", status="fixed")
    h.store.record_pr(repo=REPO, number=200, url="u", branch="arcs/fix/seed-200", attempt_id=again.id)
    seed_prs(h, 1, state="closed", first=201)
    counts = pipeline.count_arcs_prs(h.store, REPO, dt.datetime.now(dt.UTC))
    assert (counts.opened_today, counts.open_now) == (2, 1)
    assert pipeline.count_arcs_prs(h.store, "other/repo", dt.datetime.now(dt.UTC)) == pipeline.PrCounts(0, 0)


def test_a_malformed_config_names_the_key_on_the_check_run(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"max_prs_per_day": "lots"})
    assert pipeline.repair_ci_failure(h.deps, ci_job(prs=(5,))) == "refused"
    attempt = only_attempt(h.store)
    assert "max_prs_per_day" in (attempt.reason or "") and nothing_spent(h)
    check = h.gh.check_runs[attempt.check_run_id]
    assert check["conclusion"] == "neutral" and "`max_prs_per_day` key" in check["summary"]
    assert h.gh.comments == {}
    (event,) = h.store.events(kind="refusal")
    assert event.data == {"policy": "config_error", "key": "max_prs_per_day"}


@pytest.mark.parametrize("job", [issue_job(), command_job("fix")], ids=["issue", "command"])
def test_a_malformed_config_names_the_key_in_a_comment(h: Harness, job: JobRequest) -> None:
    h.gh.fail["load_repo_config"] = ArcsConfigError(
        ".arcs.yml: unknown key `triger` (did you mean `triggers`?)", key="triger"
    )
    assert pipeline.dispatch(h.deps, job) == "refused"
    assert nothing_spent(h)
    ((number, body),) = h.gh.comments.values()
    assert number == 42 and "did you mean `triggers`" in body and "Fix the `triger` key" in body
    assert len(h.store.events(kind="refusal")) == 1


class TypedGateway(FakeGitHubGateway):
    """A gateway with the App's typed ``load_arcs_config`` (preferred over ``load_repo_config``)."""

    def __init__(self, arcs: ArcsConfig) -> None:
        super().__init__()
        self.arcs = arcs

    def load_arcs_config(self, repo: str, ref: str | None = None) -> ArcsConfig:
        self._record("load_arcs_config", repo=repo, ref=ref)
        return self.arcs


def test_the_typed_config_of_the_gateway_is_preferred(h: Harness) -> None:
    gh = TypedGateway(ArcsConfig(triggers=Triggers(comments=False)))
    h.deps.github = lambda _installation: gh
    assert pipeline.handle_command(h.deps, command_job("fix")) == "skipped"
    assert gh.calls_to("load_arcs_config") == [{"repo": REPO, "ref": None}]
    assert gh.calls_to("load_repo_config") == [] and h.repair.requests == []


# --- verdicts of issue #10: environment and partial ------------------------------------------

HINT = "`nosuchcmd` was not found in the sandbox (exit 127); set `test:` in .arcs.yml to a command that exists there"
PARTIAL_REASON = (
    "r1c1 makes the 1 target test pass, but `pytest -x` still fails (exit 1), only on 1 test that "
    "already failed before the change: tests/test_b.py::test_service"
)
PATCH = "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def partial(files: dict[str, str | None]) -> RepairReport:
    return RepairReport(
        verdict="partial",
        fixed=False,
        reason=PARTIAL_REASON,
        patch=PATCH,
        files=files,
        tier="0",
        pre_existing=("tests/test_b.py::test_service",),
        verification=Verification(command="pytest -x", exit_code=1, duration_s=1.5, passed=3, failed=1),
    )


def test_environment_is_shown_on_the_check_run_and_the_status_comment(h: Harness) -> None:
    h.repair.outcome = RepairReport(verdict="environment", fixed=False, reason=HINT, tier="0")
    assert pipeline.repair_ci_failure(h.deps, ci_job(prs=(5,))) == "environment"
    attempt = only_attempt(h.store)
    assert (attempt.status, attempt.verdict) == ("environment", "environment")
    check = h.gh.check_runs[attempt.check_run_id]
    assert check["conclusion"] == "neutral" and check["title"].startswith("Environment: ")
    assert HINT in check["summary"] and "no model was called" in check["summary"]
    ((number, body),) = h.gh.comments.values()
    assert number == 5 and HINT in body and "could not run the tests" in body
    assert h.queued == []


def test_partial_opens_no_pull_request_by_default_and_says_why(h: Harness) -> None:
    h.repair.outcome = partial({})
    assert pipeline.repair_ci_failure(h.deps, ci_job(prs=(5,))) == "partial"
    attempt = only_attempt(h.store)
    assert attempt.status == "partial" and h.queued == []
    check = h.gh.check_runs[attempt.check_run_id]
    assert check["title"] == "Partial fix (no pull request)"
    assert "CI will still fail" in check["summary"] and "tests/test_b.py::test_service" in check["summary"]
    assert "open_pr_on_partial" in check["summary"]
    assert "Final run of the exact test command" in check["summary"]
    ((_, body),) = h.gh.comments.values()
    assert "partial fix" in body and "No pull request was opened" in body


def test_partial_opens_a_pull_request_that_says_so_when_asked(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"open_pr_on_partial": True})
    h.repair.outcome = partial({"app.py": "x = 2\n"})
    assert pipeline.repair_ci_failure(h.deps, ci_job(prs=(5,))) == "partial"
    assert [j.actor for j in h.queued] == ["publish_result"]
    assert h.drain() == ["published"]
    (opened,) = h.gh.calls_to("open_or_update_pr")
    assert opened["title"].startswith("ARCS (partial fix): ")
    assert "**Partial fix: CI will still fail.**" in opened["body"]
    assert "tests/test_b.py::test_service" in opened["body"]
