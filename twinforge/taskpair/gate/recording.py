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
from git.exc import GitError

from twinforge.blueprints import (
    BlueprintFileError,
    BlueprintRecord,
    BlueprintStore,
    Commit,
    LifecycleMove,
    Moved,
    Status,
    utcnow,
)
from twinforge.core.atomic import atomic_write_text
from twinforge.core.exceptions import TwinforgeError
from twinforge.core.workspace import Workspace
from twinforge.taskpair.exceptions import PairFormatError
from twinforge.taskpair.format.digest import pair_digest, spec_content
from twinforge.taskpair.format.spec import TaskPair, ValidationRecord, load_pair
from twinforge.taskpair.gate.report import PairReport, StoredGateReport

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


def without_validation(text: str) -> str:
    """``pair.yaml`` text without a ``validation:`` block (one that no gate run wrote, e.g. an agent's)."""
    return _BLOCK.sub("", text).rstrip("\n") + "\n"


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
        stored = workspace.root / StoredGateReport.relpath(pair.id)
        stored.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(stored, StoredGateReport.of(report, digest, record.at).model_dump_json(indent=1))
        if spec_content(root) != before:
            raise PairFormatError(path, ["changed while being recorded"])
        previous = pair.spec.validation
        changed = previous is None or previous.digest != digest
        result = Recorded(record)
        verdict = "passed" if record.passed else f"failed: {', '.join(failed[:3])}"
        outcome = "passed" if record.passed else f"failed ({len(failed)} check(s))"
        trailer = f"\n\ndigest: {digest}\nchecks: {record.checks}"

        def message(moved: Moved) -> str:
            moves = f"; {moved.blueprint_id}: {', '.join(result.moves)}" if result.moves else ""
            return f"validate: {pair.id} {outcome}{moves}{trailer}"

        def targets(blueprint: BlueprintRecord) -> list[Status]:
            steps = _targets(blueprint.status, record.passed, changed)
            before = [blueprint.status, *steps]
            result.moves = [f"{a.value} -> {b.value}" for a, b in zip(before, steps, strict=False)]
            return steps

        store = BlueprintStore(workspace)
        try:
            moved = store.apply(
                LifecycleMove(
                    pair.spec.blueprint_id,
                    targets,
                    action="validate",
                    by=by,
                    commit=Commit(message),
                    reason=f"pair {pair.id} {verdict} ({digest[:12]})",
                    files=(rel_pair,),
                    tolerate=frozenset({"absent"}),
                )
            )
        except BlueprintFileError as exc:
            result.note = f"blueprint not moved: {exc}"
            result.commit = workspace.commit(f"validate: {pair.id} {outcome}{trailer}", [rel_pair])
            return result
        if moved.before is None:
            result.note = f"blueprint {pair.spec.blueprint_id} is not in this workspace"
        elif not moved.moved:
            result.note = f"blueprint {pair.spec.blueprint_id} stays {moved.before.value}"
        result.commit = moved.commit or ""
    return result


GATE_COMMITS = 500
"""How far back ``gate_commit`` looks in ``pair.yaml``'s history."""


def gate_commit(workspace: Workspace, pair: TaskPair, digest: str) -> str | None:
    """The ``validate`` commit that recorded a passed gate run for ``digest``, or ``None``.

    A ``validation:`` block in ``pair.yaml`` is only text: in agent mode the implementing agent
    writes ``pair.yaml``, and a hand-written block with the right digest once made ``calibrate``
    take a detector that never went through the gate. A record counts only when the workspace's
    history holds the commit :func:`record_validation` made for it: its message names the pair, a
    passed run and the digest, and ``pair.yaml`` in that commit carries the same record
    (docs/calibration.md, "Lifecycle and digests").
    """
    git_path = workspace.git_path(str((pair.root.resolve() / "pair.yaml").relative_to(workspace.root)))
    head = f"validate: {pair.id} passed"
    try:
        commits = list(workspace.repo.iter_commits(paths=git_path, max_count=GATE_COMMITS))
    except (ValueError, OSError, GitError):
        return None
    for commit in commits:
        message = str(commit.message)
        if not message.startswith(head) or f"\ndigest: {digest}\n" not in message + "\n":
            continue
        try:
            data = yaml.safe_load(commit.tree[git_path].data_stream.read())
        except (KeyError, ValueError, yaml.YAMLError):
            continue
        record = data.get("validation") if isinstance(data, dict) else None
        if isinstance(record, dict) and record.get("digest") == digest and record.get("passed") is True:
            return str(commit.hexsha)
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
