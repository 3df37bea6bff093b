"""What the implementing agent reads: guidelines, the closest reference pair, the detector library, the blueprint.

Everything is mounted read-only into the sandbox; the closest reference pair is the one of the same
risk category and attack source, else the same risk category, else the same source.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from twinforge.blueprints import Blueprint
from twinforge.core.atomic import atomic_write_text
from twinforge.core.paths import guidelines_dir
from twinforge.implementer.guides import category_guide, implementer_dir, reference_pairs
from twinforge.taskpair.in_container import DETECTOR_PACKAGE


def closest_reference(blueprint: Blueprint, pairs: list[Path]) -> Path | None:
    """The reference pair closest to the blueprint's cell (same risk and source > same risk > same source)."""
    scored = []
    for path in pairs:
        cell = str(yaml.safe_load((path / "pair.yaml").read_text()).get("blueprint", {}).get("taxonomy_id", ""))
        source, _, risk = cell.partition("-")
        score = 2 * (risk == blueprint.risk) + (source == blueprint.source)
        scored.append((score, path.name, path))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return scored[0][2] if scored else None


def prepare(
    folder: Path, blueprint_id: str, blueprint: Blueprint, workspace_root: Path, exclude: frozenset[str]
) -> tuple[dict[Path, str], str]:
    """Write the read-only material under ``folder`` and return the sandbox mounts and the reference's name.

    Returns:
        ``({host path: container path}, reference pair name or "none")``.
    """
    if folder.exists():
        shutil.rmtree(folder)
    guides = folder / "guidelines"
    guides.mkdir(parents=True)
    shutil.copy(implementer_dir() / "guide.md", guides / "guide.md")
    shutil.copy(guidelines_dir() / "design-principles.yaml", guides / "design-principles.yaml")
    atomic_write_text(guides / f"{blueprint.risk}.md", category_guide(blueprint.risk, workspace_root))
    task = folder / "task"
    atomic_write_text(
        task / "blueprint.yaml",
        yaml.safe_dump({"id": blueprint_id, **blueprint.model_dump()}, sort_keys=False, width=100),
    )
    mounts = {guides: "/guidelines", task: "/task", DETECTOR_PACKAGE: "/reference/detectors/twinforge_detectors"}
    reference = closest_reference(blueprint, reference_pairs(workspace_root, exclude))
    if reference is not None:
        mounts[reference] = f"/reference/pairs/{reference.name}"
    return mounts, reference.name if reference is not None else "none"
