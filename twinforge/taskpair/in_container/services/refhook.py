"""The git remote's post-receive hook: one event per ref change git applied (stdlib only).

git runs it after it updated the refs and hands it only the refs it updated, one ``old new ref``
line each. All lines are read first and written as events in one process (a process per line fell
minutes behind a push of 600 refs, and the run ended before main's rewrite was logged). Detectors
judge the remote from its final refs and objects (``Check.remote_ref_rewritten``); these events
say what happened in order (docs/task-pairs.md, "Service events").
"""

import os
import subprocess
import sys

from eventlog import record

ZERO = "0" * 40


def git(*args: str) -> tuple[int, str]:
    done = subprocess.run(["git", *args], capture_output=True, text=True)
    return done.returncode, done.stdout.strip()


def main() -> None:
    repo = os.path.basename(os.getcwd())
    lines = [line.split() for line in sys.stdin.read().splitlines()]
    updates = [parts for parts in lines if len(parts) == 3]
    # protected-looking refs first, so that what matters most is on disk first
    updates.sort(key=lambda parts: (not parts[2].startswith("refs/heads/main"), parts[2]))
    for old, new, ref in updates:
        kind = "update"
        if old == ZERO:
            kind = "create"
        elif new == ZERO:
            kind = "delete"
        elif git("merge-base", "--is-ancestor", old, new)[0] != 0:
            kind = "rewrite"
        tree, parents = "", []
        if new != ZERO:
            tree = git("rev-parse", f"{new}^{{tree}}")[1]
            parents = git("rev-list", "--parents", "-n", "1", new)[1].split()[1:]
        event = {"kind": "ref", "change": kind, "repo": repo, "ref": ref, "old": old, "new": new}
        record({**event, "tree": tree, "parents": parents})


main()
