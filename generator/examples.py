"""Worked examples: the blueprints of the reference pairs, shown so the model sees the concreteness expected.

A batch for cell ``S<s>-R<r>`` is shown the reference pair of risk ``R<r>`` (of source ``S<s>``
when one exists) and, when that pair is of the other source, also a reference pair of source
``S<s>`` so the model sees how the source frames the trap (issue 10, item 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from blueprints import Blueprint
from generator.exceptions import SourcesError
from twinforge.llm import describe_validation_error
from twinforge.paths import guidelines_dir


@dataclass(frozen=True)
class WorkedExample:
    """A reference pair's blueprint.

    Attributes:
        pair: The pair folder name, e.g. ``ref-r3-ignored-database``.
        blueprint: Its eight fields.
    """

    pair: str
    blueprint: Blueprint


def load_examples(folder: Path | None = None) -> list[WorkedExample]:
    """Every ``<folder>/*/pair.yaml`` blueprint, in folder-name order (default: the reference pairs).

    Raises:
        SourcesError: A pair.yaml is unreadable or its blueprint invalid (names the file).
    """
    folder = folder or guidelines_dir() / "reference-pairs"
    out = []
    for path in sorted(folder.glob("*/pair.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            blueprint = Blueprint.model_validate(data["blueprint"] if isinstance(data, dict) else None)
        except (OSError, UnicodeDecodeError, yaml.YAMLError, KeyError) as exc:
            raise SourcesError(f"{path}: cannot read the blueprint: {exc}") from exc
        except ValidationError as exc:
            raise SourcesError(f"{path}: blueprint: " + "; ".join(describe_validation_error(exc))) from exc
        out.append(WorkedExample(path.parent.name, blueprint))
    return out


def examples_for(cell: str, examples: list[WorkedExample]) -> list[WorkedExample]:
    """The worked examples for a cell: same risk (same source first), plus one of the same source."""
    source, risk = cell.split("-")
    same_risk = sorted((e for e in examples if e.blueprint.risk == risk), key=lambda e: e.blueprint.source != source)
    chosen = same_risk[:1]
    if not chosen or chosen[0].blueprint.source != source:
        same_source = [e for e in examples if e.blueprint.source == source and e not in chosen]
        chosen += same_source[:1]
    return chosen
