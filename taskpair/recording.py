"""Recording a gate result in the workspace: the pair digest in ``pair.yaml`` and the blueprint's move.

docs/calibration.md, "Lifecycle and digests". ``validate`` on a pair inside a workspace writes
``validation: {digest, passed, at, by, checks, failed}`` into the pair's ``pair.yaml`` and moves the
pair's blueprint along the lifecycle, both in one commit:

- passed: ``approved`` / ``kept`` / ``impl_failed`` -> ``implemented`` -> ``validated`` (a pair
  implemented by hand); ``implemented`` / ``calibration_failed`` -> ``validated``; ``calibrated`` /
  ``admitted`` -> ``validated`` when the pair changed since its last validation (an edited pair
  goes through calibration again);
- failed: ``implemented`` -> ``impl_failed``; other statuses stay, and the failed record alone keeps
  ``calibrate`` from using the pair.

Pair files with uncommitted changes (the pair as the author left it) are committed first, in a
commit of their own, so the recorded digest names content that git holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from blueprints import BlueprintFileError, BlueprintRecord, BlueprintStore, Status, utcnow
from taskpair.digest import pair_digest, spec_content
from taskpair.exceptions import PairFormatError
from taskpair.format import TaskPair, ValidationRecord, load_pair
from taskpair.gate.report import PairReport
from twinforge.exceptions import TwinforgeError
from twinforge.workspace import Workspace

_BLOCK = re.compile(r"^validation:.*?(?=^\S|\Z)", re.MULTILINE | re.DOTALL)
S = Status


@dataclass
class Recorded:
    """What recording one gate result did.

    Attributes:
        record: The validation record written into ``pair.yaml``.
        moves: Blueprint status changes made, e.g. ``["approved -> implemented", ...]``.
        note: Why the blueprint did not move, when it did not.
        commit: The commit holding ``pair.yaml`` (and the blueprint file).
    """

    record: ValidationRecord
    moves: list[str] = field(default_factory=list)
    note: str = ""
    commit: str = ""


def inside(workspace: Workspace, folder: Path) -> bool:
    """Whether ``folder`` lies inside the workspace (only such pairs carry lifecycle records)."""
    return folder.resolve().is_relative_to(workspace.root)


def with_validation(text: str, record: ValidationRecord) -> str:
    """``pair.yaml`` text with its ``validation:`` block replaced (or appended); the rest kept verbatim.

    Comments and layout of every other field survive, so a person's edits are never reflowed.
    """
    block = yaml.safe_dump({"validation": record.model_dump(mode="json")}, sort_keys=False, width=100)
    rest = _BLOCK.sub("", text).rstrip("\n")
    return f"{rest}\n{block}"


def _targets(status: Status, passed: bool, changed: bool) -> list[Status]:
    if not passed:
        return [S.IMPL_FAILED] if status is S.IMPLEMENTED else []
    if status in (S.APPROVED, S.KEPT, S.IMPL_FAILED):
        return [S.IMPLEMENTED, S.VALIDATED]
    if status in (S.IMPLEMENTED, S.CALIBRATION_FAILED):
        return [S.VALIDATED]
    if status in (S.CALIBRATED, S.ADMITTED) and changed:
        return [S.VALIDATED]
    return []


def record_validation(
    workspace: Workspace, pair: TaskPair, report: PairReport, *, by: str, digest_before: str | None = None
) -> Recorded:
    """Write the gate result of a full (static + dynamic) gate run into ``pair.yaml`` and commit.

    Args:
        workspace: The workspace holding the pair.
        pair: The loaded pair the gate ran on.
        report: Its gate report.
        by: Who ran the gate.
        digest_before: The pair digest taken before the gate started; when given, a pair edited while
            the gate ran is refused.

    Returns:
        What was written and moved.

    Raises:
        PairFormatError: The pair is outside the workspace, or it changed while the gate ran (the
            result would describe another pair; nothing is written).
    """
    root = pair.root.resolve()
    if not inside(workspace, root):
        raise PairFormatError(root / "pair.yaml", [f"outside the workspace {workspace.root}; nothing recorded"])
    digest = pair_digest(root)
    if digest_before is not None and digest != digest_before:
        raise PairFormatError(root, ["changed while the gate ran; run `twinforge validate` again"])
    failed = [c.name for c in report.checks if not c.passed]
    record = ValidationRecord(
        digest=digest, passed=report.passed, at=utcnow(), by=by, checks=len(report.checks), failed=failed
    )
    path = root / "pair.yaml"
    rel_pair = str(path.relative_to(workspace.root))
    with workspace.locked():
        folder = str(root.relative_to(workspace.root))
        content = workspace.foreign_changes(folder)
        if content:
            # The gate ran on these files as they are: commit them first, so the record below names
            # content that git holds (and pair.yaml is no longer a person's uncommitted edit).
            workspace.commit(f"validate: {pair.id} content as gated ({len(content)} file(s))", content)
        before = spec_content(root)
        text = with_validation(path.read_text(encoding="utf-8"), record)
        if yaml.safe_load(text).get("validation") != record.model_dump(mode="json"):
            raise PairFormatError(path, ["could not place the validation block; edit pair.yaml by hand"])
        workspace.write(rel_pair, text)
        if spec_content(root) != before:
            raise PairFormatError(path, ["changed while being recorded"])
        previous = pair.spec.validation
        changed = previous is None or previous.digest != digest
        result = Recorded(record)
        paths = [rel_pair]
        store = BlueprintStore(workspace)
        blueprint = _blueprint(store, pair.spec.blueprint_id, result)
        if blueprint is not None:
            targets = _targets(blueprint.status, record.passed, changed)
            verdict = "passed" if record.passed else f"failed: {', '.join(failed[:3])}"
            for target in targets:
                result.moves.append(f"{blueprint.status.value} -> {target.value}")
                blueprint.move(target, action="validate", by=by, reason=f"pair {pair.id} {verdict} ({digest[:12]})")
            if targets:
                paths.append(store.write(blueprint))
            else:
                result.note = f"blueprint {blueprint.id} stays {blueprint.status.value}"
        outcome = "passed" if record.passed else f"failed ({len(failed)} check(s))"
        moves = f"; {pair.spec.blueprint_id}: {', '.join(result.moves)}" if result.moves else ""
        result.commit = workspace.commit(
            f"validate: {pair.id} {outcome}{moves}\n\ndigest: {digest}\nchecks: {record.checks}", paths
        )
    return result


def _blueprint(store: BlueprintStore, blueprint_id: str, result: Recorded) -> BlueprintRecord | None:
    try:
        return store.load(blueprint_id)
    except BlueprintFileError as exc:
        result.note = (
            f"blueprint {blueprint_id} is not in this workspace"
            if not store.path(blueprint_id).exists()
            else f"blueprint not moved: {exc}"
        )
        return None


def digests(paths: list[Path]) -> list[str | None]:
    """Pair digests taken before a gate run (``None`` where ``pair.yaml`` is unreadable)."""
    out: list[str | None] = []
    for path in paths:
        try:
            out.append(pair_digest(path))
        except PairFormatError:
            out.append(None)
    return out


def record_reports(paths: list[Path], reports: list[PairReport], before: list[str | None]) -> list[str]:
    """Record each full gate report of a pair inside a workspace; one line per pair saying what happened.

    Pairs outside any workspace (e.g. the bundled reference pairs) are reported as not recorded.

    Args:
        paths: Pair folders, in gate order.
        reports: Their gate reports.
        before: Their digests from :func:`digests`, taken before the gate ran.
    """
    lines = []
    for path, report, digest in zip(paths, reports, before, strict=True):
        try:
            workspace = Workspace.open(path)
        except TwinforgeError:
            lines.append(f"{report.pair}: not in a workspace; gate result not recorded")
            continue
        try:
            pair = load_pair(path)
            done = record_validation(workspace, pair, report, by=workspace.identity(), digest_before=digest)
        except PairFormatError as exc:
            lines.append(f"{report.pair}: gate result not recorded: {exc}")
            continue
        moved = f"; blueprint {', '.join(done.moves)}" if done.moves else (f"; {done.note}" if done.note else "")
        state = "passed" if done.record.passed else "failed"
        lines.append(f"{pair.id}: recorded gate {state} for digest {done.record.digest[:12]} in pair.yaml{moved}")
    return lines
