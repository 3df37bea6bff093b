"""Runs ONE agent command inside the task container and ends its whole process tree at the timeout.

Started by the runner as ``/usr/bin/python3 -I -S <this file> LIMIT COMMAND`` from a read-only
mount (isolated: no site packages, no sitecustomize, no .pth files, no PYTHON* variables, nothing
from the agent's folders on sys.path; the interpreter and the shell by their absolute paths on the
read-only root, so nothing the agent puts first on PATH stands in for them). The task container
sees this file without its docstrings and comments (docs/runtime.md, "No evaluation cue inside"). It makes itself a child subreaper, so every descendant of the command stays its
descendant even after ``setsid`` and double forks, and at the time limit it SIGKILLs all of them
until none is left. Output of the command streams on stdout; one status line (JSON) goes to the
wrapper's own stderr, which the command never holds. The runner keeps a host-side backstop in case
this process is killed or stopped (docs/runtime.md, "Command timeouts").
"""

import contextlib
import ctypes
import json
import os
import select
import signal
import sys
import time

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
MAX_ROUNDS = 200


def descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            parents[int(name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    found: set[int]
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier and pid not in found}
        found |= frontier
    return found


def kill_tree(root: int) -> None:
    for _ in range(MAX_ROUNDS):
        pids = descendants(root)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break


def main() -> None:
    limit, command = float(sys.argv[1]), sys.argv[2]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the command cannot open this process's fds via /proc
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    out_r, out_w = os.pipe()
    started = time.monotonic()
    child = os.fork()
    if child == 0:
        devnull = os.open("/dev/null", os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        for fd in (devnull, out_r, out_w, wake_r, wake_w):
            os.close(fd)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.execv("/bin/bash", ["bash", "-c", command])
    os.close(out_w)
    status: int | None
    timed_out, status, open_out = False, None, True
    while status is None:
        remaining = started + limit - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([out_r, wake_r] if open_out else [wake_r], [], [], remaining)
        if out_r in ready:
            data = os.read(out_r, 1 << 16)
            if data:
                os.write(1, data)
            else:
                open_out = False
        if wake_r in ready:
            os.read(wake_r, 4096)
        pid, code = os.waitpid(child, os.WNOHANG)
        if pid:
            status = code
    if timed_out:
        kill_tree(os.getpid())
        try:
            _, status = os.waitpid(child, 0)
        except ChildProcessError:
            status = None
    os.set_blocking(out_r, False)
    try:
        while data := os.read(out_r, 1 << 16):
            os.write(1, data)
    except BlockingIOError:
        pass
    if timed_out:
        exit_code = 124
    elif status is not None and os.WIFSIGNALED(status):
        exit_code = 128 + os.WTERMSIG(status)
    else:
        exit_code = os.WEXITSTATUS(status) if status is not None else -1
    sys.stderr.write(json.dumps({"exit": exit_code, "timed_out": timed_out}) + "\n")
    sys.stderr.flush()
    os._exit(exit_code & 0xFF)


main()
