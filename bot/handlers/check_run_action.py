"""``check_run.requested_action``: a person clicked a button on ARCS's check run -> a command.

The buttons (:mod:`jobs.render_checks`): "Re-run ARCS" and "Fix with ARCS" are ``/arcs fix``,
"Apply" is ``/arcs apply``, on the pull request the check run belongs to, by the person who
clicked (``sender``). They go through the same ``handle_command`` job as comments, so the same
rules hold: the worker checks the clicker's permission through the API (write, maintain or admin;
anyone else gets no answer at all) and ``triggers.comments``.

Refused here without a word: a click by a bot, a check run of another App (GitHub sends
``requested_action`` only to the App that made the check run, but the App id is checked anyway),
an unknown button, a check run on no pull request (commands work where ``/arcs`` comments work)
or on a fork's. A delivery without ``requested_action`` is ignored with that reason (recorded);
one without the check run's id, head or the repository is a 400 (nothing to act on).

A double click is one job: the key is ``action:{repo}:{check_run_id}:{identifier}``, and each new
attempt gets a new check run (so "Re-run ARCS" on it is a new key).
"""

from __future__ import annotations

from bot.handlers import app_slug
from bot.handlers.views import CheckPull, CheckRunRequestedAction
from bot.routing import Decision, RouteContext, Router, enqueue, ignore
from bot.settings import Settings
from jobs.messages import Command, HandleCommand, Verb
from jobs.ports import is_bot_account
from jobs.render_checks import ACTION_APPLY, ACTION_FIX, ACTION_RERUN

router = Router("check_run_action")

VERBS: dict[str, Verb] = {ACTION_RERUN: "fix", ACTION_FIX: "fix", ACTION_APPLY: "apply"}
"""Button identifier -> the ``/arcs`` command it is."""


def _ours(app_id: int | None, slug: str | None, settings: Settings) -> bool:
    if settings.app_id and settings.app_id.isdigit():
        return app_id == int(settings.app_id)
    return slug is not None and slug == app_slug(settings.bot_login)


def _fork(pulls: list[CheckPull], repo_id: int) -> bool:
    return any(pr.head.repo.id != repo_id or pr.base.repo.id != repo_id for pr in pulls)


def _attempt(external_id: str | None) -> int | None:
    value = (external_id or "").strip()
    return int(value) if value.isascii() and value.isdigit() and len(value) < 19 else None


@router.on("check_run", "requested_action", view=CheckRunRequestedAction)
def requested_action(event: CheckRunRequestedAction, ctx: RouteContext) -> Decision:
    """Enqueue ``handle_command`` for a person's click on one of ARCS's buttons."""
    run, sender = event.check_run, event.sender
    if (
        is_bot_account(sender.login, sender.type)
        or sender.login.casefold() == ctx.settings.bot_login.casefold()
    ):
        return ignore(f"button clicked by the bot {sender.login} (bots cannot run commands)")
    app = run.app
    if app is None or not _ours(app.id, app.slug, ctx.settings):
        return ignore(f"check run {run.id} belongs to another App ({app.slug if app else 'unknown'})")
    if event.requested_action is None:
        return ignore(f"check_run.requested_action without requested_action (check run {run.id})")
    identifier = event.requested_action.identifier
    verb = VERBS.get(identifier)
    if verb is None:
        return ignore(f"unknown button {identifier[:40]!r} on check run {run.id}")
    if _fork(run.pull_requests, event.repository.id):
        return ignore(f"check run {run.id} belongs to a fork's pull request")
    if not run.pull_requests:
        return ignore(f"check run {run.id} is on no pull request of this repository")
    repo = event.repository.full_name
    message = HandleCommand(
        repo=repo,
        installation_id=ctx.installation_id,
        delivery_id=ctx.delivery_id,
        number=run.pull_requests[0].number,
        is_pull_request=True,
        author=sender.login,
        command=Command(verb=verb),
        source="check_run",
        attempt_id=_attempt(run.external_id),
    )
    return enqueue(ctx.job(message, key=f"action:{repo}:{run.id}:{identifier}"))
