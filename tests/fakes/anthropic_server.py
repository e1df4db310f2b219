"""A local Anthropic-compatible HTTP server for tests, driven by the real ``anthropic`` SDK.

The server listens on 127.0.0.1 (ephemeral port) and implements ``POST /v1/messages``
(non-streaming). Responses are scripted: a queue of :class:`Reply` / :class:`ErrorReply` items,
optionally followed by a callable ``body -> reply`` for dynamic scripting. Every request is
recorded (headers and JSON body) for assertions.

It fails loudly: anything the real API would reject or that the code under test should never
send — an unknown path or method, missing credentials or ``anthropic-version``, a body of the
wrong shape, unknown fields, streaming, a request with no scripted reply left — is recorded in
:attr:`FakeAnthropicServer.errors` and answered with a 4xx error (``x-should-retry: false``).
:func:`serving` (and therefore the test fixtures built on it) asserts at teardown that there were
no errors and that the script was consumed.

Note on credentials: the installed SDK (2.x) sends the API key as ``Authorization: Bearer <key>``;
the ``x-api-key`` header of older SDKs is accepted as well.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

API_VERSION_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
MESSAGES_PATH = "/v1/messages"
TOP_LEVEL_KEYS = frozenset(
    {
        "model",
        "max_tokens",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "metadata",
        "stop_sequences",
        "stream",
        "cache_control",
        "service_tier",
    }
)
MAX_CACHE_BREAKPOINTS = 4


@dataclass(frozen=True)
class ToolUse:
    """A ``tool_use`` content block of a scripted reply (``input`` may be any JSON value)."""

    name: str
    input: object
    id: str = ""


@dataclass(frozen=True)
class Reply:
    """A successful scripted message."""

    text: str = ""
    tool_uses: Sequence[ToolUse] = ()
    input_tokens: int | None = None
    """None: ``len(request body) // 4``."""
    output_tokens: int = 25
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    stop_reason: str | None = None
    """None: ``tool_use`` when there are tool uses, else ``end_turn``."""
    model: str | None = None
    """None: echo the requested model."""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0

    @classmethod
    def tool(cls, name: str, input: object, **kwargs: Any) -> Reply:
        """A reply with one tool call."""
        return cls(tool_uses=(ToolUse(name, input),), **kwargs)


@dataclass(frozen=True)
class ErrorReply:
    """A scripted failure: an API error, or a raw body (e.g. malformed JSON)."""

    status: int
    error_type: str = "api_error"
    message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    raw_body: str | None = None
    """Sent verbatim instead of the JSON error body."""
    delay_s: float = 0.0


def rate_limited(retry_after: float | None = None) -> ErrorReply:
    """429 ``rate_limit_error``, with ``retry-after`` seconds when given."""
    headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
    return ErrorReply(
        429, "rate_limit_error", "Number of request tokens has exceeded your rate limit.", headers
    )


def overloaded() -> ErrorReply:
    """529 ``overloaded_error``."""
    return ErrorReply(529, "overloaded_error", "Overloaded")


def server_error(status: int = 500) -> ErrorReply:
    """5xx ``api_error``."""
    return ErrorReply(status, "api_error", "Internal server error")


def auth_error() -> ErrorReply:
    """401 ``authentication_error``."""
    return ErrorReply(401, "authentication_error", "invalid x-api-key")


def bad_request(message: str = "invalid request") -> ErrorReply:
    """400 ``invalid_request_error``."""
    return ErrorReply(400, "invalid_request_error", message)


def malformed_json(status: int = 200) -> ErrorReply:
    """A response whose body is not JSON (status 200 by default)."""
    return ErrorReply(status, raw_body='{"id": "msg_broken", "type": "message", "content": [')


ScriptItem = Reply | ErrorReply | Callable[[Any], "Reply | ErrorReply"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received."""

    method: str
    path: str
    headers: Mapping[str, str]
    """Header names lower-cased."""
    body: Any
    raw: bytes

    @property
    def system_blocks(self) -> list[dict[str, Any]]:
        """``system`` as a list of text blocks."""
        system = self.body.get("system") if isinstance(self.body, dict) else None
        if isinstance(system, str):
            return [{"type": "text", "text": system}]
        return list(system or [])

    @property
    def system_text(self) -> str:
        """All system text."""
        return "\n".join(str(b.get("text", "")) for b in self.system_blocks)

    @property
    def user_text(self) -> str:
        """All text of the messages."""
        out: list[str] = []
        for message in self.body.get("messages", []) if isinstance(self.body, dict) else []:
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.extend(_block_text(b) for b in content if isinstance(b, dict))
        return "\n".join(out)

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """The ``tool_result`` blocks of the last message (what the model is being answered)."""
        messages = self.body.get("messages", []) if isinstance(self.body, dict) else []
        content = messages[-1].get("content") if messages else None
        if not isinstance(content, list):
            return []
        return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]

    @property
    def tool_choice(self) -> str:
        """``any``/``auto``/``none``, or the forced tool's name ('' when absent)."""
        choice = self.body.get("tool_choice") if isinstance(self.body, dict) else None
        if not isinstance(choice, dict):
            return ""
        return str(choice.get("name") or choice.get("type") or "")

    @property
    def prompt_text(self) -> str:
        """System and message text together."""
        return self.system_text + "\n" + self.user_text


class _Server(ThreadingHTTPServer):
    # Handler threads are joined on close so no thread outlives a test.
    daemon_threads = False
    block_on_close = True
    owner: FakeAnthropicServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    # HTTP/1.0: one request per connection, so handler threads end with their response.
    protocol_version = "HTTP/1.0"

    def do_POST(self) -> None:
        self.server.owner._handle(self)

    do_GET = do_PUT = do_DELETE = do_PATCH = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        return


class FakeAnthropicServer:
    """The scripted local API. Use as a context manager (or :func:`serving` in fixtures)."""

    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        """When set, requests with another key get a 401 (like the real API)."""
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []
        self.dynamic: Callable[[Any], Reply | ErrorReply] | None = None
        """Answers requests once the queue is empty."""
        self._queue: deque[ScriptItem] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._counter = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeAnthropicServer:
        """Bind 127.0.0.1:0 and serve in a background thread."""
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, interrupt scripted delays, join all threads, close the socket."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeAnthropicServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (what the SDK gets as ``base_url``)."""
        if self._server is None:
            raise RuntimeError("server is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- scripting ---------------------------------------------------------------------------

    def enqueue(self, *items: ScriptItem) -> None:
        """Append replies (served in order, one per request)."""
        with self._lock:
            self._queue.extend(items)

    @property
    def pending(self) -> int:
        """Queued items not served yet."""
        with self._lock:
            return len(self._queue)

    @property
    def message_requests(self) -> list[RecordedRequest]:
        """Recorded requests to ``POST /v1/messages``."""
        return [r for r in self.requests if r.method == "POST" and r.path == MESSAGES_PATH]

    def assert_clean(self, *, allow_pending: bool = False) -> None:
        """Fail when a request was unexpected or malformed, or (unless allowed) the script was not used up."""
        problems = list(self.errors)
        if not allow_pending and self.pending:
            problems.append(f"{self.pending} scripted replies were never requested")
        if problems:
            raise AssertionError("fake Anthropic server: " + "; ".join(problems))

    # -- request handling --------------------------------------------------------------------

    def _fail(self, request: str, problem: str) -> str:
        message = f"{request}: {problem}"
        with self._lock:
            self.errors.append(message)
        return message

    def _handle(self, handler: _Handler) -> None:
        method = handler.command
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length > 0 else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        body: Any = None
        parse_problem = ""
        if raw:
            try:
                body = json.loads(raw)
            except ValueError as exc:
                parse_problem = f"body is not JSON: {exc}"
        record = RecordedRequest(method, handler.path, headers, body, raw)
        with self._lock:
            self.requests.append(record)
            self._counter += 1
            number = self._counter
        where = f"{method} {handler.path}"

        if method != "POST" or handler.path != MESSAGES_PATH:
            msg = self._fail(where, "unexpected path or method")
            self._send_error(handler, ErrorReply(404, "not_found_error", msg))
            return
        problems = self._check_headers(headers)
        problems += [parse_problem] if parse_problem else validate_messages_body(body)
        if problems:
            msg = self._fail(where, "; ".join(problems))
            self._send_error(handler, ErrorReply(400, "invalid_request_error", msg))
            return
        if self.api_key is not None and _presented_key(headers) != self.api_key:
            self._send_error(handler, auth_error())
            return
        with self._lock:
            item: ScriptItem | None = self._queue.popleft() if self._queue else self.dynamic
        if item is None:
            msg = self._fail(where, "no scripted reply left for this request")
            self._send_error(handler, ErrorReply(400, "invalid_request_error", msg))
            return
        reply = item if isinstance(item, Reply | ErrorReply) else item(body)
        if reply.delay_s:
            self._stopping.wait(reply.delay_s)
        if isinstance(reply, ErrorReply):
            self._send_error(handler, reply)
        else:
            self._send_json(handler, 200, render_message(reply, body, raw, number), reply.headers)

    @staticmethod
    def _check_headers(headers: Mapping[str, str]) -> list[str]:
        problems: list[str] = []
        version = headers.get("anthropic-version", "")
        if not API_VERSION_RE.match(version):
            problems.append(f"anthropic-version header missing or malformed ({version!r})")
        if not _presented_key(headers):
            problems.append("no API key (x-api-key or Authorization: Bearer)")
        if not headers.get("content-type", "").startswith("application/json"):
            problems.append(f"content-type is {headers.get('content-type')!r}, not application/json")
        return problems

    # -- responses ---------------------------------------------------------------------------

    def _send_error(self, handler: _Handler, reply: ErrorReply) -> None:
        headers = dict(reply.headers)
        if reply.raw_body is not None:
            self._send(handler, reply.status, reply.raw_body.encode(), headers)
            return
        if reply.status < 500 and reply.status != 429:
            headers.setdefault("x-should-retry", "false")
        body = {
            "type": "error",
            "error": {"type": reply.error_type, "message": reply.message or reply.error_type},
            "request_id": "req_fake",
        }
        self._send_json(handler, reply.status, body, headers)

    def _send_json(self, handler: _Handler, status: int, body: object, headers: Mapping[str, str]) -> None:
        self._send(handler, status, json.dumps(body).encode(), headers)

    @staticmethod
    def _send(handler: _Handler, status: int, payload: bytes, headers: Mapping[str, str]) -> None:
        try:
            handler.send_response(status)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(payload)))
            handler.send_header("request-id", "req_fake")
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test); nothing to answer


def _block_text(block: Mapping[str, Any]) -> str:
    """The text of a content block: text, a tool result's content, a tool use's input as JSON."""
    if block.get("type") == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        return str(content or "")
    if block.get("type") == "tool_use":
        return json.dumps(block.get("input"), sort_keys=True)
    return str(block.get("text", ""))


def _presented_key(headers: Mapping[str, str]) -> str:
    if headers.get("x-api-key"):
        return headers["x-api-key"]
    auth = headers.get("authorization", "")
    return auth[len("Bearer ") :].strip() if auth.startswith("Bearer ") else ""


def render_message(reply: Reply, body: Mapping[str, Any], raw: bytes, number: int) -> dict[str, Any]:
    """The JSON of a successful Messages API response for ``reply``."""
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for i, use in enumerate(reply.tool_uses):
        content.append(
            {
                "type": "tool_use",
                "id": use.id or f"toolu_fake_{number:04d}_{i}",
                "name": use.name,
                "input": use.input,
            }
        )
    return {
        "id": f"msg_fake_{number:04d}",
        "type": "message",
        "role": "assistant",
        "model": reply.model or body["model"],
        "content": content,
        "stop_reason": reply.stop_reason or ("tool_use" if reply.tool_uses else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": len(raw) // 4 if reply.input_tokens is None else reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cache_creation_input_tokens": reply.cache_creation_input_tokens,
            "cache_read_input_tokens": reply.cache_read_input_tokens,
        },
    }


# -- body validation -------------------------------------------------------------------------


def _check_cache_control(value: object, where: str, problems: list[str]) -> int:
    if value is None:
        return 0
    if not isinstance(value, dict) or value.get("type") != "ephemeral" or set(value) - {"type", "ttl"}:
        problems.append(f"{where}.cache_control must be {{'type': 'ephemeral'}}, got {value!r}")
    elif "ttl" in value and value["ttl"] not in ("5m", "1h"):
        problems.append(f"{where}.cache_control.ttl {value['ttl']!r} is not 5m or 1h")
    return 1


def _check_text_block(block: object, where: str, problems: list[str]) -> int:
    if not isinstance(block, dict):
        problems.append(f"{where} is not an object")
        return 0
    if block.get("type") != "text":
        problems.append(f"{where}.type must be 'text'")
    if not isinstance(block.get("text"), str) or not block["text"]:
        problems.append(f"{where}.text must be a non-empty string")
    unknown = set(block) - {"type", "text", "cache_control", "citations"}
    if unknown:
        problems.append(f"{where} has unknown fields {sorted(unknown)}")
    return _check_cache_control(block.get("cache_control"), where, problems)


def validate_messages_body(body: object) -> list[str]:
    """What the real API (or this project's conventions) would reject in a Messages request."""
    if not isinstance(body, dict):
        return ["body must be a JSON object"]
    problems: list[str] = []
    unknown = set(body) - TOP_LEVEL_KEYS
    if unknown:
        problems.append(f"unexpected fields {sorted(unknown)}")
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model must be a non-empty string")
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        problems.append(f"max_tokens must be a positive integer, got {max_tokens!r}")
    if body.get("stream"):
        problems.append("streaming is not supported by this fake (and not used by ARCS)")
    breakpoints = 0

    system = body.get("system")
    if isinstance(system, list):
        if not system:
            problems.append("system must not be an empty list")
        for i, block in enumerate(system):
            breakpoints += _check_text_block(block, f"system[{i}]", problems)
    elif system is not None and not isinstance(system, str):
        problems.append("system must be a string or a list of text blocks")

    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        problems.append("messages must be a non-empty list")
        messages = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            problems.append(f"{where} must be an object with exactly role and content")
            continue
        if message["role"] not in ("user", "assistant"):
            problems.append(f"{where}.role must be user or assistant")
        if i == 0 and message["role"] != "user":
            problems.append("the first message must be from the user")
        if i and message["role"] == messages[i - 1].get("role"):
            problems.append(f"{where} has the same role as the message before it")
        content = message["content"]
        if isinstance(content, str):
            if not content.strip():
                problems.append(f"{where}.content must not be empty")
        elif isinstance(content, list) and content:
            for j, block in enumerate(content):
                kind = block.get("type") if isinstance(block, dict) else None
                if kind in ("tool_use", "tool_result") and isinstance(block, dict):
                    problems += _check_tool_block(block, message["role"], f"{where}.content[{j}]")
                    breakpoints += _check_cache_control(block.get("cache_control"), f"{where}[{j}]", problems)
                else:
                    breakpoints += _check_text_block(block, f"{where}.content[{j}]", problems)
        else:
            problems.append(f"{where}.content must be a non-empty string or list of blocks")

    tools = body.get("tools")
    names: set[str] = set()
    if tools is not None:
        if not isinstance(tools, list) or not tools:
            problems.append("tools must be a non-empty list")
            tools = []
        for i, tool in enumerate(tools):
            where = f"tools[{i}]"
            if not isinstance(tool, dict):
                problems.append(f"{where} is not an object")
                continue
            unknown = set(tool) - {"name", "description", "input_schema", "cache_control", "strict", "type"}
            if unknown:
                problems.append(f"{where} has unknown fields {sorted(unknown)}")
            name = tool.get("name")
            if not isinstance(name, str) or not TOOL_NAME_RE.match(name):
                problems.append(f"{where}.name {name!r} is invalid")
            elif name in names:
                problems.append(f"{where}.name {name!r} is duplicated")
            else:
                names.add(name)
            if "description" in tool and not isinstance(tool["description"], str):
                problems.append(f"{where}.description must be a string")
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                problems.append(f"{where}.input_schema must be a JSON schema of type object")
            elif "properties" in schema and not isinstance(schema["properties"], dict):
                problems.append(f"{where}.input_schema.properties must be an object")
            else:
                try:
                    json.dumps(schema)
                except (TypeError, ValueError):
                    problems.append(f"{where}.input_schema is not JSON")
            breakpoints += _check_cache_control(tool.get("cache_control"), where, problems)

    problems += _check_tool_pairing(messages, has_tools=tools is not None)

    choice = body.get("tool_choice")
    if choice is not None:
        if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none"):
            problems.append(f"tool_choice {choice!r} is invalid")
        elif not names and choice.get("type") != "none":
            problems.append("tool_choice given without tools")
        elif choice.get("type") == "tool" and choice.get("name") not in names:
            problems.append(f"tool_choice names unknown tool {choice.get('name')!r}")
        elif set(choice) - {"type", "name", "disable_parallel_tool_use"}:
            problems.append(f"tool_choice has unknown fields {sorted(set(choice) - {'type', 'name'})}")

    breakpoints += _check_cache_control(body.get("cache_control"), "request", problems)
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        problems.append(f"{breakpoints} cache_control breakpoints (the API allows {MAX_CACHE_BREAKPOINTS})")
    return problems


def _check_tool_block(block: Mapping[str, Any], role: str, where: str) -> list[str]:
    """A ``tool_use`` (assistant turns only) or ``tool_result`` (user turns only) block's shape."""
    problems: list[str] = []
    if block["type"] == "tool_use":
        if role != "assistant":
            problems.append(f"{where}: tool_use blocks belong to assistant turns")
        if set(block) - {"type", "id", "name", "input", "cache_control"}:
            problems.append(
                f"{where} has unknown fields {sorted(set(block) - {'type', 'id', 'name', 'input'})}"
            )
        if not isinstance(block.get("id"), str) or not block["id"]:
            problems.append(f"{where}.id must be a non-empty string")
        if not isinstance(block.get("name"), str) or not TOOL_NAME_RE.match(block["name"]):
            problems.append(f"{where}.name {block.get('name')!r} is invalid")
        if not isinstance(block.get("input"), dict):
            problems.append(f"{where}.input must be an object")
        return problems
    if role != "user":
        problems.append(f"{where}: tool_result blocks belong to user turns")
    if set(block) - {"type", "tool_use_id", "content", "is_error", "cache_control"}:
        problems.append(
            f"{where} has unknown fields {sorted(set(block) - {'type', 'tool_use_id', 'content', 'is_error'})}"
        )
    if not isinstance(block.get("tool_use_id"), str) or not block["tool_use_id"]:
        problems.append(f"{where}.tool_use_id must be a non-empty string")
    content = block.get("content")
    if not (content is None or isinstance(content, str)) and (
        not isinstance(content, list)
        or not all(isinstance(b, dict) and b.get("type") == "text" for b in content)
    ):
        problems.append(f"{where}.content must be a string or a list of text blocks")
    if "is_error" in block and not isinstance(block["is_error"], bool):
        problems.append(f"{where}.is_error must be a boolean")
    return problems


def _check_tool_pairing(messages: Sequence[Any], *, has_tools: bool) -> list[str]:
    """As the API checks: each assistant ``tool_use`` is answered by a ``tool_result`` at the start of
    the next user turn, each ``tool_result`` answers a ``tool_use`` of the turn before, and a
    conversation with tool blocks defines its tools."""
    problems: list[str] = []

    def blocks(i: int, kind: str) -> list[Mapping[str, Any]]:
        content = messages[i].get("content") if isinstance(messages[i], dict) else None
        if not isinstance(content, list):
            return []
        return [b for b in content if isinstance(b, dict) and b.get("type") == kind]

    for i in range(len(messages)):
        uses = blocks(i, "tool_use")
        results = blocks(i, "tool_result")
        if (uses or results) and not has_tools:
            problems.append(f"messages[{i}] has tool blocks but the request defines no tools")
        if uses:
            ids = [u.get("id") for u in uses]
            if len(set(ids)) != len(ids):
                problems.append(f"messages[{i}] repeats a tool_use id")
            answered = (
                [r.get("tool_use_id") for r in blocks(i + 1, "tool_result")] if i + 1 < len(messages) else []
            )
            if i + 1 < len(messages) and sorted(map(str, answered)) != sorted(map(str, ids)):
                problems.append(
                    f"messages[{i + 1}] must answer tool_use ids {ids} with tool_result blocks, got {answered}"
                )
            if i + 1 < len(messages):
                content = messages[i + 1].get("content")
                kinds = [b.get("type") for b in content] if isinstance(content, list) else ["text"]
                if "text" in kinds and kinds.index("text") < len(answered):
                    problems.append(f"messages[{i + 1}]: tool_result blocks must come first")
        if results:
            previous = [u.get("id") for u in blocks(i - 1, "tool_use")] if i > 0 else []
            stray = [r.get("tool_use_id") for r in results if r.get("tool_use_id") not in previous]
            if stray:
                problems.append(f"messages[{i}] answers unknown tool_use ids {stray}")
    return problems


@contextmanager
def serving(**kwargs: Any) -> Iterator[FakeAnthropicServer]:
    """Run a server for the ``with`` block and assert at exit that it saw no unexpected request."""
    with FakeAnthropicServer(**kwargs) as server:
        yield server
    server.assert_clean()


__all__ = [
    "ErrorReply",
    "FakeAnthropicServer",
    "RecordedRequest",
    "Reply",
    "ToolUse",
    "auth_error",
    "bad_request",
    "malformed_json",
    "overloaded",
    "rate_limited",
    "render_message",
    "server_error",
    "serving",
    "validate_messages_body",
]
