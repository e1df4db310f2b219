"""``/arcs`` comments: the ``handle_command`` job. Refuse, help, stop, apply a partial fix, or run
a repair (``fix``/``retry`` on an issue or pull request, ``revise`` on an ARCS pull request).

The same job answers the check run's buttons (``source="check_run"``: "Re-run ARCS" and "Fix with
ARCS" are ``fix``, "Apply" is ``apply``), with the same rules: the author is the person who
clicked.

A command is checked before anything runs: the author needs write permission (checked first; a
comment from anyone else gets no reply at all, only a ``refusal`` event for the dashboard, so
nobody can make ARCS post by commenting), an edited comment is never executed, a comment that
was not understood gets the parser's reply, and ``triggers.comments`` must be on in
``.arcs.yml`` (read at the default branch: the repository's policy). The repair itself runs through the same steps as the other jobs (:mod:`jobs.attempt`)
and reads its ``.arcs.yml`` from the checkout it repairs (a pull request's head may carry its own).
"""

from __future__ import annotations

import structlog

from jobs import render
from jobs.admission import admit
from jobs.attempt import read_config, repair, trigger_off
from jobs.branches import BRANCH_PREFIX, branch_name
from jobs.messages import Command, Envelope, HandleCommand
from jobs.patch_apply import PatchDoesNotApply, patched_files
from jobs.run import AttemptRun, Deps, enqueue_publish, run_attempt
from runners import wsfs

log = structlog.get_logger("arcs.pipeline")


def _budget_usd(command: Command) -> float | None:
    """The USD budget a command asks for (None: the policy decides)."""
    return float(command.budget_usd) if command.budget_usd is not None else None


def handle_command(deps: Deps, job: Envelope, *, message_id: str | None = None) -> str:
    """A ``/arcs`` comment: refuse, help, stop, or run a repair (fix/retry/revise)."""
    msg = job.expect(HandleCommand)
    repo, number, comment_id = msg.repo, msg.number, msg.comment_id
    author = msg.author or ""
    command = msg.command
    verb = command.verb if command is not None else None
    key = job.idempotency_key or f"cmd:{repo}:{comment_id}"
    # Reactions go on issue comments; a review-thread command is answered in its thread.
    reacted = comment_id if msg.source == "comment" else None

    def work(run: AttemptRun) -> str:
        if msg.source == "review_comment" and msg.thread_id is not None:
            run.review_thread = msg.thread_id
        # Who asks comes first: anyone can comment, so a comment from someone without write
        # access gets no reply at all (no comment, no reaction), whatever it says; the refusal is
        # recorded for the dashboard.
        refused = run.check_permission(author, reply=False)
        if refused is not None:
            return refused
        if msg.refusal == "edited":
            return run.refuse(
                "edited comments are never executed",
                f"@{author}, ARCS does not run commands from edited comments (the text that was "
                "approved may not be the text that runs). Please post the command in a new comment.",
            )
        if msg.error:
            react(run, reacted, "confused")
            return run.refuse(f"not understood: {msg.error}", f"@{author}, {msg.error}")
        config = read_config(run, None)
        if isinstance(config, str):
            return config
        off = trigger_off(run, config, "comments", reply=True)
        if off is not None:
            return off
        if command is None or command.verb == "help":
            return run.finish("skipped", "help", title="ARCS help", body=render.HELP_TEXT, conclusion=None)
        if verb == "stop":
            return stop(run, number, author)
        if verb == "apply":
            return apply_partial(run, number, msg.attempt_id, author)
        react(run, reacted, "eyes")
        # The options the command asks for (what is not given, the policy decides).
        tier, budget_usd, iterations = command.tier or "auto", _budget_usd(command), command.iterations
        if msg.is_pull_request:
            pr = run.gh.get_pull_request(repo, number)
            if pr.head_repo not in (None, repo):
                return run.refuse(
                    f"pull request #{number} comes from the fork {pr.head_repo}",
                    "ARCS does not run on pull requests from forks: their code is not run with this "
                    "repository's credentials.",
                )
            if verb == "revise":
                if not pr.head_branch.startswith(BRANCH_PREFIX):
                    return run.refuse(
                        f"#{number} is not an ARCS pull request",
                        "`/arcs revise` works on pull requests opened by ARCS.",
                    )
                # Revise: a new commit on the ARCS branch, the same pull request.
                branch, base = pr.head_branch, pr.base_branch
                instructions: str | None = command.instructions or ""
            else:
                branch, base, instructions = branch_name("fix", pr.head_branch), pr.head_branch, None
            run.update(head_sha=pr.head_sha, head_branch=pr.head_branch, base_branch=base, branch=branch)
            grant = admit(run, config, branch, budget_usd=budget_usd, iterations=iterations)
            if isinstance(grant, str):
                return grant
            run.open_check_run(pr.head_sha)
            run.tell(
                "ARCS is working on this",
                f"Attempt #{run.attempt.id} (`/arcs {verb}` by @{author}) is running.",
                conclusion=None,
            )
            return repair(
                run,
                grant,
                head_sha=pr.head_sha,
                config=None,
                tier=tier,
                budget_usd=budget_usd,
                iterations=iterations,
                instructions=instructions,
            )
        issue = run.gh.get_issue(repo, number)
        head = run.gh.get_branch_head(repo, None)
        branch = branch_name("issue", str(number))
        run.update(head_sha=head.sha, base_branch=head.name, branch=branch)
        grant = admit(run, config, branch, budget_usd=budget_usd, iterations=iterations)
        if isinstance(grant, str):
            return grant
        run.tell(
            "ARCS is working on this issue",
            f"Attempt #{run.attempt.id} (`/arcs {verb}` by @{author}) is running on `{head.name}`.",
            conclusion=None,
        )
        return repair(
            run,
            grant,
            head_sha=head.sha,
            config=None,
            issue=issue,
            tier=tier,
            budget_usd=budget_usd,
            iterations=iterations,
        )

    return run_attempt(
        deps,
        job,
        key,
        message_id,
        work,
        trigger="revise" if verb == "revise" else "comment",
        issue_number=number,
        comment_id=comment_id,
        requested_by=author,
        options=command.as_dict() if command is not None else None,
    )


def apply_partial(run: AttemptRun, number: int, attempt_id: int | None, author: str) -> str:
    """``/arcs apply`` or the "Apply" button: publish the partial fix an attempt on ``number`` found
    but opened no pull request for (``open_pr_on_partial`` off). The stored patch is applied to a
    fresh checkout of the commit it was made on (:mod:`jobs.patch_apply`), the files are stored
    with that attempt and its ``publish_result`` is queued (one pull request per attempt)."""
    store = run.deps.store
    target = store.get_attempt(attempt_id) if attempt_id is not None else None
    if target is None:
        found = store.attempts(repo=run.repo, issue_number=number, statuses=("partial",), limit=10)
        target = next((a for a in found if a.id != run.attempt.id and a.patch), None)
    if (
        target is None
        or target.repo != run.repo
        or target.issue_number != number
        or target.status != "partial"
        or not target.patch
        or target.head_sha is None
    ):
        return run.refuse("nothing to apply", f"@{author}, there is no partial fix by ARCS here to apply.")
    if target.pr_number is not None:
        return run.refuse(
            f"attempt #{target.id} is already published",
            f"@{author}, the fix of attempt #{target.id} is already in #{target.pr_number}.",
        )
    with run.deps.scratch() as scratch:
        wsfs.make_dirs(scratch, "repo")  # the empty clone target
        workdir = scratch / "repo"
        run.gh.clone(run.repo, target.head_sha, workdir)
        try:
            files = patched_files(
                target.patch, lambda rel: wsfs.text_or_none(workdir, rel, limit=wsfs.SOURCE_LIMIT)
            )
        except PatchDoesNotApply as exc:
            return run.refuse(
                f"apply: {exc}",
                f"@{author}, the partial fix of attempt #{target.id} does not apply any more ({exc}).",
            )
    store.update_attempt(target.id, files=files)
    enqueue_publish(run.deps, run.job, store.get_attempt(target.id) or target, dashboard=run.dashboard)
    return run.finish(
        "skipped",
        f"apply: publishing the partial fix of attempt #{target.id}",
        title="ARCS is opening a pull request with its partial fix",
        body=f"@{author} asked ARCS to apply the partial fix of attempt #{target.id}: a pull request is "
        "on its way. CI will still fail on the tests that failed before the change too.",
        conclusion=None,
    )


def react(run: AttemptRun, comment_id: int | None, content: str) -> None:
    if comment_id is None:
        return
    try:
        run.gh.add_reaction(run.repo, comment_id, content)
    except Exception as exc:  # a missing reaction is cosmetic; the reply still goes out
        log.warning("attempt.reaction_failed", error=f"{type(exc).__name__}: {exc}"[:300])


def stop(run: AttemptRun, number: int, author: str) -> str:
    """Cancel the queued attempts on this issue/PR (also those waiting for quiet hours) and ask
    the running ones to stop: their loop checks before every round, stops with verdict
    ``interrupted`` and their status comment says who stopped them."""
    store = run.deps.store
    now = run.deps.clock()
    why = f"stopped by @{author}"
    waiting = store.attempts(repo=run.repo, issue_number=number, statuses=("queued",))
    stopped = [a for a in waiting if a.id != run.attempt.id]
    for other in stopped:
        store.update_attempt(
            other.id,
            status="skipped",
            reason=why,
            finished_at=now,
            cancel_requested_at=now,
            cancel_reason=why,
        )
    running = [
        a
        for a in store.attempts(repo=run.repo, issue_number=number, statuses=("running",))
        if a.id != run.attempt.id
    ]
    for other in running:
        if other.cancel_requested_at is None:
            store.update_attempt(other.id, cancel_requested_at=now, cancel_reason=why)
    parts = [f"Cancelled {len(stopped)} queued attempt(s)."]
    if running:
        ids = ", ".join(f"#{a.id}" for a in running)
        parts.append(
            f"Asked attempt(s) {ids} to stop before their next round; their status will say when they stopped."
        )
    if not stopped and not running:
        parts = ["Nothing to stop: no ARCS attempt is queued or running here."]
    return run.finish(
        "skipped", f"stop by @{author}", title="ARCS stop", body=" ".join(parts), conclusion=None
    )
