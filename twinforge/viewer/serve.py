"""Serving the viewer with uvicorn (docs/viewer.md, "Serving").

Loopback by default. Another address only when asked, and then every request needs the token the
server prints in its URL (``secrets.token_urlsafe``, 32 bytes).
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Callable
from dataclasses import dataclass

import uvicorn

from twinforge.core.workspace import Workspace
from twinforge.viewer.app import build_app
from twinforge.viewer.site import Site


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback only (``127.0.0.0/8``, ``::1``, ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Serving:
    """How the server is reached.

    Attributes:
        url: The URL to open (with the token when one is needed).
        token: The access token, ``None`` on loopback.
    """

    url: str
    token: str | None


def plan(host: str, port: int) -> Serving:
    """The URL and token for serving on ``host:port``."""
    token = None if is_loopback(host) else secrets.token_urlsafe(32)
    shown = f"[{host}]" if ":" in host else host
    return Serving(f"http://{shown}:{port}/" + (f"?token={token}" if token else ""), token)


def server(workspace: Workspace, host: str, port: int, token: str | None) -> uvicorn.Server:
    """A uvicorn server for the workspace's viewer (call ``.run()`` to serve until interrupted)."""
    hosts = [] if is_loopback(host) else ["*"] if host in ("0.0.0.0", "::") else [host]
    site = Site(workspace)
    site.overview()  # computed before the first request (docs/viewer.md, "Scale")
    app = build_app(site, hosts=hosts, token=token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="off")
    return uvicorn.Server(config)


def serve(workspace: Workspace, host: str, port: int, on_ready: Callable[[Serving], None] | None = None) -> None:
    """Serve until interrupted.

    Args:
        workspace: The workspace to show (read-only).
        host: Address to bind (default loopback; anything else gets a token).
        port: TCP port.
        on_ready: Called with the URL before serving starts.
    """
    serving = plan(host, port)
    if on_ready is not None:
        on_ready(serving)
    server(workspace, host, port, serving.token).run()
