"""The proposer's conversation when the tier allows tools: look around, then ``propose_patch``.

:func:`converse` sends the proposal request with the round's tools next to ``propose_patch``
(``tool_choice: any`` — the model must call some tool, it picks which), answers every tool call
through the :class:`~jobs.repair.tools_session.ToolSession` (several calls in one turn are
answered together, in order), sends the results back and repeats until ``propose_patch`` arrives.
It forces ``propose_patch`` (the request's own forced ``tool_choice``) once the round's tool
calls are used up, or when the budget could not pay for another tool turn *and* the forced call
after it (:meth:`~jobs.repair.meter.BudgetMeter.affordable_output` with ``then_chars``).

**Every request stays within the proposer's context budget** (the session's
``context_chars``, the packer's budget: 60k characters for the large tier). A tool turn is
offered only while the request leaves room for a result of at least :data:`MIN_RESULT_CHARS`
(:func:`result_limit`, after :data:`ANSWER_RESERVE` for the model's own turn); else the tools
are no longer offered and the final tool is forced. Once the model asked for its calls, the
worst case of their results — calls × ``result_chars`` — is checked against what the request
plus the model's turn leave: when it would not fit, each result is clipped to its share of the
room (whole lines, :func:`~jobs.repair.tools_session.fit_result`, recorded as sent); a turn
whose calls cannot get :data:`MIN_RESULT_CHARS` each is dropped unanswered and the final tool
forced on the previous request. So no request exceeds the budget, whatever the model asks.

Every turn is metered on the proposer's :class:`~jobs.repair.meter.BudgetMeter` and summed into
:attr:`Conversation.usage`, so the loop charges what the whole conversation cost — also when it
ended early (a failed call, no budget for the forced call).

The planner converses the same way (:class:`RoleTools`, ``submit_plan`` as the final tool): it
shares the round's session with the proposer (the same call limit, log and replay), is offered the
tools that execute nothing (``open``, ``search``, ``symbol``) and its calls are recorded with
``role: "planner"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from jobs.repair.llm import (
    ANY_TOOL,
    LLM,
    LLMError,
    LLMRequest,
    LLMResponse,
    Message,
    ToolResultBlock,
    ToolSpec,
)
from jobs.repair.meter import BudgetMeter
from jobs.repair.model import Usage
from jobs.repair.ports import Tools
from jobs.repair.tools import EXECUTING_TOOLS
from jobs.repair.tools_session import ToolSession

RESULTS_AHEAD = 2
"""Tool results (of ``result_chars`` each) a tool turn keeps budget for, besides the forced call."""
MIN_RESULT_CHARS = 1_000
"""The smallest per-call room worth a tool turn (a few dozen lines of code)."""
ANSWER_RESERVE = 1_500
"""Characters kept for the model's own tool-asking turn (its text and call inputs) when deciding
whether a tool turn still fits the context budget."""


@dataclass
class Conversation:
    """How one candidate's conversation ended."""

    response: LLMResponse | None = None
    """The final answer (normally with ``propose_patch``); None when the conversation was cut."""
    usage: Usage = field(default_factory=Usage)
    """All turns together."""
    turns: int = 0
    budget_stop: str | None = None
    """``tokens``/``usd`` when the budget could not pay for the next (forced) call."""
    error: LLMError | None = None


def converse(
    llm: LLM,
    base: LLMRequest,
    session: Tools,
    meter: BudgetMeter,
    *,
    variant: str,
    minimum: int,
    role: str = "proposer",
    exclude: frozenset[str] = frozenset(),
) -> Conversation:
    """Run one candidate's conversation (see the module docstring). ``base`` is the forced
    ``propose_patch`` request; its ``tool_choice`` names the tool that ends the conversation.
    ``role`` is recorded with every call; the tools in ``exclude`` are not offered (a call to
    one is answered as an unknown tool)."""
    final = base.tool_choice
    offered = tuple(s for s in session.specs if s.name not in exclude)
    names = frozenset(s.name for s in offered) if exclude else None
    tools = (*base.tools, *offered)
    messages = list(base.messages)
    out = Conversation()
    forced = False
    while True:
        request = replace(
            base,
            messages=tuple(messages),
            tools=tools,
            tool_choice=ANY_TOOL,
            purpose=f"{base.purpose}:turn{out.turns + 1}" if out.turns else base.purpose,
        )
        cap = session.context_chars
        per_result = result_limit(request.chars + ANSWER_RESERVE, 1, session.result_chars, cap)
        free = not forced and session.calls_left > 0 and per_result >= MIN_RESULT_CHARS
        if free:
            ahead = request.chars + RESULTS_AHEAD * per_result
            fit = meter.affordable_output(request, llm.model, minimum=minimum, then_chars=ahead)
            free = fit.short is None
        if not free:
            request = replace(request, tool_choice=final)
            fit = meter.affordable_output(request, llm.model, minimum=minimum)
            if fit.short is not None:
                out.budget_stop = fit.short
                return out
        try:
            response = llm.complete(replace(request, max_tokens=fit.max_tokens))
        except LLMError as exc:
            out.error = exc
            return out
        meter.charge(response.usage)
        out.usage = out.usage + response.usage
        out.turns += 1
        calls = [c for c in response.tool_calls if c.name != final]
        if not free or response.tool_call(final) is not None or not calls:
            out.response = response
            return out
        answer = response.as_message()
        limit = per_result
        if cap is not None:
            limit = result_limit(request.chars + answer.chars, len(calls), session.result_chars, cap)
            if limit < MIN_RESULT_CHARS:
                # no room to answer these calls: drop the turn, force the final tool next
                forced = True
                continue
        results = []
        for c in calls:
            result = session.call(
                c.id,
                c.name,
                c.input,
                variant=variant,
                turn=out.turns,
                usage=response.usage,
                role=role,
                final=final,
                offered=names,
                limit=limit,
            )
            results.append(ToolResultBlock(c.id, result.text or "(empty result)", result.is_error))
        messages += [answer, Message("user", tuple(results))]


def result_limit(used_chars: int, calls: int, result_chars: int, cap: int | None) -> int:
    """The characters each of ``calls`` results may have in a request of ``used_chars`` so far:
    ``result_chars``, or that share of the room left under ``cap`` when ``calls`` results of
    ``result_chars`` would take the request past it (0 when nothing is left, or no call)."""
    if calls <= 0:
        return 0
    if cap is None:
        return result_chars
    return max(0, min(result_chars, (cap - used_chars) // calls))


PLANNER_MIN_OUTPUT = 256
"""The smallest ``submit_plan`` answer worth asking for (the role guard's floor)."""


@dataclass(frozen=True)
class RoleTools:
    """What a role other than the proposer needs to look around (the planner): the round's
    session, the model *without* the loop's guard and the meter that charges every turn (the
    guard's own meter, so nothing is charged twice)."""

    session: ToolSession
    llm: LLM
    meter: BudgetMeter
    role: str = "planner"
    exclude: frozenset[str] = EXECUTING_TOOLS
    """Not offered: the planner runs no tests (its failures are in the task already, and a
    run would spend an execution the candidates need)."""
    minimum: int = PLANNER_MIN_OUTPUT

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools offered to the role."""
        return tuple(s for s in self.session.specs if s.name not in self.exclude)

    @property
    def available(self) -> bool:
        """The round has calls left and the role has a tool to call."""
        return self.session.calls_left > 0 and bool(self.specs)

    def converse(self, base: LLMRequest) -> Conversation:
        """:func:`converse` for this role (``base`` forces the role's final tool)."""
        return converse(
            self.llm,
            base,
            self.session,
            self.meter,
            variant="plan" if self.role == "planner" else self.role,
            minimum=self.minimum,
            role=self.role,
            exclude=self.exclude,
        )


__all__ = [
    "ANSWER_RESERVE",
    "MIN_RESULT_CHARS",
    "PLANNER_MIN_OUTPUT",
    "RESULTS_AHEAD",
    "Conversation",
    "RoleTools",
    "converse",
    "result_limit",
]
