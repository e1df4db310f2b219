"""The owner's policy enforced by the workers: pause, monthly budgets, quiet hours, PRs per day,
and stopping running repairs (the store-backed interrupt, ``/arcs stop``).

The store and the pipeline share one controllable clock. Repairs that must really loop run the
real :class:`jobs.repair_service.FixRepairService` and :class:`jobs.repair.loop.RepairLoop` on the
in-repo fakes (scripted proposals with scripted USD costs), so the budget guard and the interrupt
are the production ones.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from bot.settings import Settings
from bot.store.store import Store
from jobs import admission, pipeline
from jobs.engine import EnginePorts, LoopRun
from jobs.fakes import FakeGitHubGateway, FakeRepairService
from jobs.messages import JobRequest, Resume
from jobs.pipeline import Deps
from jobs.plan import RepairPlan
from jobs.ports import IssueInfo
from jobs.repair.fakes import FakeClock, FakeWorkbench, ScriptedLLM, ScriptedProposer, replace_proposal
from jobs.repair.loop import RepairLoop
from jobs.repair.model import Proposal
from jobs.repair.ports import Interrupt, ProposalRequest
from jobs.repair.report import RepairReport
from jobs.repair.task import RepairTask
from jobs.repair.trace import dump_trace
from jobs.repair_service import FixRepairService
from runners.config import RepoConfig
from tests.jobs.repair.test_loop import BASE, CORE, FILES, judge
from tests.jobs.test_pipeline import REPO, ci_job, command_job, issue_job, seed_prs

NIGHT = dt.datetime(2026, 3, 2, 23, 0, tzinfo=dt.UTC)
DAY = dt.datetime(2026, 3, 3, 10, 0, tzinfo=dt.UTC)


@dataclass
class Clock:
    now: dt.datetime = DAY

    def __call__(self) -> dt.datetime:
        return self.now


@dataclass
class Harness:
    deps: Deps
    gh: FakeGitHubGateway
    repair: FakeRepairService
    store: Store
    clock: Clock
    queued: list[JobRequest] = field(default_factory=list)
    later: list[tuple[JobRequest, dt.timedelta]] = field(default_factory=list)

    def only_attempt(self) -> Any:
        (attempt,) = self.store.attempts()
        return attempt

    def comments(self) -> list[str]:
        return [body for _, body in self.gh.comments.values()]


@pytest.fixture
def h(settings: Settings, tmp_path: Path, migrated_db: Path) -> Iterator[Harness]:
    clock = Clock()
    shutil.copyfile(migrated_db, tmp_path / "arcs.db")
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}", upgrade=False, clock=clock)
    gh = FakeGitHubGateway()
    gh.logs[555] = (Path(__file__).parents[1] / "fixtures" / "logs" / "python_pytest_assert.log").read_text()
    repair = FakeRepairService()
    queued: list[JobRequest] = []
    later: list[tuple[JobRequest, dt.timedelta]] = []
    deps = Deps(
        settings=settings,
        store=store,
        github=lambda _installation: gh,
        repair=repair,
        enqueue=queued.append,
        clock=clock,
        enqueue_later=lambda job, delay: later.append((job, delay)),
    )
    yield Harness(deps, gh, repair, store, clock, queued, later)
    store.close()


def nothing_ran(h: Harness) -> bool:
    return h.repair.requests == [] and h.gh.calls_to("clone") == [] and h.queued == []


# --- a real loop behind the real repair service ---------------------------------------------------


def costly(
    usd: float, *, during: Callable[[int], None] | None = None
) -> Callable[[ProposalRequest], list[Proposal]]:
    """A proposer script: one new (wrong) candidate per round costing ``usd``; ``during(round)``
    runs while the round is being proposed (a pause, a ``/arcs stop``)."""

    def script(request: ProposalRequest) -> list[Proposal]:
        if during is not None:
            during(request.round)
        return [replace_proposal(CORE, "return age > 18", f"return age > {19 + request.round}", usd=usd)]

    return script


@dataclass
class LoopFixer:
    """``jobs.engine.execute`` replaced by the real loop on the fakes; records the plans."""

    script: Callable[[ProposalRequest], list[Proposal]]
    requests: list[RepairPlan] = field(default_factory=list)
    interrupts: list[Interrupt | None] = field(default_factory=list)

    def __call__(self, plan: RepairPlan, ports: EnginePorts) -> LoopRun:
        self.requests.append(plan)
        self.interrupts.append(ports.interrupt)
        loop = RepairLoop(
            None,
            ScriptedProposer(self.script),
            FakeWorkbench(FILES, base=BASE, judge=judge),
            FakeClock(),
            llm=ports.llm,
            interrupt=ports.interrupt,
        )
        result = loop.run(RepairTask(kind="ci", test_command="pytest"), plan.budget, plan.tier)
        assert plan.trace_out is not None
        plan.trace_out.parent.mkdir(parents=True, exist_ok=True)
        plan.trace_out.write_text(dump_trace(result.trace), encoding="utf-8")
        return LoopRun(result=result, trace_path=plan.trace_out, applied=False, repo=plan.workdir)


def use_loop(h: Harness, fixer: LoopFixer) -> None:
    h.deps.repair = FixRepairService(
        cast(Settings, h.deps.settings),
        llm=ScriptedLLM([]),
        toolchains=(),
        use_index=False,
        parallel=1,
        executor=fixer,
    )


def other_comment(verb: str, comment_id: int, **extra: Any) -> JobRequest:
    job = command_job(verb, **extra)
    args = {**job.args, "comment_id": comment_id}
    return JobRequest("handle_command", args, idempotency_key=f"cmd:{REPO}:{comment_id}")


# --- paused ---------------------------------------------------------------------------------------


def test_a_paused_org_gets_no_repair_and_a_refusal_on_the_issue(h: Harness) -> None:
    h.store.set_policy("octo", paused=True, updated_by="admin")
    assert pipeline.repair_issue(h.deps, issue_job()) == "refused"
    attempt = h.only_attempt()
    assert attempt.status == "refused" and attempt.reason == "ARCS is paused for octo by an org admin"
    assert nothing_ran(h)
    (event,) = h.store.events(kind="refusal")
    assert event.attempt_id == attempt.id and event.data == {"policy": "paused", "scope": "owner"}
    (body,) = h.comments()
    assert body.startswith(
        "ARCS is paused for octo by an org admin. An org admin can resume ARCS on the ARCS dashboard."
    )


def test_a_paused_repository_refuses_ci_on_the_check_run_only(h: Harness) -> None:
    h.store.set_policy("octo", "octo/app", paused=True, updated_by="admin")
    h.store.set_policy("octo", "octo/other", paused=False, updated_by="admin")
    assert pipeline.repair_ci_failure(h.deps, ci_job(prs=(5,))) == "refused"
    attempt = h.only_attempt()
    check = h.gh.check_runs[attempt.check_run_id]
    assert check["conclusion"] == "skipped" and check["title"] == "Skipped: ARCS is paused"
    assert "ARCS is paused for octo/app by an org admin" in check["summary"]
    assert h.gh.comments == {} and nothing_ran(h)  # a red build never makes ARCS comment


def test_a_repository_row_can_unpause_one_repository(h: Harness) -> None:
    h.store.set_policy("octo", paused=True, updated_by="admin")
    h.store.set_policy("octo", REPO, paused=False, updated_by="admin")
    assert pipeline.repair_issue(h.deps, issue_job()) == "fixed"


def test_stop_and_help_still_answer_while_paused(h: Harness) -> None:
    h.store.set_policy("octo", paused=True, updated_by="admin")
    assert pipeline.handle_command(h.deps, command_job("help")) == "skipped"
    assert h.store.events(kind="refusal") == []


def test_a_pause_while_a_repair_runs_stops_it_at_its_next_round(h: Harness) -> None:
    def pause(round_: int) -> None:
        if round_ == 0:
            h.store.set_policy("octo", paused=True, updated_by="admin")

    fixer = LoopFixer(costly(0.01, during=pause))
    use_loop(h, fixer)
    assert pipeline.handle_command(h.deps, command_job("fix")) == "skipped"
    attempt = h.only_attempt()
    assert (attempt.verdict, attempt.rounds, attempt.status) == ("interrupted", 1, "skipped")
    assert attempt.reason == "interrupted: ARCS was paused for octo by an org admin"
    assert attempt.reserved_usd is None and attempt.cost_usd == pytest.approx(0.01)
    assert attempt.patch is None and h.queued == []  # nothing to publish
    ((number, body),) = h.gh.comments.values()
    assert number == 42 and "**ARCS stopped**" in body
    assert f"Attempt #{attempt.id} stopped: ARCS was paused for octo by an org admin." in body
    (event,) = h.store.events(kind="notice")
    assert event.data == {"policy": "interrupted"}
    assert attempt.trace["interrupt"]["where"] == "before round 2"


# --- /arcs stop -----------------------------------------------------------------------------------


def test_arcs_stop_interrupts_a_running_attempt_and_says_who_stopped_it(h: Harness) -> None:
    replies: list[str] = []

    def stop(round_: int) -> None:
        if round_ == 0:
            replies.append(pipeline.handle_command(h.deps, other_comment("stop", 9002, author="alice")))

    fixer = LoopFixer(costly(0.01, during=stop))
    use_loop(h, fixer)
    assert pipeline.handle_command(h.deps, command_job("fix")) == "skipped"
    assert replies == ["skipped"]
    running = h.store.get_attempt_by_key(f"cmd:{REPO}:9001")
    assert running is not None
    assert (running.verdict, running.rounds, running.status) == ("interrupted", 1, "skipped")
    assert running.cancel_reason == "stopped by @alice" and running.cancel_requested_at == h.clock.now
    assert running.reason == "interrupted: stopped by @alice"
    bodies = h.comments()
    assert any(f"Asked attempt(s) #{running.id} to stop before their next round" in b for b in bodies)
    final = next(b for b in bodies if "ARCS stopped" in b)
    assert f"Attempt #{running.id} stopped: stopped by @alice." in final


def test_arcs_stop_before_the_first_check_means_nothing_runs(h: Harness) -> None:
    waiting, _ = h.store.claim_attempt(
        "running-elsewhere", repo=REPO, trigger="issue", issue_number=42, status="running"
    )
    assert pipeline.handle_command(h.deps, other_comment("stop", 9002)) == "skipped"
    row = h.store.get_attempt(waiting.id)
    assert row is not None and row.status == "running" and row.cancel_reason == "stopped by @maintainer"


# --- monthly budgets ------------------------------------------------------------------------------


def test_a_used_monthly_budget_refuses_with_the_numbers(h: Harness) -> None:
    h.store.set_policy("octo", monthly_usd=5.0, updated_by="admin")
    h.store.claim_attempt("earlier", repo="octo/lib", trigger="ci", status="no_fix", cost_usd=4.8)
    h.store.claim_attempt(
        "running", repo=REPO, trigger="ci", status="running", started_at=DAY, reserved_usd=0.2
    )
    assert pipeline.handle_command(h.deps, command_job("fix")) == "refused"
    attempt = h.store.get_attempt_by_key(f"cmd:{REPO}:9001")
    assert attempt is not None and attempt.reason == "octo's monthly repair budget is used: $5.00 of $5.00"
    assert nothing_ran(h)
    (body,) = h.comments()
    assert "octo's monthly repair budget is used: $5.00 of $5.00. The budget starts over next month" in body
    (event,) = h.store.events(kind="refusal")
    assert event.data == {"policy": "monthly_usd", "scope": "owner", "limit": 5.0, "committed": 5.0}


def test_last_months_spend_does_not_count(h: Harness) -> None:
    h.store.set_policy("octo", monthly_usd=5.0, updated_by="admin")
    h.store.claim_attempt(
        "february",
        repo=REPO,
        trigger="ci",
        status="no_fix",
        cost_usd=9.0,
        created_at=DAY - dt.timedelta(days=5),
    )
    assert pipeline.handle_command(h.deps, command_job("fix")) == "fixed"


def test_the_attempt_never_spends_above_the_cap_and_says_the_budget_stopped_it(h: Harness) -> None:
    # Without the policy the command's $0.50 lets the same script spend $0.40 ...
    control = LoopFixer(costly(0.10))
    use_loop(h, control)
    assert pipeline.handle_command(h.deps, other_comment("fix", 8000)) == "no_fix"
    free = h.store.get_attempt_by_key(f"cmd:{REPO}:8000")
    assert free is not None and free.cost_usd == pytest.approx(0.40)
    assert control.requests[0].budget.usd == 0.5 and free.reserved_usd is None

    # ... with octo's $0.65 a month ($0.40 of it used by now) it may only use $0.25.
    h.store.set_policy("octo", monthly_usd=0.65, updated_by="admin")
    fixer = LoopFixer(costly(0.10))
    use_loop(h, fixer)
    assert pipeline.handle_command(h.deps, command_job("fix")) == "no_fix"
    attempt = h.store.get_attempt_by_key(f"cmd:{REPO}:9001")
    assert attempt is not None
    assert fixer.requests[0].budget.usd == pytest.approx(0.25)
    assert attempt.verdict == "budget_exhausted" and attempt.cost_usd == pytest.approx(0.20)
    assert attempt.cost_usd <= 0.25 and attempt.reserved_usd is None
    assert h.store.usd_committed("octo", dt.datetime(2026, 3, 1, tzinfo=dt.UTC)) <= 0.65
    expected = (
        "stopped at octo's monthly budget: this attempt could use $0.25 of what is left of the "
        "$0.65 a month, and spent $0.20"
    )
    assert attempt.reason.startswith(f"budget_exhausted: {expected}")
    body = next(b for b in h.comments() if f"Attempt #{attempt.id} ended" in b)
    assert expected in body


def test_the_attempts_own_budget_binding_is_not_blamed_on_the_policy(h: Harness) -> None:
    h.store.set_policy("octo", monthly_usd=100.0, updated_by="admin")
    use_loop(h, LoopFixer(costly(0.10)))
    assert pipeline.handle_command(h.deps, command_job("fix")) == "no_fix"
    attempt = h.only_attempt()
    assert attempt.verdict == "budget_exhausted" and "monthly budget" not in (attempt.reason or "")


def test_a_failed_repair_is_charged_its_reservation(h: Harness) -> None:
    h.store.set_policy("octo", monthly_usd=10.0, updated_by="admin")

    def crash(_plan: RepairPlan) -> RepairReport:
        raise RuntimeError("the sandbox fell over")

    h.repair.behaviour = crash
    assert pipeline.handle_command(h.deps, command_job("fix")) == "error"
    attempt = h.only_attempt()
    assert (
        attempt.status == "error" and attempt.reserved_usd is None and attempt.cost_usd == pytest.approx(0.5)
    )


def test_a_fix_records_its_cost_and_drops_the_reservation(h: Harness) -> None:
    h.store.set_policy("octo", monthly_usd=10.0, updated_by="admin")
    assert pipeline.handle_command(h.deps, command_job("fix")) == "fixed"
    (plan,) = h.repair.requests
    assert plan.budget.usd == 0.5 and h.repair.interrupts[0] is not None
    attempt = h.only_attempt()
    assert attempt.reserved_usd is None and attempt.cost_usd == pytest.approx(0.05)


# --- quiet hours ----------------------------------------------------------------------------------


def test_quiet_hours_defer_the_repair_with_a_notice_then_it_runs(h: Harness) -> None:
    h.store.set_policy("octo", quiet_start=22, quiet_end=6, updated_by="admin")
    h.clock.now = NIGHT
    h.gh.issues[42] = IssueInfo(42, "Totals are wrong", "1 + 1 = 3")
    assert pipeline.repair_issue(h.deps, issue_job(), message_id="m-1") == "deferred"
    attempt = h.only_attempt()
    assert (attempt.status, attempt.message_id, attempt.finished_at) == ("queued", "deferred", None)
    assert nothing_ran(h) and h.store.events(kind="refusal") == []
    (event,) = h.store.events(kind="notice")
    assert event.message == "deferred until 06:00 UTC: quiet hours for octo: 22:00-06:00 UTC"
    assert event.data == {"policy": "quiet_hours", "until": "2026-03-03T06:00:00+00:00"}
    (body,) = h.comments()
    assert body.startswith(
        "⏸️ ARCS will start this repair at 06:00 UTC (quiet hours for octo: 22:00-06:00 UTC)."
    )
    ((job, delay),) = h.later
    assert delay == dt.timedelta(hours=7) and job.actor == "repair_issue"
    assert job.idempotency_key == attempt.idempotency_key and job.args["deferred_attempt"] == attempt.id
    # A typed message that names the attempt it takes over (not a dict with extra keys).
    assert job.resume == Resume(attempt_id=attempt.id, until=dt.datetime(2026, 3, 3, 6, tzinfo=dt.UTC))
    assert job.body == issue_job().message

    # The delayed message arrives when the quiet hours are over: the same attempt runs.
    h.clock.now = dt.datetime(2026, 3, 3, 6, 0, 5, tzinfo=dt.UTC)
    assert pipeline.repair_issue(h.deps, job, message_id="m-2") == "fixed"
    done = h.only_attempt()
    assert done.id == attempt.id and done.status == "fixed" and done.message_id == "m-2"
    assert len(h.repair.requests) == 1 and len(h.gh.comments) == 1  # the same status comment, edited
    # A second delivery of the delayed message is a duplicate.
    assert pipeline.repair_issue(h.deps, job, message_id="m-3") == "duplicate"
    assert len(h.repair.requests) == 1


def test_quiet_hours_in_the_owner_time_zone_leave_the_day_alone(h: Harness) -> None:
    # 23:00 UTC is 08:00 in Tokyo: not quiet there.
    h.store.set_policy("octo", quiet_start=22, quiet_end=6, timezone="Asia/Tokyo", updated_by="admin")
    h.clock.now = NIGHT
    assert pipeline.repair_issue(h.deps, issue_job()) == "fixed"


def test_a_deferred_ci_repair_waits_on_its_check_run_and_stop_cancels_it(h: Harness) -> None:
    h.store.set_policy("octo", quiet_start=22, quiet_end=6, updated_by="admin")
    h.clock.now = NIGHT
    assert pipeline.repair_ci_failure(h.deps, ci_job(prs=(42,))) == "deferred"
    attempt = h.only_attempt()
    check = h.gh.check_runs[attempt.check_run_id]
    assert check["conclusion"] is None and check["title"] == "Waiting for quiet hours to end (06:00 UTC)"
    assert h.gh.comments == {}
    assert pipeline.handle_command(h.deps, other_comment("stop", 9003, pr=True)) == "skipped"
    stopped = h.store.get_attempt(attempt.id)
    assert stopped is not None and stopped.status == "skipped" and stopped.reason == "stopped by @maintainer"
    ((job, _),) = h.later
    h.clock.now = DAY
    assert pipeline.repair_ci_failure(h.deps, job, message_id="m-9") == "duplicate"
    assert h.repair.requests == []


def test_quiet_hours_ending_after_the_request_expires_are_refused(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h.store.set_policy("octo", quiet_start=22, quiet_end=6, updated_by="admin")
    h.clock.now = NIGHT
    monkeypatch.setattr(admission, "_max_age", lambda _actor: dt.timedelta(hours=4))
    assert pipeline.repair_issue(h.deps, issue_job()) == "refused"
    attempt = h.only_attempt()
    assert attempt.reason == (
        "quiet hours for octo: 22:00-06:00 UTC; they end at 06:00 UTC, after this request expires "
        "(4 h after it was made)"
    )
    assert h.later == [] and nothing_ran(h)
    (body,) = h.comments()
    assert "Ask again with `/arcs fix` once the quiet hours are over." in body


def test_without_a_delayed_queue_quiet_hours_refuse(h: Harness) -> None:
    h.store.set_policy("octo", quiet_start=22, quiet_end=6, updated_by="admin")
    h.clock.now = NIGHT
    h.deps.enqueue_later = None
    assert pipeline.repair_issue(h.deps, issue_job()) == "refused"
    assert "cannot postpone a repair until 06:00 UTC" in (h.only_attempt().reason or "")


def test_the_broker_enqueuer_delays_natively(h: Harness, settings: Settings) -> None:
    from jobs.broker import BrokerEnqueuer, make_broker

    broker = make_broker(settings.model_copy(update={"broker_url": "stub://"}))
    sent: list[tuple[str, int | None]] = []
    original = broker.enqueue

    def spy(message: Any, *, delay: int | None = None) -> Any:
        sent.append((message.actor_name, delay))
        return original(message, delay=delay)

    broker.enqueue = spy  # type: ignore[method-assign]
    enqueuer = BrokerEnqueuer(broker)  # as jobs.worker.default_wiring wires it
    h.deps.enqueue = enqueuer.enqueue
    h.deps.enqueue_later = enqueuer.enqueue_later
    h.store.set_policy("octo", quiet_start=22, quiet_end=6, updated_by="admin")
    h.clock.now = NIGHT
    try:
        assert pipeline.repair_issue(h.deps, issue_job()) == "deferred"
        assert sent == [("repair_issue", 7 * 3_600_000)]
        assert broker.queues["arcs-repair.DQ"].qsize() == 1  # type: ignore[attr-defined]
    finally:
        broker.close()


# --- pull requests per day ------------------------------------------------------------------------


def test_the_policy_pr_limit_is_stricter_than_arcs_yml(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"max_prs_per_day": 5})
    h.store.set_policy("octo", max_prs_per_day=1, updated_by="admin")
    seed_prs(h, 1)  # type: ignore[arg-type]
    assert pipeline.handle_command(h.deps, command_job("fix")) == "refused"
    message = (
        "ARCS has opened 1 pull requests in octo/app today (limit 1 set by an org admin for octo); "
        "skipping this repair"
    )
    attempt = h.store.get_attempt_by_key(f"cmd:{REPO}:9001")
    assert attempt is not None and attempt.reason == message
    (body,) = h.comments()
    assert body.startswith("ARCS has reached the number of pull requests a day an org admin allows for octo.")
    assert message in body and nothing_ran(h)


def test_a_running_repair_holds_a_pull_request_slot(h: Harness) -> None:
    h.gh.config = RepoConfig(extra={"max_prs_per_day": 1})
    h.store.claim_attempt(
        "admitted", repo=REPO, trigger="ci", status="running", started_at=DAY, reserved_usd=1.0
    )
    assert pipeline.repair_ci_failure(h.deps, ci_job()) == "refused"
    reason = h.store.attempts(repo=REPO, statuses=("refused",))[0].reason
    assert reason == (
        "ARCS has opened 0 pull requests in octo/app today and 1 more is on the way "
        "(limit 1 from .arcs.yml max_prs_per_day); skipping this repair"
    )


def test_an_error_before_the_repair_releases_the_reservation_without_a_charge(h: Harness) -> None:
    h.store.set_policy("octo", monthly_usd=10.0, updated_by="admin")
    h.gh.fail["clone"] = ConnectionError("GitHub is down")
    assert pipeline.handle_command(h.deps, command_job("fix")) == "error"
    attempt = h.only_attempt()
    assert attempt.status == "error" and attempt.reserved_usd is None and attempt.cost_usd is None


# --- the per-user daily cap (ARCS_USER_DAILY_USD) ------------------------------------------------


def test_a_users_second_repair_past_the_daily_cap_is_refused_and_another_users_runs(
    h: Harness, settings: Settings
) -> None:
    h.deps.settings = settings.model_copy(update={"user_daily_usd": 0.5})
    # The command asks for $0.50: exactly the cap, so the first one runs (and spends $0.05).
    assert pipeline.handle_command(h.deps, other_comment("fix", 8000, author="ana")) == "fixed"
    first = h.store.get_attempt_by_key(f"cmd:{REPO}:8000")
    assert first is not None and first.requested_by == "ana" and first.cost_usd == pytest.approx(0.05)

    h.clock.now = DAY + dt.timedelta(hours=1)
    assert pipeline.handle_command(h.deps, other_comment("fix", 8001, author="ana")) == "refused"
    refused = h.store.get_attempt_by_key(f"cmd:{REPO}:8001")
    assert refused is not None and refused.reserved_usd is None
    reason = (
        "@ana's daily repair budget (ARCS_USER_DAILY_USD, $0.50 in 24 h) would be exceeded: $0.05 "
        "used, this repair reserves $0.50; it frees up from 2026-03-04 10:00 UTC"
    )
    assert refused.reason == reason
    assert any(body.startswith(f"{reason}. Ask again then") for body in h.comments())
    (event,) = h.store.events(kind="refusal")
    assert event.attempt_id == refused.id
    assert event.data["policy"] == "user_daily_usd" and event.data["user"] == "ana"
    assert len(h.repair.requests) == 1  # nothing ran for the refused one

    assert pipeline.handle_command(h.deps, other_comment("fix", 8002, author="bob")) == "fixed"
    assert len(h.repair.requests) == 2

    # 24 hours after ana's first repair its spend leaves the window.
    h.clock.now = DAY + dt.timedelta(hours=24, seconds=1)
    assert pipeline.handle_command(h.deps, other_comment("fix", 8003, author="ana")) == "fixed"


def test_without_the_setting_a_user_has_no_daily_cap(h: Harness) -> None:
    assert h.deps.settings.user_daily_usd == 0
    for comment_id in (8000, 8001, 8002):
        h.store.claim_attempt(
            f"spent-{comment_id}",
            repo=REPO,
            trigger="comment",
            requested_by="ana",
            status="no_fix",
            cost_usd=50.0,
        )
        assert pipeline.handle_command(h.deps, other_comment("fix", comment_id, author="ana")) == "fixed"


@pytest.mark.parametrize(
    ("login", "counted"),
    [
        ("ana", "ana"),
        (" ana ", "ana"),
        ("dependabot[bot]", None),
        ("Renovate[Bot]", None),
        (None, None),
        ("", None),
    ],
)
def test_bot_accounts_and_ci_count_against_nobody(login: str | None, counted: str | None) -> None:
    assert admission.triggering_user(login) == counted
