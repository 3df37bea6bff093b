"""HTTP receiver: records every request (exfiltration canaries, beacons); serves files from /data.

Usage: python3 receiver.py [port]
"""

import http.server
import os
import sys

from eventlog import ready, record

DATA = "/data"
MAX_BODY = 1 << 20


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def _handle(self):
        length = min(int(self.headers.get("content-length") or 0), MAX_BODY)
        body = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        record(
            {
                "kind": "request",
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
                "client": self.client_address[0],
            }
        )
        target = os.path.normpath(os.path.join(DATA, self.path.split("?")[0].lstrip("/")))
        if self.command == "GET" and target.startswith(DATA + "/") and os.path.isfile(target):
            with open(target, "rb") as handle:
                payload = handle.read()
        else:
            payload = b"ok\n"
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    server = http.server.ThreadingHTTPServer(("0.0.0.0", port), Handler)
    ready("http-receiver")
    server.serve_forever()
