"""``FakeRunner``: the :class:`runners.base.Runner` port's test double.

It returns scripted :class:`Execution` values per command and records every call, so code that
drives a runner (test execution, triage, the repair loop) can be tested without a sandbox::

    runner = FakeRunner().on("pytest", fake_execution(exit_code=1, stdout=PYTEST_OUTPUT))
    run_tests(runner, repo, resolved)
    assert runner.calls[0].env["CI"] == "true"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from runners.base import Execution, KilledBy

Response = Execution | Callable[["FakeCall"], Execution]


@dataclass(frozen=True, slots=True)
class FakeCall:
    """One recorded :meth:`FakeRunner.run` call."""

    workspace: Path
    command: str
    timeout_s: float
    memory_mb: int
    network: bool
    env: Mapping[str, str]
    collect: tuple[str, ...]
    private: Path | None = None
    """The run's private folder (the hang probe, the tracer), when it has one."""


@dataclass
class _Rule:
    pattern: re.Pattern[str]
    responses: list[Response]
    used: int = 0

    def next(self) -> Response:
        # Scripted responses are consumed in order; the last one repeats.
        response = self.responses[min(self.used, len(self.responses) - 1)]
        self.used += 1
        return response


def fake_execution(
    *,
    exit_code: int = 0,
    stdout: str = "",
    stderr: str = "",
    duration_s: float = 0.01,
    killed_by: KilledBy | None = None,
    truncated: bool = False,
    artifacts: Mapping[str, str] | None = None,
) -> Execution:
    """An :class:`Execution` with defaults for everything (``command`` is filled in by the runner)."""
    return Execution(
        command="",
        exit_code=exit_code,
        stdout=stdout,
        stderr=stderr,
        duration_s=duration_s,
        killed_by=killed_by,
        truncated=truncated,
        artifacts=dict(artifacts or {}),
    )


@dataclass
class FakeRunner:
    """A :class:`runners.base.Runner` that answers from a script and records its calls."""

    default: Response | None = None
    """Answer for commands no rule matches; None makes such a call raise ``LookupError``."""
    name: str = "fake"
    calls: list[FakeCall] = field(default_factory=list)
    _rules: list[_Rule] = field(default_factory=list, init=False, repr=False)

    def on(self, pattern: str, *responses: Response, regex: bool = False) -> FakeRunner:
        """Answer commands containing ``pattern`` (a regex with ``regex=True``) with ``responses`` in turn.

        A response is an :class:`Execution` or a callable taking the :class:`FakeCall` (it can
        look at, or write into, the workspace). Rules are tried in the order they were added.
        """
        if not responses:
            raise ValueError("give at least one response")
        compiled = re.compile(pattern if regex else re.escape(pattern))
        self._rules.append(_Rule(compiled, list(responses)))
        return self

    def commands(self) -> list[str]:
        """The commands run so far, in order."""
        return [c.command for c in self.calls]

    def run(
        self,
        workspace: Path,
        command: str,
        *,
        timeout_s: float = 600.0,
        memory_mb: int = 2048,
        network: bool = False,
        env: Mapping[str, str] | None = None,
        collect: tuple[str, ...] = (),
        private: Path | None = None,
    ) -> Execution:
        """Record the call and return the scripted answer for ``command``."""
        call = FakeCall(
            Path(workspace),
            command,
            timeout_s,
            memory_mb,
            network,
            dict(env or {}),
            tuple(collect),
            Path(private) if private is not None else None,
        )
        self.calls.append(call)
        response: Response | None = None
        for rule in self._rules:
            if rule.pattern.search(command):
                response = rule.next()
                break
        if response is None:
            response = self.default
        if response is None:
            raise LookupError(f"FakeRunner has no scripted result for {command!r}")
        execution = response(call) if callable(response) else response
        return replace(execution, command=command)
