"""The Router, the composed app router, and the views routes read payloads through."""

from __future__ import annotations

import pytest

import bot.routing
from bot.handlers.registry import build_router
from bot.handlers.views import PayloadInvalid, View
from bot.routing import Decision, RouteContext, Router, enqueue, ignore
from bot.settings import Settings
from jobs.messages import CONTEXT_KEYS, CiRef, Envelope, RefreshIndex, RepairCiFailure, RepairIssue
from tests.bot.webhook_support import ctx, event_of, load


def test_app_routes_exactly_the_handled_events() -> None:
    assert list(build_router().routes()) == [
        ("check_run", "completed"),
        ("check_run", "requested_action"),
        ("check_suite", "completed"),
        ("installation", "created"),
        ("installation", "deleted"),
        ("installation_repositories", "added"),
        ("installation_repositories", "removed"),
        ("issue_comment", "created"),
        ("issue_comment", "edited"),
        ("issues", "labeled"),
        ("ping", None),
        ("pull_request", "closed"),
        ("pull_request_review_comment", "created"),
        ("push", None),
        ("workflow_run", "completed"),
        ("workflow_run", "requested"),
    ]


def test_events() -> None:
    assert "issues" in build_router().events()
    assert "star" not in build_router().events()


def test_unrouted_action_is_ignored_with_a_reason(settings: Settings) -> None:
    decision = build_router().route("issues", "opened", load("issues.opened"), ctx(settings, "issues.opened"))
    assert decision == ignore("issues.opened is not handled")
    assert not decision.queued


class Empty(View):
    """A view of nothing."""


def test_catch_all_and_exact_actions() -> None:
    r = Router("t")

    @r.on("e", view=Empty)
    def any_action(event: Empty, c: RouteContext) -> Decision:
        return ignore("any")

    @r.on("e", "special", view=Empty)
    def special(event: Empty, c: RouteContext) -> Decision:
        return ignore("special")

    assert r.handler_for("e", "special") is special
    assert r.handler_for("e", "other") is any_action
    assert r.handler_for("e", None) is any_action
    assert r.handler_for("f", None) is None


def test_double_registration_is_a_bug() -> None:
    r = Router("t")
    r.on("e", "a", view=Empty)(lambda event, c: ignore("x"))
    with pytest.raises(ValueError, match="already routed"):
        r.on("e", "a", view=Empty)(lambda event, c: ignore("y"))


def test_overlapping_routers_are_a_bug() -> None:
    a, b = Router("a"), Router("b")
    a.on("e", "x", view=Empty)(lambda event, c: ignore("1"))
    b.on("e", "x", view=Empty)(lambda event, c: ignore("2"))
    app = Router("app")
    app.include(a)
    with pytest.raises(ValueError, match="two routers"):
        app.include(b)


def test_routing_composes_no_handler() -> None:
    # The app's router lives in bot.handlers.registry: routing imports no handler (no cycle).
    assert not hasattr(bot.routing, "build_router")


def test_route_context_job_wraps_the_message_with_key_and_log_context(settings: Settings) -> None:
    c = RouteContext(settings, "d-1", "issues", installation_id=7, repo_full_name="o/r")
    message = RepairIssue(repo="o/r", installation_id=7, delivery_id="d-1", issue_number=3)
    job = c.job(message, key="k")
    assert job == Envelope.of(
        message,
        context={"delivery_id": "d-1", "event": "issues", "installation_id": "7", "repo": "o/r"},
        idempotency_key="k",
    )
    assert job.actor == "repair_issue" and job.message is message
    assert set(job.context) <= set(CONTEXT_KEYS)
    # An installation event names other repositories than its own: the message's repo is logged.
    other = c.job(RefreshIndex(repo="o/other", mode="full"), key="k2")
    assert other.message.repo == "o/other" and other.context["repo"] == "o/other"


def test_context_without_installation_or_repo(settings: Settings) -> None:
    c = RouteContext(settings, "d", "ping")
    assert c.log_context() == {"delivery_id": "d", "event": "ping"}


def test_decision_helpers() -> None:
    job = Envelope.of(RefreshIndex(repo="o/r"))
    assert enqueue(job).jobs == (job,) and enqueue(job).queued
    assert ignore("why").reason == "why"


def test_ping_is_answered(settings: Settings) -> None:
    decision = build_router().route("ping", None, load("ping"), ctx(settings, "ping"))
    assert decision.reason == "pong: Anything added dilutes everything else."


# --- views: only the fields a handler uses ---------------------------------------------------

ROUTED_FIXTURES = {
    "workflow_run.completed.failure": ("workflow_run", "head_sha"),
    "check_suite.completed.failure": ("check_suite", "head_sha"),
    "check_run.completed.failure": ("check_run", "head_sha"),
    "issues.labeled": ("issue", "number"),
    "issue_comment.created": ("comment", "body"),
    "installation_repositories.added": ("repositories_added", None),
    "push": ("repository", "default_branch"),
    "pull_request.closed.merged": ("pull_request", "closed_at"),
}


def test_every_route_reads_a_view() -> None:
    router = build_router()
    for event, action in router.routes():
        found = router.route_for(event, action)
        assert found is not None and issubclass(found.view, View)
        assert found.view.model_config.get("extra") == "ignore"


@pytest.mark.parametrize("stem", sorted(ROUTED_FIXTURES))
def test_a_missing_needed_field_is_named(settings: Settings, stem: str) -> None:
    outer, inner = ROUTED_FIXTURES[stem]
    data = load(stem)
    if inner is None:
        del data[outer]
    else:
        del data[outer][inner]
    with pytest.raises(PayloadInvalid) as caught:
        build_router().route(event_of(stem), data.get("action"), data, ctx(settings, stem))
    assert str(caught.value) == (f"{outer}.{inner} is missing" if inner else f"{outer} is missing")


def test_a_needed_field_of_the_wrong_type_is_named(settings: Settings) -> None:
    data = load("workflow_run.completed.failure", workflow_run__id="not a number")
    with pytest.raises(PayloadInvalid, match=r"^workflow_run\.id: input should be a valid integer"):
        build_router().route(
            "workflow_run", "completed", data, ctx(settings, "workflow_run.completed.failure")
        )
    data = load("issue_comment.created", comment__body=["/arcs fix"])
    with pytest.raises(PayloadInvalid, match=r"^comment\.body: input should be a valid string"):
        build_router().route("issue_comment", "created", data, ctx(settings, "issue_comment.created"))


def test_several_problems_are_listed_briefly(settings: Settings) -> None:
    data = load("workflow_run.completed.failure")
    for key in ("id", "head_sha", "head_repository"):
        del data["workflow_run"][key]
    del data["repository"]
    with pytest.raises(PayloadInvalid) as caught:
        build_router().route(
            "workflow_run", "completed", data, ctx(settings, "workflow_run.completed.failure")
        )
    assert caught.value.problems[-1] == "+1 more" and len(caught.value.problems) == 4


def test_fields_no_handler_reads_may_be_missing_extra_or_odd(settings: Settings) -> None:
    # Keep only what the workflow_run view declares, add fields GitHub may send one day.
    full = load("workflow_run.completed.failure")
    run = full["workflow_run"]
    minimal = {
        "action": "completed",
        "repository": {"id": full["repository"]["id"], "full_name": full["repository"]["full_name"]},
        "workflow_run": {
            "id": run["id"],
            "head_sha": run["head_sha"],
            "conclusion": "failure",
            "head_branch": run["head_branch"],
            "head_repository": {"id": run["head_repository"]["id"], "permissions": {"x": 1}},
            "actor": None,
            "brand_new_field": {"nested": [1, 2, 3]},
        },
        "installation": "an installation in an unexpected shape",
    }
    (job,) = (
        build_router()
        .route("workflow_run", "completed", minimal, ctx(settings, "workflow_run.completed.failure"))
        .jobs
    )
    message = job.expect(RepairCiFailure)
    assert message.run_id == run["id"] and message.workflow_name is None
    assert message.ci == CiRef() and message.pull_requests == ()
