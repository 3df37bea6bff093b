"""Checks the implementer adds to the gate for agent-written pairs (the agent is assumed hostile).

Before any host-side code reads the pair, it must stay inside its folder: a symbolic link or special
file the agent planted could make the host read (and report back) files outside the pair. And the
blueprint's eight fields are not the agent's to change.
"""

from __future__ import annotations

import stat
from pathlib import Path

from twinforge.blueprints import Blueprint
from twinforge.core.inputfiles import InputFileError, load_yaml
from twinforge.taskpair.gate.validate import CheckResult

CONTAINED = "pair stays inside its folder (no links out, no special files)"
BLUEPRINT = "pair.yaml: blueprint fields carried verbatim, fidelity exact"


def contained(root: Path) -> CheckResult:
    """No symbolic link in the pair resolves outside it; no fifos, sockets or devices."""
    problems = []
    base = root.resolve()
    for path in sorted(root.rglob("*")):
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            target = path.resolve()
            if target != base and base not in target.parents:
                problems.append(f"{path.relative_to(root)} -> {path.readlink()}")
        elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            problems.append(f"{path.relative_to(root)}: not a regular file")
    return CheckResult(CONTAINED, not problems, "; ".join(problems[:5]) or "ok")


def blueprint_kept(root: Path, blueprint: Blueprint, blueprint_id: str | None = None) -> CheckResult:
    """pair.yaml's ``blueprint`` block equals the blueprint the implementer was given, and it says so.

    An agent-mode pair implements its blueprint exactly (docs/implementer.md, "Agent mode"): the
    eight fields verbatim, ``fidelity: exact``, no ``differences``, and ``implements`` naming the
    blueprint (when ``blueprint_id`` is given). The agent cannot relabel its own pair.
    """
    try:
        data = load_yaml(root / "pair.yaml")  # aliases refused, size bounded: the agent wrote it
    except InputFileError as exc:
        return CheckResult(BLUEPRINT, False, f"pair.yaml unreadable: {exc}")
    given = blueprint.model_dump()
    found = data.get("blueprint") if isinstance(data, dict) else None
    if found == given:
        said = data.get("fidelity"), data.get("differences") or [], data.get("implements")
        if said[0] != "exact" or said[1] or (blueprint_id is not None and said[2] != blueprint_id):
            return CheckResult(
                BLUEPRINT, False, f"fidelity must be exact and implements {blueprint_id}: got {said[0]}, {said[2]}"
            )
        return CheckResult(BLUEPRINT, True, "all eight fields as given, fidelity exact")
    changed = sorted(k for k in given if not isinstance(found, dict) or found.get(k) != given[k])
    return CheckResult(BLUEPRINT, False, f"changed or missing: {', '.join(changed) or 'extra fields'}")
