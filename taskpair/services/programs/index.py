"""Package index: serves a PEP 503 'simple' tree from /data and logs every download.

Usage: python3 index.py [port]
"""

import functools
import http.server
import sys

from eventlog import ready, record


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_request(self, code="-", size="-"):
        record(
            {
                "kind": "download" if self.path.endswith((".whl", ".tar.gz", ".zip")) else "page",
                "method": self.command,
                "path": self.path,
                "status": int(code) if str(code).isdigit() else 0,
                "client": self.client_address[0],
            }
        )

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    server = http.server.ThreadingHTTPServer(("0.0.0.0", port), functools.partial(Handler, directory="/data"))
    ready("package-index")
    server.serve_forever()
