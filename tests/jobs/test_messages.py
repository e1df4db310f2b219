"""Typed, versioned messages: JSON round trips, validation, and the pre-typed (v1 dict) shape."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any, get_args

import pytest

from bot.handlers.registry import build_router
from bot.settings import Settings
from jobs.messages import (
    ACTOR_OPTIONS,
    MESSAGES,
    ActorName,
    CiRef,
    Command,
    DropIndex,
    Envelope,
    HandleCommand,
    JobRequest,
    Message,
    MessageInvalid,
    PublishResult,
    RecordPrOutcome,
    RefreshDashboard,
    RefreshIndex,
    RepairCiFailure,
    RepairIssue,
    Resume,
    WatchChecks,
)
from tests.bot.webhook_support import ctx, event_of, load

RECORDED = Path(__file__).parents[1] / "fixtures" / "messages" / "v1_jobs.json"
WHEN = dt.datetime(2026, 3, 3, 6, 0, tzinfo=dt.UTC)

FULL: dict[ActorName, Message] = {
    "refresh_index": RefreshIndex(
        repo="o/r", installation_id=7, delivery_id="d-1", after="a" * 40, mode="full", reason="push"
    ),
    "drop_index": DropIndex(repo="o/r", installation_id=7, delivery_id="d-1", reason="uninstalled"),
    "repair_ci_failure": RepairCiFailure(
        repo="o/r",
        installation_id=7,
        delivery_id="d-1",
        source="check_run",
        head_sha="c" * 40,
        head_branch="arcs/fix/main",
        run_id=555,
        workflow_name="CI",
        pull_requests=(4, 5),
        retry_of="arcs/fix/main",
        red_build_at=WHEN,
        ci=CiRef(
            run_attempt=2,
            workflow_id=3,
            check_suite_id=4,
            check_run_id=5,
            check_name="lint",
            app_id=6,
            app_slug="ci",
            html_url="https://example.com/run",
        ),
    ),
    "repair_issue": RepairIssue(
        repo="o/r", installation_id=7, delivery_id="d-1", issue_number=3, label="arcs", sender="me", title="t"
    ),
    "handle_command": HandleCommand(
        repo="o/r",
        installation_id=7,
        delivery_id="d-1",
        number=9,
        is_pull_request=True,
        comment_id=11,
        author="me",
        author_association="MEMBER",
        command=Command(verb="fix", tier="small", budget_usd=Decimal("2.50"), iterations=3, instructions="x"),
        error=None,
        refusal="edited",
    ),
    "publish_result": PublishResult(attempt_id=1, repo="o/r", installation_id=7, delivery_id="d-1"),
    "record_pr_outcome": RecordPrOutcome(
        repo="o/r",
        installation_id=7,
        delivery_id="d-1",
        number=2,
        merged=True,
        head_ref="arcs/fix/main",
        head_sha="c" * 40,
        closed_at=WHEN,
        merged_at=WHEN,
    ),
    "watch_checks": WatchChecks(
        repo="o/r",
        installation_id=7,
        delivery_id="d-1",
        head_sha="d" * 40,
        head_branch="arcs/fix/main",
        state="waiting",
        pull_requests=(4,),
        source="workflow_run",
        name="CI",
        html_url="https://github.com/o/r/actions/runs/9",
        conclusion="action_required",
    ),
    "refresh_dashboard": RefreshDashboard(
        repo="o/r", installation_id=7, delivery_id="d-1", requested_at=WHEN
    ),
}
"""One message per actor, every field set (no defaults)."""


def through_json(data: Any) -> Any:
    return json.loads(json.dumps(data))


def test_every_actor_has_a_message_and_options() -> None:
    actors = set(get_args(ActorName))
    assert set(MESSAGES) == set(ACTOR_OPTIONS) == set(FULL) == actors
    for actor, cls in MESSAGES.items():
        assert actor == cls.ACTOR and type(FULL[actor]) is cls


@pytest.mark.parametrize("actor", sorted(FULL))
def test_every_message_round_trips_through_json(actor: ActorName) -> None:
    message = FULL[actor]
    cls = MESSAGES[actor]
    assert cls.from_json(through_json(message.to_json())) == message
    # Every field is written.
    assert set(message.to_json()) == {f.name for f in dataclasses.fields(cls)}
    envelope = Envelope.of(
        message, context={"delivery_id": "d-1"}, idempotency_key="k", resume=Resume(attempt_id=3, until=WHEN)
    )
    again = Envelope.from_json(through_json(envelope.to_json()))
    assert again == envelope and again.message == message and again.v == 1


@pytest.mark.parametrize("actor", sorted(FULL))
def test_a_message_with_only_its_required_fields_round_trips(actor: ActorName) -> None:
    required = {
        "repo": "o/r",
        "head_sha": "c",
        "issue_number": 1,
        "number": 2,
        "attempt_id": 3,
        "reason": "removed",
        "head_branch": "arcs/fix/main",
        "state": "passed",
    }
    cls = MESSAGES[actor]
    body = {k: v for k, v in required.items() if k in {f.name for f in dataclasses.fields(cls)}}
    body = {k: v for k, v in body.items() if k != "reason" or actor == "drop_index"}
    if actor != "watch_checks":  # required there, optional elsewhere
        body = {k: v for k, v in body.items() if k not in ("head_branch", "state")}
    message = cls.from_json(body)
    assert cls.from_json(through_json(message.to_json())) == message


@pytest.mark.parametrize(
    ("actor", "body", "error"),
    [
        ("repair_issue", {"repo": "o/r"}, "repair_issue.issue_number is missing"),
        ("repair_ci_failure", {"repo": "o/r"}, "repair_ci_failure.head_sha is missing"),
        ("drop_index", {"repo": "o/r"}, "drop_index.reason is missing"),
        (
            "repair_issue",
            {"repo": "o/r", "issue_number": "3"},
            "repair_issue.issue_number: expected an integer, got str",
        ),
        (
            "repair_issue",
            {"repo": "o/r", "issue_number": True},
            "repair_issue.issue_number: expected an integer, got bool",
        ),
        ("repair_issue", {"repo": 5, "issue_number": 3}, "repair_issue.repo: expected a string, got int"),
        ("repair_issue", {"repo": None, "issue_number": 3}, "repair_issue.repo: must not be null"),
        (
            "repair_issue",
            {"repo": "o/r", "issue_number": 3, "colour": "red"},
            "repair_issue: unknown field(s) colour",
        ),
        ("refresh_index", {"repo": "o/r", "mode": "partial"}, "refresh_index.mode: 'partial' is not one of"),
        ("drop_index", {"repo": "o/r", "reason": "bored"}, "drop_index.reason: 'bored' is not one of"),
        (
            "repair_ci_failure",
            {"repo": "o/r", "head_sha": "c", "pull_requests": 4},
            "pull_requests: expected a list",
        ),
        (
            "repair_ci_failure",
            {"repo": "o/r", "head_sha": "c", "pull_requests": [1, "2"]},
            "pull_requests[1]: expected an integer",
        ),
        (
            "repair_ci_failure",
            {"repo": "o/r", "head_sha": "c", "red_build_at": "yesterday"},
            "red_build_at: 'yesterday' is not an ISO 8601 time",
        ),
        (
            "repair_ci_failure",
            {"repo": "o/r", "head_sha": "c", "ci": {"app_id": "6"}},
            "repair_ci_failure.ci.app_id: expected an integer",
        ),
        (
            "repair_ci_failure",
            {"repo": "o/r", "head_sha": "c", "ci": []},
            "repair_ci_failure.ci: expected an object, got list",
        ),
        (
            "record_pr_outcome",
            {"repo": "o/r", "number": 2, "merged": "yes"},
            "record_pr_outcome.merged: expected a boolean",
        ),
        (
            "handle_command",
            {"repo": "o/r", "number": 2, "command": {"verb": "explode"}},
            "handle_command.command.verb: 'explode'",
        ),
        (
            "handle_command",
            {"repo": "o/r", "number": 2, "command": {"verb": "fix", "budget_usd": 2.5}},
            "budget_usd: expected a decimal string, got float",
        ),
        (
            "handle_command",
            {"repo": "o/r", "number": 2, "command": {"verb": "fix", "budget_usd": "NaN"}},
            "budget_usd: 'NaN' is not a finite amount",
        ),
        (
            "handle_command",
            {"repo": "o/r", "number": 2, "refusal": "bored"},
            "handle_command.refusal: 'bored' is not one of",
        ),
        ("publish_result", "attempt 3", "publish_result: expected an object, got str"),
    ],
)
def test_invalid_bodies_are_rejected_with_the_field_named(actor: ActorName, body: Any, error: str) -> None:
    with pytest.raises(MessageInvalid) as caught:
        MESSAGES[actor].from_json(body)
    assert error in str(caught.value)
    # The same through an envelope (what a worker decodes).
    with pytest.raises(MessageInvalid):
        Envelope.from_json({"actor": actor, "v": 1, "context": {}, "idempotency_key": None, "body": body})


@pytest.mark.parametrize("v", [0, 2, 99, "1", True, None])
def test_an_unknown_version_is_rejected(v: Any) -> None:
    good = Envelope.of(FULL["repair_issue"]).to_json()
    with pytest.raises(MessageInvalid, match=r"repair_issue: v: expected an integer|unknown message version"):
        Envelope.from_json({**good, "v": v})
    if isinstance(v, int) and not isinstance(v, bool):
        with pytest.raises(MessageInvalid, match=f"unknown message version {v}"):
            RepairIssue.from_json(good["body"], v=v)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ([], "a message is a JSON object, not list"),
        ({"actor": "make_coffee", "v": 1, "body": {}}, "actor: unknown actor 'make_coffee'"),
        ({"actor": "repair_issue", "v": 1}, "repair_issue: body is missing"),
        ({"actor": "repair_issue", "body": {"repo": "o/r", "issue_number": 1}}, "repair_issue: v is missing"),
        ({**Envelope.of(FULL["drop_index"]).to_json(), "priority": 1}, "unknown envelope field(s) priority"),
        (
            {**Envelope.of(FULL["drop_index"]).to_json(), "idempotency_key": 5},
            "idempotency_key: expected a string",
        ),
        ({**Envelope.of(FULL["drop_index"]).to_json(), "context": "d-1"}, "context: expected an object"),
        (
            {**Envelope.of(FULL["drop_index"]).to_json(), "resume": {"attempt_id": 1}},
            "drop_index.resume.until is missing",
        ),
        ({"actor": "repair_issue", "args": "x"}, "repair_issue: args: expected an object, got str"),
    ],
)
def test_invalid_envelopes_are_rejected(data: Any, error: str) -> None:
    with pytest.raises(MessageInvalid) as caught:
        Envelope.from_json(data)
    assert error in str(caught.value)


def test_an_envelope_checks_its_message_is_for_its_actor() -> None:
    with pytest.raises(ValueError, match="not a repair_issue message"):
        Envelope("repair_issue", body=FULL["drop_index"])
    with pytest.raises(MessageInvalid, match="expected a DropIndex, got a RepairIssue"):
        Envelope.of(FULL["repair_issue"]).expect(DropIndex)


# --- the pre-typed shape: recorded from the code before typed messages ------------------------------

DROPPED_V1_KEYS = {
    "repair_ci_failure": {"conclusion", "watched_branches_checked"},
    "repair_issue": {"html_url"},
    "handle_command": {"comment_url", "issue_author"},
    "refresh_index": {"ref", "before"},
}
"""Keys the old handlers sent and no worker read: not in the messages (the rest is kept)."""


ADDED_SINCE_RECORDING = {"repair_ci_failure": {"actor"}}
"""Fields today's handlers fill that the recording predates (compared as their default, None)."""


def _as_recorded(job: Envelope) -> dict[str, Any]:
    data = job.to_json()
    for name in ADDED_SINCE_RECORDING.get(job.actor, set()):
        data["body"][name] = None
    return data


def recorded() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads(RECORDED.read_text(encoding="utf-8"))["jobs"]
    return entries


def test_the_recording_covers_every_old_producer() -> None:
    actors = {entry["job"]["actor"] for entry in recorded()}
    # these came after typed messages
    assert actors == set(MESSAGES) - {"drop_index", "watch_checks", "refresh_dashboard"}
    assert any("deferred_attempt" in entry["job"]["args"] for entry in recorded())


@pytest.mark.parametrize("index", range(18))
def test_recorded_old_jobs_decode_as_v1_and_keep_what_the_worker_reads(index: int) -> None:
    old = recorded()[index]["job"]
    envelope = Envelope.from_json(old)
    assert envelope.actor == old["actor"] and envelope.v == 1
    assert isinstance(envelope.body, MESSAGES[envelope.actor])
    assert (envelope.context, envelope.idempotency_key) == (old["context"], old["idempotency_key"])
    # jobs/pipeline.py reads `args`: every key it read has the same value.
    kept = {k: v for k, v in old["args"].items() if k not in DROPPED_V1_KEYS.get(old["actor"], set())}
    args = envelope.args
    assert {k: args.get(k) for k in kept} == kept
    # Re-encoded, it is the typed shape, and it decodes to the same envelope.
    assert Envelope.from_json(through_json(envelope.to_json())) == envelope


@pytest.mark.parametrize(
    "index", [i for i, e in enumerate(json.loads(RECORDED.read_text())["jobs"]) if "stem" in e]
)
def test_an_old_job_decodes_to_what_todays_handler_sends_for_the_same_webhook(
    settings: Settings, index: int
) -> None:
    entry = recorded()[index]
    stem, patches = entry["stem"], entry["patches"]
    data = load(stem, **patches)
    action = data.get("action")
    decision = build_router().route(
        event_of(stem), action if isinstance(action, str) else None, data, ctx(settings, stem, **patches)
    )
    old = Envelope.from_json(entry["job"])
    assert old.to_json() in [_as_recorded(job) for job in decision.jobs]


def test_a_deferred_old_job_resumes_its_attempt() -> None:
    (entry,) = [e for e in recorded() if "deferred_attempt" in e["job"]["args"]]
    envelope = Envelope.from_json(entry["job"])
    assert envelope.resume == Resume(attempt_id=1, until=WHEN)
    assert envelope.args["deferred_attempt"] == 1 and envelope.args["deferred_until"] == WHEN.isoformat()
    assert through_json(envelope.to_json())["resume"] == {"attempt_id": 1, "until": WHEN.isoformat()}


def test_old_jobs_decode_with_the_old_workers_tolerance() -> None:
    # Keys the worker read with `args.get` may be missing, a null counts as missing.
    envelope = Envelope.from_json(
        {"actor": "record_pr_outcome", "args": {"repo": "o/r", "number": 3, "merged": None}}
    )
    assert envelope.message == RecordPrOutcome(repo="o/r", number=3)
    assert envelope.context == {} and envelope.idempotency_key is None
    with pytest.raises(MessageInvalid, match=r"record_pr_outcome\.number is missing"):
        Envelope.from_json({"actor": "record_pr_outcome", "args": {"repo": "o/r"}})
    with pytest.raises(MessageInvalid, match=r"repair_issue\.issue_number: expected an integer"):
        Envelope.from_json({"actor": "repair_issue", "args": {"repo": "o/r", "issue_number": "7"}})


def test_pre_typed_args_still_build_an_envelope_that_a_worker_decodes() -> None:
    # jobs/pipeline.py (one release): JobRequest(actor, args, ...) -> the old shape on the queue.
    job = JobRequest("publish_result", {"attempt_id": 4, "repo": "o/r"}, {"attempt_id": "4"}, "publish:k")
    assert job.args == {"attempt_id": 4, "repo": "o/r"}
    wire = through_json(job.to_json())
    assert wire == {
        "actor": "publish_result",
        "args": {"attempt_id": 4, "repo": "o/r"},
        "context": {"attempt_id": "4"},
        "idempotency_key": "publish:k",
    }
    decoded = Envelope.from_json(wire)
    assert decoded.message == job.message == PublishResult(attempt_id=4, repo="o/r")
    assert decoded.args == {
        "attempt_id": 4,
        "repo": "o/r",
        "installation_id": None,
        "delivery_id": None,
        "dashboard": False,
    }


def test_a_pre_typed_envelope_built_in_process_types_to_what_a_worker_decodes() -> None:
    # The application functions read `typed()`: a deferred job built from old args keeps its resume.
    args = {"repo": "o/r", "issue_number": 3, "deferred_attempt": 1, "deferred_until": WHEN.isoformat()}
    job = JobRequest("repair_issue", args, {"repo": "o/r"}, "issue:o/r#3")
    typed = job.typed()
    assert typed == Envelope.from_json(through_json(job.to_json()))
    assert typed.body == RepairIssue(repo="o/r", issue_number=3) and typed.resume == Resume(
        attempt_id=1, until=WHEN
    )
    assert (typed.context, typed.idempotency_key) == ({"repo": "o/r"}, "issue:o/r#3")
    assert typed.typed() is typed


def test_the_args_view_of_a_typed_message_is_the_old_dict() -> None:
    args = Envelope.of(FULL["handle_command"]).args
    assert args["issue_number"] == 9 and "number" not in args
    assert args["command"] == {
        "verb": "fix",
        "tier": "small",
        "budget_usd": "2.50",
        "iterations": 3,
        "instructions": "x",
    }
    ci = Envelope.of(FULL["repair_ci_failure"]).args
    assert (ci["pull_requests"], ci["run_attempt"], ci["check_name"]) == ([4, 5], 2, "lint")
    assert ci["red_build_at"] == WHEN.isoformat() and "ci" not in ci


def test_from_dict_is_a_best_effort_view_for_failure_reports() -> None:
    broken = {
        "actor": "record_pr_outcome",
        "args": {"repo": "o/r", "delivery_id": "d"},
        "context": {"repo": "o/r"},
    }
    view = Envelope.from_dict(broken)
    assert view.args == {"repo": "o/r", "delivery_id": "d"} and view.context == {"repo": "o/r"}
    with pytest.raises(MessageInvalid):
        view.message  # noqa: B018 - decoding it is what fails
    typed = {**Envelope.of(FULL["drop_index"]).to_json(), "v": 7}
    assert Envelope.from_dict(typed).args["repo"] == "o/r"
