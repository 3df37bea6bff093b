"""Helpers of the standing adversarial suite (docs/runtime.md "Hostile agent") and its report.

Each test plays one strategy of a hostile agent through the real runner and asserts the stored
outcome and that nothing leaked. With ``TWINFORGE_HOSTILE_REPORT=<file>`` set, each test also
appends one JSON line (strategy, expected, stored outcome, held, verdict changed, leaks), which
``bench/hostile.py`` prints as a table.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path
from typing import Any

import yaml

from tests.support.implementer import reference_blueprint
from tests.support.paths import DATA as _DATA
from tests.support.paths import REFERENCE
from twinforge.blueprints import Blueprint
from twinforge.implementer.archetypes.catalog import load_archetypes
from twinforge.implementer.archetypes.render import own_blueprint, render_pair
from twinforge.taskpair.format.spec import load_pair
from twinforge.taskpair.runtime.engine import client
from twinforge.taskpair.runtime.firewall import rules_for
from twinforge.taskpair.runtime.isolation import leftovers
from twinforge.taskpair.runtime.rundisk import disk_root
from twinforge.taskpair.runtime.runner import Runner
from twinforge.taskpair.runtime.scripted import ScriptedRun, run_scripted
from twinforge.taskpair.runtime.session import RunResult
from twinforge.taskpair.runtime.turns import UserTurns

DATA = _DATA / "hostile"
REPORT_ENV = "TWINFORGE_HOSTILE_REPORT"


def play(name: str) -> list[str]:
    """The commands of a recorded hostile case (tests/data/hostile/<name>.json)."""
    commands: list[str] = json.loads((DATA / f"{name}.json").read_text())
    return commands


def pair_copy(tmp_path: Path, name: str, *, edits: dict[str, tuple[str, str]] | None = None) -> Path:
    """A copy of a reference pair; ``edits`` maps a file (relative to the pair) to (old, new) text."""
    target = tmp_path / name
    shutil.copytree(REFERENCE / name, target)
    for rel, (old, new) in (edits or {}).items():
        path = target / rel
        text = path.read_text()
        if old not in text:
            raise AssertionError(f"{rel}: {old!r} not found")
        path.write_text(text.replace(old, new))
    return target


def write_detector(pair: Path, side: str, code: str) -> None:
    (pair / side / "detector" / "detect.py").write_text(textwrap.dedent(code))


def leaks(run_id: str) -> dict[str, int]:
    """Everything of ``run_id`` still on this host: Docker resources, packet-filter rules, run disk."""
    found = leftovers(client(), run_id)
    found["rules"] = len(rules_for(run_id))
    disk = disk_root(run_id)
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        mounted = any(line.split()[4] == str(disk) for line in handle)
    found["disks"] = int(mounted or disk.exists() or disk.with_name(disk.name + ".img").exists())
    return {k: v for k, v in found.items() if v}


def report(
    strategy: str,
    expected: str,
    result: RunResult | ScriptedRun | None,
    *,
    held: bool,
    outcome: str | None = None,
    **extra: Any,
) -> dict[str, int]:
    """Check for leaks, append the strategy's row to the report file (if asked), return the leaks.

    ``outcome`` names what happened when there was no run (e.g. "refused at load").
    """
    leaked = leaks(result.run_id) if result is not None else {}
    outcome = result.outcome.value if result is not None else (outcome or "(no run)")
    path = os.environ.get(REPORT_ENV)
    if path:
        row = {
            "strategy": strategy,
            "expected": expected,
            "outcome": outcome,
            "held": bool(held and not leaked),
            "verdict_changed": outcome != expected,
            "leaked": leaked,
            **extra,
        }
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
    return leaked


ROUND3 = DATA / "round3"


def attack(name: str) -> list[str]:
    """The commands of a round-three attack (tests/data/hostile/round3/<name>.json)."""
    commands: list[str] = json.loads((ROUND3 / f"{name}.json").read_text())
    return commands


def scripted(tmp_path: Path, pair: str | Path, side: str, commands: list[str], **kwargs: Any) -> ScriptedRun:
    """Play ``commands`` as the agent through ``twinforge run``'s library function (runs under ``tmp_path``)."""
    root = pair if isinstance(pair, Path) else REFERENCE / pair
    return run_scripted(root, side, commands, tmp_path / "runs", **kwargs)


def archetype_pair(tmp_path: Path, name: str, source: str = "S1") -> Path:
    """An archetype rendered with its slots' examples for ``source``, from the blueprint it was derived from."""
    archetype = next(a for a in load_archetypes() if a.spec.name == name)
    derived_from = archetype.spec.derived_from
    if derived_from == "new":
        blueprint = own_blueprint(archetype, source)  # type: ignore[arg-type]
    elif (REFERENCE / derived_from).is_dir():
        blueprint = reference_blueprint(derived_from)
    else:
        items = yaml.safe_load((_DATA / "stage1" / "checks-labelled.yaml").read_text())["items"]
        blueprint = Blueprint.model_validate(next(i["blueprint"] for i in items if i["id"] == derived_from))
    risk = archetype.spec.risk
    return render_pair(
        archetype,
        archetype.example_slots(),
        pair_root=tmp_path / f"{name}-{source.lower()}",
        blueprint_id=f"{source}-{risk}-0000",
        blueprint=blueprint.model_copy(update={"taxonomy_id": f"{source}-{risk}"}),
        model="scripted",
    )


def play_turns(tmp_path: Path, pair: str | Path, side: str, plan: list[dict[str, Any]]) -> RunResult:
    """Play a turns plan (``[{"commands": [...], "final": "..."}, ...]``, turn 1 first) through the
    real runner and :class:`UserTurns`, as a harness does: each turn's commands, then the turn ends.

    A turn the plan does not hold runs no command. Returns the stored result.
    """
    root = pair if isinstance(pair, Path) else REFERENCE / pair
    loaded = load_pair(root)
    chosen = loaded.risk if side == "risk" else loaded.twin
    runner = Runner(tmp_path / "runs")
    with runner.session(loaded, chosen) as session:
        turns = UserTurns(chosen.follow_ups, session, budget_s=chosen.spec.agent.turn_timeout_s)
        turns.start()
        number, step = 1, plan[0]
        while True:
            step = plan[number - 1] if number <= len(plan) else {"commands": [], "final": ""}
            for command in step["commands"]:
                session.exec(command)
            upcoming = turns.next(end="exit 0", final_message=step.get("final", ""))
            if upcoming is None:
                break
            number = upcoming.number
        session.final_message = step.get("final", "")
    if session.result is None:
        raise AssertionError(f"{session.run_id} ended without a result")
    return session.result
