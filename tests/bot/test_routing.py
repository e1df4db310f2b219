"""The Router, the composed app router, and githubkit model lookup per event.action."""

from __future__ import annotations

import importlib

import pytest

from bot.routing import Decision, RouteContext, Router, build_router, enqueue, ignore
from bot.settings import Settings
from bot.web.webhooks import WebhookRejected, event_model, parse_event, warm_up
from jobs.messages import CONTEXT_KEYS, JobRequest
from tests.bot.webhook_support import ctx, load, model


def test_app_routes_exactly_the_handled_events() -> None:
    assert list(build_router().routes()) == [
        ("check_run", "completed"),
        ("check_suite", "completed"),
        ("installation", "created"),
        ("installation_repositories", "added"),
        ("issue_comment", "created"),
        ("issue_comment", "edited"),
        ("issues", "labeled"),
        ("ping", None),
        ("pull_request", "closed"),
        ("push", None),
        ("workflow_run", "completed"),
    ]


def test_events() -> None:
    assert "issues" in build_router().events()
    assert "star" not in build_router().events()


def test_unrouted_action_is_ignored_with_a_reason(settings: Settings) -> None:
    decision = build_router().route(
        "issues", "opened", model("issues.opened"), ctx(settings, "issues.opened")
    )
    assert decision == ignore("issues.opened is not handled")
    assert not decision.queued


def test_catch_all_and_exact_actions() -> None:
    r = Router("t")

    @r.on("e")
    def any_action(event: object, c: RouteContext) -> Decision:
        return ignore("any")

    @r.on("e", "special")
    def special(event: object, c: RouteContext) -> Decision:
        return ignore("special")

    assert r.handler_for("e", "special") is special
    assert r.handler_for("e", "other") is any_action
    assert r.handler_for("e", None) is any_action
    assert r.handler_for("f", None) is None


def test_double_registration_is_a_bug() -> None:
    r = Router("t")
    r.on("e", "a")(lambda event, c: ignore("x"))
    with pytest.raises(ValueError, match="already routed"):
        r.on("e", "a")(lambda event, c: ignore("y"))


def test_overlapping_routers_are_a_bug() -> None:
    a, b = Router("a"), Router("b")
    a.on("e", "x")(lambda event, c: ignore("1"))
    b.on("e", "x")(lambda event, c: ignore("2"))
    app = Router("app")
    app.include(a)
    with pytest.raises(ValueError, match="two routers"):
        app.include(b)


def test_route_context_job_carries_common_args_and_log_context(settings: Settings) -> None:
    c = RouteContext(settings, "d-1", "issues", installation_id=7, repo_full_name="o/r")
    job = c.job("repair_issue", {"issue_number": 3}, key="k")
    assert job == JobRequest(
        actor="repair_issue",
        args={"repo": "o/r", "installation_id": 7, "delivery_id": "d-1", "issue_number": 3},
        context={"delivery_id": "d-1", "event": "issues", "installation_id": "7", "repo": "o/r"},
        idempotency_key="k",
    )
    assert set(job.context) <= set(CONTEXT_KEYS)
    other = c.job("refresh_index", {}, key="k2", repo="o/other")
    assert other.args["repo"] == "o/other" and other.context["repo"] == "o/other"


def test_context_without_installation_or_repo(settings: Settings) -> None:
    c = RouteContext(settings, "d", "ping")
    assert c.log_context() == {"delivery_id": "d", "event": "ping"}


def test_decision_helpers() -> None:
    job = JobRequest(actor="refresh_index")
    assert enqueue(job).jobs == (job,) and enqueue(job).queued
    assert ignore("why").reason == "why"


def test_ping_is_answered(settings: Settings) -> None:
    decision = build_router().route("ping", None, model("ping"), ctx(settings, "ping"))
    assert decision.reason == "pong: Anything added dilutes everything else."


# --- githubkit models per event.action --------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "action"), [(e, a) for e, a in build_router().routes()] + [("issues", "opened")]
)
def test_every_route_has_a_githubkit_model(event: str, action: str | None) -> None:
    found = event_model(event, action)
    assert found is not None
    if action is not None:
        assert found.model_fields["action"].annotation.__args__ == (action,)  # type: ignore[union-attr]


@pytest.mark.parametrize("event", ["workflow_run", "check_run", "check_suite", "installation_repositories"])
def test_model_names_match_githubkits_action_table(event: str) -> None:
    # The naming convention is githubkit's codegen; pin it against its own table (cheap events).
    from githubkit_schemas.latest.models import WebhookPush

    version_package = WebhookPush.__module__.split(".models.")[0]  # githubkit_schemas.vYYYY_MM_DD
    module = importlib.import_module(f"{version_package}.webhooks.{event}")
    for action, cls in module.action_types.items():
        assert event_model(event, action) is cls


def test_unknown_pairs() -> None:
    assert event_model("issues", "frobnicated") is None
    assert event_model("not_an_event", None) is None
    with pytest.raises(WebhookRejected) as caught:
        parse_event("push", "weird", load("push"))
    assert caught.value.status_code == 400


def test_warm_up_resolves_every_route() -> None:
    router = build_router()
    assert warm_up(router) == len(list(router.routes()))
