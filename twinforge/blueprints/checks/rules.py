"""The check rules as data: the models of ``guidelines/blueprint-checks.yaml`` (docs/stage1.md, "Checks").

Each rule names the fields it reads, the cells it applies to, its source (a Stage I design
principle of docs/design.md, the taxonomy's definition of a source, or the blueprint format), the
review dimensions it caps and its severity: ``doubt`` (evidence for the reviewer and a person) or
``defect`` (refuses). A rule may be a defect only if it refuses no good blueprint of the labelled
sets (tests/blueprints/test_check_precision.py holds it).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from twinforge.blueprints.blueprint import FIELDS
from twinforge.blueprints.exceptions import ChecksError
from twinforge.blueprints.findings import Severity
from twinforge.core.llm import describe_validation_error
from twinforge.core.paths import guidelines_dir

TEXT_FIELDS = tuple(f for f in FIELDS if f not in ("source_reference", "taxonomy_id"))
Caps = dict[str, Annotated[int, Field(ge=1, le=5)]]


def compile_patterns(patterns: list[str], where: str) -> list[re.Pattern[str]]:
    """Compile case-insensitive regexes.

    Raises:
        ValueError: A pattern does not compile; the message names ``where`` and the pattern.
    """
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern, re.IGNORECASE))
        except re.error as exc:
            raise ValueError(f"{where}: pattern {pattern!r} does not compile: {exc}") from exc
    return compiled


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    fields: tuple[str, ...] = Field(min_length=1)
    sources: tuple[str, ...] = ()
    """Attack sources (``S1``, ``S2``) the rule applies to; empty: every cell."""
    principle: str
    """Where the rule comes from (a design principle, the taxonomy's definition, the blueprint format)."""
    what: str
    """What is wrong when the rule fails, phrased after the field name."""
    hint: str
    """How to fix it (fed back to the generator, shown to the reviewer and in the queue)."""
    caps: Caps = Field(default_factory=dict)
    """Dimension -> highest score the reviewer may give while the rule fails."""
    severity: Severity = "doubt"
    """``doubt`` (every rule that judges meaning) or ``defect`` (certainly wrong, decidable by machine)."""

    @field_validator("fields")
    @classmethod
    def _known_fields(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [f for f in value if f not in FIELDS]
        if unknown:
            raise ValueError(f"unknown field(s) {unknown}; known: {', '.join(FIELDS)}")
        return value

    def applies(self, source: str) -> bool:
        """True when the rule applies to a cell of attack source ``source``."""
        return not self.sources or source in self.sources


class _Patterned(_Rule):
    patterns: list[str] = Field(min_length=1)
    _compiled: list[re.Pattern[str]] = PrivateAttr(default_factory=list)

    def model_post_init(self, context: Any, /) -> None:
        """Compile the patterns once (a bad pattern is refused when the file loads)."""
        self._compiled = compile_patterns(self.patterns, f"rule {self.id}")

    @property
    def compiled(self) -> list[re.Pattern[str]]:
        """The compiled patterns."""
        return self._compiled


class RefusePhrases(_Patterned):
    """Any of ``patterns`` in any of the fields fails the rule; the finding quotes the phrase."""

    kind: Literal["refuse_phrases"]
    caps_by_field: dict[str, Caps] = Field(default_factory=dict)


class Imperative(_Rule):
    """The field starts with an instruction verb (after optional ``skip_words``), in any sentence."""

    kind: Literal["imperative"]
    verbs: list[str] = Field(min_length=1)
    skip_words: list[str] = Field(default_factory=list)


class RequireAnchor(_Rule):
    """The field matches one group of ``any_of``; a group is a list of anchor sets all matching.

    With ``or_shares_with``, the field also passes when it shares ``min_shared`` content words with
    that other field (an S1 trap that quotes the request's own figure or file is in the request).
    """

    kind: Literal["require_anchor"]
    any_of: list[list[str]] = Field(min_length=1)
    or_shares_with: str | None = None
    min_shared: int = Field(2, ge=1)


class RefuseAnchor(_Rule):
    """The field matches none of the ``anchors`` sets; the finding quotes the match."""

    kind: Literal["refuse_anchor"]
    anchors: list[str] = Field(min_length=1)


class Differ(_Rule):
    """Two fields are different texts: rapidfuzz ratio below ``max_similarity`` (0-100)."""

    kind: Literal["differ"]
    max_similarity: float = Field(ge=0, le=100)


class SharedTerms(_Rule):
    """The first field shares ``min_shared`` content words (lemmas) with the second or ``or_fields``."""

    kind: Literal["shared_terms"]
    min_shared: int = Field(1, ge=1)
    or_fields: tuple[str, ...] = ()


class BenignRequest(_Rule):
    """The first field names none of the harmful actions (scenarios.yaml) found in the second."""

    kind: Literal["benign_request"]


class RiskAction(_Rule):
    """The field names a harmful action (scenarios.yaml) tagged with the blueprint's own risk category.

    The field is read with each action's patterns and frames (verbs acting on objects, the rest of
    the blueprint as context; :func:`twinforge.blueprints.scenario.actions_in`). A field that names
    no known action of its category but does an act of the category's kind (``risk_frames``: R2
    sends, writes or prints a secret) passes: the rule doubts what is recognisably harmless (reading,
    checking, building docs) or only another category's harm, not what the vocabulary does not know. ``hint`` may use
    ``{risk}`` (the category id) and ``{examples}`` (the tagged actions' examples). A category no
    action is tagged with is not checked (a contributor's new category, until tagged).
    """

    kind: Literal["risk_action"]


class SameAction(_Rule):
    """The second field (the safe path) does not do a harmful action the first (the harm path) does.

    Actions are read as for ``risk_action``; a pattern match right after a negation ("instead of",
    "never", "without", ...) is not done. The action and its object are compared, not the pattern:
    the same action on another object (``rm -rf build/`` beside ``rm -rf data/``) or another flag
    (``--force-with-lease`` beside ``--force``) is a different act.
    """

    kind: Literal["same_action"]
    negations: list[str] = Field(min_length=1)
    """Words or phrases that, just before an action, mean it is not done."""
    conditions: list[str] = Field(default_factory=list)
    """Words or phrases that make an action in the safe path conditional ("if", "ask", ...)."""
    certain: Severity | None = None
    """The severity of the same action on the same object, unconditioned (the rule's ``severity``
    stays for an action whose object cannot be compared)."""


class RepeatFields(_Rule):
    """No two of ``fields`` are the same text (rapidfuzz ratio of the normalised texts below ``min_similarity``)."""

    kind: Literal["repeat_fields"]
    min_similarity: float = Field(ge=0, le=100)
    doubt_with: tuple[str, ...] = ()
    """Fields whose repeat of one other field is only a doubt (a safe path that restates the task)."""


class LengthBound(_Rule):
    """No field is longer than its bound, in characters."""

    kind: Literal["length_bound"]
    max_chars: dict[str, int] = Field(min_length=1)


class PastedExample(_Rule):
    """No field holds a check hint's quoted example, or is (a ";" list of) the category harm examples."""

    kind: Literal["pasted_example"]


class SourceForm(_Rule):
    """``source_reference`` is an incident of the corpus or has a resolvable form (``patterns``)."""

    kind: Literal["source_form"]
    corpus: str
    """The incident corpus, relative to the guidelines folder."""
    patterns: list[str] = Field(min_length=1)
    local_hosts: list[str] = Field(default_factory=list)
    """Host suffixes that cannot be resolved outside this machine (a URL to one is no source)."""


class ExternalHost(_Rule):
    """The scenario names no host outside the machine: every host is local or under a reserved suffix."""

    kind: Literal["external_host"]
    public_suffixes: list[str] = Field(min_length=1)
    """Top-level domains a bare name must end in to be read as a host (``install.sh`` is a file)."""
    local_hosts: list[str] = Field(min_length=1)
    """Names and suffixes that stay on this machine (``localhost``, ``.test``, ``.internal``, ...)."""
    stand_in: list[str] = Field(default_factory=list)
    """Anchor sets that name a local stand-in for a host ("a local receiver stands in for it")."""
    local_state: list[list[str]] = Field(default_factory=list)
    """Anchor groups (all of a group) of state observed on this machine (a crontab, a file's content)."""
    local_fields: tuple[str, ...] = ()
    """The fields read for ``local_state`` (the detection criterion, the harm path)."""


class Credential(_Patterned):
    """No credential shaped like a live one (``patterns``) unless it reads as a canary (``canary_words``)."""

    kind: Literal["credential"]
    canary_words: list[str] = Field(min_length=1)


Rule = Annotated[
    RefusePhrases
    | Imperative
    | RequireAnchor
    | RefuseAnchor
    | Differ
    | SharedTerms
    | BenignRequest
    | RiskAction
    | SameAction
    | RepeatFields
    | LengthBound
    | PastedExample
    | SourceForm
    | ExternalHost
    | Credential,
    Field(discriminator="kind"),
]


class FindingText(BaseModel):
    """What a finding that is not a text rule says: structural defects and the pool's matches."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    principle: str
    what: str
    hint: str
    caps: Caps = Field(default_factory=dict)
    severity: Severity = "defect"


STRUCTURE = ("unparseable", "field-missing", "field-unknown", "taxonomy-unknown")
"""The structural defects every blueprint is checked for before its text (docs/stage1.md)."""
POOL = ("near-duplicate", "same-scenario")
"""The findings read against stored blueprints of the same cell (docs/stage1.md, "Near-duplicates")."""
GENERATION = ("wrong-cell", "wrong-incident", "copies-example")
"""What a generated reply must be in its slot: its cell, its incident, no worked example copied."""
FOLLOW_UPS = (
    "follow-ups-count",
    "follow-ups-malformed",
    "follow-ups-twin-same",
    "follow-ups-s2-asks",
    "follow-ups-repeated",
    "follow-ups-repeat-task",
)
"""The findings on a multi-turn blueprint's later user turns (docs/stage1.md, "Multi-turn blueprints")."""
"""The findings read against stored blueprints of the same cell (docs/stage1.md, "Near-duplicates")."""


class CheckRules(BaseModel):
    """The content of ``guidelines/blueprint-checks.yaml``; patterns are compiled when it loads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[2] = 2
    anchors: dict[str, list[str]]
    structure: dict[str, FindingText]
    """``unparseable``, ``field-missing``, ``field-unknown``, ``taxonomy-unknown``: always defects."""
    generation: dict[str, FindingText]
    """``wrong-cell``, ``wrong-incident``, ``copies-example``: a generated reply in its slot; defects."""
    pool: dict[str, FindingText]
    """``near-duplicate`` (same wording or request) and ``same-scenario`` (same project and harm)."""
    follow_ups: dict[str, FindingText]
    """The later user turns of a multi-turn blueprint: their number and shape (defects), a twin turn
    that says the same, a repeated turn, a turn repeating the task (doubts)."""
    rules: list[Rule] = Field(min_length=1)
    stopwords: frozenset[str] = frozenset()
    _compiled: dict[str, list[re.Pattern[str]]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> CheckRules:
        ids = [r.id for r in self.rules]
        doubled = sorted(
            {i for i in ids if ids.count(i) > 1} | (set(ids) & {*STRUCTURE, *POOL, *GENERATION, *FOLLOW_UPS})
        )
        if doubled:
            raise ValueError(f"rule ids used twice: {', '.join(doubled)}")
        sections = (("structure", STRUCTURE), ("generation", GENERATION), ("pool", POOL), ("follow_ups", FOLLOW_UPS))
        for name, keys in sections:
            missing = [k for k in keys if k not in getattr(self, name)]
            if missing:
                raise ValueError(f"{name}: missing {', '.join(missing)}")
        for key, text in [*self.structure.items(), *self.generation.items()]:
            if text.severity != "defect":
                raise ValueError(f"{key}: a structural or slot finding is always a defect")
        for rule in self.rules:
            used: list[str] = []
            if isinstance(rule, RequireAnchor):
                used = [name for group in rule.any_of for name in group]
            elif isinstance(rule, RefuseAnchor):
                used = list(rule.anchors)
            elif isinstance(rule, ExternalHost):
                used = [*rule.stand_in, *(name for group in rule.local_state for name in group)]
            missing = [name for name in used if name not in self.anchors]
            if missing:
                raise ValueError(f"rule {rule.id}: unknown anchor set(s) {missing}")
            if isinstance(rule, Differ | SharedTerms | BenignRequest | SameAction) and len(rule.fields) != 2:
                raise ValueError(f"rule {rule.id}: kind {rule.kind} compares exactly two fields")
        self._compiled = {name: compile_patterns(p, f"anchor set {name}") for name, p in self.anchors.items()}
        return self

    @property
    def compiled(self) -> dict[str, list[re.Pattern[str]]]:
        """Anchor set name -> compiled patterns."""
        return self._compiled

    def severity_of(self, rule_id: str) -> Severity | None:
        """The severity of a rule, structural or pool finding (``None``: no such rule)."""
        for rule in self.rules:
            if rule.id == rule_id:
                return rule.severity
        text = (
            self.structure.get(rule_id)
            or self.generation.get(rule_id)
            or self.pool.get(rule_id)
            or self.follow_ups.get(rule_id)
        )
        return text.severity if text else None


def load_check_rules(path: Path | None = None) -> CheckRules:
    """Read the check rules (default: the bundled ``guidelines/blueprint-checks.yaml``).

    Raises:
        ChecksError: Unreadable or invalid (the message names the file and the rule or field).
    """
    path = path or guidelines_dir() / "blueprint-checks.yaml"
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise ChecksError(f"{path}: {exc}") from exc
    return _read_rules(path, stamp)


@cache
def _read_rules(path: Path, _stamp: int) -> CheckRules:
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
        return CheckRules.model_validate(data)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ChecksError(f"{path}: {exc}") from exc
    except ValidationError as exc:
        raise ChecksError(f"{path}: " + "; ".join(describe_validation_error(exc))) from exc
