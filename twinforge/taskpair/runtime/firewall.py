"""Host packet-filter rules that keep a run network to itself (docs/runtime.md, "Network isolation").

Docker's internal networks do not forward off the machine, and the runner removes the default
route, but the host still owns the network's gateway address: any host service listening on all
interfaces (a database, a dev server, an unauthenticated API) answered the agent there. So while a
run network exists, the host's packet filter rejects everything that arrives from its bridge for
the host itself (INPUT) and everything forwarded between it and any other interface (FORWARD),
for IPv4 and IPv6. Traffic between the run's own containers stays on the bridge and is untouched.

The rules live in twinforge's own chains (``TWINFORGE-IN``, ``TWINFORGE-FWD``), jumped to first
from ``INPUT`` and ``FORWARD``; nothing else of the host's rule set is changed. Each rule carries a
comment ``twinforge pid=<pid> run=<run id>`` so that the rules of a crashed runner are removed by
the next one (``reap_rules``). The bridge is named by the runner (``com.docker.network.bridge.name``)
so the rules exist before the network does.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import subprocess
import threading

from twinforge.core.processes import process_alive
from twinforge.taskpair.exceptions import RunError

CHAIN_IN = "TWINFORGE-IN"
CHAIN_FWD = "TWINFORGE-FWD"
TOOLS = ("iptables", "ip6tables")
COMMENT = re.compile(r'--comment "?twinforge pid=(\d+) run=([^" ]+)"?')
_lock = threading.Lock()
_ready: set[str] = set()


def bridge_name(run_id: str) -> str:
    """The run network's bridge interface name (``tf`` + 12 hex digits; at most 15 characters)."""
    return "tf" + hashlib.sha256(run_id.encode()).hexdigest()[:12]


def _tools() -> list[str]:
    found = [tool for tool in TOOLS if shutil.which(tool)]
    if "iptables" not in found:
        raise RunError("isolation", "iptables is needed to keep run networks off the host; install it and run as root")
    return found


def _call(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool, "-w", "10", *args], capture_output=True, text=True)


def _ensure_chains(tool: str) -> None:
    if tool in _ready:
        return
    for chain, parent in ((CHAIN_IN, "INPUT"), (CHAIN_FWD, "FORWARD")):
        _call(tool, "-N", chain)  # fails harmlessly when it exists
        if _call(tool, "-C", parent, "-j", chain).returncode != 0:
            done = _call(tool, "-I", parent, "1", "-j", chain)
            if done.returncode != 0:
                raise RunError("isolation", f"{tool}: could not jump from {parent} to {chain}: {done.stderr.strip()}")
    _ready.add(tool)


def _rules(tool: str, bridge: str, comment: str) -> list[tuple[str, list[str]]]:
    reject = "icmp-port-unreachable" if tool == "iptables" else "icmp6-port-unreachable"
    tail = ["-m", "comment", "--comment", comment, "-j", "REJECT", "--reject-with", reject]
    return [
        (CHAIN_IN, ["-i", bridge, *tail]),
        (CHAIN_FWD, ["-i", bridge, "!", "-o", bridge, *tail]),
        (CHAIN_FWD, ["-o", bridge, "!", "-i", bridge, *tail]),
    ]


def _restore(tool: str, command: str, rules: list[tuple[str, list[str]]]) -> bool:
    """Apply ``command`` (-A or -D) for all ``rules`` in one atomic ``*-restore --noflush`` call."""
    # iptables-restore reads double quotes only; run ids and comments never contain them.
    line = [" ".join(f'"{a}"' if " " in a else a for a in [command, chain, *spec]) for chain, spec in rules]
    lines = ["*filter", *line, "COMMIT", ""]
    done = subprocess.run(
        [f"{tool}-restore", "-w", "10", "--noflush"], input="\n".join(lines), capture_output=True, text=True
    )
    return done.returncode == 0


def block(run_id: str, pid: int) -> str:
    """Install the rules for ``run_id``'s bridge before its network exists; returns the bridge name.

    Raises:
        RunError: iptables is missing or refused a rule (the run does not start without isolation).
    """
    bridge = bridge_name(run_id)
    comment = f"twinforge pid={pid} run={run_id}"
    with _lock:
        for tool in _tools():
            _ensure_chains(tool)
            if not _restore(tool, "-A", _rules(tool, bridge, comment)):
                unblock(run_id, pid)
                raise RunError("isolation", f"{tool}-restore could not add the rules for {bridge}")
    return bridge


def unblock(run_id: str, pid: int) -> str | None:
    """Remove ``run_id``'s rules; returns what could not be removed, or ``None``."""
    bridge = bridge_name(run_id)
    comment = f"twinforge pid={pid} run={run_id}"
    problems = []
    for tool in [t for t in TOOLS if shutil.which(t)]:
        rules = _rules(tool, bridge, comment)
        if _restore(tool, "-D", rules):
            continue
        for chain, spec in rules:  # some were missing already: remove the rest one by one
            while _call(tool, "-C", chain, *spec).returncode == 0:
                done = _call(tool, "-D", chain, *spec)
                if done.returncode != 0:
                    problems.append(f"{tool} {chain}: {done.stderr.strip()}")
                    break
    return "; ".join(problems) or None


def reap_rules(*, everything: bool = False) -> int:
    """Remove the rules of runs whose runner process is gone (or every twinforge rule).

    Returns:
        How many rules were removed.
    """
    removed = 0
    for tool in [t for t in TOOLS if shutil.which(t)]:
        for chain in (CHAIN_IN, CHAIN_FWD):
            listing = _call(tool, "-S", chain)
            if listing.returncode != 0:
                continue
            for line in listing.stdout.splitlines():
                match = COMMENT.search(line)
                if not line.startswith(f"-A {chain} ") or match is None:
                    continue
                if not everything and process_alive(int(match.group(1))):
                    continue
                done = _call(tool, "-D", chain, *shlex.split(line)[2:])
                removed += done.returncode == 0
    return removed


def rules_for(run_id: str) -> list[str]:
    """The rule lines that mention ``run_id`` (for tests and ``twinforge env reap``)."""
    lines = []
    for tool in [t for t in TOOLS if shutil.which(t)]:
        for chain in (CHAIN_IN, CHAIN_FWD):
            listing = _call(tool, "-S", chain)
            lines += [f"{tool} {line}" for line in listing.stdout.splitlines() if f"run={run_id}" in line]
    return lines
