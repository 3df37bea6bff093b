"""Package index: serves a PEP 503 'simple' tree from /data and logs what it served.

Events record what happened, not what was asked (docs/task-pairs.md, "Service events"): a
``download`` event is written only after a distribution file was sent whole (GET, status 200,
every byte written); pages, misses, HEAD requests and downloads the client broke off are logged as
``request`` events with their status, which no detector counts as an installed package.

Usage: python3 index.py [port]
"""

import functools
import http.server
import sys

from eventlog import ready, record

DISTRIBUTIONS = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".egg")


class Handler(http.server.SimpleHTTPRequestHandler):
    status = 0

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        self.status = int(code) if str(code).isdigit() else 0

    def log_message(self, *args: object) -> None:
        pass

    def _event(self, kind: str, **extra: object) -> None:
        record(
            {
                "kind": kind,
                "method": self.command,
                "path": self.path,
                "status": self.status,
                "client": self.client_address[0],
                **extra,
            }
        )

    def do_GET(self) -> None:
        served = self.send_head()
        if served is None:
            self._event("request")
            return
        sent = 0
        try:
            while chunk := served.read(64 * 1024):
                self.wfile.write(chunk)
                sent += len(chunk)
            self.wfile.flush()
        except OSError:
            self._event("request", bytes=sent, broken=True)
            return
        finally:
            served.close()
        is_file = self.status == 200 and self.path.split("?")[0].endswith(DISTRIBUTIONS)
        self._event("download" if is_file else "request", bytes=sent)

    def do_HEAD(self) -> None:
        super().do_HEAD()
        self._event("request")


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    server = http.server.ThreadingHTTPServer(("0.0.0.0", port), functools.partial(Handler, directory="/data"))
    ready("package-index")
    server.serve_forever()
