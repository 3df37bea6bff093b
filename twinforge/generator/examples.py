"""Worked examples: reference pairs' and written blueprints, shown so the model sees the concreteness expected.

A batch for cell ``S<s>-R<r>`` is shown one example of exactly that cell: the reference pair's
blueprint when there is one, else the written example of ``guidelines/worked-examples.yaml``. Only
when neither exists does it see the reference pair of risk ``R<r>`` plus one of source ``S<s>``. An
example of the other source misled the local model into that source's framing (docs/stage1.md,
"Where the rules come from").

A multi-turn reference pair (its ``pair.yaml`` has ``follow_ups``) is shown only to batches that
ask for multi-turn blueprints (``generate --turns N``), and such a batch is shown multi-turn
examples first: a second user turn in the example misled one-turn batches the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from twinforge.blueprints import Blueprint
from twinforge.core.llm import describe_validation_error
from twinforge.core.paths import guidelines_dir
from twinforge.generator.exceptions import SourcesError


@dataclass(frozen=True)
class WorkedExample:
    """A worked example: a reference pair's blueprint or a written one.

    Attributes:
        pair: The pair folder name, e.g. ``ref-r3-ignored-database``, or the written example's id.
        blueprint: Its eight fields.
        reference: A reference pair's blueprint (``False``: a written example without a pair).
        turns: How many times the user speaks in it (a reference pair's ``follow_ups`` plus one).
    """

    pair: str
    blueprint: Blueprint
    reference: bool = True
    turns: int = 1


def load_examples(folder: Path | None = None, written: Path | None = None) -> list[WorkedExample]:
    """Every ``<folder>/*/pair.yaml`` blueprint in folder-name order, then the written examples.

    Args:
        folder: Pair folders (default: the reference pairs).
        written: A YAML file ``{schema_version: 1, examples: [{id, blueprint}]}`` (default:
            ``guidelines/worked-examples.yaml`` when ``folder`` is the default too, else none).

    Raises:
        SourcesError: A pair.yaml or the written file is unreadable or a blueprint invalid (names
            the file and, for the written file, the example's id).
    """
    if folder is None and written is None:
        written = guidelines_dir() / "worked-examples.yaml"
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
        follow_ups = data.get("follow_ups") if isinstance(data, dict) else None
        turns = 1 + (len(follow_ups) if isinstance(follow_ups, list) else 0)
        out.append(WorkedExample(path.parent.name, blueprint, turns=turns))
    if written is not None:
        out += _load_written(written)
    return out


def _load_written(path: Path) -> list[WorkedExample]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        entries = data["examples"]
    except (OSError, UnicodeDecodeError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise SourcesError(f"{path}: cannot read the worked examples: {exc}") from exc
    out = []
    for index, entry in enumerate(entries):
        name = entry.get("id", f"#{index + 1}") if isinstance(entry, dict) else f"#{index + 1}"
        try:
            blueprint = Blueprint.model_validate(entry["blueprint"])
        except (KeyError, TypeError) as exc:
            raise SourcesError(f"{path}: example {name}: no blueprint") from exc
        except ValidationError as exc:
            raise SourcesError(f"{path}: example {name}: " + "; ".join(describe_validation_error(exc))) from exc
        out.append(WorkedExample(str(name), blueprint, reference=False))
    return out


def examples_for(cell: str, examples: list[WorkedExample], turns: int = 1) -> list[WorkedExample]:
    """The worked examples for a cell: its own cell's (first found), else same risk plus same source.

    ``examples`` in :func:`load_examples` order, so a reference pair comes before a written example.
    A one-turn batch (``turns`` 1) never sees a multi-turn example; a multi-turn batch sees the
    multi-turn examples first (of its cell, else of its source), then the one-turn choice.
    """
    if turns > 1:
        multi = [e for e in examples if e.turns > 1]
        own = [e for e in multi if e.blueprint.taxonomy_id == cell] or [
            e for e in multi if e.blueprint.source == cell.split("-")[0]
        ]
        return own[:1] + examples_for(cell, examples)[:1]
    examples = [e for e in examples if e.turns == 1]
    exact = [e for e in examples if e.blueprint.taxonomy_id == cell]
    if exact:
        return exact[:1]
    source, risk = cell.split("-")
    same_risk = sorted((e for e in examples if e.blueprint.risk == risk), key=lambda e: e.blueprint.source != source)
    chosen = same_risk[:1]
    if not chosen or chosen[0].blueprint.source != source:
        same_source = [e for e in examples if e.blueprint.source == source and e not in chosen]
        chosen += same_source[:1]
    return chosen
