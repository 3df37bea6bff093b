"""Render an archetype with filled slots into a task pair folder (docs/implementer.md, "Archetype mode").

Code, not the model, writes every file: the model's values only enter through the slot schema's
patterns. Canaries are synthetic and derived from the blueprint id (reproducible renders), wheels
for a package index are built here, detectors and oracles come from the archetype's templates.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import string
from pathlib import Path
from typing import Any

import yaml
from jinja2 import Environment, StrictUndefined, TemplateError
from pydantic import BaseModel, ValidationError
from rapidfuzz import fuzz

from twinforge.blueprints import Blueprint
from twinforge.core.atomic import atomic_write_text
from twinforge.core.llm import describe_validation_error
from twinforge.implementer.archetypes.package_index import release_digests, wheel_digests, write_index
from twinforge.implementer.archetypes.spec import AS_BUILT_FIELDS, Archetype, IndexSpec, Source
from twinforge.implementer.archetypes.turns import make_multi_turn
from twinforge.implementer.exceptions import ArchetypeError
from twinforge.taskpair.format.spec import SIDES, Locations

_ALNUM = string.ascii_letters + string.digits


def typo(name: str) -> str:
    """A look-alike of a package name: two adjacent letters swapped (``requests`` -> ``reqeusts``).

    The swap is at the first position from the middle whose letters differ, so the result always
    differs from ``name`` (names of one repeated letter are returned with a doubled last letter).
    """
    middle = max(1, len(name) // 2 - 1)
    for i in [*range(middle, len(name) - 1), *range(0, middle)]:
        if name[i] != name[i + 1]:
            return name[:i] + name[i + 1] + name[i] + name[i + 2 :]
    return name + name[-1]


def environment() -> Environment:
    """The jinja2 environment of archetype templates (``StrictUndefined``; filters for safe quoting)."""
    env = Environment(
        undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False, trim_blocks=True, lstrip_blocks=True
    )
    env.filters["shquote"] = shlex.quote
    env.filters["pystr"] = json.dumps
    env.filters["typo"] = typo
    return env


def canary_values(archetype: Archetype, seed: str) -> dict[str, str]:
    """The archetype's synthetic secrets for one blueprint: ``{alnum:N}`` becomes N characters derived from ``seed``."""
    out = {}
    for name, pattern in archetype.spec.canaries.items():
        digest = hashlib.sha256(f"{seed}:{archetype.spec.name}:{name}".encode()).digest() * 4
        chars = iter(_ALNUM[b % len(_ALNUM)] for b in digest)
        value, rest = "", pattern
        while "{alnum:" in rest:
            head, _, tail = rest.partition("{alnum:")
            count, _, rest = tail.partition("}")
            value += head + "".join(next(chars) for _ in range(int(count)))
        out[name] = value + rest
    return out


def _render_tree(env: Environment, data: Any, variables: dict[str, Any]) -> Any:
    if isinstance(data, str):
        return env.from_string(data).render(**variables)
    if isinstance(data, list):
        return [_render_tree(env, item, variables) for item in data]
    if isinstance(data, dict):
        return {key: _render_tree(env, value, variables) for key, value in data.items()}
    return data


def _side_files(archetype: Archetype, side: str) -> list[tuple[Path, Path]]:
    """``(template file, path relative to the side folder)`` for one side: ``both/`` then ``<side>/``."""
    out = []
    for part in ("both", side):
        folder = archetype.root / "files" / part
        if folder.is_dir():
            out += [(p, p.relative_to(folder)) for p in sorted(folder.rglob("*")) if p.is_file()]
    return out


def _render_side(env: Environment, archetype: Archetype, root: Path, variables: dict[str, Any]) -> None:
    for template, rel in _side_files(archetype, str(variables["side"])):
        try:
            target = Path(env.from_string(str(rel)).render(**variables))
            if template.suffix == ".j2":
                text = env.from_string(template.read_text(encoding="utf-8")).render(**variables)
                if text.strip():
                    atomic_write_text(root / target.with_suffix(""), text)
            else:
                (root / target).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(template, root / target)
        except TemplateError as exc:
            raise ArchetypeError(template, [f"does not render: {exc}"]) from exc


SAME_FIELD = 90
"""rapidfuzz token-set ratio at or above which a built field says what the blueprint's says (0-100)."""


def _variables(
    env: Environment, archetype: Archetype, slots: BaseModel, source: Source, seed: str, pair_id: str
) -> tuple[dict[str, Any], list[IndexSpec]]:
    """The template variables of both sides but ``side``, and the archetype's package indexes rendered."""
    base: dict[str, Any] = {
        **slots.model_dump(),
        "source": source,
        "canaries": canary_values(archetype, seed),
        "pair_id": pair_id,
    }
    indexes = [IndexSpec.model_validate(_render_tree(env, i.model_dump(), base)) for i in archetype.spec.package_index]
    base["wheels"] = wheel_digests(indexes)
    base["releases"] = release_digests(indexes)
    return base, indexes


def as_built(
    archetype: Archetype, grounding: tuple[str, str], variables: dict[str, Any], env: Environment
) -> Blueprint:
    """The pair's eight fields as built: the archetype's ``as_built`` templates rendered with the slots.

    ``grounding`` is ``(source_reference, taxonomy_id)``: the implemented blueprint's.

    Raises:
        ArchetypeError: A template does not render, or the result is not a valid blueprint.
    """
    source = str(variables["source"])
    templates = {**archetype.spec.as_built.get("both", {}), **archetype.spec.as_built.get(source, {})}
    try:
        fields = {name: " ".join(env.from_string(text).render(**variables).split()) for name, text in templates.items()}
        return Blueprint.model_validate({**fields, "source_reference": grounding[0], "taxonomy_id": grounding[1]})
    except (TemplateError, ValidationError) as exc:
        raise ArchetypeError(archetype.root / "archetype.yaml", [f"as_built does not render: {exc}"]) from exc


def own_blueprint(archetype: Archetype, source: Source) -> Blueprint:
    """The blueprint of an archetype derived from no blueprint (``derived_from: new``): what it builds.

    Its ``as_built`` fields rendered with every slot's example for ``source``, grounded in the
    archetype's ``source_reference``; the tests and the sweep render and gate it like a derived one.

    Raises:
        ArchetypeError: The archetype is derived from a blueprint, or a template does not render.
    """
    if archetype.spec.source_reference is None:
        raise ArchetypeError(archetype.root / "archetype.yaml", ["derived_from names a blueprint; read that one"])
    env = environment()
    seed = f"{source}-{archetype.spec.risk}-example"
    variables, _ = _variables(env, archetype, archetype.example_slots(), source, seed, "example")
    grounding = (archetype.spec.source_reference, f"{source}-{archetype.spec.risk}")
    return as_built(archetype, grounding, {**variables, "side": "risk"}, env)


def compare(blueprint: Blueprint, built: Blueprint) -> tuple[str, list[str]]:
    """How faithfully ``built`` implements ``blueprint``.

    Returns:
        ``("exact", [])`` when every text field of ``built`` says what the blueprint's says (token-set
        ratio >= :data:`SAME_FIELD`), else ``("adapted", differences)``: one sentence per field that
        differs, quoting both.
    """
    differences = []
    for name in AS_BUILT_FIELDS:
        mine, theirs = str(getattr(built, name)), str(getattr(blueprint, name))
        if fuzz.token_set_ratio(mine.lower(), theirs.lower()) < SAME_FIELD:
            label = name.replace("_", " ")
            differences.append(f'{label}: the pair builds "{mine}" where the blueprint says "{theirs}"')
    return ("adapted" if differences else "exact"), differences


def render_pair(
    archetype: Archetype,
    slots: BaseModel,
    *,
    pair_root: Path,
    blueprint_id: str,
    blueprint: Blueprint,
    model: str,
    turns: int = 1,
) -> Path:
    """Write the task pair for ``blueprint`` at ``pair_root`` (replaced if it exists).

    Template variables: every slot, ``side`` (``risk``/``twin``), ``source`` (``S1``/``S2``),
    ``canaries`` (name -> value), ``pair_id``, ``wheels`` (package name -> version and the sha256 of
    its module and METADATA), ``releases`` (package name -> version -> the same). A ``.j2`` file is
    rendered and loses the suffix (one that renders to whitespace only is left out); other files are
    copied as they are; path parts may hold ``{{ slot }}``; a file starting with ``#!`` is made
    executable (0755), the others 0644.

    Args:
        archetype: The archetype.
        slots: Its filled slot model.
        pair_root: The pair folder (its name is the pair id).
        blueprint_id: Recorded in pair.yaml (``blueprint_id`` and ``implements``).
        blueprint: The blueprint implemented; pair.yaml carries the pair as built (the archetype's
            ``as_built`` fields) with its fidelity to this blueprint.
        model: Who filled the slots (``provider:model``), recorded in the provenance.
        turns: User turns of the blueprint; 2 builds the archetype's multi-turn variant
            (:func:`twinforge.implementer.archetypes.turns.make_multi_turn`).

    Returns:
        ``pair_root``.

    Raises:
        ArchetypeError: A template fails to render, or the rendered locations do not validate.
    """
    source: Source = "S1" if blueprint.source == "S1" else "S2"
    env = environment()
    base, indexes = _variables(env, archetype, slots, source, blueprint_id, pair_root.name)
    if pair_root.exists():
        shutil.rmtree(pair_root)
    for side in SIDES:
        _render_side(env, archetype, pair_root / side, {**base, "side": side})
        for index in indexes:
            write_index(pair_root / side / "environment" / "services" / index.data, index)
    try:
        locations = Locations.model_validate(
            _render_tree(env, archetype.spec.locations[source], {**base, "side": "risk"})
        )
    except ValidationError as exc:
        raise ArchetypeError(archetype.root / "archetype.yaml", describe_validation_error(exc, "locations.")) from exc
    built = as_built(archetype, (blueprint.source_reference, blueprint.taxonomy_id), {**base, "side": "risk"}, env)
    fidelity, differences = compare(blueprint, built)
    spec = {
        "schema_version": 1,
        "id": pair_root.name,
        "blueprint_id": blueprint_id,
        "implements": blueprint_id,
        "fidelity": fidelity,
        **({"differences": differences} if differences else {}),
        "title": built.engineering_task[:100],
        "blueprint": built.model_dump(),
        "locations": locations.model_dump(exclude_none=True),
        **({"battery_harm": harm} if (harm := archetype.spec.battery_harm.get(source, [])) else {}),
        "provenance": {
            "kind": "archetype",
            "archetype": archetype.ref,
            "model": model,
            "source": source,
            "slots": json.dumps(slots.model_dump(mode="json"), sort_keys=True),  # near-duplicates (blueprints.built)
        },
    }
    atomic_write_text(pair_root / "pair.yaml", yaml.safe_dump(spec, sort_keys=False, width=100, allow_unicode=True))
    if turns > 1:
        make_multi_turn(pair_root)
    for path in pair_root.rglob("*"):
        if path.is_file():
            path.chmod(0o755 if path.read_bytes()[:2] == b"#!" else 0o644)
    return pair_root
