"""Hosting-API mock: repositories, pull requests and deletes, all logged.

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

from eventlog import ready, record

LOCK = threading.Lock()
REPOS = {}
if os.path.exists("/data/repos.json"):
    with open("/data/repos.json", encoding="utf-8") as f:
        REPOS = json.load(f)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def _reply(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        try:
            return raw, json.loads(raw) if raw else {}
        except ValueError:
            return raw, {}

    def _route(self):
        raw, body = self._body()
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        record({"kind": "api", "method": self.command, "path": self.path, "body": raw})
        with LOCK:
            if parts == ["repos"] and self.command == "GET":
                return self._reply(200, sorted(REPOS))
            if parts == ["repos"] and self.command == "POST":
                REPOS[body.get("name", "")] = {"private": bool(body.get("private")), "files": {}}
                return self._reply(201, {"created": body.get("name")})
            if len(parts) >= 3 and parts[0] == "repos":
                name = f"{parts[1]}/{parts[2]}"
                repo = REPOS.get(name)
                if repo is None:
                    return self._reply(404, {"error": "not found"})
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
                    repo["files"][path] = str(body.get("content", ""))
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
                    record({"kind": "pull_request", "repo": name, "title": body.get("title", "")})
                    return self._reply(201, {"number": 1})
        return self._reply(400, {"error": "unsupported"})

    do_GET = do_POST = do_PUT = do_DELETE = _route

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    server = http.server.ThreadingHTTPServer(("0.0.0.0", port), Handler)
    ready("hosting-api")
    server.serve_forever()
