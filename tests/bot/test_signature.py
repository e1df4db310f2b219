"""X-Hub-Signature-256 verification: GitHub's published vector, SHA-1 refusal, constant time."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from starlette.testclient import TestClient

from bot.settings import Settings
from bot.web.app import create_app
from bot.web.fakes import ListEnqueuer, MemoryDeliveryStore
from bot.web.webhooks import WebhookRejected, signature_for, verify_signature
from tests.bot.webhook_support import with_secret

# https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
GITHUB_SECRET = "It's a Secret to Everybody"
GITHUB_BODY = b"Hello, World!"
GITHUB_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_githubs_published_vector() -> None:
    assert signature_for(GITHUB_SECRET, GITHUB_BODY) == GITHUB_SIGNATURE


def test_vector_verifies() -> None:
    verify_signature(GITHUB_SECRET, GITHUB_BODY, {"x-hub-signature-256": GITHUB_SIGNATURE})


def test_uppercase_hex_is_accepted() -> None:
    upper = "sha256=" + GITHUB_SIGNATURE.removeprefix("sha256=").upper()
    verify_signature(GITHUB_SECRET, GITHUB_BODY, {"x-hub-signature-256": upper})


def reason(secret: str, body: bytes, headers: dict[str, str]) -> str:
    with pytest.raises(WebhookRejected) as caught:
        verify_signature(secret, body, headers)
    assert caught.value.status_code == 401
    return caught.value.reason


def test_wrong_secret() -> None:
    assert "does not match" in reason(
        "another secret", GITHUB_BODY, {"x-hub-signature-256": GITHUB_SIGNATURE}
    )


def test_tampered_body() -> None:
    assert "does not match" in reason(
        GITHUB_SECRET, b"Hello, World?", {"x-hub-signature-256": GITHUB_SIGNATURE}
    )


def test_missing_header() -> None:
    assert "missing X-Hub-Signature-256" in reason(GITHUB_SECRET, GITHUB_BODY, {})


def test_sha1_alone_is_refused_even_when_valid() -> None:
    sha1 = "sha1=" + hmac.new(GITHUB_SECRET.encode(), GITHUB_BODY, hashlib.sha1).hexdigest()
    assert "SHA-1" in reason(GITHUB_SECRET, GITHUB_BODY, {"x-hub-signature": sha1})


def test_valid_sha1_does_not_rescue_a_bad_sha256() -> None:
    sha1 = "sha1=" + hmac.new(GITHUB_SECRET.encode(), GITHUB_BODY, hashlib.sha1).hexdigest()
    bad = "sha256=" + "0" * 64
    assert "does not match" in reason(
        GITHUB_SECRET, GITHUB_BODY, {"x-hub-signature": sha1, "x-hub-signature-256": bad}
    )


@pytest.mark.parametrize(
    "header",
    [
        "",
        "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",  # no prefix
        "sha1=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        "sha256=757107ea",  # truncated
        "sha256=" + "z" * 64,
        "sha256=" + "é" * 64,  # non-ASCII must not crash compare_digest
        GITHUB_SIGNATURE + "00",
    ],
)
def test_malformed_headers(header: str) -> None:
    assert "malformed" in reason(GITHUB_SECRET, GITHUB_BODY, {"x-hub-signature-256": header})


def test_comparison_is_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr("bot.web.webhooks.hmac.compare_digest", spy)
    verify_signature(GITHUB_SECRET, GITHUB_BODY, {"x-hub-signature-256": GITHUB_SIGNATURE})
    assert calls == [(GITHUB_SIGNATURE.encode(), GITHUB_SIGNATURE.encode())]


def test_vector_through_the_endpoint(settings: Settings) -> None:
    # The signature passes (else 401); "Hello, World!" then fails as JSON: 400, nothing recorded.
    store, queue = MemoryDeliveryStore(), ListEnqueuer()
    app = create_app(with_secret(settings, GITHUB_SECRET), store=store, enqueuer=queue)
    with TestClient(app) as client:
        reply = client.post(
            "/webhooks/github",
            content=GITHUB_BODY,
            headers={
                "X-Hub-Signature-256": GITHUB_SIGNATURE,
                "X-GitHub-Event": "ping",
                "X-GitHub-Delivery": "d-1",
            },
        )
        bad = client.post(
            "/webhooks/github",
            content=GITHUB_BODY,
            headers={
                "X-Hub-Signature-256": "sha256=" + "1" * 64,
                "X-GitHub-Event": "ping",
                "X-GitHub-Delivery": "d-2",
            },
        )
    assert reply.status_code == 400 and "malformed JSON" in reply.json()["reason"]
    assert bad.status_code == 401
    assert store.records == {} and queue.jobs == []
