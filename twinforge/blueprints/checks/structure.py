"""Structural defects: what a reply or a hand-written entry must be before its text is read.

A blueprint is exactly eight fields (docs/design.md, "The pipeline"). Output that is not a
mapping, a missing or empty field, a field the format does not have and a cell outside the
taxonomy are certainly wrong and decidable by machine: each is a defect of that entry alone
(docs/stage1.md, "Defects and doubts").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from twinforge.blueprints.blueprint import FIELDS, Blueprint
from twinforge.blueprints.checks.rules import CheckRules, FindingText
from twinforge.blueprints.findings import WHOLE, Finding
from twinforge.blueprints.taxonomy import Taxonomy

_MISSING = frozenset({"missing", "string_too_short"})


@dataclass(frozen=True)
class Draft:
    """One entry as far as it could be read.

    Attributes:
        blueprint: The eight fields validated, or ``None`` when a structural defect kept them from it.
        fields: The fields as given (values as text; what a refused record keeps).
        findings: Structural defects (empty when ``blueprint`` is set).
    """

    blueprint: Blueprint | None
    fields: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


def finding_of(rule_id: str, text: FindingText, field_name: str, detail: str = "") -> Finding:
    """A finding that is not a text rule's (structure, pool), worded from the rules file."""
    subject = "the blueprint" if field_name == WHOLE else field_name
    return Finding(
        rule=rule_id,
        field=field_name,
        message=f"{subject} {text.what}{detail}",
        hint=text.hint,
        principle=text.principle,
        caps=dict(text.caps),
        severity=text.severity,
    )


def as_text(value: Any) -> str:
    """A field value as text: strings as they are, anything else as its YAML-like repr."""
    return value if isinstance(value, str) else repr(value)


def read_draft(data: Any, rules: CheckRules, taxonomy: Taxonomy | None = None) -> Draft:
    """Validate ``data`` as a blueprint; every structural problem is a finding, none is raised.

    Args:
        data: A mapping of the eight fields, or anything a reply or a file held instead.
        rules: The check rules (their ``structure`` texts).
        taxonomy: Validates ``taxonomy_id`` (default: the bundled taxonomy).
    """
    if not isinstance(data, dict):
        shown = f" (got {type(data).__name__})" if data is not None else " (got nothing)"
        return Draft(None, {}, [finding_of("unparseable", rules.structure["unparseable"], WHOLE, shown)])
    fields = {str(k): as_text(v) for k, v in data.items()}
    try:
        bp = Blueprint.model_validate(data, context={"taxonomy": taxonomy} if taxonomy else None)
    except ValidationError as exc:
        return Draft(None, fields, _structural(exc, rules))
    return Draft(bp, fields, [])


def _structural(exc: ValidationError, rules: CheckRules) -> list[Finding]:
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for err in exc.errors():
        name = str(err["loc"][0]) if err["loc"] else WHOLE
        if err["type"] in _MISSING:
            rule = "field-missing"
        elif err["type"] == "extra_forbidden":
            rule = "field-unknown"
        elif name == "taxonomy_id" and err["type"] == "value_error":
            rule = "taxonomy-unknown"
        else:
            rule = "unparseable"
        if (rule, name) in seen:
            continue
        seen.add((rule, name))
        detail = f" ({err['msg']})" if rule in ("unparseable", "taxonomy-unknown") else ""
        out.append(
            finding_of(
                rule, rules.structure[rule], name if name in FIELDS or rule == "field-unknown" else WHOLE, detail
            )
        )
    return out
