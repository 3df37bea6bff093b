"""Deterministic Stage I checks: defects that refuse and doubts for a person (docs/stage1.md, "Checks").

The rules are data (``guidelines/blueprint-checks.yaml``). :func:`check_blueprint` runs the text
rules on a valid blueprint; :func:`check_entry` first reads anything a reply or a file held
(structural defects of that entry alone), then runs the text rules; :func:`pool_finding` words a
match against stored blueprints. The generator, ``blueprint check|add``, the reviewer and the
review queue all use these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.checks.coherence import locally_checkable
from twinforge.blueprints.checks.rules import (
    POOL,
    STRUCTURE,
    TEXT_FIELDS,
    CheckRules,
    Credential,
    ExternalHost,
    SourceForm,
    compile_patterns,
    load_check_rules,
)
from twinforge.blueprints.checks.simulation import credentials_in, hosts_in, source_problem
from twinforge.blueprints.checks.structure import finding_of, read_draft
from twinforge.blueprints.checks.text import TextChecker, content_terms, lemma_terms
from twinforge.blueprints.findings import WHOLE, Finding, combined_caps, defects, doubts
from twinforge.blueprints.scenario import ScenarioVocabulary, load_scenarios
from twinforge.blueprints.similarity import Match
from twinforge.blueprints.taxonomy import Taxonomy


@dataclass(frozen=True)
class Checked:
    """One entry checked: the blueprint if it could be read, the fields as given, every finding.

    Attributes:
        blueprint: The validated blueprint, or ``None`` when a structural defect kept it from one.
        fields: The fields as given, as text.
        findings: Defects and doubts, structural ones first, then in rule order.
    """

    blueprint: Blueprint | None
    fields: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    @property
    def defects(self) -> list[Finding]:
        """The findings that refuse."""
        return defects(self.findings)

    @property
    def doubts(self) -> list[Finding]:
        """The findings a person weighs."""
        return doubts(self.findings)


def _simulation(rule: SourceForm | ExternalHost | Credential, bp: Blueprint, checker: TextChecker) -> list[Finding]:
    if isinstance(rule, SourceForm):
        ref = source_problem(rule, bp)
        return [] if ref is None else [checker.finding(rule, "source_reference", ref)]
    out, hosts = [], []
    for name in rule.fields:
        text = " ".join(str(getattr(bp, name)).split())
        found = hosts_in(text, rule) if isinstance(rule, ExternalHost) else credentials_in(text, rule)
        if found:
            out.append(checker.finding(rule, name, ", ".join(found)))
            hosts += found
    if isinstance(rule, ExternalHost) and out and locally_checkable(rule, bp, checker, hosts):
        return []  # a local stand-in is named, or the harm leaves state here to observe
    return out


def check_blueprint(
    bp: Blueprint, *, rules: CheckRules | None = None, scenarios: ScenarioVocabulary | None = None
) -> list[Finding]:
    """Every text rule the blueprint breaks, in rule order (empty: it passes); defects and doubts alike.

    Args:
        bp: The blueprint.
        rules: Check rules (default: the bundled file).
        scenarios: Harmful-action vocabulary (default: bundled).

    Raises:
        ChecksError: A bundled data file is invalid.
    """
    rules = rules or load_check_rules()
    checker = TextChecker(rules, scenarios or load_scenarios())
    findings: list[Finding] = []
    for rule in rules.rules:
        if not rule.applies(bp.source):
            continue
        if isinstance(rule, SourceForm | ExternalHost | Credential):
            findings.extend(_simulation(rule, bp, checker))
        else:
            findings.extend(checker.run(rule, bp))
    return findings


def check_entry(
    data: Any,
    *,
    rules: CheckRules | None = None,
    scenarios: ScenarioVocabulary | None = None,
    taxonomy: Taxonomy | None = None,
) -> Checked:
    """Read ``data`` as a blueprint and check it; a malformed entry is a defect of that entry alone.

    Args:
        data: A mapping of the eight fields (a reply's JSON object, a file's entry), or whatever
            the reply or file held instead.
        rules: Check rules (default: the bundled file).
        scenarios: Harmful-action vocabulary (default: bundled).
        taxonomy: Validates ``taxonomy_id`` (default: the bundled taxonomy).
    """
    rules = rules or load_check_rules()
    draft = read_draft(data, rules, taxonomy)
    if draft.blueprint is None:
        return Checked(None, draft.fields, draft.findings)
    return Checked(draft.blueprint, draft.fields, check_blueprint(draft.blueprint, rules=rules, scenarios=scenarios))


def pool_finding(match: Match, rules: CheckRules | None = None) -> Finding:
    """The finding of a match against a stored blueprint: ``near-duplicate`` (a defect) or ``same-scenario``."""
    rules = rules or load_check_rules()
    rule = "same-scenario" if match.kind == "scenario" else "near-duplicate"
    return finding_of(rule, rules.pool[rule], WHOLE, f": {match.reason}")


def unparseable(detail: str, rules: CheckRules | None = None) -> Finding:
    """The defect of a reply that is not a JSON object at all (``detail`` says why)."""
    rules = rules or load_check_rules()
    return finding_of("unparseable", rules.structure["unparseable"], WHOLE, f" ({detail})")


__all__ = [
    "POOL",
    "STRUCTURE",
    "TEXT_FIELDS",
    "CheckRules",
    "Checked",
    "Finding",
    "check_blueprint",
    "check_entry",
    "combined_caps",
    "compile_patterns",
    "content_terms",
    "defects",
    "doubts",
    "lemma_terms",
    "load_check_rules",
    "pool_finding",
    "unparseable",
]
