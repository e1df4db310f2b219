"""In-repo fakes of the change-aware repair ports: :class:`FakeCommandBench` (autofix) and
:class:`FakeBisectProbe` (culprit bisection). Pure: files are a dict, tools are Python callables."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from jobs.repair.bisect import Outcome
from jobs.repair.edits import AppliedEdits, FileChange
from jobs.repair.tier0.autofix import MISSING_COMMAND, CommandRun

Tool = Callable[[Sequence[str], dict[str, str]], int]
"""A fake program: (argv after the program name, the tree's files, mutable) -> exit code."""


@dataclass
class FakeCommandBench:
    """Runs commands on a copy of ``base`` with fake ``tools`` (program name -> callable).

    Each line of a script is one command (split with :func:`shlex.split`); an unknown program
    exits 127 like a shell. ``calls`` records every command, in order.
    """

    base: Mapping[str, str]
    tools: Mapping[str, Tool]
    calls: list[str] = field(default_factory=list)

    def run_command(
        self, command: str, *, change: AppliedEdits | None = None, timeout_s: float
    ) -> CommandRun:
        """See :class:`jobs.repair.tier0.autofix.CommandBench`."""
        self.calls.append(command)
        files = dict(self.base)
        for c in change.changes if change is not None else ():
            if c.after is None:
                files.pop(c.path, None)
            else:
                files[c.path] = c.after
        code = 0
        for line in command.splitlines():
            argv = shlex.split(line)
            tool = self.tools.get(argv[0]) if argv else None
            code = MISSING_COMMAND if tool is None else tool(argv[1:], files)
        changes = tuple(
            FileChange(path, self.base.get(path), files.get(path))
            for path in sorted(set(self.base) | set(files))
            if self.base.get(path) != files.get(path)
        )
        return CommandRun(command, code, change=AppliedEdits(changes))


@dataclass
class FakeBisectProbe:
    """A :class:`jobs.repair.bisect.Probe` over a scripted history: commit -> outcomes in order.

    A commit with several outcomes answers them one per call (the last repeats), so a flaky
    commit can fail once and pass the next time. ``calls`` records the commits probed.
    """

    outcomes: Mapping[str, Sequence[Outcome]]
    calls: list[str] = field(default_factory=list)

    def __call__(self, sha: str) -> Outcome:
        """The scripted outcome of the failing targets at ``sha``."""
        seen = self.calls.count(sha)
        self.calls.append(sha)
        answers = self.outcomes[sha]
        return answers[min(seen, len(answers) - 1)]


__all__ = ["FakeBisectProbe", "FakeCommandBench", "Tool"]
