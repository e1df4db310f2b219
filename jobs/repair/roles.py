"""The LLM roles around the proposer: planner, quality checkers, clarifier, test designer, explainer.

Each role is one function over an :class:`~jobs.repair.llm.LLM` that asks for a single forced tool
call (a JSON schema gives structured output) and returns a typed result carrying its ``usage``.
Prompts are the ``prompts/*.md`` templates.

Error policy: :class:`~jobs.repair.llm.LLMError` (the call failed for good) propagates, so the
caller can account and trace it; an answer that does not fit the schema is *not* an exception but
a result with ``error`` set and a conservative value (no subgoals, a rejecting verdict, no test).

Roles follow the papers the controller is built on: the planner is the ARCS CoT planner (typed
I/O contract, pseudocode sketch, at most 4 subgoals used as retrieval sub-queries); the code
quality checker uses QualityFlow's *imagined execution*; the test quality checker judges a test
against the task alone, never against the candidate program; the clarifier re-interprets the task
after failed attempts; :func:`explain` produces ARKS's "explained code" query formulation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jobs.repair.change_context import section_budget
from jobs.repair.llm import LLM, LLMRequest, LLMResponse, Message, ToolSpec
from jobs.repair.model import Evidence, Feedback, Usage, normalize_repo_path
from jobs.repair.prompts import (
    NONE,
    clip,
    code_fence,
    load_prompt,
    render,
    render_changes,
    render_evidence_block,
    render_feedback,
    render_task,
)
from jobs.repair.task import RepairTask

if TYPE_CHECKING:
    from jobs.repair.proposers.tooluse import RoleTools

MAX_CODE_CHARS = 40_000
PLAN_MAX_SUBGOALS = 4
PLAN_MIN_SPEC_CHARS = 400


# --- results -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    """Planner output: up to four subgoals (retrieval sub-queries), the I/O contract and a sketch."""

    subgoals: tuple[str, ...]
    contract: str = ""
    sketch: str = ""
    usage: Usage = field(default_factory=Usage)
    error: str = ""

    @property
    def ok(self) -> bool:
        """The model answered in the expected shape."""
        return not self.error


@dataclass(frozen=True, slots=True)
class QualityVerdict:
    """A quality checker's decision. Unparseable answers reject (precision over recall)."""

    accept: bool
    reasoning: str
    usage: Usage = field(default_factory=Usage)
    checks: tuple[str, ...] = ()
    """One line per imagined test execution / checked assertion."""
    error: str = ""

    @property
    def ok(self) -> bool:
        """The model answered in the expected shape."""
        return not self.error


@dataclass(frozen=True, slots=True)
class Clarification:
    """The clarifier's restatement of the task (empty text when unusable)."""

    text: str
    usage: Usage = field(default_factory=Usage)
    misunderstandings: tuple[str, ...] = ()
    error: str = ""

    @property
    def ok(self) -> bool:
        """The model answered in the expected shape."""
        return not self.error


@dataclass(frozen=True, slots=True)
class DesignedTest:
    """A reproduction test written by the test designer (empty path/content when unusable)."""

    path: str
    content: str
    usage: Usage = field(default_factory=Usage)
    rationale: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        """A usable test was produced."""
        return not self.error


@dataclass(frozen=True, slots=True)
class Explanation:
    """A natural-language account of a code change (ARKS's explained-code query)."""

    text: str
    usage: Usage = field(default_factory=Usage)
    error: str = ""

    @property
    def ok(self) -> bool:
        """The model answered in the expected shape."""
        return not self.error

    def __str__(self) -> str:
        return self.text


# --- tool schemas --------------------------------------------------------------------------------

_STR: Mapping[str, object] = {"type": "string"}
_STR_LIST: Mapping[str, object] = {"type": "array", "items": {"type": "string"}}

PLAN_TOOL = ToolSpec(
    name="submit_plan",
    description="Submit the repair plan: I/O contract, pseudocode sketch and at most 4 subgoals.",
    input_schema={
        "type": "object",
        "properties": {
            "contract": {
                "type": "string",
                "description": "Typed input/output contract of the behaviour to change.",
            },
            "sketch": {"type": "string", "description": "Short pseudocode sketch of the fix."},
            "subgoals": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": PLAN_MAX_SUBGOALS,
                "description": "At most 4 short, distinct subgoals, each usable as a code search query.",
            },
        },
        "required": ["contract", "sketch", "subgoals"],
    },
)

VERDICT_TOOL = ToolSpec(
    name="report_verdict",
    description="Report the imagined execution of each relevant test on the patched code and the verdict.",
    input_schema={
        "type": "object",
        "properties": {
            "tests": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "test": {"type": "string"},
                        "expected": {"type": "string", "description": "What the test asserts."},
                        "imagined": {
                            "type": "string",
                            "description": "Step-by-step execution and its result.",
                        },
                        "passes": {"type": "boolean"},
                    },
                    "required": ["test", "expected", "imagined", "passes"],
                },
            },
            "verdict": {"type": "string", "enum": ["accept", "reject"]},
            "reasoning": {"type": "string"},
        },
        "required": ["tests", "verdict", "reasoning"],
    },
)

CLARIFY_TOOL = ToolSpec(
    name="clarify_problem",
    description="Submit the clarified task statement and the misunderstandings of earlier attempts.",
    input_schema={
        "type": "object",
        "properties": {
            "clarified_spec": {"type": "string", "description": "The precise requirements, restated."},
            "misunderstandings": _STR_LIST,
        },
        "required": ["clarified_spec", "misunderstandings"],
    },
)

TEST_TOOL = ToolSpec(
    name="write_test",
    description="Submit one reproduction test file.",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Repository-relative path of the new test file."},
            "content": {"type": "string", "description": "The complete file content."},
            "rationale": {"type": "string", "description": "Why it fails now and passes after the fix."},
        },
        "required": ["path", "content", "rationale"],
    },
)

TEST_VERDICT_TOOL = ToolSpec(
    name="report_test_verdict",
    description="Report whether each assertion of the test follows from the task description, and the verdict.",
    input_schema={
        "type": "object",
        "properties": {
            "checks": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "assertion": {"type": "string"},
                        "expected_by_spec": {"type": "string"},
                        "matches": {"type": "boolean"},
                    },
                    "required": ["assertion", "expected_by_spec", "matches"],
                },
            },
            "verdict": {"type": "string", "enum": ["accept", "reject"]},
            "reasoning": {"type": "string"},
        },
        "required": ["checks", "verdict", "reasoning"],
    },
)

EXPLAIN_TOOL = ToolSpec(
    name="explain_code",
    description="Submit the plain-language explanation of the change.",
    input_schema={"type": "object", "properties": {"explanation": _STR}, "required": ["explanation"]},
)


# --- helpers -------------------------------------------------------------------------------------


def tool_input(response: LLMResponse, tool: str) -> tuple[dict[str, object] | None, str]:
    """The JSON object the model passed to ``tool``, or None and why not.

    Tolerates the common slip of sending the object as a JSON string.
    """
    call = response.tool_call(tool)
    if call is None:
        names = ", ".join(c.name for c in response.tool_calls) or "none"
        return None, f"no {tool} tool call (stop_reason={response.stop_reason or '?'}, tool calls: {names})"
    value = call.input
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None, f"{tool} input is a string that is not JSON"
    if not isinstance(value, dict):
        return None, f"{tool} input is {type(value).__name__}, not an object"
    if response.stop_reason == "max_tokens":
        # The arguments may be cut short; callers still validate fields, this only labels the cause.
        return value, "truncated"
    return value, ""


def _str_field(data: Mapping[str, object], key: str) -> str:
    value = data.get(key)
    return value.strip() if isinstance(value, str) else ""


def _str_list(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [" ".join(v.split()) for v in value if isinstance(v, str) and v.strip()]


def _ask(
    llm: LLM,
    *,
    context: str,
    prompt: str,
    tool: ToolSpec,
    max_tokens: int,
    purpose: str,
) -> tuple[dict[str, object] | None, str, LLMResponse]:
    request = LLMRequest(
        system=load_prompt("system"),
        context=context,
        messages=(Message("user", prompt),),
        tools=(tool,),
        tool_choice=tool.name,
        max_tokens=max_tokens,
        purpose=purpose,
    )
    response = llm.complete(request)
    data, problem = tool_input(response, tool.name)
    return data, problem, response


def _code(text: str) -> str:
    return code_fence(clip(text, MAX_CODE_CHARS)) if text.strip() else NONE


def _task_context(task: RepairTask, evidence: Sequence[Evidence] = (), *, evidence_chars: int = 0) -> str:
    if evidence_chars <= 0:
        return render("task_only", task=render_task(task))
    return render(
        "task_context",
        task=render_task(task),
        evidence=render_evidence_block(evidence, budget_chars=evidence_chars),
    )


def _verdict_from(
    data: Mapping[str, object] | None, problem: str, usage: Usage, *, list_key: str, ok_key: str, line: str
) -> QualityVerdict:
    if data is None:
        return QualityVerdict(False, f"unusable answer: {problem}", usage, error=problem)
    verdict = _str_field(data, "verdict").lower()
    reasoning = _str_field(data, "reasoning")
    if verdict not in ("accept", "reject"):
        why = (
            "truncated answer"
            if problem == "truncated"
            else f"verdict {verdict!r} is neither accept nor reject"
        )
        return QualityVerdict(False, reasoning or f"unusable answer: {why}", usage, error=why)
    items = data.get(list_key)
    checks: list[str] = []
    failing = 0
    if isinstance(items, list):
        for item in items:
            if isinstance(item, Mapping):
                passed = item.get(ok_key) is True
                failing += not passed
                checks.append(("PASS " if passed else "FAIL ") + line.format_map(_Blank(item)))
    accept = verdict == "accept" and failing == 0
    if verdict == "accept" and failing:
        reasoning = f"{reasoning}\n(rejected: {failing} of the checks above did not pass)".strip()
    return QualityVerdict(accept, reasoning, usage, tuple(checks))


class _Blank(dict[str, object]):
    """format_map source that renders missing keys as empty and values as one line."""

    def __init__(self, data: Mapping[str, object]) -> None:
        super().__init__({k: " ".join(str(v).split()) for k, v in data.items()})

    def __missing__(self, key: str) -> str:
        return ""


# --- roles ---------------------------------------------------------------------------------------


def should_plan(task: RepairTask, *, min_chars: int = PLAN_MIN_SPEC_CHARS) -> bool:
    """Whether planning is worth a call: a long spec, or failures spread over several files.

    ARCS gates the planner off for short specifications (< ~120 tokens); a single failing test
    in one file is localized well enough by its trace.
    """
    if len(task.spec_text()) > min_chars:
        return True
    files = {f.path or f.test_id.split("::", 1)[0] for f in task.failures if f.path or f.test_id}
    return len(files) > 1


def canonical_subgoals(values: Sequence[str], *, limit: int = PLAN_MAX_SUBGOALS) -> tuple[str, ...]:
    """Subgoals trimmed, whitespace-collapsed, de-duplicated (case-insensitive) and capped."""
    out: list[str] = []
    seen: set[str] = set()
    for value in values:
        text = " ".join(value.split()).strip(" .;-")[:200]
        key = text.casefold()
        if text and key not in seen:
            seen.add(key)
            out.append(text)
        if len(out) == limit:
            break
    return tuple(out)


def plan(
    llm: LLM,
    task: RepairTask,
    evidence: Sequence[Evidence] = (),
    *,
    max_tokens: int = 1_500,
    evidence_chars: int = 20_000,
    tools: RoleTools | None = None,
) -> Plan:
    """ARCS planner: contract, sketch and up to 4 subgoals (used as retrieval sub-queries).

    With ``task.changes``, the context ends with what changed since the last green run (a
    :func:`~jobs.repair.change_context.section_budget` share of ``evidence_chars``).

    With ``tools`` whose round has calls left, the planner may ``open``/``search``/``symbol``
    before ``submit_plan`` (``prompts/planner_tools.md``; the conversation is
    :meth:`~jobs.repair.proposers.tooluse.RoleTools.converse`, on ``tools.llm``/``tools.meter``,
    not on ``llm``); ``usage`` is the whole conversation's. A failed first call raises
    :class:`~jobs.repair.llm.LLMError` as without tools; a conversation cut after paid turns
    (a failed call, no budget for ``submit_plan``) is a plan with ``error`` and that usage."""
    context = _task_context(task, evidence, evidence_chars=max(1, evidence_chars))
    changes = render_changes(task, evidence, budget_chars=section_budget(evidence_chars))
    context = f"{context}\n\n{changes}" if changes else context
    if tools is None or not tools.available:
        data, problem, response = _ask(
            llm,
            context=context,
            prompt=render("planner"),
            tool=PLAN_TOOL,
            max_tokens=max_tokens,
            purpose="plan",
        )
        return _plan_from(data, problem, response.usage)
    names = ", ".join(f"`{s.name}`" for s in tools.specs)
    prompt = (
        render("planner") + "\n" + render("planner_tools", tools=names, calls=str(tools.session.calls_left))
    )
    conv = tools.converse(
        LLMRequest(
            system=load_prompt("system"),
            context=context,
            messages=(Message("user", prompt),),
            tools=(PLAN_TOOL,),
            tool_choice=PLAN_TOOL.name,
            max_tokens=max_tokens,
            purpose="plan",
        )
    )
    if conv.response is None:
        if conv.error is not None and not conv.usage.calls:
            raise conv.error
        why = (
            str(conv.error)
            if conv.error is not None
            else f"budget: not enough {conv.budget_stop} left for plan"
        )
        return Plan((), usage=conv.usage, error=why)
    data, problem = tool_input(conv.response, PLAN_TOOL.name)
    return _plan_from(data, problem, conv.usage)


def _plan_from(data: Mapping[str, object] | None, problem: str, usage: Usage) -> Plan:
    if data is None:
        return Plan((), usage=usage, error=problem)
    subgoals = canonical_subgoals(_str_list(data.get("subgoals")))
    if not subgoals:
        return Plan((), usage=usage, error="plan has no subgoals")
    return Plan(subgoals, _str_field(data, "contract"), _str_field(data, "sketch"), usage)


def check_quality(
    llm: LLM, task: RepairTask, patch_diff: str, tests_text: str, *, max_tokens: int = 4_096
) -> QualityVerdict:
    """Code Quality Checker (QualityFlow): imagined execution of ``tests_text`` on the patched code."""
    data, problem, response = _ask(
        llm,
        context=_task_context(task),
        prompt=render("quality_check", patch=_code(patch_diff), tests=_code(tests_text)),
        tool=VERDICT_TOOL,
        max_tokens=max_tokens,
        purpose="check_quality",
    )
    return _verdict_from(
        data,
        problem,
        response.usage,
        list_key="tests",
        ok_key="passes",
        line="{test}: expected {expected}; got {imagined}",
    )


def check_test(llm: LLM, task: RepairTask, test_code: str, *, max_tokens: int = 3_000) -> QualityVerdict:
    """Test Quality Checker (QualityFlow): judges a test against the task only (no candidate code)."""
    data, problem, response = _ask(
        llm,
        context=_task_context(task),
        prompt=render("test_quality", test=_code(test_code)),
        tool=TEST_VERDICT_TOOL,
        max_tokens=max_tokens,
        purpose="check_test",
    )
    return _verdict_from(
        data,
        problem,
        response.usage,
        list_key="checks",
        ok_key="matches",
        line="{assertion}: spec says {expected_by_spec}",
    )


def clarify(
    llm: LLM,
    task: RepairTask,
    history: Sequence[Feedback],
    *,
    attempts: Sequence[str] = (),
    max_tokens: int = 2_000,
) -> Clarification:
    """Problem Clarifier (QualityFlow): restate the task after failed attempts.

    ``attempts``: the explanations of earlier candidates, shown with the feedback they received.
    """
    parts = [f"### Attempt {i}\n{clip(text, 2_000)}" for i, text in enumerate(attempts, 1) if text.strip()]
    parts.extend(render_feedback(f) for f in history[-6:])
    data, problem, response = _ask(
        llm,
        context=_task_context(task),
        prompt=render("clarifier", history="\n\n".join(parts) or NONE),
        tool=CLARIFY_TOOL,
        max_tokens=max_tokens,
        purpose="clarify",
    )
    if data is None:
        return Clarification("", response.usage, error=problem)
    spec = _str_field(data, "clarified_spec")
    if not spec:
        return Clarification("", response.usage, error="empty clarified_spec")
    misunderstandings = tuple(_str_list(data.get("misunderstandings")))
    text = spec
    if misunderstandings:
        text += "\n\nLikely misunderstandings in earlier attempts:\n" + "\n".join(
            f"- {m}" for m in misunderstandings
        )
    return Clarification(text, response.usage, misunderstandings)


def design_test(
    llm: LLM,
    task: RepairTask,
    evidence: Sequence[Evidence],
    *,
    language: str,
    framework: str,
    max_tokens: int = 4_096,
    evidence_chars: int = 30_000,
) -> DesignedTest:
    """Test Designer: one reproduction test for an issue (must fail now, pass after the fix)."""
    data, problem, response = _ask(
        llm,
        context=_task_context(task, evidence, evidence_chars=max(1, evidence_chars)),
        prompt=render("test_designer", language=language, framework=framework),
        tool=TEST_TOOL,
        max_tokens=max_tokens,
        purpose="design_test",
    )
    if data is None:
        return DesignedTest("", "", response.usage, error=problem)
    path = normalize_repo_path(data.get("path"))
    content = data.get("content")
    if path is None:
        return DesignedTest("", "", response.usage, error=f"unusable test path {data.get('path')!r}")
    if not isinstance(content, str) or not content.strip():
        return DesignedTest("", "", response.usage, error="empty test content")
    if problem == "truncated":
        return DesignedTest("", "", response.usage, error="test was cut at max_tokens")
    if not content.endswith("\n"):
        content += "\n"
    return DesignedTest(path, content, response.usage, _str_field(data, "rationale"))


def explain(llm: LLM, diff: str, *, max_tokens: int = 600) -> Explanation:
    """Explained code (ARKS): a plain-language description of ``diff`` for use as a retrieval query."""
    data, problem, response = _ask(
        llm,
        context="",
        prompt=render("explain", diff=_code(diff)),
        tool=EXPLAIN_TOOL,
        max_tokens=max_tokens,
        purpose="explain",
    )
    if data is None:
        return Explanation("", response.usage, error=problem)
    text = " ".join(_str_field(data, "explanation").split())
    if not text:
        return Explanation("", response.usage, error="empty explanation")
    return Explanation(text, response.usage)


__all__ = [
    "CLARIFY_TOOL",
    "EXPLAIN_TOOL",
    "PLAN_TOOL",
    "TEST_TOOL",
    "TEST_VERDICT_TOOL",
    "VERDICT_TOOL",
    "Clarification",
    "DesignedTest",
    "Explanation",
    "Plan",
    "QualityVerdict",
    "canonical_subgoals",
    "check_quality",
    "check_test",
    "clarify",
    "design_test",
    "explain",
    "plan",
    "should_plan",
    "tool_input",
]
