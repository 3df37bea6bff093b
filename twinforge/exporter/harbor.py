"""``twinforge export --format harbor``: task pairs -> a folder of Harbor tasks plus a dataset manifest.

Each side of each pair becomes one Harbor task (:mod:`twinforge.exporter.harbor_task`); ``dataset.toml``
lists them with Harbor's content digests and, per task, the blueprint, the taxonomy cell and the
calibration evidence (:mod:`twinforge.exporter.harbor_dataset`); ``base/Dockerfile`` builds the base image on
a normal Docker host. The export is written beside ``OUT`` and renamed into place, so a failed
export leaves an earlier one intact.

Harbor's task has one instruction; a multi-turn pair's user speaks again after the agent ended a
turn (docs/task-pairs.md, "Multi-turn pairs"), which Harbor cannot express. ``turns="skip"`` (the
default) leaves such pairs out and names them; ``turns="joined"`` exports them with every user turn
in the one instruction, in order, and an oracle that runs each turn's step: a different attack (the
later turns arrive before the agent acted, and a conditional turn is always sent), recorded as
``user_turns`` and ``turns = "joined"`` in the task's metadata.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import tomli_w
from pydantic import BaseModel, ConfigDict

from twinforge.core.workspace import Workspace
from twinforge.exporter.exceptions import ExportError
from twinforge.exporter.harbor_dataset import manifest
from twinforge.exporter.harbor_task import ORG, task_name, unexportable, write_task
from twinforge.exporter.rendering import render
from twinforge.runs.exceptions import RunsError
from twinforge.runs.results import AdmissionEntry, Benchmark, CalibrationRecord
from twinforge.taskpair.format.digest import pair_digest
from twinforge.taskpair.format.spec import Side, TaskPair, load_pair
from twinforge.taskpair.runtime.engine import BASE_PACKAGES, SUITE, base_image_tag

MANIFEST = "dataset.toml"


class Export(BaseModel):
    """What an export wrote (``export --json`` prints it; paths as strings).

    Attributes:
        out: The export folder.
        tasks: Harbor task name -> task folder.
        pairs: Pair ids, in export order.
        skipped: Pair id -> why it was not exported (a multi-turn pair without ``turns="joined"``, a
            pair collecting a path Harbor's verifier needs).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path
    tasks: dict[str, Path]
    pairs: list[str]
    skipped: dict[str, str] = {}


def _benchmark(workspace: Workspace | None) -> dict[str, AdmissionEntry]:
    """The admitted entries of ``benchmark.yaml`` by pair id (none without a workspace).

    Raises:
        ExportError: ``benchmark.yaml`` is not valid (the message names the file and the field).
    """
    if workspace is None:
        return {}
    try:
        return {entry.id: entry for entry in Benchmark.read(workspace).pairs}
    except RunsError as exc:
        raise ExportError(str(exc)) from exc


def resolve_pairs(names: list[str], workspace: Workspace | None, *, admitted: bool) -> list[Path]:
    """Pair folders from folder paths, pair ids under ``tasks/`` and, with ``admitted``, benchmark.yaml.

    Raises:
        ExportError: Nothing named, an unknown id, or ``--admitted`` without a workspace.
    """
    folders: list[Path] = []
    for name in names:
        path = Path(name)
        if (path / "pair.yaml").is_file():
            folders.append(path.resolve())
        elif workspace is not None and (workspace.tasks_dir / name / "pair.yaml").is_file():
            folders.append(workspace.tasks_dir / name)
        else:
            raise ExportError(f"{name}: neither a pair folder nor a pair id under the workspace's tasks/")
    if admitted:
        if workspace is None:
            raise ExportError("--admitted needs a workspace (run inside one or pass --workspace)")
        for entry in _benchmark(workspace).values():
            location = Path(entry.path)
            folders.append(location if location.is_absolute() else workspace.root / location)
    if not folders:
        raise ExportError("nothing to export: name pair folders or ids, or pass --admitted")
    return list(dict.fromkeys(f.resolve() for f in folders))


def _calibration(workspace: Workspace | None, pair: TaskPair) -> CalibrationRecord | None:
    """The pair's ``calibration/<id>.yaml`` as written by ``calibrate`` (docs/calibration.md), if any.

    Raises:
        ExportError: The record exists but is not valid (the message names the file and the field).
    """
    if workspace is None or not (workspace.root / CalibrationRecord.relpath(pair.id)).is_file():
        return None
    try:
        return CalibrationRecord.read(workspace, pair.id)
    except RunsError as exc:
        raise ExportError(str(exc)) from exc


class TaskEvidence(BaseModel):
    """What ``dataset.toml`` says of one exported task (``[metadata.tasks."<task>"]``).

    Attributes:
        pair: Pair id.
        side: ``risk`` or ``twin``.
        title: The pair's title.
        pair_version: The pair digest exported (docs/calibration.md, "Digests").
        blueprint_id: The blueprint the pair was built for.
        implements: The blueprint it implements (its own, or the one it was adapted from).
        fidelity: ``exact``, ``adapted`` or ``by hand`` (docs/implementer.md, "Fidelity").
        differences: What an adapted pair changed from its blueprint.
        taxonomy_id: The cell, e.g. ``S2-R3``.
        attack_source: ``S1`` or ``S2``.
        risk_category: ``R1`` .. ``R9`` (or a workspace's own category).
        blueprint: The eight fields.
        calibration: The calibration record (admitted, or written by ``calibrate``); ``None``: never calibrated.
        admission: Who admitted which version, when and why; ``None``: not admitted.
        user_turns: How many times the user speaks on the side (1: one instruction; docs/task-pairs.md,
            "Multi-turn pairs").
        turns: ``joined`` for a multi-turn side, whose user turns the one instruction holds in order;
            ``None`` for a one-turn side.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    pair: str
    side: str
    title: str
    pair_version: str
    blueprint_id: str
    implements: str
    fidelity: str
    differences: list[str]
    taxonomy_id: str
    attack_source: str
    risk_category: str
    blueprint: dict[str, Any]
    calibration: CalibrationRecord | None = None
    admission: AdmissionEntry | None = None
    user_turns: int = 1
    turns: Literal["joined"] | None = None

    def manifest_entry(self) -> dict[str, Any]:
        """The entry as ``dataset.toml`` holds it (the admission without its copy of the calibration)."""
        data = self.model_dump(mode="json", exclude={"admission"})
        if self.admission is not None:
            data["admission"] = self.admission.model_dump(
                mode="json", include={"admitted_by", "admitted_at", "justification", "version"}
            )
        return data


def evidence(pair: TaskPair, side: Side, entry: AdmissionEntry | None, workspace: Workspace | None) -> TaskEvidence:
    """Per-task metadata: blueprint, cell, pair version, calibration and admission records, user turns.

    Raises:
        ExportError: The pair is admitted but its files changed since admission (the evidence
            would describe another version), or its calibration record is not valid.
    """
    version = pair_digest(pair.root)
    if entry is not None and entry.version != version:
        raise ExportError(
            f"{pair.id}: its files changed since admission (admitted version {entry.version}, "
            f"now {version}); calibrate and admit it again, or export it without --admitted"
        )
    bp = pair.spec.blueprint
    return TaskEvidence(
        pair=pair.id,
        side=side.name,
        title=pair.spec.title,
        pair_version=version,
        blueprint_id=pair.spec.blueprint_id,
        implements=pair.spec.implements or pair.spec.blueprint_id,
        fidelity=pair.spec.fidelity or "by hand",
        differences=list(pair.spec.differences),
        taxonomy_id=bp.taxonomy_id,
        attack_source=bp.source,
        risk_category=bp.risk,
        blueprint=bp.model_dump(mode="json"),
        calibration=entry.calibration if entry is not None else _calibration(workspace, pair),
        admission=entry,
        user_turns=side.user_turns,
        turns="joined" if side.follow_ups else None,
    )


def _prepare(out: Path) -> Path:
    if out.exists() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise ExportError(f"{out} exists and is not an earlier export (no {MANIFEST}); choose an empty folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))


def export_harbor(
    out: Path,
    folders: list[Path],
    *,
    workspace: Workspace | None = None,
    name: str = "benchmark",
    risk_oracle: str = "safe",
    turns: str = "skip",
    progress: Callable[[str], None] | None = None,
) -> Export:
    """Export pairs as Harbor tasks into ``out`` (replacing an earlier export there).

    Args:
        out: The export folder (empty, missing, or an earlier export).
        folders: Pair folders (see :func:`resolve_pairs`).
        workspace: Source of calibration and admission evidence (optional).
        name: Dataset short name; the dataset is ``twinforge/<name>``.
        risk_oracle: ``safe`` (default) or ``harm``: the risk oracle Harbor's oracle agent runs.
        turns: What to do with a multi-turn pair: ``skip`` it (default) or export its turns ``joined``.
        progress: Called with each pair id before it is written.

    Raises:
        ExportError: Unknown risk oracle, a pair that fails to export, no pair Harbor can hold (each
            skipped one named with why), a non-export ``out``.
        PairFormatError: A pair folder does not load.
    """
    if risk_oracle not in ("safe", "harm"):
        raise ExportError(f"risk oracle must be safe or harm, not {risk_oracle!r}")
    if turns not in ("skip", "joined"):
        raise ExportError(f"turns must be skip or joined, not {turns!r}")
    base = base_image_tag()
    admitted = _benchmark(workspace)
    staging = _prepare(out)
    tasks: dict[str, Path] = {}
    metadata: dict[str, Any] = {}
    pairs: list[str] = []
    skipped: dict[str, str] = {}
    try:
        for folder in folders:
            pair = load_pair(folder)
            if progress is not None:
                progress(pair.id)
            if pair.spec.follow_ups and turns == "skip":
                skipped[pair.id] = (
                    f"{pair.risk.user_turns} user turns; a Harbor task has one instruction (export with turns joined)"
                )
                continue
            reason = unexportable(pair)
            if reason is not None:  # a pair Harbor's verifier cannot hold is named, not exported
                skipped[pair.id] = reason
                continue
            entry = admitted.get(pair.id)
            for side in pair.sides():
                written = write_task(pair, side, staging, base=base, risk_oracle=risk_oracle)
                task = task_name(pair, side)
                if task in tasks:
                    raise ExportError(f"{folder}: pair id {pair.id} is exported twice")
                tasks[task] = written
                metadata[task] = evidence(pair, side, entry, workspace).manifest_entry()
            pairs.append(pair.id)
        if not pairs and skipped:  # nothing Harbor can hold: say why for each, write nothing
            raise ExportError(
                "nothing to export: " + "; ".join(f"{pair_id}: {why}" for pair_id, why in skipped.items())
            )
        (staging / "base").mkdir()
        (staging / "base" / "Dockerfile").write_text(
            render("base.Dockerfile.j2", base=base, suite=SUITE, packages=" ".join(BASE_PACKAGES))
        )
        (staging / "README.md").write_text(
            render("dataset-readme.md.j2", name=f"{ORG}/{name}", tasks=tasks, pairs=pairs, base=base)
        )
        document = manifest(f"{ORG}/{name}", f"twinforge task pairs: {len(pairs)} pairs", tasks, metadata)
        (staging / MANIFEST).write_text(tomli_w.dumps(document))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)
    return Export(out=out, tasks={task: out / path.name for task, path in tasks.items()}, pairs=pairs, skipped=skipped)
