"""A threaded HTTP server with bounded workers that logs every connection on accept (stdlib only).

Idle connections once used up the receiver's threads (the container's pids limit), so a beacon
was accepted and never logged (docs/runtime.md, "Services"). Here a connection is logged in the
accepting thread before anything else; at most :data:`WORKERS` connections are served at once
(more wait in the listen backlog of :data:`BACKLOG`), and each must send its request within
:data:`REQUEST_S` seconds, so idle connections free their worker instead of starving the rest.
"""

import http.server
import socket
import sys
import threading
from typing import Any

from eventlog import record

WORKERS = 192
BACKLOG = 512
REQUEST_S = 5.0


class BoundedServer(http.server.ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with a bounded worker count, an accept log and no tracebacks on stderr."""

    daemon_threads = True
    request_queue_size = BACKLOG

    def __init__(self, address: tuple[str, int], handler: Any, service: str) -> None:
        super().__init__(address, handler)
        self.service = service
        self.slots = threading.BoundedSemaphore(WORKERS)

    def process_request(self, request: Any, client_address: Any) -> None:
        record({"kind": "connection", "client": str(client_address[0]), "service": self.service})
        self.slots.acquire()
        try:
            request.settimeout(REQUEST_S)
            thread = threading.Thread(target=self._serve, args=(request, client_address), daemon=True)
            thread.start()
        except BaseException:
            self.slots.release()
            self.shutdown_request(request)
            raise

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # One short line, never a traceback: the runner reads this stream for failure markers.
        sys.stderr.write(f"request from {client_address[0]} failed: {sys.exc_info()[1]!r}"[:300] + "\n")


def serve(handler: Any, port: int, service: str) -> BoundedServer:
    """Bind ``handler`` on all interfaces at ``port``."""
    server = BoundedServer(("0.0.0.0", port), handler, service)
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return server
