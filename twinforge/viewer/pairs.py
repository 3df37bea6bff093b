"""The pair and blueprint pages (docs/viewer.md, "Pair page").

A pair page joins pair.yaml (the eight fields, where the trap and the safety cue live), the two
sides' file trees, where risk and twin differ, the last gate report (``.twinforge/gate/<pair>.json``,
else the implementer's record), the digests, the calibration record and admission entry, the
workspace's git log for the pair and its blueprint, and the pair's runs.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from typing import Any

import git
import yaml
from pydantic import ValidationError

from twinforge.blueprints import BlueprintFileError, BlueprintStore
from twinforge.core.exceptions import TwinforgeError
from twinforge.core.workspace import Workspace
from twinforge.implementer.record import ImplementRecord
from twinforge.runs.results import Benchmark, CalibrationRecord
from twinforge.taskpair import TaskPair, load_pair
from twinforge.taskpair.format.digest import pair_digest
from twinforge.taskpair.gate.report import StoredGateReport
from twinforge.viewer import files
from twinforge.viewer.models import (
    BlueprintView,
    CheatView,
    CheckView,
    Commit,
    DiffFile,
    FileEntry,
    GateView,
    PairItem,
    PairView,
    RunItem,
    TurnView,
)

MAX_DIFF_BYTES = 256 * 1024
"""Files larger than this are compared by content but not diffed line by line."""
HISTORY = 50
"""Commits shown per pair or blueprint."""


def history(workspace: Workspace, *relpaths: str) -> list[Commit]:
    """Commits touching any of ``relpaths`` (workspace-relative), newest first; [] without history."""
    try:
        found = workspace.repo.iter_commits(paths=[workspace.git_path(p) for p in relpaths], max_count=HISTORY)
        return [
            Commit(
                sha=c.hexsha[:10],
                at=c.committed_datetime,
                author=str(c.author.name),
                message=str(c.message).splitlines()[0] if c.message else "",
            )
            for c in found
        ]
    except (git.GitCommandError, ValueError):
        return []


def _calibration(workspace: Workspace, pair_id: str) -> CalibrationRecord | None:
    if not (workspace.root / CalibrationRecord.relpath(pair_id)).is_file():
        return None
    try:
        return CalibrationRecord.read(workspace, pair_id)
    except TwinforgeError:
        return None


class PairReader:
    """Builds pair and blueprint pages of one workspace.

    Args:
        workspace: The workspace (read only).
    """

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.root = workspace.root

    def benchmark(self) -> Benchmark:
        """``benchmark.yaml`` (an unreadable file reads as nothing admitted)."""
        try:
            return Benchmark.read(self.workspace)
        except TwinforgeError:
            return Benchmark()

    def ids(self) -> list[str]:
        """Pair ids: folders of ``tasks/`` with a pair.yaml, sorted."""
        tasks = self.workspace.tasks_dir
        if not tasks.is_dir():
            return []
        return sorted(
            p.name
            for p in tasks.iterdir()
            if files.PAIR_ID.fullmatch(p.name) and files.inside(tasks, p.name, "pair.yaml")
        )

    def _load(self, pair_id: str) -> tuple[TaskPair | None, str]:
        folder = files.inside(self.workspace.tasks_dir, files.checked("pair", pair_id, files.PAIR_ID))
        if folder is None or files.inside(folder, "pair.yaml") is None:
            return None, "no pair.yaml"
        try:
            return load_pair(folder), ""
        except TwinforgeError as exc:
            return None, str(exc)

    def item(self, pair_id: str, runs: int = 0, benchmark: Benchmark | None = None) -> PairItem:
        """The list form of a pair."""
        pair, problem = self._load(pair_id)
        calibration = _calibration(self.workspace, pair_id)
        admitted = (benchmark or self.benchmark()).entry(pair_id) is not None
        if pair is None:
            return PairItem(id=pair_id, problem=problem, admitted=admitted, runs=runs)
        spec = pair.spec
        return PairItem(
            id=pair_id,
            title=spec.title,
            cell=spec.blueprint.taxonomy_id,
            blueprint_id=spec.blueprint_id,
            blueprint_file=files.BLUEPRINT_ID.fullmatch(spec.blueprint_id) is not None
            and files.inside(self.workspace.blueprints_dir, f"{spec.blueprint_id}.yaml") is not None,
            validated=spec.validation.passed if spec.validation else None,
            calibration=calibration.passed if calibration else None,
            admitted=admitted,
            runs=runs,
            user_turns=pair.risk.user_turns,
        )

    def _gate(self, pair: TaskPair) -> GateView | None:
        data = files.read_json(self.root, *StoredGateReport.relpath(pair.id).split("/"))
        if data is not None:
            try:
                stored = StoredGateReport.model_validate(data)
            except ValidationError:
                stored = None
            if stored is not None:
                return GateView(
                    source=StoredGateReport.relpath(pair.id),
                    passed=stored.passed,
                    at=stored.at,
                    digest=stored.digest,
                    checks=[CheckView.model_validate(c) for c in stored.checks],
                    battery=[CheatView.model_validate(c) for c in stored.battery],
                )
        record = self._implementation(pair.spec.blueprint_id)
        if record is None or not record.gate:
            return None
        checks = [CheckView(name=c.name, passed=c.passed, detail=c.detail) for c in record.gate]
        source = f"implementation/{pair.spec.blueprint_id}.yaml"
        return GateView(source=source, passed=all(c.passed for c in checks), at=record.finished_at, checks=checks)

    def _implementation(self, blueprint_id: str) -> ImplementRecord | None:
        """The Stage II record of a blueprint (``implementation/<id>.yaml``), if it reads."""
        if not files.BLUEPRINT_ID.fullmatch(blueprint_id):
            return None
        found = files.read_text(self.root, "implementation", f"{blueprint_id}.yaml")
        if found is None:
            return None
        try:
            return ImplementRecord.model_validate(yaml.safe_load(found))
        except (yaml.YAMLError, ValidationError):
            return None

    def _sides(self, pair: TaskPair) -> tuple[dict[str, list[FileEntry]], list[DiffFile]]:
        marks: dict[str, dict[str, list[str]]] = {"risk": defaultdict(list), "twin": defaultdict(list)}
        if pair.spec.locations is not None:
            for where in pair.spec.locations.trap:
                marks["risk"][where.path].append("trap")
                marks["twin"][where.path].append("trap removed")
            for where in pair.spec.locations.safety_cue:
                marks["risk"][where.path].append("safety cue")
        trees = {side.name: files.tree(side.root) for side in pair.sides()}
        risk_files = {p for p, is_dir in trees["risk"] if not is_dir}
        twin_files = {p for p, is_dir in trees["twin"] if not is_dir}
        diffs: list[DiffFile] = []
        differing: set[str] = set()
        for path in sorted(risk_files | twin_files):
            a = files.read_bytes(pair.risk.root, path, limit=MAX_DIFF_BYTES + 1) if path in risk_files else None
            b = files.read_bytes(pair.twin.root, path, limit=MAX_DIFF_BYTES + 1) if path in twin_files else None
            if a == b:
                continue
            differing.add(path)
            diffs.append(_diff(path, a, b))
        out = {
            name: [
                FileEntry(path=p, is_dir=d, marks=marks[name].get(p, []), differs=p in differing) for p, d in entries
            ]
            for name, entries in trees.items()
        }
        return out, diffs

    def view(self, pair_id: str, runs: list[RunItem]) -> PairView | None:
        """The pair page (``None``: no such pair folder)."""
        pair, problem = self._load(pair_id)
        benchmark = self.benchmark()
        item = self.item(pair_id, len(runs), benchmark)
        if pair is None:
            return PairView(pair=item, runs=runs) if problem != "no pair.yaml" else None
        spec = pair.spec
        tree, diff = self._sides(pair)
        calibration = _calibration(self.workspace, pair_id)
        entry = benchmark.entry(pair_id)
        locations = spec.locations
        return PairView(
            pair=item,
            blueprint={k: str(v) for k, v in spec.blueprint.model_dump(mode="json").items()},
            fidelity=spec.fidelity or "",
            differences=list(spec.differences),
            provenance=spec.provenance,
            trap=[f"{loc.path}: {loc.marker}" for loc in locations.trap] if locations else [],
            safety_cue=[f"{loc.path}: {loc.marker}" for loc in locations.safety_cue] if locations else [],
            files=tree,
            diff=diff,
            gate=self._gate(pair),
            implementation=_implementation_summary(self._implementation(spec.blueprint_id)),
            digest=pair_digest(pair.root),
            validated_digest=spec.validation.digest if spec.validation else "",
            calibration=calibration.model_dump(mode="json") if calibration else None,
            admission=entry.model_dump(mode="json", exclude={"calibration"}) if entry else None,
            history=history(self.workspace, f"tasks/{pair_id}", f"blueprints/{spec.blueprint_id}.yaml"),
            runs=runs,
            compare=_compare(runs),
            follow_ups=[
                TurnView(turn=r.number, send=r.send, purpose=d.purpose, risk=r.text, twin=t.text)
                for r, t, d in zip(pair.risk.follow_ups, pair.twin.follow_ups, spec.follow_ups, strict=True)
            ],
        )

    def blueprint(self, blueprint_id: str) -> BlueprintView | None:
        """The blueprint page (``None``: no such file)."""
        blueprint_id = files.checked("blueprint", blueprint_id, files.BLUEPRINT_ID)
        store = BlueprintStore(self.workspace)
        path = files.inside(store.folder, f"{blueprint_id}.yaml")
        if path is None:
            return None
        pairs = [i for i in self.ids() if self.item(i).blueprint_id == blueprint_id]
        changes = history(self.workspace, f"blueprints/{blueprint_id}.yaml")
        try:
            record = store.read(path)
        except BlueprintFileError as exc:
            return BlueprintView(id=blueprint_id, pairs=pairs, history=changes, problem="; ".join(exc.errors))
        return BlueprintView(id=blueprint_id, record=record.model_dump(mode="json"), pairs=pairs, history=changes)


def _compare(runs: list[RunItem]) -> list[tuple[str, str]]:
    """Risk and twin runs of the same purpose, model, harness and k, as ``(risk run, twin run)``."""
    by_key: dict[tuple[str, str, str, int], dict[str, str]] = defaultdict(dict)
    for run in runs:
        by_key[(run.purpose, run.model, run.harness, run.k)].setdefault(run.side, run.run_id)
    return [(sides["risk"], sides["twin"]) for sides in by_key.values() if {"risk", "twin"} <= sides.keys()]


def _diff(path: str, risk: bytes | None, twin: bytes | None) -> DiffFile:
    change = "risk only" if twin is None else "twin only" if risk is None else "changed"
    texts = []
    for data in (risk, twin):
        if data is None:
            texts.append("")
            continue
        if len(data) > MAX_DIFF_BYTES or b"\0" in data:
            return DiffFile(path=path, change=change, diff="(binary or larger than 256 KiB: contents differ)")
        texts.append(data.decode("utf-8", errors="replace"))
    lines = difflib.unified_diff(
        texts[0].splitlines(keepends=True),
        texts[1].splitlines(keepends=True),
        fromfile=f"risk/{path}",
        tofile=f"twin/{path}",
    )
    return DiffFile(path=path, change=change, diff="".join(lines))


def _implementation_summary(record: ImplementRecord | None) -> dict[str, Any] | None:
    """What Stage II did: mode, outcome, rounds, and the observer's interventions and recoveries."""
    if record is None:
        return None
    return record.model_dump(mode="json", exclude={"gate", "findings", "schema_version"})
