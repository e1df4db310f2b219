"""A small JSON codec for frozen dataclasses: what :mod:`jobs.messages` is written and validated with.

Values are ``str``, ``int`` (never a ``bool``), ``bool``, ``Literal`` strings, ``tuple[X, ...]``
(JSON lists), ``datetime`` (ISO 8601; a time without a zone is UTC), ``Decimal`` (a string, never
a float) and nested dataclasses, each optionally ``| None``. :func:`decode` names the first field
that is missing, unknown or of the wrong type (:class:`MessageInvalid`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import types
import typing
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints


class MessageInvalid(ValueError):
    """A message that cannot be decoded: unknown version, missing or unknown field, wrong type."""


D = TypeVar("D")


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The resolved field types of ``cls`` (resolved once per class)."""
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = get_type_hints(cls)
    return found


def what(raw: object) -> str:
    """How a bad value is named in an error (its JSON type as Python calls it)."""
    return "null" if raw is None else type(raw).__name__


def _encode(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, tuple):
        return [_encode(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return encode_fields(value)
    return value


def encode_fields(value: Any) -> dict[str, Any]:
    """A dataclass instance as a JSON object (every field)."""
    return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}


def _time(raw: object, where: str) -> dt.datetime:
    if not isinstance(raw, str):
        raise MessageInvalid(f"{where}: expected an ISO 8601 time, got {what(raw)}")
    try:
        when = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise MessageInvalid(f"{where}: {raw[:40]!r} is not an ISO 8601 time") from None
    # A time without a zone is UTC (as the worker has always read it).
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def _decimal(raw: object, where: str) -> Decimal:
    # Amounts travel as strings (no float rounding); a float is refused.
    if not isinstance(raw, str | int) or isinstance(raw, bool):
        raise MessageInvalid(f"{where}: expected a decimal string, got {what(raw)}")
    try:
        amount = Decimal(raw)
    except InvalidOperation:
        raise MessageInvalid(f"{where}: {str(raw)[:40]!r} is not a decimal number") from None
    if not amount.is_finite():
        raise MessageInvalid(f"{where}: {raw!r} is not a finite amount")
    return amount


def _value(tp: Any, raw: object, where: str, legacy: bool) -> Any:
    origin = get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        options = [a for a in get_args(tp) if a is not type(None)]
        if raw is None and len(options) < len(get_args(tp)):
            return None
        (only,) = options  # every union here is `X | None`
        return _value(only, raw, where, legacy)
    if raw is None:
        raise MessageInvalid(f"{where}: must not be null")
    if origin is Literal:
        allowed = get_args(tp)
        if isinstance(raw, str) and raw in allowed:
            return raw
        raise MessageInvalid(f"{where}: {raw!r} is not one of {', '.join(map(repr, allowed))}")
    if origin is tuple:
        item_type = get_args(tp)[0]
        if not isinstance(raw, list | tuple):
            raise MessageInvalid(f"{where}: expected a list, got {what(raw)}")
        return tuple(_value(item_type, item, f"{where}[{i}]", legacy) for i, item in enumerate(raw))
    if tp is bool:
        if not isinstance(raw, bool):
            raise MessageInvalid(f"{where}: expected a boolean, got {what(raw)}")
        return raw
    if tp is int:
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise MessageInvalid(f"{where}: expected an integer, got {what(raw)}")
        return raw
    if tp is str:
        if not isinstance(raw, str):
            raise MessageInvalid(f"{where}: expected a string, got {what(raw)}")
        return raw
    if tp is dt.datetime:
        return _time(raw, where)
    if tp is Decimal:
        return _decimal(raw, where)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return decode(tp, raw, where, legacy=legacy)
    raise TypeError(f"{where}: no decoder for {tp!r}")  # a programming error, not a bad message


def decode(cls: type[D], raw: object, where: str, *, legacy: bool = False) -> D:
    """``raw`` (parsed JSON) as the dataclass ``cls``; ``where`` prefixes the field names in errors.

    ``legacy`` reads a tolerant older shape: unknown keys are ignored and a null where the field
    has a default counts as missing.
    """
    if not isinstance(raw, Mapping):
        raise MessageInvalid(f"{where}: expected an object, got {what(raw)}")
    known = dataclasses.fields(cls)  # type: ignore[arg-type]
    if not legacy:
        unknown = sorted(str(k) for k in raw if k not in {f.name for f in known})
        if unknown:
            raise MessageInvalid(f"{where}: unknown field(s) {', '.join(unknown)}")
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in known:
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        given = raw.get(f.name)
        if f.name not in raw or (legacy and given is None and has_default):
            if not has_default:
                raise MessageInvalid(f"{where}.{f.name} is missing")
            continue
        values[f.name] = _value(hints[f.name], given, f"{where}.{f.name}", legacy)
    return cls(**values)
