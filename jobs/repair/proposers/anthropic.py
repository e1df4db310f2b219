"""The LLM proposer: one forced ``propose_patch`` tool call per candidate, diversified prompts.

Prompt layout (see :mod:`jobs.repair.llm` for caching): the system block is ``prompts/system.md``;
the cached context block is ``prompts/propose_context.md`` (task with untrusted text fenced,
interface invariants, plan, evidence, feedback) packed under ``context_chars`` with stable
truncation (:func:`jobs.repair.prompts.pack_context`); the user turn is ``prompts/propose.md``
with one prompt *variant* (QualityFlow's diversified prompting).

For ``request.n > 1`` the calls are made sequentially, one variant each, rotating through the
variants by round so consecutive rounds start from different angles. Sequential on purpose: each
call's real usage is known before the next one is budgeted, the shared context block is cached
by the first call, and replays see the calls in a fixed order. ``n`` is capped at the number of
variants (without sampling temperature, repeating a variant would repeat its answer).

Budget: the calls are metered by a :class:`~jobs.repair.meter.BudgetMeter` over the budget
offered, the same estimate the loop's role calls use (input chars/3 + 128, priced as a cache write,
the dearer case): ``max_tokens`` is lowered so that input + output fit the remaining tokens and USD;
when fewer than ``min_output_tokens`` would remain, no call is made (``last_budget_stop`` says why).

Tools (issue #15): when the round offers tools (``ProposalRequest.tools``, the tier's
``tool_calls`` > 0) the user turn also gets ``prompts/tools.md`` and each candidate is a
conversation (:func:`jobs.repair.proposers.tooluse.converse`): the model may ``open``, ``search``,
``symbol`` and ``run_tests`` until it calls ``propose_patch``, the round's calls are used up or
the budget is short — then ``propose_patch`` is forced. A proposal's ``usage`` is its whole
conversation's.

Never raises for model trouble: a failed call is recorded in ``last_errors`` and ends the
round's calls; an unusable answer becomes a :class:`Proposal` without edits whose explanation
starts with ``model returned no usable edits:`` so the loop can feed the reason back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from jobs.repair.budget import Budget
from jobs.repair.llm import LLM, LLMError, LLMRequest, LLMResponse, Message, ToolSpec
from jobs.repair.meter import BudgetMeter
from jobs.repair.model import Edit, EditKind, Proposal, normalize_repo_path
from jobs.repair.ports import ProposalRequest
from jobs.repair.pricing import PriceTable
from jobs.repair.prompts import PackedContext, load_prompt, pack_context, render
from jobs.repair.proposers.tooluse import converse
from jobs.repair.roles import tool_input

VARIANTS: tuple[str, ...] = ("minimal", "root_cause", "test_expectation", "callers")
REQUEST_SLACK = 400
"""Characters kept free beside the measured parts of a request (the "already tried" line)."""


def request_reserve() -> int:
    """Characters a proposal request spends beside its context block, at most: the system prompt,
    the instruction message with the longest variant and the tools paragraph, and the specs of
    every tool a request can offer (as :attr:`LLMRequest.chars` counts them)."""
    from jobs.repair.tools import OPEN, RUN_TESTS, SEARCH, SYMBOL

    specs = LLMRequest(system="", messages=(), tools=(PROPOSE_TOOL, OPEN, SEARCH, SYMBOL, RUN_TESTS)).chars
    longest = max(len(load_prompt(f"variant_{v}")) for v in VARIANTS)
    words = len(load_prompt("system")) + len(load_prompt("propose")) + len(load_prompt("tools"))
    return specs + longest + words + REQUEST_SLACK


def context_budget(request_chars: int) -> int:
    """The context block's budget within a request of at most ``request_chars`` characters (#15:
    the whole request, not only its context, stays within the limit); at least half of it."""
    return max(request_chars // 2, request_chars - request_reserve())


"""Prompt variants (``prompts/variant_<id>.md``), in rotation order."""

NO_EDITS = "model returned no usable edits"
EDIT_KINDS: tuple[EditKind, ...] = ("replace", "create", "insert")

PROPOSE_TOOL = ToolSpec(
    name="propose_patch",
    description=(
        "Submit the patch that repairs the task: an explanation of the root cause and the change, "
        "and the file edits, applied in order."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "explanation": {
                "type": "string",
                "description": "Root cause and a summary of the change (goes into the pull request).",
            },
            "edits": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {
                            "type": "string",
                            "description": "Repository-relative path, forward slashes.",
                        },
                        "kind": {"type": "string", "enum": list(EDIT_KINDS)},
                        "old": {
                            "type": "string",
                            "description": "replace: exact text of the current file, occurring once.",
                        },
                        "new": {
                            "type": "string",
                            "description": "Replacement, new file content or inserted text.",
                        },
                        "line": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "insert: insert after this 1-based line (0 = top of file).",
                        },
                    },
                    "required": ["path", "kind", "new"],
                },
            },
        },
        "required": ["explanation", "edits"],
    },
)


def parse_edits(value: object) -> tuple[tuple[Edit, ...], str]:
    """Validate a ``propose_patch`` ``edits`` value; all edits or none (with the reason)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return (), "edits is a string that is not JSON"
    if not isinstance(value, list):
        return (), f"edits is {type(value).__name__}, not a list"
    if not value:
        return (), "edits is empty"
    edits: list[Edit] = []
    for i, raw in enumerate(value):
        where = f"edit {i + 1}"
        if not isinstance(raw, dict):
            return (), f"{where} is {type(raw).__name__}, not an object"
        path = normalize_repo_path(raw.get("path"))
        if path is None:
            return (), f"{where}: path {raw.get('path')!r} is not a repository-relative path"
        kind = raw.get("kind", "replace")
        if kind not in EDIT_KINDS:
            return (), f"{where}: kind {kind!r} is not one of {', '.join(EDIT_KINDS)}"
        old = raw.get("old", "")
        new = raw.get("new", "")
        old = "" if old is None else old
        new = "" if new is None else new
        if not isinstance(old, str) or not isinstance(new, str):
            return (), f"{where}: old/new must be strings"
        line = raw.get("line", 0)
        if isinstance(line, str) and line.strip().isdigit():
            line = int(line)
        if line is None:
            line = 0
        if isinstance(line, bool) or not isinstance(line, int) or line < 0:
            return (), f"{where}: line {line!r} is not a non-negative integer"
        if kind == "replace":
            if not old:
                return (), f"{where}: replace needs the exact current text in old"
            if old == new:
                return (), f"{where}: replace does not change anything (old == new)"
        elif kind == "insert" and not new:
            return (), f"{where}: insert needs text in new"
        edits.append(Edit(path=path, kind=kind, old=old if kind == "replace" else "", new=new, line=line))
    return tuple(edits), ""


class AnthropicProposer:
    """:class:`~jobs.repair.ports.Proposer` over an :class:`~jobs.repair.llm.LLM` (normally Anthropic)."""

    name = "anthropic"

    def __init__(
        self,
        llm: LLM,
        *,
        variants: Sequence[str] = VARIANTS,
        context_chars: int = 60_000,
        max_output_tokens: int = 8_192,
        min_output_tokens: int = 1_024,
        price_table: PriceTable | None = None,
    ) -> None:
        if not variants:
            raise ValueError("at least one prompt variant is required")
        for variant in variants:
            load_prompt(f"variant_{variant}")  # fail at construction, not mid-repair
        self.llm = llm
        self.variants = tuple(variants)
        self.context_chars = context_chars
        self.max_output_tokens = max_output_tokens
        self.min_output_tokens = min_output_tokens
        self._price_table = price_table
        self.last_errors: list[LLMError] = []
        """Errors of the latest :meth:`propose` call (the call that failed ends the round)."""
        self.last_budget_stop: str | None = None
        """Budget dimension (``tokens``/``usd``) that stopped the latest :meth:`propose`, if any."""
        self.last_context: PackedContext | None = None
        """The packed context block of the latest :meth:`propose` (for traces)."""
        self.last_warnings: list[str] = []
        """Non-fatal notes of the latest :meth:`propose` (e.g. a cost priced with the default table entry)."""

    # -- prompt --------------------------------------------------------------------------------

    def variants_for(self, request: ProposalRequest) -> tuple[str, ...]:
        """The variants used for ``request`` (``n`` capped at the number of variants)."""
        n = max(0, min(request.n, len(self.variants)))
        return tuple(self.variants[(request.round + i) % len(self.variants)] for i in range(n))

    def context_for(self, request: ProposalRequest) -> PackedContext:
        """The cached context block for ``request``."""
        return pack_context(
            request.task,
            evidence=request.evidence,
            plan=request.plan,
            feedback=request.feedback,
            budget_chars=context_budget(self.context_chars),
        )

    def build_request(self, request: ProposalRequest, variant: str, context: PackedContext) -> LLMRequest:
        """The model request for one variant (``max_tokens`` not yet fitted to the budget)."""
        tried = ""
        if request.tried:
            count = len(request.tried)
            tried = (
                f"\n{count} candidate patch{'es were' if count > 1 else ' was'} already executed and failed; "
                "propose a different change, not a variation of one that was tried.\n"
            )
        prompt = render(
            "propose",
            variant_id=variant,
            variant=load_prompt(f"variant_{variant}").strip(),
            tried=tried,
        )
        if request.tools is not None and request.tools.calls_left > 0:
            names = ", ".join(f"`{s.name}`" for s in request.tools.specs)
            prompt += "\n" + render("tools", tools=names, calls=str(request.tools.max_calls))
        return LLMRequest(
            system=load_prompt("system"),
            context=context.text,
            messages=(Message("user", prompt),),
            tools=(PROPOSE_TOOL,),
            tool_choice=PROPOSE_TOOL.name,
            max_tokens=self.max_output_tokens,
            purpose=f"propose:{variant}",
        )

    # -- propose -------------------------------------------------------------------------------

    def propose(self, request: ProposalRequest, remaining: Budget) -> list[Proposal]:
        """Up to ``request.n`` proposals (one per variant), each within what is left of ``remaining``."""
        self.last_errors = []
        self.last_budget_stop = None
        self.last_warnings = []
        variants = self.variants_for(request)
        if not variants:
            return []
        context = self.context_for(request)
        self.last_context = context
        meter = BudgetMeter(remaining, price_table=self._price_table)
        proposals: list[Proposal] = []
        for variant in variants:
            llm_request = self.build_request(request, variant, context)
            if request.tools is not None and request.tools.calls_left > 0:
                conv = converse(
                    self.llm,
                    llm_request,
                    request.tools,
                    meter,
                    variant=variant,
                    minimum=self.min_output_tokens,
                )
                if conv.error is not None:
                    self.last_errors.append(conv.error)
                if conv.budget_stop:
                    self.last_budget_stop = conv.budget_stop
                if conv.response is not None:
                    self._warn_price(conv.response)
                    proposals.append(replace(self.to_proposal(conv.response, variant), usage=conv.usage))
                    continue
                if conv.usage.calls:  # tool turns were paid for: the loop must charge them
                    reason = str(conv.error) if conv.error is not None else f"budget ({conv.budget_stop})"
                    proposals.append(
                        Proposal(
                            edits=(),
                            explanation=f"{NO_EDITS}: the conversation ended before propose_patch ({reason})",
                            proposer=self.name,
                            variant=variant,
                            usage=conv.usage,
                        )
                    )
                break
            fit = meter.affordable_output(llm_request, self.llm.model, minimum=self.min_output_tokens)
            if fit.short is not None:
                self.last_budget_stop = fit.short
                break
            try:
                response = self.llm.complete(replace(llm_request, max_tokens=fit.max_tokens))
            except LLMError as exc:
                self.last_errors.append(exc)
                break
            self._warn_price(response)
            meter.charge(response.usage)
            proposals.append(self.to_proposal(response, variant))
        return proposals

    def _warn_price(self, response: LLMResponse) -> None:
        if response.price_estimated and not self.last_warnings:
            self.last_warnings.append(
                f"model {response.model!r} is not in pricing.json; costs use the conservative default price"
            )

    def to_proposal(self, response: LLMResponse, variant: str) -> Proposal:
        """Parse a ``propose_patch`` response; unusable answers give a proposal without edits."""
        data, problem = tool_input(response, PROPOSE_TOOL.name)
        edits: tuple[Edit, ...] = ()
        explanation = ""
        if data is not None:
            value = data.get("explanation")
            explanation = value if isinstance(value, str) else ""
            edits, problem = parse_edits(data.get("edits"))
            if problem and response.stop_reason == "max_tokens":
                problem += " (the answer was cut at max_tokens)"
        if not edits:
            explanation = f"{NO_EDITS}: {problem}"
        return Proposal(
            edits=edits,
            explanation=explanation.strip(),
            proposer=self.name,
            variant=variant,
            usage=response.usage,
            raw=response.raw,
        )


__all__ = [
    "EDIT_KINDS",
    "NO_EDITS",
    "PROPOSE_TOOL",
    "VARIANTS",
    "AnthropicProposer",
    "context_budget",
    "parse_edits",
    "request_reserve",
]
