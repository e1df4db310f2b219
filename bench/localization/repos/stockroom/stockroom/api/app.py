"""Routing and error mapping. ``python -m stockroom.api.app`` serves on :8080."""

from __future__ import annotations

import re
from typing import Callable

from stockroom.api import handlers
from stockroom.api.auth import AuthError
from stockroom.api.handlers import Context, Request, Response
from stockroom.config import load_settings
from stockroom.db import NotFound, Repository
from stockroom.services.inventory import InsufficientStock
from stockroom.utils.pagination import BadCursor
from stockroom.utils.validation import ValidationError

Handler = Callable[[Context, Request], Response]


class Router:
    def __init__(self) -> None:
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []

    def add(self, method: str, template: str, handler: Handler) -> None:
        """Register ``handler`` for ``template`` such as ``/orders/{order_id}/cancel``."""
        pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template)
        # The pattern is left unanchored on purpose: match() decides how much of the path must match.
        self._routes.append((method.upper(), re.compile(pattern), handler))

    def match(self, method: str, path: str) -> tuple[Handler, dict[str, str]] | None:
        for route_method, pattern, handler in self._routes:
            if route_method != method.upper():
                continue
            m = pattern.match(path)
            if m:
                return handler, m.groupdict()
        return None

    def dispatch(self, ctx: Context, request: Request) -> Response:
        found = self.match(request.method, request.path)
        if found is None:
            return Response(404, {"error": "not_found", "detail": request.path})
        handler, params = found
        request.params = params
        try:
            return handler(ctx, request)
        except AuthError as exc:
            return Response(exc.status, {"error": "unauthorized", "detail": str(exc)})
        except (ValidationError, BadCursor) as exc:
            return Response(400, {"error": "invalid", "detail": str(exc)})
        except NotFound as exc:
            return Response(404, {"error": "not_found", "detail": str(exc)})
        except InsufficientStock as exc:
            return Response(409, {"error": "insufficient_stock", "detail": str(exc)})


def create_app(repo: Repository | None = None) -> tuple[Router, Context]:
    router = Router()
    router.add("GET", "/products", handlers.handle_list_products)
    router.add("GET", "/products/{sku}", handlers.handle_get_product)
    router.add("GET", "/search", handlers.handle_search)
    router.add("POST", "/orders", handlers.handle_create_order)
    router.add("POST", "/orders/{order_id}/cancel", handlers.handle_cancel_order)
    router.add("GET", "/reports/stock", handlers.handle_stock_report)
    return router, Context(repo or Repository(), load_settings())


if __name__ == "__main__":  # pragma: no cover
    from wsgiref.simple_server import make_server

    print("serving on :8080")
    make_server("", 8080, lambda environ, start: []).serve_forever()
