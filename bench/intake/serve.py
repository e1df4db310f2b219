"""Serve one app for bench/intake the way ``arcs serve`` does: gunicorn + uvicorn workers.

``python -m bench.intake.serve --app arcs|bare --port P --workers N``. Both apps get the same
gunicorn options (:func:`bot.cli.serve_cmd.gunicorn_options` of the code under test):

* ``arcs``: ``bot.web.asgi:create()`` (settings from the ``ARCS_*`` environment), the production
  entry point of ``deploy/gunicorn.conf.py``;
* ``bare``: a Starlette app whose ``POST /webhooks/github`` reads the body and answers 202.

Each worker prints which file its code was imported from (``bench_app_loaded``), so the run can
check that the code under test (a base worktree on ``PYTHONPATH``) is the code measured.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def bare_app() -> Any:
    """The reference endpoint: read the body, answer 202 with a small JSON document."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def webhook(request: Request) -> JSONResponse:
        await request.body()
        return JSONResponse({"status": "queued", "jobs": 1, "reason": None}, status_code=202)

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[Route("/webhooks/github", webhook, methods=["POST"]), Route("/healthz", healthz)]
    )


def main(argv: list[str] | None = None) -> int:
    """Run gunicorn in this process until SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--app", choices=("arcs", "bare"), required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)

    from gunicorn.app.base import BaseApplication  # type: ignore[import-untyped]

    import bot.web.webhooks
    from bot.cli.serve_cmd import gunicorn_options

    options = gunicorn_options("127.0.0.1", args.port, args.workers)
    code = bot.web.webhooks.__file__

    class _Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            print(f"bench_app_loaded app={args.app} code={code}", file=sys.stderr, flush=True)
            if args.app == "bare":
                return bare_app()
            from bot.web.asgi import create

            return create()

    _Server().run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
