"""HTTP handlers: parse the request, call a service, serialize the result."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from stockroom.api.auth import bearer_token, require_scope, verify_token
from stockroom.api.serializers import order_items_from_dict, order_to_dict, product_to_dict
from stockroom.config import Settings
from stockroom.db import Repository
from stockroom.services.orders import cancel_order, place_order
from stockroom.services.reports import low_stock_report, sales_by_category
from stockroom.services.search import search_products
from stockroom.utils.dates import parse_iso_date
from stockroom.utils.pagination import paginate


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    params: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body or b"{}")


@dataclass
class Response:
    status: int
    body: Any

    def json(self) -> Any:
        return self.body


@dataclass
class Context:
    repo: Repository
    settings: Settings


def authorize(ctx: Context, request: Request, scope: str) -> dict[str, object]:
    payload = verify_token(ctx.settings.secret, bearer_token(request.headers))
    require_scope(payload, scope)
    return payload


def handle_list_products(ctx: Context, request: Request) -> Response:
    authorize(ctx, request, "catalog:read")
    limit = min(int(request.query.get("limit", ctx.settings.page_size)), ctx.settings.max_page_size)
    page = paginate(ctx.repo.list_products(), key=lambda p: p.sku, limit=limit, cursor=request.query.get("cursor"))
    return Response(200, {"items": [product_to_dict(p) for p in page.items], "next_cursor": page.next_cursor})


def handle_get_product(ctx: Context, request: Request) -> Response:
    authorize(ctx, request, "catalog:read")
    product = ctx.repo.get_product(request.params["sku"])
    return Response(200, product_to_dict(product))


def handle_search(ctx: Context, request: Request) -> Response:
    authorize(ctx, request, "catalog:read")
    limit = request.query.get("limit", "20")
    results = search_products(ctx.repo, request.query.get("q", ""), limit=limit)
    return Response(200, {"items": [product_to_dict(p) for p in results]})


def handle_create_order(ctx: Context, request: Request) -> Response:
    payload = authorize(ctx, request, "orders:write")
    data = request.json()
    items = order_items_from_dict(data)
    order = place_order(
        ctx.repo,
        ctx.settings,
        customer_id=str(payload["sub"]),
        items=items,
        region=data.get("region", "domestic"),
        coupon=data.get("coupon"),
    )
    return Response(201, order_to_dict(order))


def handle_cancel_order(ctx: Context, request: Request) -> Response:
    authorize(ctx, request, "orders:write")
    order = cancel_order(ctx.repo, request.params["order_id"])
    return Response(200, order_to_dict(order))


def handle_stock_report(ctx: Context, request: Request) -> Response:
    authorize(ctx, request, "reports:read")
    rows = low_stock_report(ctx.repo)
    body: dict[str, Any] = {"low_stock": [row.__dict__ for row in rows]}
    since = request.query.get("since")
    if since:
        sales = sales_by_category(ctx.repo, parse_iso_date(since))
        body["sales"] = {cat: str(m) for cat, m in sales.items()}
    return Response(200, body)
