"""Download the logs of a workflow run's failed jobs (Actions API) and analyze them.

``GET /repos/{o}/{r}/actions/runs/{id}`` names the run's latest attempt; its jobs come from
``…/runs/{id}/attempts/{n}/jobs``; each failed job's log is ``…/actions/jobs/{job}/logs``, a 302 to
a short-lived storage URL that the client follows. Each log is capped (its *end* is kept: that is
where a job fails) and so is the total; the concatenation has one header per job so
:func:`runners.logs.analyze_log` and people can tell the jobs apart.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import structlog

from bot.github import GitHubError
from bot.github.client import InstallationClient, github_errors
from runners.logs import REPAIRABLE_DEFAULT, FailureClass, FailureReport, analyze_log

log = structlog.get_logger(__name__)

FAILED_CONCLUSIONS = frozenset({"failure", "timed_out", "startup_failure"})
MAX_JOB_LOG_BYTES = 2_000_000
MAX_TOTAL_LOG_BYTES = 8_000_000
MAX_JOB_PAGES = 10


@dataclass(frozen=True, slots=True)
class JobLog:
    """One failed job's log (possibly only its end)."""

    job_id: int
    name: str
    conclusion: str
    html_url: str
    text: str
    truncated: bool = False
    size: int = 0
    """Bytes of the whole log as served."""


def job_header(job: JobLog) -> str:
    """The line that introduces a job in the concatenation."""
    return f"===== ARCS: job {job.name!r} (id {job.job_id}, {job.conclusion}) ====="


def concatenate(logs: Sequence[JobLog]) -> str:
    """All logs, each under its header (with a note where a log was cut)."""
    parts = []
    for job in logs:
        note = (
            f"[ARCS: log truncated: the last {len(job.text.encode())} of {job.size} bytes are shown]\n"
            if job.truncated
            else ""
        )
        parts.append(f"{job_header(job)}\n{note}{job.text.rstrip()}\n")
    return "\n".join(parts)


def workflow_run(client: InstallationClient, run_id: int) -> Mapping[str, Any]:
    """The run (``head_sha``, ``head_branch``, ``run_attempt``, ``html_url``, …)."""
    with github_errors(f"read workflow run {run_id}"):
        data = client.gh.rest.actions.get_workflow_run(client.owner, client.repo, run_id).json()
    if not isinstance(data, dict):
        raise GitHubError(f"read workflow run {run_id}: unexpected answer")
    return data


def failed_jobs(client: InstallationClient, run_id: int, attempt: int) -> list[Mapping[str, Any]]:
    """Jobs of ``attempt`` of the run that failed (all pages)."""
    jobs: list[Mapping[str, Any]] = []
    for page in range(1, MAX_JOB_PAGES + 1):
        with github_errors(f"list the jobs of workflow run {run_id}"):
            response = client.gh.rest.actions.list_jobs_for_workflow_run_attempt(
                client.owner, client.repo, run_id, attempt, per_page=100, page=page
            )
        data = response.json()
        jobs.extend(data.get("jobs") or [])
        if 'rel="next"' not in (response.headers.get("link") or ""):
            break
    return [job for job in jobs if job.get("conclusion") in FAILED_CONCLUSIONS]


def download_failed_job_logs(
    client: InstallationClient,
    run_id: int,
    *,
    attempt: int | None = None,
    max_job_bytes: int = MAX_JOB_LOG_BYTES,
    max_total_bytes: int = MAX_TOTAL_LOG_BYTES,
) -> list[JobLog]:
    """The logs of the failed jobs of ``run_id`` (its latest attempt unless ``attempt`` is given)."""
    if attempt is None:
        attempt = int(workflow_run(client, run_id).get("run_attempt") or 1)
    logs: list[JobLog] = []
    budget = max_total_bytes
    for job in failed_jobs(client, run_id, attempt):
        if budget <= 0:
            log.warning("github.logs.total_cap", run_id=run_id, skipped_job=job.get("id"))
            break
        job_id = int(job["id"])
        cap = min(max_job_bytes, budget)
        download = client.download(
            f"repos/{client.owner}/{client.repo}/actions/jobs/{job_id}/logs",
            max_bytes=cap,
            keep="tail",
            accept="application/vnd.github+json",
        )
        budget -= len(download.content)
        text = download.content.decode("utf-8", errors="replace")
        if download.truncated:
            # The cut may fall inside a line: start at the next full one.
            newline = text.find("\n")
            text = text[newline + 1 :] if 0 <= newline < 4096 else text
        logs.append(
            JobLog(
                job_id=job_id,
                name=str(job.get("name") or job_id),
                conclusion=str(job.get("conclusion") or ""),
                html_url=str(job.get("html_url") or ""),
                text=text,
                truncated=download.truncated,
                size=download.size,
            )
        )
    log.info("github.logs.downloaded", run_id=run_id, attempt=attempt, jobs=len(logs))
    return logs


def analyze_jobs(
    logs: Sequence[JobLog],
    *,
    repo_files: Collection[str] | None = None,
    repairable: Collection[FailureClass] = REPAIRABLE_DEFAULT,
) -> list[tuple[JobLog, FailureReport]]:
    """:func:`runners.logs.analyze_log` on each job's log (the job name filled in)."""
    out: list[tuple[JobLog, FailureReport]] = []
    for job in logs:
        report = analyze_log(job.text, repo_files=repo_files, repairable=repairable)
        if report.job is None:
            report = replace(report, job=job.name)
        out.append((job, report))
    return out


def first_repairable(
    reports: Sequence[tuple[JobLog, FailureReport]],
) -> tuple[JobLog, FailureReport] | None:
    """The first job whose failure ARCS repairs (None: none is repairable)."""
    return next(((job, report) for job, report in reports if report.repairable), None)
