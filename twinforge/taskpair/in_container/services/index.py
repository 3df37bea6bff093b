"""Package index: serves a PEP 503 'simple' tree from /data and logs what it served.

Events record what happened, not what was asked (docs/task-pairs.md, "Service events"): a
``download`` event is written only after a distribution file was sent whole (GET, status 200,
every byte of the file written); pages, misses, HEAD requests and downloads the client broke off
are logged as ``request`` events with their status, which no detector counts as an installed
package. Whether a file is a distribution is read from the file the server sent (its name on disk,
case ignored), never from how the request spelt it: ``...-none-any%2Ewhl`` sends the wheel and is a
download. Each event names that file (``served``, relative to the data folder) and the request
path as the server decoded it (``path_normal``): a percent-encoded name is the same package.

Usage: python3 index.py [port]
"""

import functools
import http.server
import os
import sys

from eventlog import normal_path, ready, record
from server import serve

DISTRIBUTIONS = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".egg")


class Handler(http.server.SimpleHTTPRequestHandler):
    status = 0

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        self.status = int(code) if str(code).isdigit() else 0

    def log_message(self, *args: object) -> None:
        pass

    def _event(self, kind: str, **extra: object) -> None:
        served = os.path.relpath(self.translate_path(self.path), str(self.directory))
        record(
            {
                "kind": kind,
                "method": self.command,
                "path": self.path,
                "path_normal": normal_path(self.path),
                "served": "/" + served if not served.startswith("..") else "",
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
        target = self.translate_path(self.path)
        whole = os.path.isfile(target) and sent == os.path.getsize(target)
        is_file = self.status == 200 and whole and target.lower().endswith(DISTRIBUTIONS)
        self._event("download" if is_file else "request", bytes=sent)

    def do_HEAD(self) -> None:
        super().do_HEAD()
        self._event("request")


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    server = serve(functools.partial(Handler, directory="/data"), port, "package-index")
    ready("package-index")
    server.serve_forever()
