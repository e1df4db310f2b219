"""Catalog search: a tiny query language over products.

``red shoes tag:outdoor price<50 category:footwear``
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from stockroom.db import Repository
from stockroom.models import Product

_FILTER = re.compile(r"^(?P<key>[a-z]+)(?P<op>:|<=|>=|<|>)(?P<value>.+)$")


class QuerySyntaxError(ValueError):
    pass


@dataclass
class ParsedQuery:
    words: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    category: str | None = None
    min_price: Decimal | None = None
    max_price: Decimal | None = None


def _parse_filter(parsed: ParsedQuery, key: str, op: str, value: str) -> None:
    if key == "tag" and op == ":":
        parsed.tags.append(value.lower())
    elif key == "category" and op == ":":
        parsed.category = value.lower()
    elif key == "price":
        try:
            amount = Decimal(value)
        except InvalidOperation:
            raise QuerySyntaxError(f"bad price: {value!r}") from None
        if op in ("<", "<="):
            parsed.max_price = amount
        elif op in (">", ">="):
            parsed.min_price = amount
        else:
            parsed.min_price = parsed.max_price = amount
    else:
        raise QuerySyntaxError(f"unknown filter {key}{op}")


def parse_query(text: str) -> ParsedQuery:
    parsed = ParsedQuery()
    for token in text.split():
        m = _FILTER.match(token)
        if m:
            _parse_filter(parsed, m["key"], m["op"], m["value"])
        else:
            parsed.words.append(token.lower())
    return parsed


def _matches(product: Product, q: ParsedQuery) -> bool:
    if product.discontinued:
        return False
    if q.category and product.category.lower() != q.category:
        return False
    if q.tags and not set(q.tags) <= {t.lower() for t in product.tags}:
        return False
    if q.min_price is not None and product.price.amount < q.min_price:
        return False
    if q.max_price is not None and product.price.amount > q.max_price:
        return False
    return True


def rank_products(products: list[Product], words: list[str]) -> list[Product]:
    """Order by how many query words appear in the name (then tags), best first."""

    def score(p: Product) -> tuple[int, str]:
        name = p.name.lower()
        hits = 0
        for w in words:
            for t in p.tags:
                if w in t.lower():
                    hits += 1
        hits += sum(2 for w in words if w in name) * 0
        return (-hits, p.sku)

    return sorted(products, key=score)


def search_products(repo: Repository, text: str, limit: int = 20) -> list[Product]:
    q = parse_query(text)
    found = [p for p in repo.list_products() if _matches(p, q)]
    if q.words:
        found = [p for p in found if any(w in p.name.lower() or w in p.tags for w in q.words)]
    return rank_products(found, q.words)[:limit]
