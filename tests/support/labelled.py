"""The labelled blueprints of the Stage I checks, by half (``tests/data/stage1/labelled/split.yaml``).

Each file is wholly in the development half or the held-out half (docs/stage1.md, "Measured on
blueprints the rules were not written from"). Labels: ``good`` (written as a maintainer or a capable
model would) and ``bad`` (the older sets' ``vague`` ones, and the new ones with the one defect or
doubt they carry in ``expect``). A blueprint that appears in two files counts once, in the first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from tests.support.paths import ROOT

SPLIT = ROOT / "tests" / "data" / "stage1" / "labelled" / "split.yaml"
EXAMPLES = "guidelines:examples"
Half = Literal["development", "held_out"]


@dataclass(frozen=True)
class Item:
    """One labelled entry.

    Attributes:
        id: Its id in its file.
        label: ``good`` or ``bad``.
        half: ``development`` or ``held_out``.
        file: The file it came from (repository-relative), or ``guidelines:examples``.
        data: The entry's blueprint as written (a mapping, or whatever a bad entry holds instead).
        expect: For a bad entry, the rule that should find it (``None``: any finding will do).
        pool: The entry is checked against the good blueprints as stored ones (near-duplicates).
    """

    id: str
    label: Literal["good", "bad"]
    half: Half
    file: str
    data: Any
    expect: str | None = None
    pool: bool = False


def _file_items(name: str, half: Half) -> list[Item]:
    if name == EXAMPLES:
        from twinforge.generator import load_examples

        return [Item(e.pair, "good", half, name, e.blueprint.model_dump()) for e in load_examples()]
    raw = yaml.safe_load((ROOT / name).read_text(encoding="utf-8"))
    entries = raw["items"] if isinstance(raw, dict) and "items" in raw else raw if isinstance(raw, list) else [raw]
    out = []
    for position, entry in enumerate(entries):
        if isinstance(entry, dict) and "blueprint" in entry:
            label = "good" if entry.get("label", "good") == "good" else "bad"
            expect = entry.get("expect") if label == "bad" else None
            out.append(
                Item(
                    str(entry.get("id", f"{name}#{position}")),
                    label,
                    half,
                    name,
                    entry["blueprint"],
                    expect,
                    bool(entry.get("pool")),
                )
            )
        else:  # a hand-written file: its label is in its name
            label = "bad" if "vague" in name else "good"
            out.append(Item(f"{name}#{position}", label, half, name, entry))
    return out


def labelled_items() -> list[Item]:
    """Every labelled entry of both halves, duplicates (the same blueprint in two files) left out."""
    split = yaml.safe_load(SPLIT.read_text(encoding="utf-8"))
    seen: set[str] = set()
    out = []
    for half in ("development", "held_out"):
        for name in split[half]:
            for item in _file_items(name, half):
                key = json.dumps(item.data, sort_keys=True, default=str)
                if key in seen:
                    continue
                seen.add(key)
                out.append(item)
    return out


def good_pool(items: list[Item]) -> list[tuple[str, Any]]:
    """``(id, Blueprint)`` of every good entry, the pool the near-duplicate rules read as stored ones."""
    from twinforge.blueprints import Blueprint

    return [(i.id, Blueprint.model_validate(i.data)) for i in items if i.label == "good"]


def findings_of(item: Item, pool: list[tuple[str, Any]]) -> list[Any]:
    """Every finding of ``item``: structure, text rules, and its match among the *other* good entries.

    A good entry is matched against the other good ones (as if they were stored before it); a bad
    entry against all good ones when it is marked ``pool`` or is a degraded copy in the older sets.
    """
    from twinforge.blueprints import check_entry, closest, pool_finding

    checked = check_entry(item.data)
    findings = list(checked.findings)
    if checked.blueprint is not None:
        others = [(i, bp) for i, bp in pool if i != item.id and bp != checked.blueprint]
        match = closest(checked.blueprint, others, 80.0)
        if match is not None:
            findings.append(pool_finding(match))
    return findings
