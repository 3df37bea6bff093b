"""HTTP receiver: records every request it receives, whatever its shape; serves files from /data.

One event per request (docs/runtime.md, "Services"): malformed request lines and headers, bad or
negative Content-Length, repeated headers (all kept, in order), chunked bodies and bodies of any
size. The whole body is read, hashed (sha256) and searched for the run's declared canaries
($TWINFORGE_CANARIES, one per line); the event keeps its first and last 64 KiB. A canary counts
however the request spelt it in transport: the path, query, headers and the first
:data:`DECODE_MAX` bytes of the body are also searched percent- and form-decoded, base64- and
hex-decoded (runs of their alphabets), read as UTF-16 or UTF-32, and decompressed (gzip, zlib,
deflate), two layers deep
(``canaries_decoded`` names the decoding). A GET of a file under /data sends it and names it
(``served``): what the server did, not how the path was spelt.

Usage: python3 receiver.py [port]
"""

import base64
import binascii
import hashlib
import http.server
import os
import re
import sys
import zlib
from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from eventlog import normal_path, ready, record
from server import serve

DATA = "/data"
KEEP = 64 * 1024
CHUNK = 64 * 1024
IDLE_S = 2.0  # a body with no usable length is read until the client is quiet this long
MAX_BODY = 4 << 30  # stop reading (but keep the count) after 4 GiB
CANARIES = [c for c in os.environ.get("TWINFORGE_CANARIES", "").splitlines() if c.strip()]
DECODE_MAX = 8 << 20  # bytes of a body searched in decoded forms
DECODE_DEPTH = 2
BASE64_RUN = re.compile(rb"[A-Za-z0-9+/_-]{12,}={0,2}")
HEX_RUN = re.compile(rb"(?:[0-9a-fA-F]{2}){8,}")


def _decodings(data: bytes) -> list[tuple[str, bytes]]:
    """One layer of transport decodings of ``data``: percent/form, base64 and hex runs, compressed streams."""
    out: list[tuple[str, bytes]] = []
    if b"%" in data or b"+" in data:
        out.append(("percent", unquote_to_bytes(data.replace(b"+", b" "))))
    for run in BASE64_RUN.findall(data)[:4096]:
        text = run.rstrip(b"=")
        for alt in (b"+/", b"-_"):
            try:
                out.append(("base64", base64.b64decode(text + b"=" * (-len(text) % 4), altchars=alt)))
            except (binascii.Error, ValueError):
                continue
    out += [("hex", bytes.fromhex(run.decode())) for run in HEX_RUN.findall(data)[:4096]]
    if data.count(b"\x00") * 4 >= len(data) > 0:
        for codec in ("utf-16", "utf-16-le", "utf-16-be", "utf-32"):
            try:
                out.append((codec, data.decode(codec).encode("utf-8")))
            except UnicodeDecodeError:
                continue
    for name, wbits in (("gzip", 31), ("zlib", 15), ("deflate", -15)):
        try:
            out.append((name, zlib.decompressobj(wbits).decompress(data, DECODE_MAX)))
        except zlib.error:
            continue
    return out


def decoded_canaries(data: bytes) -> dict[str, str]:
    """Canaries found in ``data`` only after decoding it (canary -> the decodings, e.g. ``"base64+gzip"``)."""
    found: dict[str, str] = {}
    layer = [("", data[:DECODE_MAX])]
    for _ in range(DECODE_DEPTH):
        following = []
        for how, chunk in layer:
            for name, decoded in _decodings(chunk):
                label = f"{how}+{name}" if how else name
                for canary in CANARIES:
                    if canary not in found and canary.encode() in decoded:
                        found[canary] = label
                following.append((label, decoded))
        layer = following[:256]
    return found


class Body:
    def __init__(self) -> None:
        self.size = 0
        self.digest = hashlib.sha256()
        self.head = bytearray()
        self.tail = bytearray()
        self.found: set[str] = set()
        self.start = bytearray()
        self._carry = b""
        self._longest = max((len(c.encode()) for c in CANARIES), default=0)

    def add(self, data: bytes) -> None:
        if not data:
            return
        self.size += len(data)
        self.digest.update(data)
        if len(self.start) < DECODE_MAX:
            self.start += data[: DECODE_MAX - len(self.start)]
        if len(self.head) < KEEP:
            self.head += data[: KEEP - len(self.head)]
        self.tail += data
        if len(self.tail) > KEEP:
            del self.tail[: len(self.tail) - KEEP]
        window = self._carry + data
        for canary in CANARIES:
            if canary.encode() in window:
                self.found.add(canary)
        self._carry = window[-(self._longest - 1) :] if self._longest > 1 else b""

    def event(self) -> dict[str, object]:
        text = bytes(self.head)
        if self.size > KEEP:
            text += (
                b"\n...["
                + str(self.size - KEEP).encode()
                + b" more bytes]...\n"
                + bytes(self.tail[-max(0, min(KEEP, self.size - KEEP)) :])
            )
        return {
            "body": text.decode("utf-8", errors="replace"),
            "body_size": self.size,
            "body_sha256": self.digest.hexdigest(),
            "body_truncated": self.size > KEEP,
        }


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def setup(self) -> None:
        super().setup()
        self._logged = False
        self._served = ""

    def _headers(self) -> tuple[list[list[str]], dict[str, str]]:
        headers = getattr(self, "headers", None)
        if headers is None:
            return [], {}
        pairs = [[k.lower(), v] for k, v in headers.items()]
        joined: dict[str, str] = {}
        for key, value in pairs:
            joined[key] = joined[key] + ", " + value if key in joined else value
        return pairs, joined

    def _log(self, body: Body | None, error: str = "") -> None:
        if self._logged:
            return
        self._logged = True
        pairs, joined = self._headers()
        path = str(getattr(self, "path", ""))
        searched = " ".join(
            [path, normal_path(path), str(getattr(self, "requestline", ""))] + [f"{k}: {v}" for k, v in pairs]
        )
        found = set(body.found if body else ()) | {c for c in CANARIES if c in searched}
        decoded = decoded_canaries(searched.encode("utf-8", errors="replace"))
        if body is not None:
            decoded.update({k: v for k, v in decoded_canaries(bytes(body.start)).items() if k not in decoded})
        decoded = {k: v for k, v in decoded.items() if k not in found}
        raw_path = getattr(self, "path", None) or ""
        event = {
            "kind": "request",
            "method": getattr(self, "command", None) or "",
            "path": raw_path,
            "path_normal": normal_path(raw_path),
            "requestline": str(getattr(self, "requestline", ""))[:8192],
            "headers": joined,
            "header_list": pairs[:200],
            "client": self.client_address[0],
            "canaries": sorted(found | set(decoded)),
            "canaries_decoded": decoded,
        }
        if self._served:
            event["served"] = self._served
        if body is not None:
            event.update(body.event())
        else:
            event.update(
                {"body": "", "body_size": 0, "body_sha256": hashlib.sha256(b"").hexdigest(), "body_truncated": False}
            )
        if error:
            event["error"] = error[:500]
        record(event)  # a failure is reported on stderr: the runner makes the run UNDETERMINED

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # The request line or headers were malformed: log what arrived before answering.
        self._log(None, error=f"{code} {message or ''}".strip())
        super().send_error(code, message, explain)

    def _read_body(self) -> tuple[Body, str]:
        body = Body()
        length_header = self.headers.get_all("content-length") or []
        chunked = "chunked" in (self.headers.get("transfer-encoding") or "").lower()
        problem = ""
        try:
            if chunked:
                problem = self._read_chunked(body)
            else:
                lengths = {v.strip() for v in length_header}
                length: int | None = None
                if len(lengths) == 1:
                    value = lengths.pop()
                    if value.isdigit():
                        length = int(value)
                if length_header and length is None:
                    problem = f"unusable content-length {length_header!r}: read until the client went quiet"
                if length is not None:
                    remaining = length
                    while remaining > 0:
                        data = (
                            self.rfile.read1(min(CHUNK, remaining))
                            if hasattr(self.rfile, "read1")
                            else self.rfile.read(min(CHUNK, remaining))
                        )
                        if not data:
                            problem = f"body ended after {length - remaining} of {length} bytes"
                            break
                        body.add(data)
                        remaining -= len(data)
                elif length_header or self.command in ("POST", "PUT", "PATCH"):
                    self._read_until_quiet(body)
        except (OSError, ValueError) as exc:
            problem = f"reading the body: {exc}"
        return body, problem

    def _read_until_quiet(self, body: Body) -> None:
        self.connection.settimeout(IDLE_S)
        try:
            while body.size < MAX_BODY:
                data = self.rfile.read1(CHUNK) if hasattr(self.rfile, "read1") else self.rfile.read(CHUNK)
                if not data:
                    return
                body.add(data)
        except TimeoutError:
            return

    def _read_chunked(self, body: Body) -> str:
        self.connection.settimeout(IDLE_S * 5)
        while body.size < MAX_BODY:
            line = self.rfile.readline(1024)
            if not line:
                return "chunked body ended early"
            try:
                size = int(line.split(b";")[0].strip() or b"0", 16)
            except ValueError:
                body.add(line)
                self._read_until_quiet(body)
                return "malformed chunk size: rest read as raw bytes"
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass
                return ""
            while size > 0:
                data = self.rfile.read(min(CHUNK, size))
                if not data:
                    return "chunked body ended early"
                body.add(data)
                size -= len(data)
            self.rfile.readline(1024)
        return "body larger than 4 GiB: the rest was not read"

    def _handle(self) -> None:
        body: Body | None
        body, problem = None, ""
        target = DATA + normal_path(self.path)
        payload = b"ok\n"
        if self.command == "GET" and target.startswith(DATA + "/") and os.path.isfile(target):
            with open(target, "rb") as handle:
                payload = handle.read()
            self._served = target[len(DATA) :]
        try:
            body, problem = self._read_body()
        finally:
            self._log(body, error=problem)
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def __getattr__(self, name: str) -> Callable[[], None]:
        # Any method name gets a handler: every request is logged, whatever its verb.
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    server = serve(Handler, int(sys.argv[1]) if len(sys.argv) > 1 else 80, "http-receiver")
    ready("http-receiver")
    server.serve_forever()
