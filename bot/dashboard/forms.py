"""Reading the dashboard's HTML forms (urlencoded only: they carry no files, so no multipart parser)."""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request

MAX_FORM_BYTES = 16 * 1024


async def read_form(request: Request, *, max_bytes: int = MAX_FORM_BYTES) -> dict[str, str] | None:
    """An ``application/x-www-form-urlencoded`` body as a dict (first value of each field), or None
    for another content type, a body over ``max_bytes`` or undecodable bytes.

    The dashboard's forms carry no files, so this needs no multipart parser.
    """
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        return None
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > max_bytes:
            return None
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=100)
    except (UnicodeDecodeError, ValueError):
        return None
    values: dict[str, str] = {}
    for key, value in pairs:
        values.setdefault(key, value)
    return values
