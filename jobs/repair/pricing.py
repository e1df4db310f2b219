"""Token prices per model family (data: ``pricing.json`` next to this file) and the cost of a call.

Unknown models are priced with the table's ``default`` entry, which is deliberately the most
expensive family, and flagged (``Price.known is False``) so the caller can warn: a budget must
never be under-counted because a new model name is missing from the table.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jobs.repair.model import Usage

PRICING_FILE = Path(__file__).with_name("pricing.json")
_PER_TOKEN = 1_000_000.0
# What may follow a family name in a model id: dated snapshots, aliases, provider version tags.
_SUFFIX = re.compile(r"(?:-\d{8}|-latest|-v\d+(?::\d+)?)+")
# A model id as Anthropic, Bedrock ("anthropic.claude-…-v1:0", "us.anthropic.…") and Vertex
# ("claude-…@20250514") spell it, or a gateway's "provider/model": no spaces, quotes or newlines.
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}")


def model_name_problem(model: str) -> str | None:
    """Why ``model`` cannot be a model id, in one line (None: it can; it may still be unknown to
    the price table, which then prices it as the dearest family)."""
    if not model.strip():
        return "expected a model name such as claude-sonnet-4-6, got an empty value"
    if not _MODEL_ID.fullmatch(model):
        shown = model if len(model) <= 60 else model[:59] + "…"
        return (
            "expected a model name such as claude-sonnet-4-6 (letters, digits and . _ : @ / -, "
            f"at most 200 characters), got {shown!r}"
        )
    return None


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens for one model family."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    family: str = ""
    known: bool = True
    """False when the model matched no family and the conservative default was used."""

    def cost(
        self,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_write_tokens: int = 0,
        cache_read_tokens: int = 0,
    ) -> float:
        """USD for the given token counts (rounded like :class:`Usage` sums)."""
        total = (
            input_tokens * self.input
            + output_tokens * self.output
            + cache_write_tokens * self.cache_write
            + cache_read_tokens * self.cache_read
        ) / _PER_TOKEN
        return round(total, 10)


@dataclass(frozen=True, slots=True)
class PriceTable:
    """All known families plus the default for unknown models."""

    default: Price
    families: Mapping[str, Price]

    def price_for(self, model: str) -> Price:
        """The price of ``model``; the flagged default when no family matches."""
        name = _normalize(model)
        for family in sorted(self.families, key=len, reverse=True):
            if name == family or (name.startswith(family + "-") and _SUFFIX.fullmatch(name[len(family) :])):
                return self.families[family]
        return self.default


def _normalize(model: str) -> str:
    # Provider spellings: "anthropic.claude-…-v1:0" (Bedrock), "claude-…@20250514" (Vertex).
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = name.removeprefix("anthropic.")
    return name.split("@", 1)[0]


def _price(entry: object, family: str, *, known: bool) -> Price:
    if not isinstance(entry, Mapping):
        raise ValueError(f"pricing entry {family or 'default'!r} must be an object")
    try:
        values = {key: float(entry[key]) for key in ("input", "output", "cache_write", "cache_read")}
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"pricing entry {family or 'default'!r} is incomplete: {exc}") from exc
    if any(v < 0 for v in values.values()):
        raise ValueError(f"pricing entry {family or 'default'!r} has a negative price")
    return Price(**values, family=family, known=known)


def parse_price_table(data: Mapping[str, object]) -> PriceTable:
    """Build a table from the JSON structure of ``pricing.json``."""
    families = data.get("families", {})
    if not isinstance(families, Mapping):
        raise ValueError("pricing 'families' must be an object")
    return PriceTable(
        default=_price(data.get("default"), "", known=False),
        families={
            str(name).lower(): _price(entry, str(name).lower(), known=True)
            for name, entry in families.items()
        },
    )


@functools.cache
def load_price_table(path: Path = PRICING_FILE) -> PriceTable:
    """Read and cache a pricing file (the packaged one by default)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: pricing data must be a JSON object")
    return parse_price_table(data)


def price_for(model: str, table: PriceTable | None = None) -> Price:
    """The price of ``model`` in ``table`` (the packaged table by default)."""
    return (table or load_price_table()).price_for(model)


def usage_for(
    model: str,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_write_tokens: int = 0,
    cache_read_tokens: int = 0,
    table: PriceTable | None = None,
) -> tuple[Usage, bool]:
    """The :class:`Usage` of one billed call and whether its price was estimated (unknown model)."""
    price = price_for(model, table)
    usage = Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read_tokens,
        cache_write_tokens=cache_write_tokens,
        usd=price.cost(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_write_tokens=cache_write_tokens,
            cache_read_tokens=cache_read_tokens,
        ),
        calls=1,
    )
    return usage, not price.known
