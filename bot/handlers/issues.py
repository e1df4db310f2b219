"""``issues`` labeled with the trigger label -> an issue repair job.

The label is the default ``arcs``; a repository may configure another one in ``.arcs.yml``,
which needs the API, so the worker re-checks the label against the repository's config and
refuses with a comment when it does not match.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.handlers import present
from bot.routing import DEFAULT_LABEL, Decision, RouteContext, Router, enqueue, ignore

if TYPE_CHECKING:
    from githubkit_schemas.latest.models import WebhookIssuesLabeled

router = Router("issues")


@router.on("issues", "labeled")
def labeled(event: WebhookIssuesLabeled, ctx: RouteContext) -> Decision:
    """Enqueue ``repair_issue`` when the trigger label is added to an open issue."""
    label = present(event.label)
    name = label.name if label is not None else None
    if name is None or name.casefold() != DEFAULT_LABEL.casefold():
        return ignore(f"label {name!r} is not the ARCS label {DEFAULT_LABEL!r}")
    issue = event.issue
    if present(issue.pull_request) is not None:
        return ignore(f"#{issue.number} is a pull request, not an issue")
    if present(issue.state) == "closed":
        return ignore(f"issue #{issue.number} is closed")
    repo = event.repository.full_name
    return enqueue(
        ctx.job(
            "repair_issue",
            {
                "issue_number": issue.number,
                "title": issue.title,
                "label": name,
                "sender": event.sender.login,
                "html_url": issue.html_url,
            },
            key=f"issue:{repo}#{issue.number}:{ctx.delivery_id}",
            repo=repo,
        )
    )
