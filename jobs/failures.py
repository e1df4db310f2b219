"""One attempt per failure: the signature of a failed CI run, and the attempt key it gives.

Runs of one repository and head commit that fail the same way (a matrix, the same tests in two
workflows, a workflow pushed again) are one failure: the first run's job claims an attempt under
:func:`failure_key`, and the others, finding that key taken, join it (``joined_runs``) instead of
cloning, sandboxing and spending a model budget again. The store's unique idempotency key decides
which run leads, so concurrent workers cannot start two attempts for one failure.

The signature is computed from the log analysis the worker does anyway
(:func:`runners.logs.analyze_log` over the failed jobs' logs), on the first basis that applies:

1. ``tests``: the failure class and the set of failing test ids (sorted, duplicates dropped,
   whitespace collapsed; ids are otherwise kept as written, ``test_1`` is not ``test_2``);
2. ``step``: the failure class, the tool (linter, type checker…), the failing step's command and
   the set of ``path:line`` references in its output (digits in the command become ``#``, so
   ``tox -e py311`` and ``tox -e py312`` of one matrix agree);
3. ``jobs``: the failure class, the workflow name and the failing job's name with its matrix
   suffix removed (``test (3.11, ubuntu)`` -> ``test``), digits as ``#`` (the log names no
   failing step and no test).

The digest is the first 24 hex digits of the SHA-256 of that text. Different signatures are
different failures, each with its own attempt.

Where joining happens: in the worker, not the webhook (which knows the run's metadata only). The
job of a workflow run first reads and analyzes the run's logs (:func:`triage`, with the gateway
the attempt then goes on with), then claims the attempt of :func:`failure_key`; a job that finds
the key taken records its run against that attempt (:func:`join`) and stops there.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import structlog

from jobs.logctx import set_outcome
from jobs.messages import Envelope, RepairCiFailure
from jobs.ports import AttemptView, GitHubGateway
from jobs.run import Deps, closing

if TYPE_CHECKING:
    from runners.logs import FailureReport

log = structlog.get_logger("arcs.pipeline")

Basis = Literal["tests", "step", "jobs"]

DIGEST_CHARS = 24
"""Hex digits of the signature kept (96 bits: no two failures of one commit collide)."""
_MATRIX_SUFFIX = re.compile(r"\s*\([^()]*\)\s*$")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class FailureSignature:
    """What makes two failed runs one failure."""

    digest: str
    """:data:`DIGEST_CHARS` hex digits (stored in ``attempts.failure_signature``)."""
    basis: Basis
    """What it was computed from (see the module docstring)."""
    text: str
    """The normalised text that was hashed."""


def _flat(text: str) -> str:
    return " ".join(text.split())


def _coarse(text: str) -> str:
    """Whitespace collapsed and digits folded, for names and commands a matrix varies."""
    return _DIGITS.sub("#", _flat(text))


def job_stem(name: str | None) -> str:
    """A job name without its matrix suffix, digits folded: ``test (3.11, ubuntu)`` -> ``test``."""
    if not name:
        return ""
    return _coarse(_MATRIX_SUFFIX.sub("", name.strip()))


def failure_signature(report: FailureReport, *, workflow: str | None) -> FailureSignature:
    """The signature of a failed run from its log analysis (``workflow``: the run's workflow name)."""
    if report.test_ids:
        ids = sorted({_flat(t) for t in report.test_ids if t.strip()})
        return _signed("tests", [report.failure_class, *ids])
    step = report.step
    if step is not None and step.command.strip():
        refs = sorted({f"{ref.path}:{ref.line}" for ref in report.locations})
        return _signed("step", [report.failure_class, report.tool or "", _coarse(step.command), *refs])
    return _signed("jobs", [report.failure_class, _coarse(workflow or ""), job_stem(report.job)])


def _signed(basis: Basis, parts: list[str]) -> FailureSignature:
    text = "\n".join([basis, *parts])
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS]
    return FailureSignature(digest=digest, basis=basis, text=text)


def failure_key(repo: str, head_sha: str, signature: FailureSignature) -> str:
    """The idempotency key of the attempt for this failure of ``repo`` at ``head_sha``."""
    return f"ci:{repo}:{head_sha}:failure:{signature.digest}"


# --- the worker's side: triage before the claim, join after it ---------------------------------


@dataclass(frozen=True, slots=True)
class Triage:
    """A failed workflow run's log analysis, read before its attempt is claimed."""

    report: FailureReport
    signature: FailureSignature
    gh: GitHubGateway
    """The installation's gateway it was read with (the attempt goes on with it)."""


def triage(deps: Deps, msg: RepairCiFailure) -> Triage | None:
    """Download and analyze the failed jobs' logs of ``msg``'s run, for its failure signature.

    ``None`` when the run cannot be read (no gateway, no logs): the job then claims an attempt
    for the run alone, which reads the logs again and records why it cannot go on.
    """
    if msg.run_id is None:
        return None
    try:
        gh = deps.github(msg.installation_id)
    except Exception:
        return None  # open_run records it on the run's own attempt
    try:
        from runners.logs import analyze_log

        report = analyze_log(gh.download_failed_logs(msg.repo, msg.run_id))
    except Exception as exc:
        log.warning("attempt.triage_failed", run_id=msg.run_id, error=f"{type(exc).__name__}: {exc}"[:300])
        with closing(gh):
            pass
        return None
    return Triage(report, failure_signature(report, workflow=msg.workflow_name), gh)


def join(deps: Deps, job: Envelope, msg: RepairCiFailure, attempt: AttemptView) -> str:
    """The job of a run whose failure already has an attempt: record the run against it.

    ``"duplicate"`` for the attempt's own run (a redelivery) and for an attempt claimed for one
    run alone (no signature), else ``"joined"`` (recorded once per run: the store's
    ``(attempt_id, run_id)`` constraint); the check run the attempt writes next and its
    dashboard page name the joined runs.
    """
    if msg.run_id is None or attempt.failure_signature is None or attempt.run_id == msg.run_id:
        return "duplicate"
    fresh = deps.store.join_attempt(
        attempt.id,
        repo=msg.repo,
        run_id=msg.run_id,
        workflow_name=msg.workflow_name,
        delivery_id=msg.delivery_id or job.context.get("delivery_id"),
    )
    log.info("attempt.joined", run_id=msg.run_id, attempt_status=attempt.status, fresh=fresh)
    set_outcome("joined", run_id=msg.run_id)
    return "joined"
