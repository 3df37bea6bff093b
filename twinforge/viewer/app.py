"""The web application: Starlette routes over :class:`~twinforge.viewer.site.Site` (docs/viewer.md).

Every answer carries the Content-Security-Policy (no script at all; styles, images and forms from
the server only), ``nosniff`` and ``no-referrer``. Only GET is routed, so the server cannot be made to
write. Hosts are checked (a DNS-rebinding page cannot reach it by another name), and a server
bound beyond loopback admits only requests holding its token (in the URL once, then a cookie).
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from twinforge.viewer.exceptions import NotFound, ViewerError
from twinforge.viewer.records import RunFilter
from twinforge.viewer.site import CSP, Links, Site

STATIC = Path(__file__).parent / "static"
COOKIE = "twinforge_view"
"""Cookie holding the access token of a server bound beyond loopback."""
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


class _Headers(BaseHTTPMiddleware):
    def __init__(self, app: Any, token: str | None) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if self.token is not None:
            given = request.query_params.get("token") or request.cookies.get(COOKIE) or ""
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                response: Response = PlainTextResponse("a token is needed: open the URL `twinforge view` printed", 403)
            elif request.query_params.get("token"):
                response = RedirectResponse(request.url.remove_query_params("token"), 303)
                response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict")
            else:
                response = await call_next(request)
        else:
            response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response


def _page(number: str | None) -> int:
    return int(number) if number and number.isdigit() and len(number) < 9 else 1


def build_app(site: Site, *, hosts: list[str] | None = None, token: str | None = None) -> Starlette:
    """The viewer's ASGI application.

    Args:
        site: The workspace's pages.
        hosts: Host names the server answers to (default: loopback names only).
        token: Access token required on every request (for a server bound beyond loopback).

    Returns:
        A Starlette application (serve it with uvicorn: :func:`twinforge.viewer.serve.serve`).
    """
    links = Links()

    async def html(page: tuple[str, ...], params: dict[str, str] | None = None) -> Response:
        text = await run_in_threadpool(site.page, page, links, RunFilter.of(params) if params is not None else None)
        return HTMLResponse(text)

    async def overview(request: Request) -> Response:
        return await html(("overview",))

    async def pairs(request: Request) -> Response:
        return await html(("pairs", str(_page(request.query_params.get("page")))))

    async def pair(request: Request) -> Response:
        return await html(("pair", request.path_params["pair_id"]))

    async def section(request: Request) -> Response:
        return await html(("section", request.path_params["key"]))

    async def blueprint(request: Request) -> Response:
        return await html(("blueprint", request.path_params["blueprint_id"]))

    async def runs(request: Request) -> Response:
        params = dict(request.query_params)
        return await html(("runs", "", str(_page(params.get("page")))), params)

    async def run(request: Request) -> Response:
        return await html(("run", request.path_params["run_id"]))

    async def call(request: Request) -> Response:
        return await html(("call", request.path_params["run_id"], str(request.path_params["n"])))

    async def compare(request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        return await html(("compare", a, b))

    async def plot(request: Request) -> Response:
        data = await run_in_threadpool(site.plot, request.path_params["name"])
        return Response(data, media_type="image/png")

    async def api(request: Request) -> Response:
        what = request.path_params["what"]
        params = dict(request.query_params)
        data: Any
        if what == "overview":
            data = await run_in_threadpool(site.overview)
        elif what == "pairs":
            items, number, pages = await run_in_threadpool(site.pair_items, _page(params.get("page")))
            data = {"page": number, "pages": pages, "pairs": [i.model_dump(mode="json") for i in items]}
        elif what == "runs":
            data = await run_in_threadpool(site.run_list, params, _page(params.get("page")))
        else:
            raise NotFound(f"API {what!r}")
        return _json(data)

    async def api_item(request: Request) -> Response:
        what, ident = request.path_params["what"], request.path_params["ident"]
        getters: dict[str, Callable[[str], Any]] = {"pairs": site.pair, "runs": site.run, "blueprints": site.blueprint}
        if what not in getters:
            raise NotFound(f"API {what!r}")
        return _json(await run_in_threadpool(getters[what], ident))

    async def api_call(request: Request) -> Response:
        return _json(await run_in_threadpool(site.call, request.path_params["run_id"], request.path_params["n"]))

    async def not_found(request: Request, exc: Exception) -> Response:
        message = str(exc) if isinstance(exc, NotFound) else "not found"
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message}, 404)
        return HTMLResponse(site.render("error.html.j2", links, message=message, title="not found"), 404)

    async def unreadable(request: Request, exc: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": str(exc)}, 500)
        return HTMLResponse(site.render("error.html.j2", links, message=str(exc), title="cannot read"), 500)

    routes = [
        Route("/", overview),
        Route("/pairs", pairs),
        Route("/pairs/{pair_id}", pair),
        Route("/sections/{key}", section),
        Route("/blueprints/{blueprint_id}", blueprint),
        Route("/runs", runs),
        Route("/runs/{run_id}", run),
        Route("/runs/{run_id}/calls/{n:int}", call),
        Route("/compare", compare),
        Route("/plots/{name}", plot),
        Route("/api/runs/{run_id}/calls/{n:int}", api_call),
        Route("/api/{what}", api),
        Route("/api/{what}/{ident}", api_item),
        Mount("/static", StaticFiles(directory=STATIC)),
    ]
    allowed = [*LOOPBACK, *(hosts or [])]
    return Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=allowed), Middleware(_Headers, token=token)],
        exception_handlers={NotFound: not_found, 404: not_found, ViewerError: unreadable},
    )


def _json(data: Any) -> Response:
    body = data.model_dump_json() if isinstance(data, BaseModel) else TypeAdapter(Any).dump_json(data).decode()
    return Response(body, media_type="application/json")
