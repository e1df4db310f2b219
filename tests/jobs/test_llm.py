"""AnthropicLLM through the real SDK against the local server: request shape, retries, accounting."""

from __future__ import annotations

import hashlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.llm_anthropic import DEFAULT_BASE_URL, AnthropicLLM
from jobs.repair.fakes import ScriptedLLM
from jobs.repair.llm import (
    LLMError,
    LLMRequest,
    Message,
    ToolSpec,
    estimate_tokens,
    request_fingerprint,
    scripted_response,
    wire_params,
)
from jobs.repair.model import Usage
from jobs.repair.pricing import PRICING_FILE, load_price_table, parse_price_table, price_for, usage_for
from tests.fakes.anthropic_server import (
    ErrorReply,
    FakeAnthropicServer,
    Reply,
    auth_error,
    bad_request,
    malformed_json,
    overloaded,
    rate_limited,
    server_error,
    serving,
)

MODEL = "claude-sonnet-4-6"
TOOL = ToolSpec(
    "answer", "Give the answer.", {"type": "object", "properties": {"value": {"type": "integer"}}}
)


def request(**overrides: object) -> LLMRequest:
    values: dict[str, object] = {
        "system": "You are a test.",
        "context": "REPOSITORY CONTEXT",
        "messages": (Message("user", "What is six times seven?"),),
        "tools": (TOOL,),
        "tool_choice": "answer",
        "max_tokens": 512,
        "purpose": "unit",
    }
    values.update(overrides)
    return LLMRequest(**values)  # type: ignore[arg-type]


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with serving() as srv:
        yield srv


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def llm(server: FakeAnthropicServer, sleeps: list[float]) -> Iterator[AnthropicLLM]:
    with AnthropicLLM("sk-test-key", MODEL, base_url=server.base_url, sleep=sleeps.append) as client:
        yield client


# --- request shape ---------------------------------------------------------------------------------


def test_request_shape(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(Reply.tool("answer", {"value": 42}))
    llm.complete(request())
    (sent,) = server.requests
    assert sent.headers["authorization"] == "Bearer sk-test-key"
    assert sent.headers["anthropic-version"]
    body = sent.body
    assert body["model"] == MODEL
    assert body["max_tokens"] == 512
    # Stable prefix: instructions, then the context block carrying the cache breakpoint.
    assert body["system"] == [
        {"type": "text", "text": "You are a test."},
        {"type": "text", "text": "REPOSITORY CONTEXT", "cache_control": {"type": "ephemeral"}},
    ]
    assert body["messages"] == [{"role": "user", "content": "What is six times seven?"}]
    assert body["tools"] == [
        {"name": "answer", "description": "Give the answer.", "input_schema": dict(TOOL.input_schema)}
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "answer", "disable_parallel_tool_use": True}
    assert set(body) == {"model", "max_tokens", "system", "messages", "tools", "tool_choice"}


def test_without_context_the_system_block_is_cached(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(Reply(text="fine"))
    llm.complete(request(context="", tools=(), tool_choice=""))
    body = server.requests[0].body
    assert body["system"] == [
        {"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}
    ]
    assert "tools" not in body and "tool_choice" not in body


def test_cache_can_be_switched_off() -> None:
    params = wire_params(MODEL, request(cache=False))
    assert all("cache_control" not in block for block in params["system"])


def test_base_url_is_injected_not_read_from_the_environment(
    server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    server.enqueue(Reply(text="here"))
    with AnthropicLLM("k", MODEL, base_url=server.base_url) as client:
        assert client.complete(request()).text == "here"
    with AnthropicLLM("k", MODEL) as default:
        assert str(default._client.base_url).rstrip("/") == DEFAULT_BASE_URL


def test_constructor_validates() -> None:
    with pytest.raises(ValueError, match="API key"):
        AnthropicLLM("", MODEL)
    with pytest.raises(ValueError, match="model"):
        AnthropicLLM("k", "")
    with pytest.raises(ValueError, match="max_retries"):
        AnthropicLLM("k", MODEL, max_retries=-1)


# --- parsing -------------------------------------------------------------------------------------


def test_parses_text_and_tool_calls(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(Reply(text="Let me answer.", tool_uses=(), input_tokens=10, output_tokens=5))
    server.enqueue(Reply.tool("answer", {"value": 42}, input_tokens=10, output_tokens=5))
    first = llm.complete(request())
    assert first.text == "Let me answer." and first.tool_calls == () and first.stop_reason == "end_turn"
    second = llm.complete(request())
    call = second.tool_call("answer")
    assert call is not None and call.input == {"value": 42} and call.id.startswith("toolu_")
    assert second.stop_reason == "tool_use" and second.model == MODEL
    assert json.loads(second.raw)["content"][0]["input"] == {"value": 42}
    assert second.attempts == 1


# --- retries -------------------------------------------------------------------------------------


def test_overloaded_then_success_counts_only_the_billed_attempt(
    server: FakeAnthropicServer, llm: AnthropicLLM, sleeps: list[float]
) -> None:
    server.enqueue(overloaded(), Reply.tool("answer", {"value": 1}, input_tokens=1000, output_tokens=100))
    response = llm.complete(request())
    assert len(server.requests) == 2
    assert response.attempts == 2
    assert response.usage == Usage(input_tokens=1000, output_tokens=100, usd=0.0045, calls=1)
    assert sleeps == [1.0]
    assert [(a.number, a.outcome, a.status, a.wait_s) for a in llm.attempts] == [
        (1, "overloaded", 529, 1.0),
        (2, "ok", None, 0.0),
    ]
    assert {a.purpose for a in llm.attempts} == {"unit"}


def test_retry_after_is_honoured(server: FakeAnthropicServer, llm: AnthropicLLM, sleeps: list[float]) -> None:
    server.enqueue(rate_limited(retry_after=7), Reply(text="ok"))
    assert llm.complete(request()).text == "ok"
    assert sleeps == [7.0]


def test_retry_after_ms_and_cap(server: FakeAnthropicServer, sleeps: list[float]) -> None:
    server.enqueue(
        ErrorReply(429, "rate_limit_error", headers={"retry-after-ms": "250"}),
        rate_limited(retry_after=3600),
        Reply(text="ok"),
    )
    with AnthropicLLM(
        "k", MODEL, base_url=server.base_url, sleep=sleeps.append, max_retry_after_s=20
    ) as client:
        client.complete(request())
    assert sleeps == [0.25, 20.0]


def test_retries_exhausted_raise_a_typed_error(
    server: FakeAnthropicServer, llm: AnthropicLLM, sleeps: list[float]
) -> None:
    server.enqueue(*[overloaded()] * 5)
    with pytest.raises(LLMError) as exc_info:
        llm.complete(request())
    error = exc_info.value
    assert (error.kind, error.retryable, error.status, error.attempts) == ("overloaded", True, 529, 5)
    assert "Overloaded" in error.message
    assert len(server.requests) == 5
    assert sleeps == [1.0, 2.0, 4.0, 8.0]  # deterministic exponential schedule, no jitter


def test_backoff_is_capped(server: FakeAnthropicServer) -> None:
    with AnthropicLLM("k", MODEL, base_url=server.base_url, backoff_base_s=2, backoff_max_s=5) as client:
        assert [client.backoff_s(i) for i in range(4)] == [2.0, 4.0, 5.0, 5.0]


@pytest.mark.parametrize(
    ("reply", "kind", "status"),
    [
        (auth_error(), "auth", 401),
        (ErrorReply(403, "permission_error"), "auth", 403),
        (bad_request(), "bad_request", 400),
    ],
)
def test_client_errors_are_not_retried(
    server: FakeAnthropicServer,
    llm: AnthropicLLM,
    sleeps: list[float],
    reply: ErrorReply,
    kind: str,
    status: int,
) -> None:
    server.enqueue(reply)
    with pytest.raises(LLMError) as exc_info:
        llm.complete(request())
    assert (exc_info.value.kind, exc_info.value.retryable, exc_info.value.status) == (kind, False, status)
    assert exc_info.value.attempts == 1
    assert len(server.requests) == 1 and sleeps == []


def test_server_errors_and_malformed_bodies_are_retried(
    server: FakeAnthropicServer, llm: AnthropicLLM, sleeps: list[float]
) -> None:
    server.enqueue(server_error(), malformed_json(), Reply(text="finally"))
    response = llm.complete(request())
    assert response.text == "finally" and response.attempts == 3
    assert [a.outcome for a in llm.attempts] == ["server", "server", "ok"]
    assert llm.attempts[1].status == 200
    assert sleeps == [1.0, 2.0]


def test_should_retry_header_is_obeyed(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(ErrorReply(500, "api_error", headers={"x-should-retry": "false"}))
    with pytest.raises(LLMError) as exc_info:
        llm.complete(request())
    assert exc_info.value.kind == "server" and not exc_info.value.retryable


def test_connection_errors_are_typed(sleeps: list[float]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port any more.
    with (
        AnthropicLLM(
            "k", MODEL, base_url=f"http://127.0.0.1:{port}", max_retries=1, sleep=sleeps.append
        ) as client,
        pytest.raises(LLMError) as exc_info,
    ):
        client.complete(request())
    assert exc_info.value.kind == "connection" and exc_info.value.retryable
    assert exc_info.value.attempts == 2 and sleeps == [1.0]


def test_timeouts_are_typed(server: FakeAnthropicServer) -> None:
    server.enqueue(Reply(text="late", delay_s=30))
    with (
        AnthropicLLM("k", MODEL, base_url=server.base_url, timeout_s=0.2, max_retries=0) as client,
        pytest.raises(LLMError) as exc_info,
    ):
        client.complete(request())
    assert exc_info.value.kind == "timeout" and exc_info.value.retryable


# --- accounting ----------------------------------------------------------------------------------


def test_cache_read_and_write_are_priced(server: FakeAnthropicServer, llm: AnthropicLLM) -> None:
    server.enqueue(
        Reply(
            text="cached",
            input_tokens=200,
            output_tokens=1000,
            cache_creation_input_tokens=10_000,
            cache_read_input_tokens=0,
        ),
        Reply(
            text="cached",
            input_tokens=200,
            output_tokens=1000,
            cache_creation_input_tokens=0,
            cache_read_input_tokens=10_000,
        ),
    )
    write = llm.complete(request()).usage
    read = llm.complete(request()).usage
    # sonnet-4-6: input 3, output 15, cache write 3.75, cache read 0.30 USD per million tokens
    assert write == Usage(200, 1000, 0, 10_000, usd=0.0531, calls=1)  # 0.0006 + 0.015 + 0.0375
    assert read == Usage(200, 1000, 10_000, 0, usd=0.0186, calls=1)  # 0.0006 + 0.015 + 0.003
    assert write.tokens == read.tokens == 11_200
    total = write + read
    assert total.calls == 2 and total.usd == pytest.approx(0.0717)


def test_unknown_model_uses_the_conservative_default_and_is_flagged(server: FakeAnthropicServer) -> None:
    server.enqueue(Reply(text="?", input_tokens=1_000_000, output_tokens=0))
    with AnthropicLLM("k", "claude-future-9", base_url=server.base_url) as client:
        response = client.complete(request())
    assert response.price_estimated
    assert response.usage.usd == load_price_table().default.input == 15.0


def test_pricing_families() -> None:
    assert price_for("claude-sonnet-4-20250514").family == "claude-sonnet-4"
    assert price_for("claude-opus-4-1-20250805").family == "claude-opus-4-1"
    assert price_for("claude-opus-4-5").input == 5.0
    assert price_for("anthropic.claude-haiku-4-5-20251001-v1:0").family == "claude-haiku-4-5"
    assert price_for("claude-3-5-haiku@20241022").family == "claude-3-5-haiku"
    # A newer minor version is not silently priced as its older sibling.
    unknown = price_for("claude-opus-4-9")
    assert not unknown.known and unknown.input == 15.0
    usage, estimated = usage_for("claude-haiku-4-5", input_tokens=2_000_000, output_tokens=1_000_000)
    assert not estimated and usage.usd == 7.0 and usage.calls == 1


def test_pricing_file_is_complete() -> None:
    data = json.loads(PRICING_FILE.read_text(encoding="utf-8"))
    table = parse_price_table(data)
    assert table.families and not table.default.known
    # The default is at least as expensive as every family on every dimension.
    for price in table.families.values():
        assert price.input <= table.default.input and price.output <= table.default.output
        assert price.cache_read < price.input < price.cache_write


def test_pricing_rejects_bad_tables(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="incomplete"):
        parse_price_table({"default": {"input": 1}, "families": {}})
    with pytest.raises(ValueError, match="negative"):
        parse_price_table(
            {"default": {"input": -1, "output": 1, "cache_write": 1, "cache_read": 1}, "families": {}}
        )


# --- fingerprints, estimates, the in-process fake ------------------------------------------------


def test_fingerprint_is_the_hash_of_canonical_model_system_messages_tools() -> None:
    req = request()
    params = wire_params(MODEL, req)
    canonical = json.dumps(
        {
            "messages": params["messages"],
            "model": MODEL,
            "system": params["system"],
            "tools": params["tools"],
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert request_fingerprint(MODEL, req) == hashlib.sha256(canonical.encode()).hexdigest()
    # Labels and output limits are not part of what is asked.
    assert request_fingerprint(MODEL, request(purpose="other", max_tokens=9)) == request_fingerprint(
        MODEL, req
    )
    assert request_fingerprint("claude-haiku-4-5", req) != request_fingerprint(MODEL, req)
    assert request_fingerprint(MODEL, request(context="changed")) != request_fingerprint(MODEL, req)
    assert request_fingerprint(MODEL, request(tools=())) != request_fingerprint(MODEL, req)


def test_estimate_tokens() -> None:
    assert estimate_tokens(0) == 0 and estimate_tokens(1) == 1 and estimate_tokens(8) == 2
    assert request().chars > len("REPOSITORY CONTEXT")


def test_scripted_llm_serves_and_records() -> None:
    error = LLMError("rate_limit", "slow down", retryable=True)
    fake = ScriptedLLM(
        [scripted_response(text="one"), error, lambda req: scripted_response(text=req.purpose)], model=MODEL
    )
    assert fake.complete(request()).text == "one"
    with pytest.raises(LLMError):
        fake.complete(request())
    assert fake.complete(request(purpose="dynamic")).text == "dynamic"
    assert len(fake.requests) == 3 and fake.pending == 0
    with pytest.raises(AssertionError, match="no scripted response"):
        fake.complete(request())


def test_scripted_response_is_a_real_message() -> None:
    response = scripted_response(tool=("answer", {"value": 1}), model=MODEL, input_tokens=10, output_tokens=2)
    assert response.stop_reason == "tool_use"
    assert json.loads(response.raw)["usage"]["input_tokens"] == 10
    assert response.usage.usd == pytest.approx((10 * 3 + 2 * 15) / 1e6)
