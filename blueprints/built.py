"""What each pair in ``tasks/`` says it is: the blueprint it implements, its fidelity, what built it.

docs/implementer.md, "Fidelity: a pair says what it is". ``status``, the review queue's detail pane
and the report show these; this layer reads ``pair.yaml`` and ``benchmark.yaml`` as plain YAML (it
does not load pairs), and an unreadable file is skipped (``validate`` names it).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from twinforge.core.inputfiles import InputFileError, load_yaml
from twinforge.core.workspace import Workspace

BY_HAND = "by hand"
"""The fidelity of a pair whose pair.yaml says none (written by hand, e.g. the reference pairs)."""


class BuiltPair(BaseModel):
    """One pair as its pair.yaml describes it.

    Attributes:
        pair: The pair's folder name under ``tasks/``.
        implements: The blueprint id it implements (``implements``, else ``blueprint_id``).
        fidelity: ``exact``, ``adapted`` or ``by hand``.
        differences: For ``adapted``: what the pair builds differently, one sentence per field.
        built_by: ``archetype:<name>`` (without its version), ``agent``, ``scaffold``, ``hand`` ...
        admitted: The pair is in ``benchmark.yaml``.
    """

    pair: str
    implements: str
    fidelity: str = BY_HAND
    differences: list[str] = Field(default_factory=list)
    built_by: str = "hand"
    admitted: bool = False


def _admitted(workspace: Workspace) -> set[str]:
    try:
        bench = load_yaml(workspace.root / "benchmark.yaml")
    except InputFileError:
        return set()
    entries = bench.get("pairs") if isinstance(bench, dict) else None
    return {str(e.get("pair")) for e in entries or [] if isinstance(e, dict)}


def built_pairs(workspace: Workspace) -> list[BuiltPair]:
    """Every readable ``tasks/*/pair.yaml`` as a :class:`BuiltPair`, by folder name."""
    admitted = _admitted(workspace)
    out: list[BuiltPair] = []
    for path in sorted(workspace.tasks_dir.glob("*/pair.yaml")):
        try:
            data = load_yaml(path)
        except InputFileError:
            continue
        if not isinstance(data, dict):
            continue
        raw = data.get("provenance")
        provenance: dict[str, object] = raw if isinstance(raw, dict) else {}
        kind = str(provenance.get("kind", "hand"))
        by = str(provenance.get("archetype", "archetype")).split("@")[0] if kind == "archetype" else kind
        differences = data.get("differences")
        out.append(
            BuiltPair(
                pair=path.parent.name,
                implements=str(data.get("implements") or data.get("blueprint_id") or ""),
                fidelity=str(data.get("fidelity") or BY_HAND),
                differences=[str(d) for d in differences] if isinstance(differences, list) else [],
                built_by=by,
                admitted=path.parent.name in admitted,
            )
        )
    return out


def built_pair_index(workspace: Workspace) -> dict[str, BuiltPair]:
    """``{blueprint id: its pair}`` (the first pair by folder name when several name one blueprint)."""
    found: dict[str, BuiltPair] = {}
    for built in built_pairs(workspace):
        found.setdefault(built.implements, built)
    return found
