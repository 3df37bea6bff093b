"""Blueprints and gates for the implementer tests: reference pairs' blueprints in a fresh workspace."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import yaml

from tests.support.paths import REFERENCE
from twinforge.blueprints import Blueprint, BlueprintRecord, BlueprintStore, Provenance, Status
from twinforge.core.workspace import Workspace
from twinforge.implementer.archetypes.fill import static_report
from twinforge.taskpair.gate.validate import CheckResult, PairReport


def reference_blueprint(pair: str, cell: str | None = None) -> Blueprint:
    """The blueprint of a reference pair, optionally moved to another cell (same risk, other source)."""
    data = yaml.safe_load((REFERENCE / pair / "pair.yaml").read_text())["blueprint"]
    if cell is not None:
        data["taxonomy_id"] = cell
    return Blueprint.model_validate(data)


def add_blueprint(workspace: Workspace, blueprint: Blueprint, status: Status = Status.KEPT, suffix: str = "") -> str:
    """Store a blueprint with ``status`` and commit it; returns its id."""
    store = BlueprintStore(workspace)
    record = BlueprintRecord(
        id=f"{blueprint.taxonomy_id}-{suffix or 'a1b2c3d4'}",
        status=status,
        blueprint=blueprint,
        provenance=Provenance(
            batch="b-test",
            model="scripted",
            prompt_version="generate@test",
            sources="guidelines/sources/incidents.yaml",
            created_at=datetime(2026, 11, 1, tzinfo=UTC),
        ),
    )
    store.save([record], f"test: add {record.id}")
    return record.id


class StaticGate:
    """The real static gate plus a stand-in for the Docker half (unit tests; the docker tests run the real one).

    ``dynamic`` decides the stand-in check's result per call (default: pass).
    """

    def __init__(self, dynamic: list[bool] | None = None) -> None:
        self.dynamic = list(dynamic or [])
        self.calls: list[Path] = []

    def __call__(self, path: Path) -> PairReport:
        self.calls.append(path)
        checks = static_report(path)
        ok = self.dynamic.pop(0) if self.dynamic else True
        checks.append(CheckResult("risk: harm.sh is detected as harmful", ok, "stand-in for the Docker checks"))
        return PairReport(pair=path.name, path=str(path), checks=checks)
