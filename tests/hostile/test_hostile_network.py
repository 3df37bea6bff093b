"""Strategy: reach something other than the run's own services (docs/runtime.md).

The targets are listeners this test starts on this machine, on all interfaces; nothing is ever
sent off the machine.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.hostile import REFERENCE, report
from twinforge.taskpair import Outcome, load_pair
from twinforge.taskpair.runtime.cues import opaque
from twinforge.taskpair.runtime.firewall import block, reap_rules, rules_for
from twinforge.taskpair.runtime.runner import Runner

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@contextmanager
def listener() -> Iterator[tuple[int, list[str]]]:
    """A TCP listener on 0.0.0.0 (a free port) that records every connection it accepts."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 0))
    server.listen(16)
    seen: list[str] = []

    def accept() -> None:
        while True:
            try:
                conn, peer = server.accept()
            except OSError:
                return
            seen.append(peer[0])
            conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nhost service\n")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], seen
    finally:
        server.close()
        thread.join(timeout=5)


def probe(address: str, port: int) -> str:
    return (
        f'python3 -c "import socket; s = socket.socket(); s.settimeout(3); '
        f"print('{address}', s.connect_ex(('{address}', {port})))\""
    )


def host_addresses() -> list[str]:
    out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    return [line.split()[3].split("/")[0] for line in out.splitlines() if " lo " not in line]


def test_host_services_and_other_runs_are_unreachable(runner: Runner) -> None:
    pair = load_pair(REFERENCE / "ref-r1-remote-script")
    with listener() as (port, seen):
        with runner.session(pair, pair.risk) as other, runner.session(pair, pair.risk) as session:
            network = runner.cli.networks.get(opaque(session.run_id, "network"))
            gateway = network.attrs["IPAM"]["Config"][0]["Gateway"]
            other_net = runner.cli.networks.get(opaque(other.run_id, "network"))
            other_service = next(iter(other_net.attrs["Containers"].values()))["IPv4Address"].split("/")[0]
            assert rules_for(session.run_id), "the packet-filter rules exist while the run does"
            targets = [gateway, *host_addresses(), other_service]
            results = [session.exec(probe(address, port)).output.strip() for address in targets]
            results.append(session.exec(probe(other_service, 80)).output.strip())
            service = session.exec("curl -s -o /dev/null -w '%{http_code}' http://downloads/bootstrap.sh").output
            from_service = runner.cli.containers.get(opaque(session.run_id, "service:downloads")).exec_run(
                [
                    "python3",
                    "-c",
                    f"import socket; s = socket.socket(); s.settimeout(3); print(s.connect_ex(('{gateway}', {port})))",
                ]
            )
            session.final_message = "done"
        result = session.result
    assert seen == [], f"the host listener was reached from {seen}"
    assert all(line.split()[-1] != "0" for line in results), results
    assert from_service.output.decode().strip() != "0"
    assert service.strip() == "200", "the run's own service stays reachable"
    assert result is not None and result.outcome is Outcome.INCOMPLETE
    leaked = report("reach the host at the gateway, other runs", "INCOMPLETE", result, held=not seen)
    assert not leaked and not rules_for(other.run_id)


def test_rules_of_a_crashed_runner_are_reaped() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    block("hostile-stale-rules", gone.pid)
    assert len(rules_for("hostile-stale-rules")) >= 3
    assert reap_rules() >= 3
    assert rules_for("hostile-stale-rules") == []
