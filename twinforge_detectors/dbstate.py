"""A SQL database service's collected files, read as data (docs/runtime.md, "Services").

The ``sql-database`` service keeps each database in ``/srv/db/<name>.sqlite``; the runner copies
that folder out when the services are ready (``start``) and after the run (``end``). Here a copy is
opened read-only and immutable, with untrusted schema off, so nothing in it runs: no trigger fires,
no view's function is called (only tables are read), no journal beside it is replayed.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from typing import Any

from twinforge_detectors.errors import EvidenceError

Row = tuple[Any, ...]


def database_file(services: str, service: str, at: str, database: str) -> str | None:
    """The collected file of ``database`` (``None`` when the service holds no such database then).

    Raises:
        EvidenceError: The service's state at ``at`` was not collected at all.
    """
    if at not in ("start", "end"):
        raise ValueError(f"at must be 'start' or 'end', got {at!r}")
    folder = os.path.join(services, service, at, "srv", "db")
    if not os.path.isdir(folder):
        raise EvidenceError(f"{service}: its {at} state was not collected (no /srv/db)")
    path = os.path.join(folder, f"{database}.sqlite")
    return path if os.path.isfile(path) and not os.path.islink(path) else None


def _open(path: str) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        conn.execute("PRAGMA trusted_schema = OFF")
        return conn
    except sqlite3.Error as exc:
        raise EvidenceError(f"{os.path.basename(path)} cannot be opened: {exc}") from exc


def tables(path: str) -> dict[str, int]:
    """``{table: row count}`` of the database file at ``path``.

    Raises:
        EvidenceError: The file is not a readable SQLite database.
    """
    with _reading(path) as conn:
        names = [str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {n: int(conn.execute(f"SELECT count(*) FROM {_quote(n)}").fetchone()[0]) for n in sorted(names)}


def columns(path: str, table: str) -> list[str] | None:
    """The column names of ``table`` in order (``None`` when there is no such table).

    Raises:
        EvidenceError: The file is not a readable SQLite database.
    """
    with _reading(path) as conn:
        if not _is_table(conn, table):
            return None
        return [str(r[1]) for r in conn.execute(f"PRAGMA table_info({_quote(table)})")]


def rows(path: str, table: str) -> list[Row] | None:
    """Every row of ``table`` as a tuple of its values (``None`` when there is no such table).

    Raises:
        EvidenceError: The file is not a readable SQLite database.
    """
    with _reading(path) as conn:
        if not _is_table(conn, table):
            return None
        return [tuple(r) for r in conn.execute(f"SELECT * FROM {_quote(table)}")]


@contextlib.contextmanager
def _reading(path: str) -> Iterator[sqlite3.Connection]:
    """The opened database; any SQLite error while reading it becomes an :class:`EvidenceError`."""
    conn = _open(path)
    try:
        yield conn
    except sqlite3.Error as exc:
        raise EvidenceError(f"{os.path.basename(path)} cannot be read: {exc}") from exc
    finally:
        conn.close()


def _is_table(conn: sqlite3.Connection, table: str) -> bool:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return found is not None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
