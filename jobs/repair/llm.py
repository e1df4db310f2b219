"""The LLM port of the repair engine and its value types (pure: no SDK, no clock, no network).

Every role (proposer, planner, quality checkers, clarifier, test designer, explainer) talks to a
model through :class:`LLM`: one structured request in, one parsed response out. The port is small
on purpose: it is what :mod:`jobs.repair.proposers.replay` records and replays.

Request layout (prompt caching): ``tools`` → ``system`` (the role's fixed instructions, then the
stable repository/task context block, the last one marked ``cache_control: ephemeral``) →
``messages`` (what varies between calls, e.g. the prompt variant). Calls that share a context
block — the ``n`` diversified proposals of one round — therefore hit the cache after the first.

The Anthropic adapter (HTTP, retries, sleeping) is :class:`jobs.llm_anthropic.AnthropicLLM`, in
the application layer; the in-process fake is :class:`jobs.repair.fakes.ScriptedLLM`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from jobs.repair.model import Usage
from jobs.repair.pricing import PriceTable, usage_for

Role = Literal["user", "assistant"]
LLMErrorKind = Literal["auth", "rate_limit", "overloaded", "server", "bad_request", "timeout", "connection"]

CACHE_CONTROL: Mapping[str, str] = {"type": "ephemeral"}
ANY_TOOL = "*"
"""``LLMRequest.tool_choice`` value for ``{"type": "any"}``: some tool must be called, the model picks."""


@dataclass(frozen=True, slots=True)
class TextBlock:
    """A ``text`` content block."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """A ``tool_use`` content block of an assistant turn (echoed back after the model asked)."""

    id: str
    name: str
    input: object


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """A ``tool_result`` content block of a user turn: the answer to the ``tool_use`` ``tool_use_id``."""

    tool_use_id: str
    content: str
    is_error: bool = False


Block = TextBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True, slots=True)
class Message:
    """One conversation turn: plain text, or content blocks (tool use and tool results).

    A plain-text turn is sent as a string, exactly as before blocks existed, so fingerprints of
    recorded plain-text requests do not change.
    """

    role: Role
    content: str | tuple[Block, ...]

    @property
    def chars(self) -> int:
        """Characters of the turn's text, tool inputs and tool results."""
        if isinstance(self.content, str):
            return len(self.content)
        return sum(_block_chars(b) for b in self.content)

    def to_wire(self) -> dict[str, object]:
        """The Messages API form of this turn."""
        if isinstance(self.content, str):
            return {"role": self.role, "content": self.content}
        return {"role": self.role, "content": [_block_wire(b) for b in self.content]}


def _block_chars(block: Block) -> int:
    if isinstance(block, TextBlock):
        return len(block.text)
    if isinstance(block, ToolUseBlock):
        return len(block.name) + len(_canonical(block.input))
    return len(block.content)


def _block_wire(block: Block) -> dict[str, object]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    out: dict[str, object] = {
        "type": "tool_result",
        "tool_use_id": block.tool_use_id,
        "content": block.content,
    }
    if block.is_error:
        out["is_error"] = True
    return out


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A client tool the model may (or must) call; used for structured output."""

    name: str
    description: str
    input_schema: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call gives back: the text for the model, and its cost in executions."""

    text: str
    is_error: bool = False
    executions: int = 0


@dataclass(frozen=True, slots=True)
class LLMRequest:
    """One model call, independent of any SDK."""

    system: str
    """The role's fixed instructions (first part of the cached prefix)."""
    messages: tuple[Message, ...]
    context: str = ""
    """Stable repository/task context; sent as a second system block and cached with ``system``."""
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str = ""
    """Name of the tool the model must call (forced tool use); :data:`ANY_TOOL`: the model must call
    one of the tools, its choice; empty: the model chooses whether to call one."""
    max_tokens: int = 4096
    cache: bool = True
    """Mark the stable prefix with ``cache_control``."""
    purpose: str = ""
    """A label for traces and attempt logs (role / prompt variant); never sent."""

    @property
    def chars(self) -> int:
        """Characters of everything sent (for the chars/4 token estimate)."""
        tools = sum(len(t.name) + len(t.description) + len(_canonical(t.input_schema)) for t in self.tools)
        return len(self.system) + len(self.context) + sum(m.chars for m in self.messages) + tools


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A ``tool_use`` block of a response. ``input`` is as received (normally a JSON object)."""

    id: str
    name: str
    input: object


@dataclass(frozen=True, slots=True)
class LLMResponse:
    """A parsed model response plus its accounting."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: str
    model: str
    usage: Usage
    raw: str
    """The response body exactly as received (recorded for replay)."""
    attempts: int = 1
    """HTTP attempts it took (retries included); only the successful one is billed."""
    price_estimated: bool = False
    """The model is not in ``pricing.json``: ``usage.usd`` uses the conservative default price."""

    def tool_call(self, name: str) -> ToolCall | None:
        """The first call of tool ``name``, if any."""
        return next((c for c in self.tool_calls if c.name == name), None)

    def as_message(self) -> Message:
        """This response as the assistant turn to send back in a continued conversation."""
        blocks: list[Block] = [TextBlock(self.text)] if self.text else []
        blocks += [ToolUseBlock(c.id, c.name, c.input) for c in self.tool_calls]
        return Message("assistant", tuple(blocks) if blocks else "(no answer)")


class LLMError(Exception):
    """A model call that failed for good (after retries where the failure was retryable)."""

    def __init__(
        self,
        kind: LLMErrorKind,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        attempts: int = 1,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind: LLMErrorKind = kind
        self.message = message
        self.retryable = retryable
        """Whether the failure is transient in kind (a later call may succeed)."""
        self.status = status
        self.attempts = attempts
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Attempt:
    """One HTTP attempt of an LLM adapter such as :class:`jobs.llm_anthropic.AnthropicLLM` (for traces)."""

    purpose: str
    number: int
    outcome: str
    """``ok`` or an :data:`LLMErrorKind`."""
    status: int | None = None
    wait_s: float = 0.0
    """Seconds slept before the next attempt (0 when none followed)."""


@runtime_checkable
class LLM(Protocol):
    """A chat model behind one synchronous call."""

    @property
    def model(self) -> str:
        """The model id requests are sent to (used for pricing and fingerprints)."""
        ...

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Send ``request``; raise :class:`LLMError` (only) when it cannot be answered."""
        ...


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def wire_params(model: str, request: LLMRequest) -> dict[str, Any]:
    """The Messages API body for ``request`` (pure; also the basis of fingerprints)."""
    system: list[dict[str, object]] = [{"type": "text", "text": request.system}]
    if request.context:
        system.append({"type": "text", "text": request.context})
    if request.cache:
        system[-1]["cache_control"] = dict(CACHE_CONTROL)
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "system": system,
        "messages": [m.to_wire() for m in request.messages],
    }
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
            for t in request.tools
        ]
    if request.tool_choice == ANY_TOOL:
        params["tool_choice"] = {"type": "any", "disable_parallel_tool_use": False}
    elif request.tool_choice:
        params["tool_choice"] = {
            "type": "tool",
            "name": request.tool_choice,
            "disable_parallel_tool_use": True,
        }
    return params


def request_fingerprint(model: str, request: LLMRequest) -> str:
    """sha256 of the canonical JSON of (model, system, messages, tools): stable across runs."""
    params = wire_params(model, request)
    key = {k: params.get(k) for k in ("model", "system", "messages", "tools")}
    return hashlib.sha256(_canonical(key).encode("utf-8")).hexdigest()


def estimate_tokens(chars: int) -> int:
    """The usual chars/4 estimate, rounded up."""
    return (max(0, chars) + 3) // 4


def _int(value: object, what: str, *, optional: bool = False) -> int:
    if value is None and optional:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"usage.{what} must be a non-negative integer, got {value!r}")
    return value


def parse_message(raw: str, *, default_model: str, table: PriceTable | None = None) -> LLMResponse:
    """Parse a Messages API response body. Raises ValueError when it is not a valid message."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"response is not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("type") != "message":
        raise ValueError("response is not a message object")
    content = data.get("content")
    usage = data.get("usage")
    if not isinstance(content, list) or not isinstance(usage, dict):
        raise ValueError("response lacks content or usage")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        if not isinstance(block, dict):
            raise ValueError("content block is not an object")
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            calls.append(
                ToolCall(
                    id=str(block.get("id", "")), name=str(block.get("name", "")), input=block.get("input")
                )
            )
    model = data.get("model") if isinstance(data.get("model"), str) and data.get("model") else default_model
    accounted, estimated = usage_for(
        str(model),
        input_tokens=_int(usage.get("input_tokens"), "input_tokens"),
        output_tokens=_int(usage.get("output_tokens"), "output_tokens"),
        cache_write_tokens=_int(
            usage.get("cache_creation_input_tokens"), "cache_creation_input_tokens", optional=True
        ),
        cache_read_tokens=_int(
            usage.get("cache_read_input_tokens"), "cache_read_input_tokens", optional=True
        ),
        table=table,
    )
    return LLMResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        stop_reason=str(data.get("stop_reason") or ""),
        model=str(model),
        usage=accounted,
        raw=raw,
        price_estimated=estimated,
    )


def scripted_response(
    *,
    text: str = "",
    tool: tuple[str, object] | None = None,
    tools: tuple[tuple[str, object], ...] = (),
    stop_reason: str | None = None,
    model: str = "scripted-model",
    input_tokens: int = 100,
    output_tokens: int = 50,
    cache_write_tokens: int = 0,
    cache_read_tokens: int = 0,
    table: PriceTable | None = None,
) -> LLMResponse:
    """A response as the API would send it (raw JSON included), for :class:`jobs.repair.fakes.ScriptedLLM`
    scripts."""
    content: list[dict[str, object]] = []
    if text:
        content.append({"type": "text", "text": text})
    if tool is not None:
        content.append({"type": "tool_use", "id": "toolu_scripted", "name": tool[0], "input": tool[1]})
    for i, (name, args) in enumerate(tools):
        content.append({"type": "tool_use", "id": f"toolu_scripted_{i}", "name": name, "input": args})
    body: dict[str, object] = {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if tool is not None or tools else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_write_tokens,
            "cache_read_input_tokens": cache_read_tokens,
        },
    }
    return parse_message(json.dumps(body), default_model=model, table=table)


__all__ = [
    "ANY_TOOL",
    "LLM",
    "Attempt",
    "Block",
    "LLMError",
    "LLMErrorKind",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "TextBlock",
    "ToolCall",
    "ToolResult",
    "ToolResultBlock",
    "ToolSpec",
    "ToolUseBlock",
    "estimate_tokens",
    "parse_message",
    "request_fingerprint",
    "scripted_response",
    "wire_params",
]
