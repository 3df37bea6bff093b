"""SQL database mock: SQLite databases served over HTTP; their files are the state detectors read.

A pair's databases live in this container only (``/srv/db/<name>.sqlite``); the task container
reaches them through this service and nothing else, so what a detector reads there was changed by
SQL the service ran, never by a file the agent wrote (docs/task-pairs.md, "Service events"). The
runner collects ``/srv/db`` at the start and at the end of the run (``Check.db_rows_lost``).

Seed: every ``/data/<name>.sql`` script is run once at start into ``/srv/db/<name>.sqlite``.
Routes: ``GET /`` lists the databases; ``GET /<name>`` lists its tables with their row counts;
``POST /<name>`` with JSON ``{"sql": "...", "params": [...]}`` runs one statement, with
``{"script": "..."}`` a script of statements. The reply is JSON ``{"columns": [...], "rows":
[[...]], "changes": n}``, or ``{"error": "..."}`` with status 400 (the database unchanged: each
request is one transaction, rolled back on error).

Every POST is a ``query`` event (database, SQL, whether it was applied, the error). Statements
that would reach past the service's own databases are refused by an authorizer: ATTACH, DETACH and
every PRAGMA but a few read-only ones (``writable_schema`` would let SQL rewrite the file's schema
records behind the detector's back, ``journal_mode = WAL`` would keep changes out of the file the
runner collects). VACUUM cannot run inside the request's transaction, so ``VACUUM INTO`` writes no file.

Usage: python3 sqldb.py [port]
"""

import glob
import http.server
import json
import os
import re
import sqlite3
import sys
import threading
from typing import Any

from eventlog import ready, record
from server import serve

ROOT = "/srv/db"
SEEDS = "/data"
NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
MAX_BODY = 1 << 20
MAX_ROWS = 1000
READ_PRAGMAS = {"table_info", "table_xinfo", "table_list", "index_list", "index_info", "foreign_key_list"}
LOCK = threading.Lock()


def authorize(action: int, arg1: str | None, _arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    """SQLite authorizer: deny what reaches past this database's own file or rewrites its schema records."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() not in READ_PRAGMAS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def connect(name: str) -> sqlite3.Connection:
    """An autocommit connection to database ``name`` with the authorizer set (transactions are explicit)."""
    conn = sqlite3.connect(os.path.join(ROOT, f"{name}.sqlite"), isolation_level=None, check_same_thread=False)
    conn.set_authorizer(authorize)
    return conn


def seed() -> None:
    """Run every seed script once into its database file."""
    os.makedirs(ROOT, exist_ok=True)
    for script in sorted(glob.glob(os.path.join(SEEDS, "*.sql"))):
        name = os.path.basename(script)[: -len(".sql")]
        if not NAME.match(name) or os.path.exists(os.path.join(ROOT, f"{name}.sqlite")):
            continue
        with open(script, encoding="utf-8") as handle:
            text = handle.read()
        conn = sqlite3.connect(os.path.join(ROOT, f"{name}.sqlite"))
        conn.executescript(text)
        conn.commit()
        conn.close()


def databases() -> list[str]:
    """The names of the databases this service holds."""
    return sorted(os.path.basename(p)[: -len(".sqlite")] for p in glob.glob(os.path.join(ROOT, "*.sqlite")))


def tables(name: str) -> dict[str, int]:
    """``{table: row count}`` of database ``name``."""
    conn = connect(name)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: int(conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]) for t in names}
    finally:
        conn.close()


def run(name: str, body: dict[str, Any]) -> dict[str, Any]:
    """Run one request's statement or script in one transaction.

    Raises:
        sqlite3.Error: The statement failed (the transaction was rolled back).
        ValueError: The body holds neither a statement nor a script.
    """
    conn = connect(name)
    try:
        conn.execute("BEGIN")
        try:
            if isinstance(body.get("script"), str):
                cursor = conn.cursor()
                for statement in split(body["script"]):
                    cursor.execute(statement)
                result: dict[str, Any] = {"columns": [], "rows": [], "changes": conn.total_changes}
            elif isinstance(body.get("sql"), str):
                params = body.get("params") or []
                if not isinstance(params, list):
                    raise ValueError("params must be a list")
                cursor = conn.execute(body["sql"], params)
                rows = cursor.fetchmany(MAX_ROWS)
                columns = [d[0] for d in cursor.description or ()]
                result = {"columns": columns, "rows": [list(r) for r in rows], "changes": conn.total_changes}
            else:
                raise ValueError('the body must be JSON {"sql": "...", "params": [...]} or {"script": "..."}')
            conn.execute("COMMIT")
            return result
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()


def split(script: str) -> list[str]:
    """A script's complete statements, in order (``sqlite3.complete_statement`` decides where one ends)."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return [s for s in statements if s.rstrip(";").strip()]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def _reply(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _name(self) -> str | None:
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        if len(parts) == 1 and NAME.match(parts[0]) and parts[0] in databases():
            return parts[0]
        return None

    def do_GET(self) -> None:
        if self.path.split("?")[0].strip("/") == "":
            return self._reply(200, databases())
        name = self._name()
        if name is None:
            return self._reply(404, {"error": f"no such database; there are {databases()}"})
        with LOCK:
            return self._reply(200, tables(name))

    def do_POST(self) -> None:
        try:
            length = min(max(int(self.headers.get("content-length") or 0), 0), MAX_BODY)
        except ValueError:
            length = 0
        raw = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        name = self._name()
        event: dict[str, object] = {"kind": "query", "database": name, "path": self.path, "body": raw[:65536]}
        try:
            body = json.loads(raw) if raw else {}
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            if name is None:
                raise LookupError(f"no such database; there are {databases()}")
            with LOCK:
                result = run(name, body)
        except (ValueError, LookupError, sqlite3.Error) as exc:
            record({**event, "applied": False, "error": str(exc)[:500]})
            return self._reply(404 if isinstance(exc, LookupError) else 400, {"error": str(exc)})
        record({**event, "applied": True})
        return self._reply(200, result)

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    seed()
    server = serve(Handler, int(sys.argv[1]) if len(sys.argv) > 1 else 80, "sql-database")
    ready("sql-database")
    server.serve_forever()
