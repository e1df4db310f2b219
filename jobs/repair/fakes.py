"""In-repo fakes of the repair core's ports: workbench, retriever, clock, proposer, source view.

They are deterministic and in-memory, so the controller can be tested exhaustively without a
sandbox, an index or a model:

- :class:`FakeWorkbench`: edits applied to a dict of files; test outcomes scripted per patch key
  (``patch_key`` of the candidate's diff), by a ``judge(files, select)`` function, or a default;
  base runs (reproduction, triage) served from a list in order. :class:`ProfilingWorkbench` is
  one that is also a :class:`~jobs.repair.spectrum.Profiler` (a scripted spectrum).
- :class:`FakeRetriever`: scripted hits, records queries.
- :class:`FakeClock`: time moves only when told (or by a fixed tick per reading).
- :class:`ScriptedProposer`: proposals per round from a script, records requests.
- :class:`FakeInterrupt`: answers a reason to stop from the ``after``-th check on.
- :class:`ScriptedLLM`: an :class:`~jobs.repair.llm.LLM` answering from a script, records requests.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from jobs.repair.budget import Budget
from jobs.repair.diffing import DEFAULT_MODE, patch_key
from jobs.repair.edits import AppliedEdits, EditError, FileChange
from jobs.repair.llm import LLMError, LLMRequest, LLMResponse, ToolSpec
from jobs.repair.model import Edit, Failure, Proposal
from jobs.repair.ports import ProposalRequest
from jobs.repair.spectrum import Spectrum

if TYPE_CHECKING:
    from indexing.model import Query, SearchHit
    from jobs.repair.llm import ToolResult

from jobs.repair.workbench import TestOutcome

Judge = Callable[[Mapping[str, str], Sequence[str] | None], TestOutcome]


class InMemorySource:
    """A :class:`~jobs.repair.ports.SourceView` over a dict of files."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(files)

    def read(self, path: str) -> str | None:
        """The file's text, or None."""
        return self._files.get(path)

    def files(self) -> Sequence[str]:
        """All paths, sorted."""
        return sorted(self._files)


def apply_in_memory(files: Mapping[str, str], edits: Sequence[Edit]) -> AppliedEdits:
    """:func:`jobs.repair.edits.apply_edits` semantics over a dict (no file system)."""
    current: dict[str, str | None] = {}

    def text(path: str) -> str | None:
        return current[path] if path in current else files.get(path)

    for i, e in enumerate(edits):
        if not e.path or e.path.startswith("/") or ".." in e.path.split("/"):
            raise EditError(i, e.path, f"{e.path!r} is not a repository-relative path")
        now = text(e.path)
        if e.kind == "create":
            if now is not None:
                raise EditError(i, e.path, f"{e.path} already exists; use replace to change it")
            current[e.path] = e.new if e.new.endswith("\n") or not e.new else e.new + "\n"
        elif e.kind == "delete_file":
            if now is None:
                raise EditError(i, e.path, f"{e.path} does not exist")
            current[e.path] = None
        elif now is None:
            raise EditError(i, e.path, f"{e.path} does not exist")
        elif e.kind == "replace":
            count = now.count(e.old) if e.old else 0
            if count == 0:
                raise EditError(i, e.path, f"old text not found in {e.path}")
            if count > 1:
                raise EditError(i, e.path, f"old text occurs {count} times in {e.path}; include more context")
            current[e.path] = now.replace(e.old, e.new, 1)
        else:  # insert
            lines = now.splitlines(keepends=True)
            if e.line > len(lines):
                raise EditError(i, e.path, f"line {e.line} is past the end of {e.path} ({len(lines)} lines)")
            new = e.new if e.new.endswith("\n") else e.new + "\n"
            current[e.path] = "".join([*lines[: e.line], new, *lines[e.line :]])
    changes = tuple(
        FileChange(path=p, before=files.get(p), after=current[p], mode=DEFAULT_MODE)
        for p in sorted(current)
        if current[p] != files.get(p)
    )
    return AppliedEdits(changes=changes)


def outcome(
    passed: Sequence[str] = (),
    failed: Sequence[str] | Mapping[str, Failure] = (),
    *,
    errors: Sequence[str] = (),
    duration_s: float = 0.1,
    timed_out: bool = False,
) -> TestOutcome:
    """A :class:`TestOutcome` with one :class:`Failure` per failed id (``AssertionError``)."""
    if isinstance(failed, Mapping):
        failures = tuple(failed.values())
        failed_ids = tuple(failed)
    else:
        failed_ids = tuple(failed)
        failures = tuple(Failure(test_id=t, type="AssertionError", message=f"{t} failed") for t in failed_ids)
    failures += tuple(Failure(test_id=e, type="collection", message=f"{e}: error") for e in errors)
    return TestOutcome(
        passed=tuple(passed),
        failed=failed_ids,
        errors=tuple(errors),
        failures=failures,
        exit_code=1 if failed_ids or errors or timed_out else 0,
        duration_s=duration_s,
        timed_out=timed_out,
    )


def narrow(result: TestOutcome, select: Sequence[str]) -> TestOutcome:
    """``result`` restricted to the ids ``select`` names (exactly or as a prefix)."""

    def keep(test_id: str) -> bool:
        return any(test_id == s or test_id.startswith((s + "::", s + "[")) for s in select)

    return replace(
        result,
        passed=tuple(t for t in result.passed if keep(t)),
        failed=tuple(t for t in result.failed if keep(t)),
        failures=tuple(f for f in result.failures if keep(f.test_id) or f.test_id in result.errors),
        selected=True,
    )


@dataclass(frozen=True, slots=True)
class WorkbenchCall:
    """One recorded :meth:`FakeWorkbench.run_tests` call."""

    patch_key: str
    """'' for the base tree."""
    select: tuple[str, ...] | None
    timeout_s: float


class FakeWorkbench:
    """The :class:`~jobs.repair.workbench.Workbench` port's fake (see the module docstring).

    Outcome of a candidate run, first match wins: ``outcomes[patch_key(diff)]``, then
    ``judge(files_after, select)``, then ``default``. Selected runs are narrowed to ``select``
    when ``selectable``. Each run advances ``clock`` by ``run_s``.
    """

    def __init__(
        self,
        files: Mapping[str, str],
        *,
        base: TestOutcome | Sequence[TestOutcome],
        outcomes: Mapping[str, TestOutcome] | None = None,
        judge: Judge | None = None,
        default: TestOutcome | None = None,
        framework: str = "pytest",
        selectable: bool = True,
        clock: FakeClock | None = None,
        run_s: float = 0.0,
        verify_outcomes: Mapping[str, TestOutcome] | None = None,
        fail_fast: bool = False,
        commands: Mapping[str, object] | None = None,
    ) -> None:
        self.files = dict(files)
        self.base = [base] if isinstance(base, TestOutcome) else list(base)
        if not self.base:
            raise ValueError("give at least one base outcome")
        self.outcomes = dict(outcomes or {})
        self.judge = judge
        self.default = default
        self._framework = framework
        self.selectable = selectable
        self.clock = clock
        self.run_s = run_s
        self.calls: list[WorkbenchCall] = []
        self.verify_outcomes = dict(verify_outcomes or {})
        self.fail_fast = fail_fast
        self.verifications: list[WorkbenchCall] = []
        """:meth:`verify` calls (not counted in :attr:`executions`: the loop does not count them either)."""
        self._commands = dict(commands or {})
        self.previews = 0
        self._base_used = 0

    @property
    def framework(self) -> str:
        """The scripted framework name."""
        return self._framework

    def source(self) -> InMemorySource:
        """The base files."""
        return InMemorySource(self.files)

    def preview(self, edits: Sequence[Edit]) -> AppliedEdits:
        """Apply in memory (raises :class:`EditError` like the real one)."""
        self.previews += 1
        return apply_in_memory(self.files, edits)

    def run_tests(
        self, change: AppliedEdits | None, *, select: Sequence[str] | None = None, timeout_s: float
    ) -> TestOutcome:
        """The scripted outcome (see the class docstring)."""
        key = "" if change is None else patch_key(change.diff())
        self.calls.append(WorkbenchCall(key, None if select is None else tuple(select), timeout_s))
        if self.clock is not None:
            # A run never outlasts its timeout: the sandbox kills it (then it counts as timed out).
            self.clock.advance(min(self.run_s, timeout_s))
        if self.run_s > timeout_s:
            return outcome(errors=("<run>",), timed_out=True)
        if change is None:
            result = self.base[min(self._base_used, len(self.base) - 1)]
            self._base_used += 1
        elif key in self.outcomes:
            result = self.outcomes[key]
        elif self.judge is not None:
            after = dict(self.files)
            for c in change.changes:
                if c.after is None:
                    after.pop(c.path, None)
                else:
                    after[c.path] = c.after
            result = self.judge(after, select)
        elif self.default is not None:
            result = self.default
        else:
            raise LookupError(f"FakeWorkbench has no outcome for patch {key}")
        if select is not None and self.selectable and not result.selected:
            result = narrow(result, select)
        return result

    def verify(self, change: AppliedEdits | None, *, timeout_s: float) -> TestOutcome:
        """The exact command's outcome: ``verify_outcomes[patch_key]``, else the full run's outcome
        (with ``fail_fast``: cut after its first failure, as ``pytest -x`` would stop)."""
        key = "" if change is None else patch_key(change.diff())
        if key in self.verify_outcomes:
            self.verifications.append(WorkbenchCall(key, None, timeout_s))
            return self.verify_outcomes[key]
        calls, base_used = list(self.calls), self._base_used
        result = self.run_tests(change, select=None, timeout_s=timeout_s)
        self.calls, self._base_used = calls, base_used
        self.verifications.append(WorkbenchCall(key, None, timeout_s))
        if self.fail_fast and (result.failed or result.errors):
            first = (*result.failed, *result.errors)[0]
            result = replace(
                result,
                failed=tuple(t for t in result.failed if t == first),
                errors=tuple(t for t in result.errors if t == first),
                failures=tuple(f for f in result.failures if f.test_id == first),
                exit_code=result.exit_code or 1,
            )
        return result

    @property
    def commands(self) -> Mapping[str, object]:
        """What the loop records as ``trace.commands`` (scripted)."""
        return self._commands

    @property
    def executions(self) -> int:
        """Test runs made."""
        return len(self.calls)


class ProfilingWorkbench(FakeWorkbench):
    """A :class:`FakeWorkbench` that is also a :class:`~jobs.repair.spectrum.Profiler`: ``spectrum``
    answers the scripted ``profile`` (None: tracing not possible; an exception: raised). A
    separate class, so a plain fake stays a workbench that cannot trace."""

    def __init__(
        self,
        files: Mapping[str, str],
        *,
        profile: Spectrum | Exception | None,
        base: TestOutcome | Sequence[TestOutcome],
        **kwargs: Any,
    ) -> None:
        super().__init__(files, base=base, **kwargs)
        self.profile = profile
        self.spectrum_calls: list[tuple[tuple[str, ...], bool, float]] = []
        """``(failing, suite, timeout_s)`` of every :meth:`spectrum` call."""
        self.spectrum_also: list[tuple[str, ...]] = []
        """The ``also`` ids of each call (passing neighbours asked for on a slow suite)."""

    def spectrum(
        self, failing: Sequence[str], *, suite: bool, timeout_s: float, also: Sequence[str] = ()
    ) -> Spectrum | None:
        """The scripted spectrum (one execution; advances the clock like a run)."""
        self.spectrum_calls.append((tuple(failing), suite, timeout_s))
        self.spectrum_also.append(tuple(also))
        if self.clock is not None:
            self.clock.advance(min(self.run_s, timeout_s))
        if isinstance(self.profile, Exception):
            raise self.profile
        return self.profile

    @property
    def executions(self) -> int:
        """Test runs made, the traced ones included."""
        return len(self.calls) + len(self.spectrum_calls)


class FakeClock:
    """A :class:`~jobs.repair.ports.Clock` under test control; ``tick`` is added after each reading."""

    def __init__(self, start: float = 0.0, *, tick: float = 0.0) -> None:
        self.now = start
        self.tick = tick

    def monotonic(self) -> float:
        """The current fake time."""
        value = self.now
        self.now += self.tick
        return value

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self.now += seconds


class FakeRetriever:
    """A retriever answering from a script (a list of hits, or ``query -> hits``); records queries."""

    def __init__(self, hits: Sequence[SearchHit] | Callable[[Query], list[SearchHit]] = ()) -> None:
        self._hits = hits
        self.queries: list[Query] = []

    def search(self, query: Query) -> list[SearchHit]:
        """The scripted hits, cut to ``query.k``."""
        self.queries.append(query)
        hits = self._hits(query) if callable(self._hits) else list(self._hits)
        return hits[: query.k]

    def hierarchical(self, query: Query, depth: int = 3) -> list[SearchHit]:
        """Same as :meth:`search`."""
        return self.search(query)


ProposalScript = Sequence[Sequence[Proposal]] | Callable[[ProposalRequest], list[Proposal]]


class ScriptedProposer:
    """A proposer answering round ``i`` with ``script[i]`` (nothing past the end), or by a
    function of the request; capped at ``request.n``. Records requests and budgets."""

    def __init__(self, script: ProposalScript, *, name: str = "scripted", cap_at_n: bool = True) -> None:
        self.script = script
        self.name = name
        self.cap_at_n = cap_at_n
        self.requests: list[ProposalRequest] = []
        self.budgets: list[Budget] = []
        self.last_budget_stop: str | None = None
        """Budget dimension that made the latest call drop proposals (like AnthropicProposer)."""

    def propose(self, request: ProposalRequest, remaining: Budget) -> list[Proposal]:
        """The scripted proposals of this call."""
        index = len(self.requests)
        self.requests.append(request)
        self.budgets.append(remaining)
        if callable(self.script):
            out = list(self.script(request))
        else:
            out = list(self.script[index]) if index < len(self.script) else []
        out = out[: request.n] if self.cap_at_n else out
        # Like a real proposer, never spend more than `remaining` (tokens, USD).
        kept: list[Proposal] = []
        tokens, usd = 0, 0.0
        self.last_budget_stop = None
        for p in out:
            if tokens + p.usage.tokens > remaining.tokens or usd + p.usage.usd > remaining.usd:
                self.last_budget_stop = "tokens" if tokens + p.usage.tokens > remaining.tokens else "usd"
                break
            tokens += p.usage.tokens
            usd += p.usage.usd
            kept.append(p)
        return kept


class FakeInterrupt:
    """An :class:`~jobs.repair.ports.Interrupt` that lets ``after`` checks pass, then answers
    ``reason`` on every later one (``after=0``: stop before reproduction). Counts its checks."""

    def __init__(self, after: int, reason: str = "stopped by @tester") -> None:
        self.after = after
        self.reason = reason
        self.checks = 0

    def check(self) -> str | None:
        """``reason`` once more than ``after`` checks were made, else None."""
        self.checks += 1
        return self.reason if self.checks > self.after else None


def replace_proposal(
    path: str,
    old: str,
    new: str,
    *,
    explanation: str = "",
    proposer: str = "scripted",
    variant: str = "",
    usage_tokens: int = 0,
    usd: float = 0.0,
) -> Proposal:
    """A one-edit proposal (tests' shorthand); ``usage_tokens``/``usd`` simulate model spend."""
    from jobs.repair.model import Usage

    usage = Usage(input_tokens=usage_tokens, usd=usd, calls=1 if usage_tokens or usd else 0)
    return Proposal(
        edits=(Edit(path=path, old=old, new=new),),
        explanation=explanation or f"change {old.strip()!r} to {new.strip()!r} in {path}",
        proposer=proposer,
        variant=variant,
        usage=usage,
    )


ScriptItem = LLMResponse | LLMError | Callable[[LLMRequest], LLMResponse]


class ScriptedLLM:
    """In-process fake :class:`~jobs.repair.llm.LLM`: answers from a script, records every request.

    Script items are responses, errors (raised) or callables ``request -> response``.
    Running out of script raises AssertionError (a test bug, never an LLMError).
    """

    def __init__(self, script: Iterable[ScriptItem] = (), *, model: str = "scripted-model") -> None:
        self._model = model
        self._script: deque[ScriptItem] = deque(script)
        self.requests: list[LLMRequest] = []

    @property
    def model(self) -> str:
        """The model id reported for pricing and fingerprints."""
        return self._model

    def add(self, *items: ScriptItem) -> None:
        """Append items to the script."""
        self._script.extend(items)

    @property
    def pending(self) -> int:
        """Script items not consumed yet."""
        return len(self._script)

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Serve the next script item."""
        self.requests.append(request)
        if not self._script:
            raise AssertionError(f"ScriptedLLM: no scripted response left for request {request.purpose!r}")
        item = self._script.popleft()
        if isinstance(item, LLMError):
            raise item
        if isinstance(item, LLMResponse):
            return item
        return item(request)


class FakeToolBox:
    """In-process :class:`~jobs.repair.tools.ToolBox`: answers each tool from ``answers`` (a
    :class:`~jobs.repair.llm.ToolResult` or a callable ``args -> ToolResult``), records every call;
    an unknown tool gets an error result, as the real box gives."""

    def __init__(
        self,
        answers: Mapping[str, ToolResult | Callable[[object], ToolResult]],
        *,
        specs: tuple[ToolSpec, ...] | None = None,
    ) -> None:
        from jobs.repair.tools import OPEN, RUN_TESTS, SEARCH, SYMBOL

        self.answers = dict(answers)
        everything = {s.name: s for s in (OPEN, SEARCH, SYMBOL, RUN_TESTS)}
        self._specs = (
            specs if specs is not None else tuple(everything[n] for n in self.answers if n in everything)
        )
        self.calls: list[tuple[str, object]] = []

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools answered."""
        return self._specs

    def call(self, name: str, args: object) -> ToolResult:
        """The scripted answer."""
        from jobs.repair.llm import ToolResult

        self.calls.append((name, args))
        answer = self.answers.get(name)
        if answer is None:
            return ToolResult(f"unknown tool {name!r}", is_error=True)
        return answer if isinstance(answer, ToolResult) else answer(args)


__all__ = [
    "FakeClock",
    "FakeInterrupt",
    "FakeRetriever",
    "FakeToolBox",
    "FakeWorkbench",
    "InMemorySource",
    "Judge",
    "ProfilingWorkbench",
    "ScriptItem",
    "ScriptedLLM",
    "ScriptedProposer",
    "WorkbenchCall",
    "apply_in_memory",
    "narrow",
    "outcome",
    "replace_proposal",
]
