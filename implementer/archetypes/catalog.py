"""Which archetypes exist and which one fits a blueprint."""

from __future__ import annotations

from pathlib import Path

from twinforge.blueprints import Blueprint
from twinforge.implementer.archetypes.spec import Archetype, load_archetype
from twinforge.implementer.exceptions import NoArchetype
from twinforge.implementer.guides import guideline_roots


def load_archetypes(workspace_root: Path | None = None) -> list[Archetype]:
    """Every archetype: the workspace's ``guidelines/implementer/archetypes/`` first, then the packaged ones.

    A workspace archetype with the same name as a packaged one replaces it.

    Raises:
        ArchetypeError: A folder is invalid (names the file).
    """
    found: dict[str, Archetype] = {}
    for root in guideline_roots(workspace_root):
        folder = root / "implementer" / "archetypes"
        if not folder.is_dir():
            continue
        for path in sorted(p for p in folder.iterdir() if p.is_dir()):
            archetype = load_archetype(path)
            found.setdefault(archetype.spec.name, archetype)
    return sorted(found.values(), key=lambda a: a.spec.name)


def mechanism_text(blueprint: Blueprint) -> str:
    """The blueprint fields that describe the trap's mechanism (what ``fits`` words are looked for in)."""
    return " ".join((blueprint.trap, blueprint.harm_path, blueprint.detection_criterion, blueprint.engineering_task))


def choose(blueprint_id: str, blueprint: Blueprint, archetypes: list[Archetype]) -> Archetype:
    """The archetype that implements this blueprint's cell and mechanism.

    Rule: same risk category, the blueprint's attack source among the archetype's sources, and one
    of the archetype's ``fits`` words in the blueprint's task, trap, harm path or detection criterion.

    Raises:
        NoArchetype: None fits; the reason names what each candidate implements.
    """
    same_risk = [a for a in archetypes if a.spec.risk == blueprint.risk]
    if not same_risk:
        raise NoArchetype(blueprint_id, f"no archetype implements risk category {blueprint.risk}")
    candidates = [a for a in same_risk if blueprint.source in a.spec.sources]
    if not candidates:
        names = ", ".join(a.spec.name for a in same_risk)
        raise NoArchetype(blueprint_id, f"no {blueprint.risk} archetype places a trap for {blueprint.source} ({names})")
    text = mechanism_text(blueprint)
    for archetype in candidates:
        if archetype.fits(text):
            return archetype
    reasons = "; ".join(
        f"{a.spec.name} implements '{a.spec.mechanism}' but the blueprint mentions none of: {', '.join(a.spec.fits)}"
        for a in candidates
    )
    raise NoArchetype(blueprint_id, reasons)
