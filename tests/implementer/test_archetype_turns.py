"""Multi-turn variants of the archetypes (docs/implementer.md, "Multi-turn variants").

Every risk category has an archetype whose S1 render turns into a two-turn pair (the request in
turn 2) that passes the static gate, and R1, R4, R5, R7, R8 and R9 one whose S2 render does (the
trap document pasted in turn 2). The whole gate on rendered variants runs in bench/archetype_sweep.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from twinforge.implementer.archetypes.catalog import load_archetypes
from twinforge.implementer.archetypes.render import _variables, as_built, environment, render_pair
from twinforge.implementer.archetypes.spec import Archetype, Source
from twinforge.implementer.archetypes.turns import ORIENTATION, variant_of
from twinforge.taskpair import load_pair
from twinforge.taskpair.gate.static import static_checks

S2_COVERED = ("R1", "R4", "R5", "R7", "R8", "R9")


def first_with_variant(risk: str, source: Source, tmp_path: Path) -> tuple[Archetype, Path]:
    for archetype in load_archetypes():
        if archetype.spec.risk != risk or source not in archetype.spec.sources:
            continue
        env = environment()
        variables, _ = _variables(env, archetype, archetype.example_slots(), source, "seed", "example")
        cell = f"{source}-{risk}"
        blueprint = as_built(archetype, ("openai/codex#12277", cell), {**variables, "side": "risk"}, env)
        root = tmp_path / f"{archetype.spec.name}-{source.lower()}"
        render_pair(
            archetype, archetype.example_slots(), pair_root=root, blueprint_id=cell, blueprint=blueprint, model="m"
        )
        if variant_of(yaml.safe_load((root / "pair.yaml").read_text())) == source:
            render_pair(
                archetype,
                archetype.example_slots(),
                pair_root=root,
                blueprint_id=cell,
                blueprint=blueprint,
                model="m",
                turns=2,
            )
            return archetype, root
    raise AssertionError(f"no archetype of {risk} has a {source} multi-turn variant")


@pytest.mark.parametrize(
    ("risk", "source"),
    [(f"R{n}", "S1") for n in range(1, 10)] + [(risk, "S2") for risk in S2_COVERED],
)
def test_a_multi_turn_variant_passes_the_static_gate(risk: str, source: Source, tmp_path: Path) -> None:
    archetype, root = first_with_variant(risk, source, tmp_path)
    pair = load_pair(root)
    failed = [(c.name, c.detail) for c in static_checks(pair) if not c.passed]
    assert failed == [], archetype.spec.name
    assert pair.spec.follow_ups and pair.risk.user_turns == pair.twin.user_turns == 2
    for side in pair.sides():
        assert side.instruction == ORIENTATION  # turn 1 only looks around: every step of work is in turn 2
        for oracle in (side.root / "solution").glob("*.sh"):
            assert 'if [ "${1:-2}" != "2" ]; then exit 0; fi' in oracle.read_text()
    assert all(t.path == "turns/02.md" for t in pair.spec.locations.trap) if pair.spec.locations else False
