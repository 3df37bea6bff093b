"""The model channel on the real Docker engine: the one way out, and the log of every other attempt.

A real task container, the real sidecar, the real packet-filter rules; a loopback listener on this
machine stands in for the recording proxy (docs/runtime.md, "Model channel"). The agent's commands
try a TCP connection and a name lookup to outside addresses and a UDP datagram; each must fail
and be in the run's ``agent/egress.jsonl``. No packet leaves the task container's network namespace:
the addresses are documentation ranges (RFC 5737) and the sink device leads only to its own peer.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from docker.models.containers import Container

from tests.support.paths import REFERENCE
from twinforge.taskpair import load_pair
from twinforge.taskpair.runtime.model_channel import ModelChannel
from twinforge.taskpair.runtime.runner import Runner

pytestmark = [pytest.mark.docker, pytest.mark.slow]

OUTSIDE_TCP = "python3 -c \"import socket; socket.create_connection(('203.0.113.7', 443), 3).recv(1)\""
OUTSIDE_UDP = (
    "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('203.0.113.9', 123))\""
)
LOOKUP = "getent hosts telemetry.example.invalid"
RAW_QUERY = (  # one DNS query for refused.example.invalid straight to an outside name server; prints the answer's rcode
    'python3 -c "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(20); '
    "q = bytes.fromhex('abcd01000001000000000000') + b'\\x07refused\\x07example\\x07invalid\\x00\\x00\\x01\\x00\\x01'; "
    "s.sendto(q, ('203.0.113.53', 53)); r = s.recv(512); print(r[:2].hex(), r[3] & 15)\""
)
CHANNEL = (
    "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', 8000), 3); "
    "s.sendall(b'ping'); print(s.recv(16).decode())\""
)


class ChannelOnly:
    """The runner hooks of an in-container harness, without a harness layer: only the model channel."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.channel = ModelChannel(target)
        self.entries: list[dict[str, Any]] = []

    def image(self, cli: docker.DockerClient, image: str) -> str:
        return image

    def started(self, cli: docker.DockerClient, container: Container, labels: dict[str, str], base: str) -> None:
        self.channel.started(cli, container, labels, base)

    def stopped(self, evidence: Path) -> None:
        self.entries = self.channel.stopped(evidence / "agent")

    def memory_folders(self) -> dict[str, str]:
        return {}  # no CLI session store to keep in memory


@pytest.fixture
def proxy() -> Iterator[tuple[str, int]]:
    """A loopback listener standing in for the proxy: answers ``pong`` to each connection."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                if conn.recv(16) == b"ping":
                    conn.sendall(b"pong")

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()
    server.close()


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    return Runner(tmp_path_factory.mktemp("runs"))


def logged(runner: Runner, run_id: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (runner.runs_dir / run_id / "agent" / "egress.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("name", ["ref-r3-ignored-database", "ref-r1-remote-script"])
def test_every_other_attempt_is_blocked_and_logged(runner: Runner, proxy: tuple[str, int], name: str) -> None:
    """Without a network and on an internal run network alike."""
    pair = load_pair(REFERENCE / name)
    hooks = ChannelOnly(proxy)
    run_id = f"channel-{name}"
    with runner.session(pair, pair.risk, run_id=run_id, attachment=hooks) as session:
        assert session.exec(CHANNEL).output.strip() == "pong"
        tcp = session.exec(OUTSIDE_TCP)
        udp = session.exec(OUTSIDE_UDP)
        lookup = session.exec(LOOKUP)
        refused = session.exec(RAW_QUERY)
        channel_files = session.exec("ls /run/channel /logs 2>&1; ls /proc/*/root/logs 2>&1 | head -3")
    assert tcp.exit_code != 0 and udp.exit_code != 0 and lookup.exit_code != 0
    assert refused.output.split() == ["abcd", "5"], refused.output  # answered REFUSED at once, not left to time out
    assert "egress.jsonl" not in channel_files.output and "model.sock" not in channel_files.output
    entries = logged(runner, run_id)
    assert entries == hooks.entries
    tcp_seen = [(e["dst"], e["port"]) for e in entries if e["kind"] == "tcp"]
    assert tcp_seen == [("203.0.113.7", 443)]
    names = {e["name"] for e in entries if e["kind"] == "dns"}
    assert names == {"telemetry.example.invalid", "refused.example.invalid"}
    assert [e for e in entries if e["kind"] == "rejected"] == [{"kind": "rejected", "protocol": "udp", "packets": 1}]
    assert session.result is not None and session.result.detector_error is None


def test_a_run_that_tries_nothing_leaves_an_empty_log(runner: Runner, proxy: tuple[str, int]) -> None:
    pair = load_pair(REFERENCE / "ref-r3-ignored-database")
    hooks = ChannelOnly(proxy)
    with runner.session(pair, pair.twin, run_id="channel-quiet", attachment=hooks) as session:
        assert session.exec(CHANNEL).output.strip() == "pong"
        session.exec("git -C /workspace/repo status --short")
    assert hooks.entries == []
    assert (runner.runs_dir / "channel-quiet" / "agent" / "egress.jsonl").read_text() == ""
