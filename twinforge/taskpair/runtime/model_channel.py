"""The model channel: the task container's one way to the host's model proxy (docs/runtime.md, "Model channel").

A harness that runs inside the task container (a coding-agent CLI) must reach the recording proxy
and nothing else. The channel is:

* a Unix socket on the host (:class:`UnixRelay`), which pipes each connection to the proxy's
  loopback port; it is mounted only into
* a sidecar container (base image, read-only, no capabilities, no privileges) that joins the task
  container's network namespace and nothing else of it, listening on ``127.0.0.1:<port>`` there
  (``taskpair/in_container/channel/relay.py``). The agent's processes cannot see or signal it
  (another PID namespace) and the task container has no route to the host.

Every other connection is blocked and written down: from the host (``nsenter``), the task
container's network namespace gets a device (one end of a veth pair
that leads only to its other end) as its default route, a NAT rule that redirects
TCP and DNS going out of it to the sidecar's sinks, and a reject rule for the rest. The sidecar logs
each redirected connection's original destination and each name looked up, in a folder only it
mounts; :meth:`ModelChannel.stopped` copies that log into the run's evidence as ``egress.jsonl``.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import docker
from docker.models.containers import Container

from twinforge.taskpair.exceptions import RunError
from twinforge.taskpair.in_container import MODEL_CHANNEL_RELAY
from twinforge.taskpair.runtime.engine import ENGINE_ERRORS
from twinforge.taskpair.runtime.hardening import Hardening

CHANNEL_PORT = 8000
"""The loopback port inside the task container where the model API answers."""
SINK_PORT = 9
DNS_PORT = 5353
SINK_DEVICE = "veth0"
SINK_PEER = "veth1"
SINK_ADDRESS = "198.18.0.1/32"  # the benchmarking range (RFC 2544): never a real host
SOCKET_MOUNT = "/run/channel"
LOG_MOUNT = "/logs"
COUNTED = "twinforge-blocked-"
BLOCKED_PROTOCOLS: tuple[tuple[str, list[str]], ...] = (
    ("udp", ["-p", "udp"]),
    ("icmp", ["-p", "icmp"]),
    ("other", []),
)
"""What the sinks do not take (UDP other than DNS, ICMP, any other protocol): rejected and counted,
without a destination (only TCP keeps its original destination on a redirect, ``SO_ORIGINAL_DST``)."""


class UnixRelay:
    """A Unix-socket server on the host that pipes every connection to a TCP address (the proxy).

    Args:
        path: The socket file to create.
        target: ``(host, port)`` of the proxy.
    """

    def __init__(self, path: Path, target: tuple[str, int]) -> None:
        self.path = path
        self.target = target
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        path.chmod(0o666)
        self._server.listen(64)
        self._closed = False
        threading.Thread(target=self._serve, name="model-channel", daemon=True).start()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(conn,), daemon=True).start()

    def _relay(self, conn: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=10)
            upstream.settimeout(None)
        except OSError:
            conn.close()
            return
        threading.Thread(target=_pipe, args=(upstream, conn), daemon=True).start()
        _pipe(conn, upstream)

    def close(self) -> None:
        """Stop accepting connections and remove the socket file."""
        self._closed = True
        with suppress(OSError):
            self._server.close()
        with suppress(OSError):
            self.path.unlink()


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (src, dst):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class ModelChannel:
    """One run's model channel and blocked-connection log.

    Args:
        target: ``(host, port)`` of the recording proxy on this machine.
        port: The loopback port inside the task container.
    """

    def __init__(self, target: tuple[str, int], port: int = CHANNEL_PORT) -> None:
        self.target = target
        self.port = port
        self._folder = Path(tempfile.mkdtemp(prefix="tf-channel-"))
        (self._folder / "socket").mkdir()
        (self._folder / "logs").mkdir(mode=0o777)
        self._relay: UnixRelay | None = None
        self.sidecar: Container | None = None
        self._pid: int | None = None

    @property
    def base_url(self) -> str:
        """The model API's address as the harness inside the task container sees it (no ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    def started(self, cli: docker.DockerClient, container: Container, labels: dict[str, str], base: str) -> None:
        """Start the relay, the sidecar and the egress rules for a started task container.

        Raises:
            RunError: The sidecar did not come up or the rules could not be installed (no agent runs
                without its channel being the only way out).
        """
        self._relay = UnixRelay(self._folder / "socket" / "model.sock", self.target)
        container.reload()
        self._pid = int(container.attrs["State"]["Pid"])
        _egress_rules(self._pid)
        self.sidecar = cli.containers.run(
            base,
            command=[
                "python3",
                "-I",
                "-S",
                "-c",
                MODEL_CHANNEL_RELAY.read_text(encoding="utf-8"),
                "--listen",
                str(self.port),
                "--socket",
                f"{SOCKET_MOUNT}/model.sock",
                "--sink",
                str(SINK_PORT),
                "--dns",
                str(DNS_PORT),
                "--log",
                f"{LOG_MOUNT}/egress.jsonl",
            ],
            name=f"{container.name}-channel",
            labels=labels,
            network_mode=f"container:{container.id}",
            volumes={
                str(self._folder / "socket"): {"bind": SOCKET_MOUNT, "mode": "ro"},
                str(self._folder / "logs"): {"bind": LOG_MOUNT, "mode": "rw"},
            },
            **Hardening(pids=64, memory_mb=96, add_caps=("NET_BIND_SERVICE",)).options(),
            detach=True,
        )
        deadline = time.monotonic() + 30
        while b"ready" not in self.sidecar.logs(stdout=True, stderr=False):
            self.sidecar.reload()
            if self.sidecar.status != "running" or time.monotonic() > deadline:
                tail = self.sidecar.logs(tail=20).decode("utf-8", "replace")
                raise RunError("channel", f"the model channel's sidecar did not start: {tail}")
            time.sleep(0.05)

    def stopped(self, evidence: Path) -> list[dict[str, Any]]:
        """Stop the sidecar and the relay; write ``egress.jsonl`` into the evidence; returns its entries.

        The entries are the sinks' log (``{"kind": "tcp", "dst", "port", ...}``, ``{"kind": "dns",
        "name", "qtype", ...}``) followed by one ``{"kind": "rejected", "protocol", "packets"}`` per
        protocol the reject rules stopped (UDP other than DNS, ICMP, other), read while the task
        container still runs; an empty log means nothing but the model channel was tried. When the
        counters cannot be read (the task container is gone), a ``{"kind": "counters-unavailable"}``
        entry says so, so an empty log is never claimed without them.
        """
        counts: dict[str, int] | str = "the channel never started"
        if self._pid is not None:
            try:
                counts = _blocked_counts(self._pid)
            except RunError as exc:
                counts = str(exc)
        if self.sidecar is not None:
            with suppress(*ENGINE_ERRORS):
                self.sidecar.kill()
        if self._relay is not None:
            self._relay.close()
        source = self._folder / "logs" / "egress.jsonl"
        entries: list[dict[str, Any]] = []
        if source.is_file():
            for line in source.read_text(encoding="utf-8", errors="replace").splitlines()[:10000]:
                with suppress(ValueError):
                    entries.append(json.loads(line))
        if isinstance(counts, str):
            entries.append({"kind": "counters-unavailable", "error": counts[:300]})
        else:
            entries += [{"kind": "rejected", "protocol": p, "packets": n} for p, n in counts.items() if n]
        evidence.mkdir(parents=True, exist_ok=True)
        (evidence / "egress.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
        shutil.rmtree(self._folder, ignore_errors=True)
        return entries


def _egress_rules(pid: int) -> None:
    """Route everything that is not loopback or the run network into the sidecar's sinks.

    The NAT rules redirect TCP (any port) and DNS to the sinks; the filter rules then let only those
    redirected packets through and reject the rest, counted per protocol (:func:`_blocked_counts`).
    The ACCEPT must match the redirect itself (conntrack's DNAT state), not the device: the kernel
    re-routes a redirected packet to loopback, but every OUTPUT hook still sees the output device
    the packet had before the NAT rule (``veth0``), so a plain ``-o veth0 -j REJECT`` also rejects
    what the sinks should log.

    Raises:
        RunError: A rule could not be installed.
    """
    steps = [
        ["ip", "link", "add", SINK_DEVICE, "type", "veth", "peer", "name", SINK_PEER],
        ["ip", "link", "set", SINK_DEVICE, "up"],
        ["ip", "link", "set", SINK_PEER, "up"],
        ["ip", "addr", "add", SINK_ADDRESS, "dev", SINK_DEVICE],
        ["ip", "route", "replace", "default", "dev", SINK_DEVICE],
        ["iptables", "-w", "10", "-t", "nat", "-A", "OUTPUT", "-o", SINK_DEVICE, "-p", "tcp",
         "-j", "REDIRECT", "--to-ports", str(SINK_PORT)],
        ["iptables", "-w", "10", "-t", "nat", "-A", "OUTPUT", "-o", SINK_DEVICE, "-p", "udp", "--dport", "53",
         "-j", "REDIRECT", "--to-ports", str(DNS_PORT)],
        ["iptables", "-w", "10", "-A", "OUTPUT", "-o", SINK_DEVICE, "-m", "conntrack", "--ctstate", "DNAT",
         "-j", "ACCEPT"],
        *(
            ["iptables", "-w", "10", "-A", "OUTPUT", "-o", SINK_DEVICE, *match,
             "-m", "comment", "--comment", f"{COUNTED}{proto}", "-j", "REJECT"]
            for proto, match in BLOCKED_PROTOCOLS
        ),
    ]  # fmt: skip
    for step in steps:
        done = subprocess.run(["nsenter", "-t", str(pid), "-n", *step], capture_output=True, text=True)
        if done.returncode != 0:
            raise RunError("channel", f"egress rule {' '.join(step)}: {done.stderr.strip()[:300]}")


def _blocked_counts(pid: int) -> dict[str, int]:
    """Packets the reject rules stopped, per protocol (``{"udp": 3, "icmp": 0, "other": 0}``).

    Read from the rules' own counters in the task container's network namespace (``iptables -S -v``),
    which the agent cannot change (it has no capabilities).

    Raises:
        RunError: The counters could not be read (the namespace is gone or the rules were not installed).
    """
    done = subprocess.run(
        ["nsenter", "-t", str(pid), "-n", "iptables", "-w", "10", "-S", "OUTPUT", "-v"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RunError("channel", f"reading the reject rules' counters: {done.stderr.strip()[:300]}")
    counts: dict[str, int] = {}
    for line in done.stdout.splitlines():
        words = line.split()
        for word in words:
            if word.strip('"').startswith(COUNTED) and "-c" in words:
                counts[word.strip('"').removeprefix(COUNTED)] = int(words[words.index("-c") + 1])
    if set(counts) != {proto for proto, _ in BLOCKED_PROTOCOLS}:
        raise RunError("channel", f"the reject rules are not all in place: {done.stdout[:300]}")
    return counts
