"""The model channel's sidecar: a loopback relay to the host's model proxy, and the sink of blocked connections.

Runs in its own container that shares only the task container's network namespace (docs/runtime.md,
"Model channel"): the agent's processes cannot see, signal or replace it. Three listeners:

* ``--listen PORT``: TCP on 127.0.0.1; each connection is piped to the Unix socket ``--socket``
  (mounted from the host, where it leads to the recording proxy). This is the only way out.
* ``--sink PORT``: every TCP connection the task container opens to any other address is redirected
  here by the host's NAT rule; its original destination is read (``SO_ORIGINAL_DST``), logged, and
  the connection reset.
* ``--dns PORT``: every DNS query to a non-loopback name server is redirected here; its name is
  logged and answered REFUSED.

The log (``--log``, JSON lines) is in a folder only this container mounts.
"""

import argparse
import contextlib
import json
import socket
import struct
import sys
import threading
import time

SO_ORIGINAL_DST = 80
LOCK = threading.Lock()


def log(path: str, **entry: object) -> None:
    entry["at"] = round(time.time(), 3)
    with LOCK, open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


def pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def relay(conn: socket.socket, path: str, logfile: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError as exc:
        log(logfile, kind="channel-error", error=str(exc))
        conn.close()
        return
    threading.Thread(target=pipe, args=(upstream, conn), daemon=True).start()
    pipe(conn, upstream)


def listener(host: str, port: int, kind: int = socket.SOCK_STREAM) -> socket.socket:
    server = socket.socket(socket.AF_INET, kind)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, port))
    if kind == socket.SOCK_STREAM:
        server.listen(64)
    return server


def serve_channel(server: socket.socket, path: str, logfile: str) -> None:
    while True:
        conn, _ = server.accept()
        threading.Thread(target=relay, args=(conn, path, logfile), daemon=True).start()


def serve_sink(server: socket.socket, logfile: str) -> None:
    while True:
        conn, peer = server.accept()
        try:
            raw = conn.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
            dport, packed = struct.unpack_from("!2xH4s", raw)
            log(logfile, kind="tcp", dst=socket.inet_ntoa(packed), port=dport, src_port=peer[1])
        except OSError as exc:
            log(logfile, kind="tcp", error=str(exc))
        finally:
            # a reset, not an orderly close: the client sees the connection fail, not an empty answer
            with contextlib.suppress(OSError):
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()


def qname(data: bytes) -> tuple[str, int]:
    labels: list[str] = []
    i = 12
    while i < len(data) and data[i] != 0 and len(labels) < 64:
        n = data[i]
        labels.append(data[i + 1 : i + 1 + n].decode("ascii", "replace"))
        i += n + 1
    qtype = int(struct.unpack_from("!H", data, i + 1)[0]) if i + 3 <= len(data) else 0
    return ".".join(labels), qtype


def serve_dns(server: socket.socket, logfile: str) -> None:
    while True:
        data, peer = server.recvfrom(4096)
        if len(data) < 12:
            continue
        name, qtype = qname(data)
        log(logfile, kind="dns", name=name, qtype=qtype)
        flags = struct.unpack_from("!H", data, 2)[0]
        reply = data[:2] + struct.pack("!H", 0x8000 | (flags & 0x0100) | 5) + data[4:6] + b"\0\0\0\0\0\0" + data[12:]
        with contextlib.suppress(OSError):
            server.sendto(reply, peer)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--socket", required=True)
    parser.add_argument("--sink", type=int, required=True)
    parser.add_argument("--dns", type=int, required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    sink = listener("127.0.0.1", args.sink)
    dns = listener("127.0.0.1", args.dns, socket.SOCK_DGRAM)
    channel = listener("127.0.0.1", args.listen)
    threading.Thread(target=serve_sink, args=(sink, args.log), daemon=True).start()
    threading.Thread(target=serve_dns, args=(dns, args.log), daemon=True).start()
    threading.Thread(target=serve_channel, args=(channel, args.socket, args.log), daemon=True).start()
    print("ready", flush=True)
    while True:
        time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
