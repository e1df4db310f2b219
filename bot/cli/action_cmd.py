"""``arcs action``: repair inside a GitHub Actions job and publish with the workflow's token.

Run by the repository's ``action.yml`` as a step of the user's workflow; everything comes from the
step's environment (:mod:`bot.action.env`: ``GITHUB_*``, ``RUNNER_TEMP`` and the Action's
``INPUT_*``). The flags override the inputs (handy to try it outside a workflow with a recorded
environment). Exit codes (:mod:`bot.action.run`): 0 a verified fix was published, or nothing to do;
1 no verified fix, a fix that could not be published, or a refusal; 2 a configuration error.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from bot.cli.context import Context
from bot.errors import UsageError

MODES = ("pr", "suggest", "comment")


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``action``."""
    p = sub.add_parser(
        "action",
        parents=[common],
        help="repair a failed GitHub Actions job in its own workspace and publish the fix",
        description="Read the GitHub Actions environment (GITHUB_EVENT_PATH, GITHUB_REPOSITORY, GITHUB_SHA, "
        "…, the Action's INPUT_* values), reproduce and repair the failure in GITHUB_WORKSPACE with the same "
        "engine as `arcs fix`, then open a pull request, post review suggestions or a comment with the token "
        "given as INPUT_GITHUB_TOKEN; writes the job summary and the step outputs.",
    )
    p.add_argument("--mode", choices=MODES, help="override INPUT_MODE (pr, suggest or comment)")
    p.add_argument("--test", metavar="CMD", help="override INPUT_TEST (the test command)")
    p.add_argument("--tier", metavar="TIER", help="override INPUT_TIER (0, small, medium, large, auto)")
    p.add_argument("--budget-usd", metavar="X", help="override INPUT_BUDGET_USD")
    p.add_argument("--model", metavar="NAME", help="override INPUT_MODEL (the Anthropic model)")
    p.add_argument(
        "--timeout-minutes", metavar="N", help="override INPUT_TIMEOUT_MINUTES (a bound on the whole run)"
    )
    p.set_defaults(handler=run_action_cmd)


def run_action_cmd(args: argparse.Namespace, ctx: Context) -> int:
    """Read the environment, run the Action, print the outcome; the exit code is the outcome's."""
    from bot.action.env import read_action_env
    from bot.action.run import ActionDeps, run_action
    from bot.action.summary import step_outputs

    environ = dict(os.environ)
    for flag, name in (
        ("mode", "INPUT_MODE"),
        ("test", "INPUT_TEST"),
        ("tier", "INPUT_TIER"),
        ("budget_usd", "INPUT_BUDGET_USD"),
        ("model", "INPUT_MODEL"),
        ("timeout_minutes", "INPUT_TIMEOUT_MINUTES"),
    ):
        value = getattr(args, flag)
        if value is not None:
            if not str(value).strip():
                raise UsageError(f"action: --{flag.replace('_', '-')} is empty")
            environ[name] = str(value)
    env = read_action_env(environ)
    # --json keeps stdout one JSON document: the workflow commands go to stderr (the runner reads both).
    deps = ActionDeps(progress=ctx.out.info, commands=_stderr_line) if ctx.out.json_mode else None
    outcome = run_action(ctx.settings, env, deps or ActionDeps(progress=ctx.out.info))
    _keep_trace(outcome.trace_path, ctx)
    data = {
        **step_outputs(outcome),
        "fixed": outcome.fixed,
        "reason": outcome.reason,
        "exit_code": outcome.exit_code,
        "published_detail": outcome.published.detail if outcome.published is not None else "",
        "signature": outcome.signature,
        "sandbox": outcome.sandbox,
    }
    published = dataclasses.asdict(outcome.published) if outcome.published is not None else None
    line = f"arcs action: {outcome.verdict}" + (f": {outcome.reason}" if outcome.reason else "")
    if published is not None:
        line += (
            f"\npublished ({published['mode']}): {'yes' if published['ok'] else 'no'}: {published['detail']}"
        )
        if published["url"]:
            line += f" {published['url']}"
    ctx.out.emit(data, line)
    return outcome.exit_code


def _stderr_line(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _keep_trace(trace_path: str, ctx: Context) -> None:
    """A copy of the run's trace under ``$ARCS_HOME/traces``, where ``arcs dashboard`` finds it
    (the trace itself stays in ``RUNNER_TEMP`` for the workflow's artifact)."""
    from bot.dashboard.local import copy_action_trace

    try:
        copy_action_trace(trace_path, ctx.settings.traces_dir)
    except OSError as exc:
        ctx.out.info(f"note: the trace was not copied to {ctx.settings.traces_dir} ({exc.strerror or exc})")


__all__ = ["register", "run_action_cmd"]
