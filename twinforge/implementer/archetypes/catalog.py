"""Which archetypes exist and which one fits a blueprint."""

from __future__ import annotations

from pathlib import Path

from twinforge.blueprints import Blueprint, blueprint_actions, load_scenarios, trap_placement
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


def misfit(blueprint: Blueprint, archetype: Archetype) -> str | None:
    """Why ``archetype`` does not build this blueprint's mechanism, or ``None`` when it fits.

    Rule (docs/implementer.md, "Fit by mechanism"): same risk category; the blueprint's source among
    the archetype's; its harm path shows one of the archetype's harmful actions (read like the
    Stage I checks read it, ``blueprint_actions``); its trap is placed where the archetype places
    it for that source (``trap_placement``).
    """
    spec = archetype.spec
    if spec.risk != blueprint.risk:
        return f"{spec.name} implements {spec.risk}, not {blueprint.risk}"
    if blueprint.source not in spec.sources:
        return f"{spec.name} places no trap for {blueprint.source}"
    actions = sorted(blueprint_actions(blueprint))
    if not set(actions) & set(spec.declares.actions):
        shown = ", ".join(actions) or "no harmful action the checks know"
        return f"{spec.name} builds {', '.join(spec.declares.actions)}; the harm path shows {shown}"
    placement = trap_placement(blueprint)
    if placement not in spec.declares.placements.get(blueprint.source, []):
        where = ", ".join(spec.declares.placements.get(blueprint.source, []))
        found = placement or "no place the checks know"
        return f"{spec.name} places the trap in {where}; the blueprint's trap is in {found}"
    return None


def specificity(blueprint: Blueprint, archetype: Archetype) -> tuple[int, int, int]:
    """How closely a fitting archetype builds the blueprint's mechanism; lower sorts first.

    ``(-actions matched, categories of the most specific matched action, where the harm path first
    shows a matched action)``: an archetype that builds more of the harm path's actions wins, then
    one whose matched action belongs to fewer risk categories (``run-downloaded-binary``, R1 only,
    before ``run-untrusted-code``, R1 and R5; guidelines/scenarios.yaml), then the one whose action
    the harm path names first, its main act ("Mark the failing test as skipped ... and report the
    suite as green": skipping, not the report) (docs/implementer.md, "Fit by mechanism").
    """
    vocabulary = load_scenarios()
    shown = blueprint_actions(blueprint, vocabulary)
    matched = set(shown) & set(archetype.spec.declares.actions)
    breadth = min((len(t.risks) for t in vocabulary.harm_actions if t.id in matched), default=0)
    text = blueprint.harm_path.lower()
    first = min((_position(text, shown[action]) for action in matched), default=len(text))
    return (-len(matched), breadth, first)


def _position(text: str, evidence: str) -> int:
    """Where ``evidence`` (matched words, or ``verb ... object`` of a frame) starts in ``text``."""
    where = text.find(evidence.split(" ... ")[0].lower())
    return where if where >= 0 else len(text)


def choose(blueprint_id: str, blueprint: Blueprint, archetypes: list[Archetype]) -> Archetype:
    """The archetype that builds this blueprint's mechanism most specifically (:func:`specificity`, then name).

    Raises:
        NoArchetype: None fits; the reason says, for each archetype of the category, what it builds
            and what the blueprint shows instead.
    """
    same_risk = [a for a in archetypes if a.spec.risk == blueprint.risk]
    if not same_risk:
        raise NoArchetype(blueprint_id, f"no archetype implements risk category {blueprint.risk}")
    reasons = []
    fitting = []
    for archetype in same_risk:
        why = misfit(blueprint, archetype)
        if why is None:
            fitting.append(archetype)
        else:
            reasons.append(why)
    if not fitting:
        raise NoArchetype(blueprint_id, "; ".join(reasons))
    return min(fitting, key=lambda a: (specificity(blueprint, a), a.spec.name))
