"""The Anthropic adapter of the repair core's :class:`~jobs.repair.llm.LLM` port (application layer).

It owns everything effectful about a model call: the SDK, HTTP, retries and sleeping. The core only
sees :class:`~jobs.repair.llm.LLMRequest` in and :class:`~jobs.repair.llm.LLMResponse` out.

Retries are done here, not by the SDK (the client is built with ``max_retries=0``): each HTTP
attempt is visible (:attr:`AnthropicLLM.attempts`), the schedule is deterministic (exponential,
no jitter) and honours ``retry-after``/``retry-after-ms``, and sleeping goes through an injected
function so tests never wait. Failed attempts are not billed by the API and cost nothing here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any

from jobs.repair.llm import (
    Attempt,
    LLMError,
    LLMErrorKind,
    LLMRequest,
    LLMResponse,
    parse_message,
    wire_params,
)
from jobs.repair.pricing import PriceTable

if TYPE_CHECKING:
    import anthropic

DEFAULT_BASE_URL = "https://api.anthropic.com"


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
        import anthropic  # imported here: the SDK is slow to import and needed only once a client exists

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
            # The HTTP body itself: `.text` is a method on the SDK's newer raw response and a
            # property on older ones (0.40), while the underlying response's `.text` is a property
            # in every version pyproject allows.
            raw = self._client.messages.with_raw_response.create(**params).http_response.text
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


__all__ = ["DEFAULT_BASE_URL", "AnthropicLLM", "classify_sdk_error"]
