"""Which blueprints ``implement`` takes, and the pair id each one gets."""

from __future__ import annotations

from pathlib import Path

from twinforge.blueprints import BlueprintRecord, BlueprintStore, Status
from twinforge.core.inputfiles import InputFileError, load_yaml
from twinforge.implementer.exceptions import ImplementerError

READY = (Status.KEPT, Status.APPROVED)
"""Stage I retained it (review total >= 24) or a reviewer approved it (docs/design.md, "The pipeline")."""
RETRYABLE = (*READY, Status.IMPL_FAILED)
"""Named explicitly, a failed blueprint is tried again."""


def pair_id_for(blueprint_id: str) -> str:
    """The pair folder name of a blueprint: its id in lowercase (``S2-R3-7f3a9c2e`` -> ``s2-r3-7f3a9c2e``)."""
    return blueprint_id.lower()


def pairs_by_blueprint(tasks_dir: Path) -> dict[str, str]:
    """``{blueprint id: pair folder name}`` of every pair in ``tasks/`` (unreadable pair.yaml files are skipped)."""
    out: dict[str, str] = {}
    for path in sorted(tasks_dir.glob("*/pair.yaml")):
        try:
            data = load_yaml(path)
        except InputFileError:
            continue
        if isinstance(data, dict) and isinstance(data.get("blueprint_id"), str):
            out.setdefault(data["blueprint_id"], path.parent.name)
    return out


def select(
    store: BlueprintStore, ids: list[str] | None, ready: bool, committed: set[str], limit: int | None = None
) -> list[BlueprintRecord]:
    """The blueprints to implement: named ones first (in the given order), then ready ones, best review first.

    Args:
        store: The workspace's blueprints.
        ids: Explicit blueprint ids (kept, approved or impl_failed).
        ready: Take every kept or approved blueprint that has no pair yet.
        committed: Pair folder names tracked in the workspace's git (a pair there is finished).
        limit: At most this many (the demo's ``DEMO_IMPLEMENT`` cap).

    Raises:
        ImplementerError: Neither ids nor ``ready`` given, an id is unknown, or a named blueprint is
            not in a state Stage II takes (the message says which state it is in).
    """
    if not ids and not ready:
        raise ImplementerError("name blueprint ids or pass --ready (every kept or approved blueprint without a pair)")
    with_pair = {bp for bp, pair in pairs_by_blueprint(store.workspace.tasks_dir).items() if pair in committed}
    chosen: dict[str, BlueprintRecord] = {}
    for blueprint_id in ids or []:
        record = store.load(blueprint_id)
        if record.status not in RETRYABLE:
            allowed = ", ".join(s.value for s in RETRYABLE)
            raise ImplementerError(f"{blueprint_id} is {record.status.value}; implement takes {allowed}")
        if blueprint_id in with_pair:
            raise ImplementerError(f"{blueprint_id} already has a pair in tasks/")
        chosen[blueprint_id] = record
    if ready:
        waiting = [r for r in store.records() if r.status in READY and r.id not in with_pair]
        for record in sorted(waiting, key=lambda r: (-(r.review.total if r.review else 0), r.id)):
            chosen.setdefault(record.id, record)
    out = list(chosen.values())
    return out if limit is None else out[:limit]
