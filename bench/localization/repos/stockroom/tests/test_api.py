from __future__ import annotations

import json

from stockroom.api.auth import sign_token
from stockroom.api.handlers import Request

from .conftest import token


def get(app, path, headers, **query):
    router, ctx = app
    return router.dispatch(ctx, Request("GET", path, query=query, headers=headers))


def post(app, path, headers, body):
    router, ctx = app
    return router.dispatch(ctx, Request("POST", path, headers=headers, body=json.dumps(body).encode()))


def test_get_product(app, settings):
    resp = get(app, "/products/MUG-010", token(settings, "catalog:read"))
    assert resp.status == 200
    assert resp.json()["sku"] == "MUG-010"


def test_list_products_paginates(app, settings):
    headers = token(settings, "catalog:read")
    first = get(app, "/products", headers, limit="2")
    assert len(first.json()["items"]) == 2
    second = get(app, "/products", headers, limit="2", cursor=first.json()["next_cursor"])
    assert [p["sku"] for p in second.json()["items"]] == ["MUG-010", "TSH-001"]


def test_search_with_limit(app, settings):
    resp = get(app, "/search", token(settings, "catalog:read"), q="tag:outdoor", limit="1")
    assert [p["sku"] for p in resp.json()["items"]] == ["BOOT-200"]


def test_service_token_without_expiry(app, settings):
    service = {"Authorization": "Bearer " + sign_token(settings.secret, "svc-sync", ["catalog:read"], ttl=0)}
    resp = get(app, "/products", service)
    assert resp.status == 200


def test_stock_report_since_utc(app, settings):
    resp = get(app, "/reports/stock", token(settings, "reports:read"), since="2024-03-01T00:00:00Z")
    assert resp.status == 200


def test_create_order(app, settings):
    resp = post(app, "/orders", token(settings, "orders:write"), {"items": [{"sku": "TSH-001", "quantity": 3}]})
    assert resp.status == 201
    assert resp.json()["lines"][0]["quantity"] == 3
