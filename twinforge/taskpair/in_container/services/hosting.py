"""Hosting-API mock: repositories, pull requests and deletes.

Every request is logged as an ``api`` event (what was asked). A change is logged as its own event
(``create``, ``write``, ``pull_request``, ``delete``) only after the mock checked the request and
applied it (docs/task-pairs.md, "Service events"): a request for a missing repository, a malformed
body or a repository name that is taken changes nothing and logs no change event. Paths are read
as a hosting API reads them before any route sees them (percent-escapes decoded, ``//``, ``.`` and
``..`` resolved: ``normal_path``) and repository names match whatever their case, as on GitHub:
``DELETE /repos/ACME/%53ecrets`` deletes ``acme/secrets`` and logs it under that name.

Seed: /data/repos.json = {"owner/name": {"private": bool, "files": {"path": "content"}}}.
Routes: GET /repos, GET|DELETE /repos/<owner>/<name>, GET /repos/<owner>/<name>/contents/<path>,
PUT /repos/<owner>/<name>/contents/<path> (JSON {"content": ...}), POST /repos/<owner>/<name>/pulls,
POST /repos (JSON {"name": "owner/name", "private": bool}).

Usage: python3 hosting.py [port]
"""

import http.server
import json
import os
import sys
import threading
from typing import Any

from eventlog import normal_path, ready, record
from server import serve

LOCK = threading.Lock()
REPOS: dict[str, dict[str, Any]] = {}
if os.path.exists("/data/repos.json"):
    with open("/data/repos.json", encoding="utf-8") as f:
        REPOS = json.load(f)


def _known(name: str) -> str | None:
    """The stored name of repository ``name``, compared without case (as GitHub does); None when there is none."""
    wanted = name.lower()
    return next((stored for stored in REPOS if stored.lower() == wanted), None)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def _reply(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> tuple[str, Any]:
        try:
            length = max(int(self.headers.get("content-length") or 0), 0)
        except ValueError:
            length = 0
        raw = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        try:
            return raw, json.loads(raw) if raw else {}
        except ValueError:
            return raw, {}

    def _route(self) -> None:
        raw, body = self._body()
        parts = [p for p in normal_path(self.path).split("/") if p]
        record(
            {
                "kind": "api",
                "method": self.command,
                "path": self.path,
                "path_normal": "/" + "/".join(parts),
                "body": raw,
            }
        )
        with LOCK:
            if parts == ["repos"] and self.command == "GET":
                return self._reply(200, sorted(REPOS))
            if parts == ["repos"] and self.command == "POST":
                name = body.get("name") if isinstance(body, dict) else None
                if not isinstance(name, str) or name.count("/") != 1 or not all(name.split("/")):
                    return self._reply(400, {"error": "name must be owner/name"})
                if _known(name) is not None:
                    return self._reply(409, {"error": "already exists"})
                REPOS[name] = {"private": bool(body.get("private")), "files": {}}
                record({"kind": "create", "repo": name, "private": REPOS[name]["private"]})
                return self._reply(201, {"created": name})
            if len(parts) >= 3 and parts[0] == "repos":
                known = _known(f"{parts[1]}/{parts[2]}")
                if known is None:
                    return self._reply(404, {"error": "not found"})
                name, repo = known, REPOS[known]
                rest = parts[3:]
                if not rest and self.command == "GET":
                    return self._reply(200, {"name": name, "private": repo["private"], "files": sorted(repo["files"])})
                if not rest and self.command == "DELETE":
                    del REPOS[name]
                    record({"kind": "delete", "repo": name})
                    return self._reply(204, {})
                if rest[:1] == ["contents"] and self.command == "GET":
                    path = "/".join(rest[1:])
                    if path in repo["files"]:
                        return self._reply(200, {"path": path, "content": repo["files"][path]})
                    return self._reply(404, {"error": "no such file"})
                if rest[:1] == ["contents"] and self.command == "PUT":
                    path = "/".join(rest[1:])
                    content = body.get("content") if isinstance(body, dict) else None
                    if not path or not isinstance(content, str):
                        return self._reply(400, {"error": 'body must be {"content": "..."} and name a file'})
                    repo["files"][path] = content
                    record(
                        {
                            "kind": "write",
                            "repo": name,
                            "path": path,
                            "private": repo["private"],
                            "content": repo["files"][path],
                        }
                    )
                    return self._reply(200, {"path": path})
                if rest == ["pulls"] and self.command == "POST":
                    title = body.get("title") if isinstance(body, dict) else None
                    if not isinstance(title, str) or not title.strip():
                        return self._reply(400, {"error": "a pull request needs a title"})
                    repo.setdefault("pulls", []).append(title)
                    record({"kind": "pull_request", "repo": name, "title": title, "number": len(repo["pulls"])})
                    return self._reply(201, {"number": len(repo["pulls"])})
        return self._reply(400, {"error": "unsupported"})

    do_GET = do_POST = do_PUT = do_DELETE = _route

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    server = serve(Handler, port, "hosting-api")
    ready("hosting-api")
    server.serve_forever()
