"""Where the records database is, and how its URL may be printed (docs/calibration.md, "Runs and run records")."""

from __future__ import annotations

import re

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from twinforge.core.workspace import Workspace

_PASSWORD = re.compile(r"([^:/@]+):([^@/]+)@")
"""``user:password@`` of a URL, for one SQLAlchemy cannot parse."""


def records_url(workspace: Workspace) -> str:
    """The workspace's records database: ``[records] url``, else ``.twinforge/records.db``.

    A relative SQLite path is taken from the workspace folder.
    """
    url = workspace.config.records.url
    if url is None:
        workspace.state_dir.mkdir(exist_ok=True)
        return f"sqlite:///{workspace.state_dir / 'records.db'}"
    prefix = "sqlite:///"
    if url.startswith(prefix) and not url.removeprefix(prefix).startswith("/") and url != prefix:
        return prefix + str(workspace.root / url.removeprefix(prefix))
    return url


def normalise_url(url: str) -> str:
    """Use psycopg (3) for plain ``postgresql://`` / ``postgres://`` URLs (SQLAlchemy would pick psycopg2)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


def _password(url: str) -> str | None:
    try:
        return make_url(url).password
    except ArgumentError:
        found = _PASSWORD.search(url)
        return found.group(2) if found else None


def masked_url(url: str) -> str:
    """The URL as it may be printed: its password replaced by ``***`` (also in a URL SQLAlchemy cannot parse)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return _PASSWORD.sub(r"\1:***@", url)


def masked_error(exc: BaseException, url: str) -> str:
    """An error's text with the URL's password masked wherever a driver quoted it."""
    text = str(exc)
    password = _password(url)
    return text.replace(password, "***") if password else text
