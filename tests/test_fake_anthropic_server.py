"""Tests of the local Anthropic-compatible server itself (it must behave like the API and fail loudly)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from tests.fakes.anthropic_server import (
    ErrorReply,
    FakeAnthropicServer,
    Reply,
    ToolUse,
    malformed_json,
    overloaded,
    rate_limited,
    serving,
    validate_messages_body,
)

MODEL = "claude-sonnet-4-6"
GOOD_HEADERS = {
    "content-type": "application/json",
    "anthropic-version": "2023-06-01",
    "x-api-key": "sk-test",
}
GOOD_BODY: dict[str, Any] = {
    "model": MODEL,
    "max_tokens": 16,
    "messages": [{"role": "user", "content": "hi"}],
}


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with serving() as srv:
        yield srv


@pytest.fixture
def client(server: FakeAnthropicServer) -> Iterator[anthropic.Anthropic]:
    sdk = anthropic.Anthropic(api_key="sk-test", base_url=server.base_url, max_retries=0, timeout=10)
    yield sdk
    sdk.close()


def raw_request(
    server: FakeAnthropicServer, method: str, path: str, body: object, headers: dict[str, str]
) -> tuple[int, Any, dict[str, str]]:
    """Send one request without the SDK; return status, decoded body and headers."""
    host, port = server.base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        payload = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        data = response.read()
        return (
            response.status,
            json.loads(data) if data else None,
            {k.lower(): v for k, v in response.getheaders()},
        )
    finally:
        conn.close()


def test_sdk_round_trip_matches_the_api_shape(
    server: FakeAnthropicServer, client: anthropic.Anthropic
) -> None:
    server.enqueue(
        Reply(
            text="thinking out loud",
            tool_uses=(ToolUse("answer", {"value": 42}),),
            input_tokens=120,
            output_tokens=30,
            cache_creation_input_tokens=7,
            cache_read_input_tokens=9,
        )
    )
    raw = client.messages.with_raw_response.create(**GOOD_BODY)
    body = json.loads(raw.text())
    assert set(body) == {"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"}
    assert body["type"] == "message" and body["role"] == "assistant" and body["model"] == MODEL
    assert body["stop_reason"] == "tool_use" and body["stop_sequence"] is None
    assert body["usage"] == {
        "input_tokens": 120,
        "output_tokens": 30,
        "cache_creation_input_tokens": 7,
        "cache_read_input_tokens": 9,
    }
    message = raw.parse()
    assert message.content[0].type == "text"
    tool = message.content[1]
    assert tool.type == "tool_use" and tool.name == "answer" and tool.input == {"value": 42}
    assert message.usage.cache_read_input_tokens == 9


def test_records_headers_and_body(server: FakeAnthropicServer, client: anthropic.Anthropic) -> None:
    server.enqueue(Reply(text="ok"))
    client.messages.create(**GOOD_BODY)
    (request,) = server.requests
    assert request.method == "POST" and request.path == "/v1/messages"
    assert request.body == GOOD_BODY
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["anthropic-version"]
    assert request.user_text == "hi"


def test_default_input_tokens_follow_the_request_size(server: FakeAnthropicServer) -> None:
    server.enqueue(Reply(text="ok"))
    status, body, _ = raw_request(server, "POST", "/v1/messages", GOOD_BODY, GOOD_HEADERS)
    assert status == 200
    assert body["usage"]["input_tokens"] == len(server.requests[0].raw) // 4
    assert body["stop_reason"] == "end_turn"


def test_error_replies_look_like_the_api(server: FakeAnthropicServer, client: anthropic.Anthropic) -> None:
    server.enqueue(overloaded(), rate_limited(retry_after=3))
    with pytest.raises(anthropic.OverloadedError) as overloaded_exc:
        client.messages.create(**GOOD_BODY)
    assert overloaded_exc.value.status_code == 529
    assert overloaded_exc.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
        "request_id": "req_fake",
    }
    with pytest.raises(anthropic.RateLimitError) as limited:
        client.messages.create(**GOOD_BODY)
    assert limited.value.response.headers["retry-after"] == "3"


def test_malformed_json_is_sent_verbatim(server: FakeAnthropicServer, client: anthropic.Anthropic) -> None:
    server.enqueue(malformed_json())
    raw = client.messages.with_raw_response.create(**GOOD_BODY)
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw.text())


def test_dynamic_script_sees_the_request_body(
    server: FakeAnthropicServer, client: anthropic.Anthropic
) -> None:
    seen: list[Any] = []

    def answer(body: Any) -> Reply:
        seen.append(body)
        return Reply(text=f"echo {body['messages'][0]['content']}")

    server.dynamic = answer
    message = client.messages.create(**GOOD_BODY)
    assert message.content[0].type == "text" and message.content[0].text == "echo hi"
    assert seen == [GOOD_BODY]


def test_wrong_api_key_is_rejected_like_the_api() -> None:
    with serving(api_key="sk-right") as srv:
        sdk = anthropic.Anthropic(api_key="sk-wrong", base_url=srv.base_url, max_retries=0)
        try:
            with pytest.raises(anthropic.AuthenticationError):
                sdk.messages.create(**GOOD_BODY)
        finally:
            sdk.close()


def test_unknown_path_fails_loudly() -> None:
    with FakeAnthropicServer() as srv:
        status, body, _ = raw_request(srv, "POST", "/v1/complete", GOOD_BODY, GOOD_HEADERS)
        status_get, _, _ = raw_request(srv, "GET", "/v1/messages", None, GOOD_HEADERS)
    assert status == 404 and body["error"]["type"] == "not_found_error"
    assert status_get == 404
    assert len(srv.errors) == 2 and "/v1/complete" in srv.errors[0]
    with pytest.raises(AssertionError, match="unexpected path"):
        srv.assert_clean()


def test_missing_version_header_and_key_fail_loudly() -> None:
    with FakeAnthropicServer() as srv:
        srv.enqueue(Reply(text="never sent"))
        status, body, headers = raw_request(
            srv, "POST", "/v1/messages", GOOD_BODY, {"content-type": "application/json"}
        )
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    assert headers["x-should-retry"] == "false"
    assert "anthropic-version" in srv.errors[0] and "no API key" in srv.errors[0]
    assert srv.pending == 1


def test_unexpected_body_fields_fail_loudly_through_the_sdk() -> None:
    with FakeAnthropicServer() as srv:
        sdk = anthropic.Anthropic(api_key="sk-test", base_url=srv.base_url, max_retries=0)
        try:
            with pytest.raises(anthropic.BadRequestError):
                sdk.messages.create(**GOOD_BODY, extra_body={"temperature": 0.5})
        finally:
            sdk.close()
    assert srv.errors and "temperature" in srv.errors[0]


def test_request_without_a_scripted_reply_fails_loudly() -> None:
    with FakeAnthropicServer() as srv:
        status, _, _ = raw_request(srv, "POST", "/v1/messages", GOOD_BODY, GOOD_HEADERS)
    assert status == 400
    assert "no scripted reply" in srv.errors[0]


def test_unconsumed_script_fails_teardown() -> None:
    with pytest.raises(AssertionError, match="never requested"), serving() as srv:
        srv.enqueue(Reply(text="unused"))


def test_serving_asserts_clean_at_exit() -> None:
    with pytest.raises(AssertionError, match="not JSON"), serving() as srv:
        raw_request(srv, "POST", "/v1/messages", b"{not json", GOOD_HEADERS)


def test_scripted_delay_is_interrupted_by_stop() -> None:
    with FakeAnthropicServer() as srv:
        srv.enqueue(ErrorReply(500, delay_s=30))
        sdk = anthropic.Anthropic(api_key="sk-test", base_url=srv.base_url, max_retries=0, timeout=0.2)
        try:
            with pytest.raises(anthropic.APITimeoutError):
                sdk.messages.create(**GOOD_BODY)
        finally:
            sdk.close()
    # Leaving the block stopped the server without waiting 30 s (pytest-timeout would catch a hang).
    assert srv.errors == []


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({**GOOD_BODY, "max_tokens": 0}, "max_tokens"),
        ({k: v for k, v in GOOD_BODY.items() if k != "model"}, "model"),
        ({**GOOD_BODY, "messages": []}, "messages must be a non-empty list"),
        ({**GOOD_BODY, "messages": [{"role": "assistant", "content": "x"}]}, "first message"),
        ({**GOOD_BODY, "messages": [{"role": "user", "content": ""}]}, "must not be empty"),
        ({**GOOD_BODY, "stream": True}, "streaming"),
        ({**GOOD_BODY, "system": [{"type": "text", "text": ""}]}, "non-empty string"),
        (
            {**GOOD_BODY, "system": [{"type": "text", "text": "s", "cache_control": {"type": "forever"}}]},
            "ephemeral",
        ),
        ({**GOOD_BODY, "tools": [{"name": "bad name!", "input_schema": {"type": "object"}}]}, "invalid"),
        ({**GOOD_BODY, "tools": [{"name": "t", "input_schema": {"type": "string"}}]}, "type object"),
        ({**GOOD_BODY, "tool_choice": {"type": "tool", "name": "t"}}, "without tools"),
        (
            {
                **GOOD_BODY,
                "tools": [{"name": "t", "input_schema": {"type": "object"}}],
                "tool_choice": {"type": "tool", "name": "u"},
            },
            "unknown tool",
        ),
        (
            {
                **GOOD_BODY,
                "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}] * 5,
            },
            "breakpoints",
        ),
    ],
)
def test_body_validation(body: dict[str, Any], needle: str) -> None:
    problems = validate_messages_body(body)
    assert any(needle in p for p in problems), problems


def test_valid_body_has_no_problems() -> None:
    body = {
        **GOOD_BODY,
        "system": [
            {"type": "text", "text": "s"},
            {"type": "text", "text": "c", "cache_control": {"type": "ephemeral"}},
        ],
        "tools": [{"name": "t", "description": "d", "input_schema": {"type": "object", "properties": {}}}],
        "tool_choice": {"type": "tool", "name": "t", "disable_parallel_tool_use": True},
    }
    assert validate_messages_body(body) == []
