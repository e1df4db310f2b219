"""The LLM port of the repair engine, its Anthropic implementation and an in-process fake.

Every role (proposer, planner, quality checkers, clarifier, test designer, explainer) talks to a
model through :class:`LLM`: one structured request in, one parsed response out. The port is small
on purpose: it is what :mod:`jobs.repair.proposers.replay` records and replays.

Request layout (prompt caching): ``tools`` → ``system`` (the role's fixed instructions, then the
stable repository/task context block, the last one marked ``cache_control: ephemeral``) →
``messages`` (what varies between calls, e.g. the prompt variant). Calls that share a context
block — the ``n`` diversified proposals of one round — therefore hit the cache after the first.

Retries are done here, not by the SDK (the client is built with ``max_retries=0``): each HTTP
attempt is visible (:attr:`AnthropicLLM.attempts`), the schedule is deterministic (exponential,
no jitter) and honours ``retry-after``/``retry-after-ms``, and sleeping goes through an injected
function so tests never wait. Failed attempts are not billed by the API and cost nothing here.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from jobs.repair.model import Usage
from jobs.repair.pricing import PriceTable, usage_for

if TYPE_CHECKING:
    import anthropic

Role = Literal["user", "assistant"]
LLMErrorKind = Literal["auth", "rate_limit", "overloaded", "server", "bad_request", "timeout", "connection"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
CACHE_CONTROL: Mapping[str, str] = {"type": "ephemeral"}


@dataclass(frozen=True, slots=True)
class Message:
    """One conversation turn (plain text)."""

    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A client tool the model may (or must) call; used for structured output."""

    name: str
    description: str
    input_schema: Mapping[str, object]


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
    """Name of the tool the model must call (forced tool use); empty: the model chooses."""
    max_tokens: int = 4096
    cache: bool = True
    """Mark the stable prefix with ``cache_control``."""
    purpose: str = ""
    """A label for traces and attempt logs (role / prompt variant); never sent."""

    @property
    def chars(self) -> int:
        """Characters of everything sent (for the chars/4 token estimate)."""
        tools = sum(len(t.name) + len(t.description) + len(_canonical(t.input_schema)) for t in self.tools)
        return len(self.system) + len(self.context) + sum(len(m.content) for m in self.messages) + tools


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
    """One HTTP attempt of :class:`AnthropicLLM` (for traces)."""

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
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
    }
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
            for t in request.tools
        ]
    if request.tool_choice:
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


def _retry_after(headers: Mapping[str, str]) -> float | None:
    # retry-after-ms is the API's precise variant; HTTP-date forms are ignored (no clock here).
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                seconds = float(value) / scale
            except ValueError:
                continue
            if seconds >= 0:
                return seconds
    return None


def classify_sdk_error(exc: Exception, *, attempts: int = 1) -> LLMError | None:
    """Map an ``anthropic`` SDK exception to :class:`LLMError`; None for anything else."""
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return LLMError("timeout", "request timed out", retryable=True, attempts=attempts)
    if isinstance(exc, anthropic.APIConnectionError):
        return LLMError("connection", f"connection failed: {exc.message}", retryable=True, attempts=attempts)
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        kind: LLMErrorKind
        if status in (401, 402, 403):
            kind, retryable = "auth", False
        elif status == 429:
            kind, retryable = "rate_limit", True
        elif status == 529 or isinstance(exc, anthropic.OverloadedError):
            kind, retryable = "overloaded", True
        elif status == 408:
            kind, retryable = "timeout", True
        elif status == 409 or status >= 500:
            kind, retryable = "server", True
        else:
            kind, retryable = "bad_request", False
        headers = {k.lower(): v for k, v in exc.response.headers.items()}
        # The API can say explicitly whether a retry is worthwhile.
        if headers.get("x-should-retry") == "false":
            retryable = False
        elif headers.get("x-should-retry") == "true":
            retryable = True
        detail = exc.api_message or exc.message
        return LLMError(
            kind,
            f"HTTP {status}: {detail}",
            retryable=retryable,
            status=status,
            attempts=attempts,
            retry_after=_retry_after(headers),
        )
    if isinstance(exc, anthropic.CredentialsError):
        return LLMError("auth", f"credentials: {exc}", retryable=False, attempts=attempts)
    if isinstance(exc, anthropic.AnthropicError):
        return LLMError("bad_request", f"{type(exc).__name__}: {exc}", retryable=False, attempts=attempts)
    return None


class AnthropicLLM:
    """:class:`LLM` over the Anthropic Messages API (non-streaming, tool use for structured output).

    ``base_url`` comes from the caller's settings; when None the public API is used (the SDK's own
    ``ANTHROPIC_BASE_URL`` lookup is bypassed on purpose: configuration is injected, not ambient).
    Retries: up to ``max_retries`` more attempts for retryable failures (429, 529, 5xx, 408/409,
    timeouts, connection errors, malformed 200 bodies), waiting ``retry-after`` when the server
    gives one (capped at ``max_retry_after_s``) and otherwise ``backoff_base_s * 2**i`` capped at
    ``backoff_max_s``. Auth and request errors are not retried.
    """

    def __init__(
        self,
        api_key: str,
        model: str,
        *,
        base_url: str | None = None,
        max_retries: int = 4,
        timeout_s: float = 120,
        sleep: Callable[[float], None] = time.sleep,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 30.0,
        max_retry_after_s: float = 60.0,
        price_table: PriceTable | None = None,
    ) -> None:
        if not api_key:
            raise ValueError("an Anthropic API key is required")
        if not model:
            raise ValueError("a model id is required")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        import anthropic  # imported here: the repair core must stay importable without the SDK loaded

        self._model = model
        self._max_retries = max_retries
        self._sleep = sleep
        self._backoff_base_s = backoff_base_s
        self._backoff_max_s = backoff_max_s
        self._max_retry_after_s = max_retry_after_s
        self._price_table = price_table
        self._client: anthropic.Anthropic = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url or DEFAULT_BASE_URL,
            max_retries=0,
            timeout=timeout_s,
        )
        self.attempts: list[Attempt] = []
        """Every HTTP attempt made by this client, oldest first."""

    @property
    def model(self) -> str:
        """The model id requests are sent to."""
        return self._model

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> AnthropicLLM:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def backoff_s(self, retry_index: int) -> float:
        """Deterministic wait before retry ``retry_index`` (0-based) when the server gave no hint."""
        return float(min(self._backoff_max_s, self._backoff_base_s * (2**retry_index)))

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Send ``request`` with retries; raise :class:`LLMError` when it fails for good."""
        params = wire_params(self._model, request)
        attempt = 0
        while True:
            attempt += 1
            outcome = self._attempt(params)
            if isinstance(outcome, LLMResponse):
                self.attempts.append(Attempt(request.purpose, attempt, "ok"))
                return replace(outcome, attempts=attempt)
            error = outcome
            error.attempts = attempt
            if not error.retryable or attempt > self._max_retries:
                self.attempts.append(Attempt(request.purpose, attempt, error.kind, error.status))
                raise error
            if error.retry_after is not None:
                wait = min(error.retry_after, self._max_retry_after_s)
            else:
                wait = self.backoff_s(attempt - 1)
            self.attempts.append(Attempt(request.purpose, attempt, error.kind, error.status, wait))
            self._sleep(wait)

    def _attempt(self, params: dict[str, Any]) -> LLMResponse | LLMError:
        try:
            raw = self._client.messages.with_raw_response.create(**params).text()
        except Exception as exc:
            mapped = classify_sdk_error(exc)
            if mapped is None:
                raise
            return mapped
        try:
            return parse_message(raw, default_model=self._model, table=self._price_table)
        except ValueError as exc:
            # A 200 with an unusable body is a server-side fault; worth another attempt.
            return LLMError("server", f"malformed response: {exc}", retryable=True, status=200)


ScriptItem = LLMResponse | LLMError | Callable[[LLMRequest], LLMResponse]


class ScriptedLLM:
    """In-process fake :class:`LLM`: answers from a script, records every request.

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


def scripted_response(
    *,
    text: str = "",
    tool: tuple[str, object] | None = None,
    stop_reason: str | None = None,
    model: str = "scripted-model",
    input_tokens: int = 100,
    output_tokens: int = 50,
    cache_write_tokens: int = 0,
    cache_read_tokens: int = 0,
    table: PriceTable | None = None,
) -> LLMResponse:
    """A response as the API would send it (raw JSON included), for :class:`ScriptedLLM` scripts."""
    content: list[dict[str, object]] = []
    if text:
        content.append({"type": "text", "text": text})
    if tool is not None:
        content.append({"type": "tool_use", "id": "toolu_scripted", "name": tool[0], "input": tool[1]})
    body: dict[str, object] = {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if tool is not None else "end_turn"),
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
    "LLM",
    "AnthropicLLM",
    "Attempt",
    "LLMError",
    "LLMErrorKind",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "ScriptedLLM",
    "ToolCall",
    "ToolSpec",
    "classify_sdk_error",
    "estimate_tokens",
    "parse_message",
    "request_fingerprint",
    "scripted_response",
    "wire_params",
]
