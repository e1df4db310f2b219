"""Prompt templates (the ``*.md`` files next to this module) and the pure encoders that fill them.

Templates use ``{name}`` placeholders (lower-case identifiers); ``{{`` and ``}}`` are literal
braces. Rendering is a single pass, so braces inside substituted values (code, issue text) are
never expanded, and it is strict both ways: a missing or an unused value is an error.

The encoders turn the repair core's values (task, failures, feedback, evidence) into prompt text
and pack them under a character budget with the ARCS stable-truncation rule: interface
invariants and the latest failing trace are always kept, the lowest-scored evidence is dropped
first, then the plan is collapsed to headers, then older feedback rounds are dropped.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jobs.repair.change_context import change_body, section_budget
from jobs.repair.model import Evidence, Failure, Feedback
from jobs.repair.task import RepairTask, fence_untrusted, sanitize_untrusted

PROMPTS_DIR = Path(__file__).parent
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_TOKEN = re.compile(r"\{\{|\}\}|\{([a-z_][a-z0-9_]*)\}")
NONE = "(none)"


class PromptError(ValueError):
    """A template is missing, or its placeholders and the supplied values disagree."""


@functools.cache
def load_prompt(name: str) -> str:
    """The text of template ``name`` (``prompts/<name>.md``), trailing whitespace removed."""
    if not _NAME.fullmatch(name):
        raise PromptError(f"invalid prompt name {name!r}")
    path = PROMPTS_DIR / f"{name}.md"
    try:
        return path.read_text(encoding="utf-8").rstrip()
    except FileNotFoundError as exc:
        raise PromptError(f"no prompt template {name!r}") from exc


def placeholders(template: str) -> set[str]:
    """The placeholder names a template uses."""
    return {m.group(1) for m in _TOKEN.finditer(template) if m.group(1)}


def render_template(template: str, values: Mapping[str, str]) -> str:
    """Substitute ``values`` into ``template`` in one pass (strict: no missing, no unused values)."""
    wanted = placeholders(template)
    missing = wanted - values.keys()
    unused = values.keys() - wanted
    if missing or unused:
        raise PromptError(f"prompt values mismatch: missing {sorted(missing)}, unused {sorted(unused)}")

    def sub(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        return values[match.group(1)]

    return _TOKEN.sub(sub, template)


def render(name: str, **values: str) -> str:
    """Render template ``name`` with ``values``."""
    return render_template(load_prompt(name), values)


# --- encoders ---------------------------------------------------------------------------------

MAX_MESSAGE_CHARS = 800
MAX_FRAMES = 6
MAX_EVIDENCE_ITEM_CHARS = 8_000
MAX_EDIT_ERROR_CHARS = 2_000


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a visible marker."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} characters cut ...]"


def code_fence(text: str, info: str = "") -> str:
    """``text`` in a Markdown code fence that cannot be closed from inside."""
    longest = max((len(m.group(0)) for m in re.finditer(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def render_failure(failure: Failure, *, max_frames: int = MAX_FRAMES) -> str:
    """One observed failure: id, type, message (trimmed), location and innermost frames."""
    head = f"- {failure.test_id or '(no test id)'}"
    if failure.type:
        head += f": {failure.type}"
    lines = [head]
    message = sanitize_untrusted(failure.message, limit=MAX_MESSAGE_CHARS)
    if message:
        lines.extend("    " + line for line in message.splitlines())
    if failure.path:
        lines.append(f"    at {failure.path}:{failure.line}")
    frames = failure.frames[-max_frames:]
    if frames:
        if len(failure.frames) > len(frames):
            lines.append(f"    stack (innermost last, {len(failure.frames) - len(frames)} outer frames cut):")
        else:
            lines.append("    stack (innermost last):")
        for fr in frames:
            lines.append(f"      {fr.path}:{fr.line}" + (f" in {fr.function}" if fr.function else ""))
    return "\n".join(lines)


def render_task(task: RepairTask, *, max_failures: int = 20) -> str:
    """The task statement; user-written text is sanitized and fenced as untrusted data."""
    parts: list[str] = []
    if task.kind == "ci":
        kind = f"Make the failing checks pass ({task.failure_class} failure)." if task.failure_class else ""
        parts.append(kind or "Make the failing checks pass.")
    elif task.kind == "issue":
        parts.append("Resolve the issue reported below.")
        title = sanitize_untrusted(task.title, limit=300, markdown=True)
        issue = f"{title}\n\n{sanitize_untrusted(task.body, markdown=True)}".strip()
        parts.append(fence_untrusted("issue", issue))
    else:
        parts.append("Revise the existing ARCS pull request as the reviewer asks below.")
        review = sanitize_untrusted(f"{task.title}\n\n{task.body}".strip(), markdown=True)
        parts.append(fence_untrusted("review", review))
    if task.test_command:
        parts.append(f"Test command: {task.test_command}")
    if task.failures:
        shown = task.failures[:max_failures]
        block = "\n".join(render_failure(f) for f in shown)
        if len(task.failures) > len(shown):
            block += f"\n- … {len(task.failures) - len(shown)} more failures"
        parts.append("Observed failures:\n" + block)
    if task.targets:
        parts.append("Tests that must pass afterwards: " + ", ".join(task.targets[:30]))
    if task.hints:
        parts.append("Locations named in logs: " + ", ".join(f"{p}:{n}" for p, n in task.hints[:20]))
    parts.append(
        "Test files may be edited for this task."
        if task.about_tests
        else "Do not edit test files: the task is about the code under test."
    )
    return "\n\n".join(parts)


def render_feedback(feedback: Feedback, *, brief: bool = False) -> str:
    """One round of encoded feedback (observed failures, edit-apply errors, gate rejections).

    ``brief``: the header and counts only (used for rounds older than the last two).
    """
    lines = [f"## Round {feedback.round + 1}: {feedback.summary}".rstrip(": ")]
    if brief:
        counts = (
            f"{len(feedback.failures)} failures, {len(feedback.edit_errors)} edit errors, "
            f"{len(feedback.gate_failures)} gate rejections"
        )
        return f"{lines[0]} ({counts})"
    if feedback.edit_errors:
        lines.append("Edits that could not be applied:")
        lines.extend(f"- {clip(err, MAX_EDIT_ERROR_CHARS)}" for err in feedback.edit_errors)
    if feedback.failures:
        lines.append("Failures observed:")
        lines.extend(render_failure(f) for f in feedback.failures[:10])
        if len(feedback.failures) > 10:
            lines.append(f"- … {len(feedback.failures) - 10} more failures")
    if feedback.gate_failures:
        lines.append("Rejected by quality gates:")
        lines.extend(f"- {g}" for g in feedback.gate_failures)
    return "\n".join(lines)


FOCUS_BEFORE = 40
FOCUS_AFTER = 20
"""Lines kept before / after a failing line inside a condensed item."""


def render_evidence(item: Evidence, focus: Iterable[int] = ()) -> str:
    """One evidence item with its provenance. An item longer than
    :data:`MAX_EVIDENCE_ITEM_CHARS` is condensed (:func:`condense`) around the ``focus`` lines
    (failing lines of its file) instead of being cut after its head."""
    label = item.source + (f" {item.symbol}" if item.symbol else "")
    head = f"### {item.path}:{item.start_line}-{item.end_line} [{label}]"
    if item.why:
        head += f" — {item.why}"
    return f"{head}\n{code_fence(condense(item, focus, MAX_EVIDENCE_ITEM_CHARS))}"


def condense(item: Evidence, focus: Iterable[int], limit: int) -> str:
    """``item.text`` within ``limit`` characters: whole when it fits; else the region around each
    ``focus`` line inside it (:data:`FOCUS_BEFORE` lines before, :data:`FOCUS_AFTER` after),
    the head as far as room allows, and elsewhere only the definition lines (a skeleton), each
    gap marked with the lines it leaves out. Cut at ``limit`` if even that is too long."""
    text = item.text
    if len(text) <= limit:
        return text
    lines = text.splitlines()
    keep: set[int] = set()
    for line in focus:
        i = line - item.start_line
        if 0 <= i < len(lines):
            keep.update(range(max(0, i - FOCUS_BEFORE), min(len(lines), i + FOCUS_AFTER + 1)))
    keep.update(i for i, t in enumerate(lines) if _DEF.match(t) or _JAVA_METHOD.match(t))
    room = limit - sum(len(lines[i]) + 1 for i in keep) - 200
    i = 0
    while i < len(lines) and room > len(lines[i]):
        if i not in keep:
            room -= len(lines[i]) + 1
            keep.add(i)
        i += 1
    out: list[str] = []
    gap = 0
    for i, t in enumerate([*lines, ""]):
        if i in keep or i == len(lines):
            if gap:
                first = item.start_line + i - gap
                out.append(f"    [... lines {first}-{first + gap - 1} not shown ...]")
                gap = 0
            if i < len(lines):
                out.append(t)
        else:
            gap += 1
    return clip("\n".join(out), limit)


def _evidence_order(item: Evidence) -> tuple[float, str, int, str]:
    return (-item.score, item.path, item.start_line, item.id)


_DEF = re.compile(
    r"^\s*(?:export\s+)?(?:default\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?"
    r"(?:def|class|fn|func|function|interface|type|struct|impl|trait)\b"
)
_JAVA_METHOD = re.compile(
    r"^\s*(?:public|private|protected|static|final|abstract|synchronized|\s)+[\w<>\[\], ?]+\s+\w+\s*\("
)


def signature(item: Evidence, *, max_lines: int = 6) -> str:
    """The definition line(s) of a code evidence item (decorators skipped), or ''."""
    lines = item.text.splitlines()
    name = item.symbol.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("@"):
            continue
        if (
            _DEF.match(line)
            or _JAVA_METHOD.match(line)
            or (name and re.search(rf"\b{re.escape(name)}\s*\(", line))
        ):
            out = [line.rstrip()]
            depth = line.count("(") - line.count(")")
            j = i + 1
            while depth > 0 and j < len(lines) and len(out) < max_lines:
                out.append(lines[j].rstrip())
                depth += lines[j].count("(") - lines[j].count(")")
                j += 1
            return "\n".join(out).strip("\n")
    return ""


def _locations(task: RepairTask, feedback: Sequence[Feedback]) -> tuple[set[tuple[str, int]], set[str]]:
    failures: list[Failure] = list(task.failures)
    if feedback:
        failures.extend(feedback[-1].failures)
    places: set[tuple[str, int]] = set(task.hints)
    functions: set[str] = set()
    for f in failures:
        if f.path:
            places.add((f.path, f.line))
        for fr in f.frames:
            places.add((fr.path, fr.line))
            if fr.function:
                functions.add(fr.function.rsplit(".", 1)[-1])
    return places, functions


def interface_invariants(
    task: RepairTask, evidence: Iterable[Evidence], feedback: Sequence[Feedback] = (), *, limit: int = 10
) -> list[str]:
    """Signatures of the functions the failures run through (from code evidence with a symbol)."""
    places, functions = _locations(task, feedback)
    out: list[str] = []
    seen: set[str] = set()
    for item in sorted(evidence, key=_evidence_order):
        if item.source not in ("code", "test") or not item.symbol:
            continue
        short = item.symbol.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
        touched = short in functions or any(
            path == item.path and item.start_line <= line <= item.end_line for path, line in places
        )
        if not touched:
            continue
        sig = signature(item)
        if sig and sig not in seen:
            seen.add(sig)
            out.append(f"{item.path}:{item.start_line} {item.symbol}\n{code_fence(sig)}")
        if len(out) >= limit:
            break
    return out


@dataclass(frozen=True, slots=True)
class PackedContext:
    """The repository/task context block of a proposal prompt and what packing left out."""

    text: str
    evidence_ids: tuple[str, ...]
    """Evidence kept, in prompt order."""
    dropped_evidence: tuple[str, ...] = ()
    plan_collapsed: bool = False
    feedback_dropped: int = 0
    """Older feedback rounds left out (the latest one is always kept)."""

    @property
    def chars(self) -> int:
        """Length of the block."""
        return len(self.text)


def _plan_text(plan: Sequence[str], *, collapsed: bool) -> str:
    if not plan:
        return NONE
    if collapsed:
        return "\n".join(f"{i}. {s.splitlines()[0][:80] if s else ''}" for i, s in enumerate(plan, 1))
    return "\n".join(f"{i}. {s}" for i, s in enumerate(plan, 1))


def render_changes(
    task: RepairTask,
    evidence: Sequence[Evidence] = (),
    feedback: Sequence[Feedback] = (),
    *,
    budget_chars: int,
) -> str:
    """The ``change_section`` of ``task.changes`` within ``budget_chars`` ('' without a change, or
    when not even its summary fits); hunks at the failure's locations and in the evidence's files
    first (:func:`jobs.repair.change_context.change_body`)."""
    if task.changes is None:
        return ""
    room = budget_chars - len(render("change_section", changes=""))
    places, _ = _locations(task, feedback)
    body = change_body(task.changes, places=places, paths={e.path for e in evidence}, budget_chars=room)
    return render("change_section", changes=body) if body else ""


def pack_context(
    task: RepairTask,
    *,
    evidence: Sequence[Evidence] = (),
    plan: Sequence[str] = (),
    feedback: Sequence[Feedback] = (),
    budget_chars: int = 60_000,
) -> PackedContext:
    """Render ``propose_context`` under ``budget_chars`` with stable truncation.

    Always kept: the task, what changed since the last green run (``task.changes``, within
    :data:`~jobs.repair.change_context.CHANGE_SHARE` of the budget), the interface invariants,
    the latest feedback round (the most recent failing trace). Under pressure, in order: drop
    evidence from the lowest score up; collapse the plan to headers; drop older feedback rounds,
    oldest first. The result may exceed the budget only when the always-kept parts alone do.
    """
    task_text = render_task(task)
    invariants = interface_invariants(task, evidence, feedback)
    inv_text = "\n\n".join(invariants) or NONE
    ranked = sorted(evidence, key=_evidence_order)
    places, _ = _locations(task, feedback)
    rendered = [render_evidence(e, [n for p, n in places if p == e.path]) for e in ranked]
    # Rounds older than the last two are summarized; the latest trace is what matters most.
    rounds = [render_feedback(f, brief=i < len(feedback) - 2) for i, f in enumerate(feedback)]
    changes = render_changes(task, evidence, feedback, budget_chars=section_budget(budget_chars))
    # the dependency sections (#27) are rendered fenced and budgeted by the stage
    changes = "\n\n".join(part for part in (changes, task.dependency_context) if part)

    def build(n_evidence: int, collapsed: bool, first_round: int) -> str:
        return render(
            "propose_context",
            task=task_text,
            changes=f"\n{changes}\n" if changes else "",
            invariants=inv_text,
            plan=_plan_text(plan, collapsed=collapsed),
            evidence="\n\n".join(rendered[:n_evidence]) or NONE,
            feedback="\n\n".join(rounds[first_round:]) or NONE,
        )

    # Evidence sizes are additive, so the number kept can be computed instead of re-rendering.
    base = build(0, False, 0)
    room = budget_chars - len(base) + len(NONE)
    n = 0
    used = 0
    while n < len(rendered):
        extra = len(rendered[n]) + (2 if n else 0)
        if used + extra > room:
            break
        used += extra
        n += 1
    collapsed = False
    first_round = 0
    text = build(n, collapsed, first_round)
    if len(text) > budget_chars and plan:
        collapsed = True
        text = build(n, collapsed, first_round)
    while len(text) > budget_chars and first_round < len(rounds) - 1:
        first_round += 1
        text = build(n, collapsed, first_round)
    return PackedContext(
        text=text,
        evidence_ids=tuple(e.id for e in ranked[:n]),
        dropped_evidence=tuple(e.id for e in ranked[n:]),
        plan_collapsed=collapsed,
        feedback_dropped=first_round,
    )


def render_evidence_block(evidence: Sequence[Evidence], *, budget_chars: int) -> str:
    """Evidence, best first, keeping whole items while they fit in ``budget_chars``."""
    out: list[str] = []
    used = 0
    for item in sorted(evidence, key=_evidence_order):
        text = render_evidence(item)
        if used + len(text) > budget_chars:
            break
        out.append(text)
        used += len(text) + 2
    return "\n\n".join(out) or NONE


__all__ = [
    "NONE",
    "PROMPTS_DIR",
    "PackedContext",
    "PromptError",
    "clip",
    "code_fence",
    "condense",
    "interface_invariants",
    "load_prompt",
    "pack_context",
    "placeholders",
    "render",
    "render_changes",
    "render_evidence",
    "render_evidence_block",
    "render_failure",
    "render_feedback",
    "render_task",
    "render_template",
    "signature",
]
