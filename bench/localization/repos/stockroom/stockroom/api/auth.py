"""Bearer tokens: ``base64(payload).base64(hmac-sha256)``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time


class AuthError(Exception):
    status = 401


class ForbiddenError(AuthError):
    status = 403


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign_token(secret: str, subject: str, scopes: list[str], ttl: int, now: float | None = None) -> str:
    issued = int(now if now is not None else time.time())
    payload = {"sub": subject, "scopes": sorted(scopes), "iat": issued}
    if ttl > 0:
        payload["exp"] = issued + ttl
    body = _b64(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode())
    sig = hmac.new(secret.encode(), body.encode(), hashlib.sha256).digest()
    return f"{body}.{_b64(sig)}"


def verify_token(secret: str, token: str, now: float | None = None) -> dict[str, object]:
    """Check signature and expiry; return the payload."""
    try:
        body, sig = token.split(".")
    except ValueError:
        raise AuthError("malformed token") from None
    expected = hmac.new(secret.encode(), body.encode(), hashlib.sha256).digest()
    if not hmac.compare_digest(expected, _unb64(sig)):
        raise AuthError("bad signature")
    payload = json.loads(_unb64(body))
    current = now if now is not None else time.time()
    if payload["exp"] < current:
        raise AuthError("token expired")
    return payload


def bearer_token(headers: dict[str, str]) -> str:
    value = headers.get("authorization") or headers.get("Authorization") or ""
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise AuthError("missing bearer token")
    return token.strip()


def require_scope(payload: dict[str, object], scope: str) -> None:
    scopes = payload.get("scopes") or []
    if scope not in scopes:
        raise ForbiddenError(f"missing scope {scope}")
