"""The application functions behind the actors, one per job, and :func:`dispatch` (in-process:
the CLI and tests). The jobs live in one module per concern; this module names them:

- :mod:`jobs.attempt`: ``repair_ci_failure`` and ``repair_issue`` (claim -> ``.arcs.yml`` read
  once -> admission -> repair -> record -> queue publishing), on :mod:`jobs.run` (one attempt in
  progress) and :mod:`jobs.outcome` (recording what the repair produced);
- :mod:`jobs.admission`: the owner's policy, monthly USD caps and pull-request limits;
- :mod:`jobs.commands`: ``handle_command`` (``/arcs`` comments);
- :mod:`jobs.publish`: ``publish_result`` and ``record_pr_outcome``;
- :mod:`jobs.dashboard_issue`: ``refresh_dashboard`` (the repository's dashboard issue, in place);
- :mod:`jobs.checks_watch`: ``watch_checks`` (the checks on ARCS's pushed head, in its status comment);
- :mod:`jobs.index_jobs`: ``refresh_index`` and ``drop_index``.

Job arguments are those of the web side (:mod:`jobs.messages`). Nothing here imports ``bot``:
GitHub and the store are ports (:mod:`jobs.ports`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from jobs.admission import PrCounts, count_arcs_prs, pr_limit_reached
from jobs.attempt import MAX_BRANCH_RETRIES, run_ci, run_issue
from jobs.branches import BRANCH_PREFIX, branch_name
from jobs.checks_watch import watch_checks
from jobs.commands import handle_command
from jobs.dashboard_issue import refresh_dashboard
from jobs.index_jobs import drop_index_job, refresh_index
from jobs.messages import ActorName, JobRequest
from jobs.publish import publish_result, record_pr_outcome
from jobs.report_summary import attempt_summary as repair_summary
from jobs.run import CHECK_NAME, Deps, ci_title

__all__ = [
    "BRANCH_PREFIX",
    "CHECK_NAME",
    "FUNCTIONS",
    "MAX_BRANCH_RETRIES",
    "Deps",
    "DomainFunction",
    "PrCounts",
    "branch_name",
    "ci_title",
    "count_arcs_prs",
    "dispatch",
    "drop_index_job",
    "handle_command",
    "pr_limit_reached",
    "publish_result",
    "record_pr_outcome",
    "refresh_dashboard",
    "refresh_index",
    "repair_ci_failure",
    "repair_issue",
    "repair_summary",
    "watch_checks",
]

repair_ci_failure = run_ci
repair_issue = run_issue


DomainFunction = Callable[..., str]

FUNCTIONS: Mapping[ActorName, DomainFunction] = {
    "refresh_index": refresh_index,
    "drop_index": drop_index_job,
    "repair_ci_failure": repair_ci_failure,
    "repair_issue": repair_issue,
    "handle_command": handle_command,
    "record_pr_outcome": record_pr_outcome,
    "publish_result": publish_result,
    "watch_checks": watch_checks,
    "refresh_dashboard": refresh_dashboard,
}
"""The application function of each actor."""


def dispatch(deps: Deps, job: JobRequest, *, message_id: str | None = None) -> str:
    """Run the application function of ``job.actor`` (in-process: the CLI and tests)."""
    return FUNCTIONS[job.actor](deps, job, message_id=message_id)
