"""Deterministic concreteness and consistency checks on a blueprint (docs/stage1.md).

The rules are data (``guidelines/blueprint-checks.yaml``): each names the fields it reads, the
cells it applies to, its source (a Stage I design principle of docs/design.md or the attack-source
definition of the taxonomy) and the review dimensions it caps when it fails. The generator
re-asks a blueprint that breaks a rule, the reviewer is shown the findings and caps the
dimensions they cover, and the review queue lists them: all three use :func:`check_blueprint`.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import lemminflect
import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator
from rapidfuzz import fuzz

from twinforge.blueprints.blueprint import FIELDS, Blueprint
from twinforge.blueprints.exceptions import ChecksError
from twinforge.blueprints.reading import lemmas
from twinforge.blueprints.scenario import (
    ScenarioVocabulary,
    actions_in,
    actions_of_risk,
    harm_actions_in,
    load_scenarios,
)
from twinforge.core.llm import describe_validation_error
from twinforge.core.paths import guidelines_dir

TEXT_FIELDS = tuple(f for f in FIELDS if f not in ("source_reference", "taxonomy_id"))
Caps = dict[str, Annotated[int, Field(ge=1, le=5)]]
Severity = Literal["refuse", "cap"]
_WORD = re.compile(r"[a-z0-9][a-z0-9._/-]*[a-z0-9]|[a-z0-9]")
_QUOTE_CHARS = 80


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
    """Where the rule comes from (a design principle or the taxonomy's definition)."""
    what: str
    """What is wrong when the rule fails, phrased after the field name."""
    hint: str
    """How to fix it (fed back to the generator)."""
    caps: Caps = Field(default_factory=dict)
    """Dimension -> highest score the reviewer may give while the rule fails."""
    severity: Severity = "refuse"
    """``refuse``: a structural rule, or a semantic one measured precise on the labelled set: the
    generator re-asks and ``blueprint add`` refuses. ``cap``: the finding is recorded and caps the
    review score (docs/stage1.md, "Refusing and capping")."""

    @field_validator("fields")
    @classmethod
    def _known_fields(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [f for f in value if f not in TEXT_FIELDS]
        if unknown:
            raise ValueError(f"unknown field(s) {unknown}; known: {', '.join(TEXT_FIELDS)}")
        return value

    def applies(self, source: str) -> bool:
        """True when the rule applies to a cell of attack source ``source``."""
        return not self.sources or source in self.sources


class RefusePhrases(_Rule):
    """Refuse any of ``patterns`` in any of the fields; the finding quotes the phrase."""

    kind: Literal["refuse_phrases"]
    patterns: list[str] = Field(min_length=1)
    caps_by_field: dict[str, Caps] = Field(default_factory=dict)
    _compiled: list[re.Pattern[str]] = PrivateAttr(default_factory=list)

    def model_post_init(self, context: Any, /) -> None:
        """Compile the patterns once (a bad pattern is refused when the file loads)."""
        self._compiled = compile_patterns(self.patterns, f"rule {self.id}")

    @property
    def compiled(self) -> list[re.Pattern[str]]:
        """The compiled patterns."""
        return self._compiled


class Imperative(_Rule):
    """The field starts with an instruction verb (after optional ``skip_words``)."""

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
    the blueprint as context; :func:`twinforge.blueprints.scenario.actions_in`). A field that shows
    no harmful action at all fails with ``severity``; one that shows only another category's action
    fails with ``other_severity`` (categories overlap: a force-push is R3 and R6 harm).
    ``hint`` may use ``{risk}`` (the category id) and ``{examples}`` (the tagged actions' examples).
    A category no action is tagged with is not checked (a contributor's new category, until tagged).
    """

    kind: Literal["risk_action"]
    other_severity: Severity = "cap"


Rule = Annotated[
    RefusePhrases | Imperative | RequireAnchor | RefuseAnchor | Differ | SharedTerms | BenignRequest | RiskAction,
    Field(discriminator="kind"),
]


class NearDuplicateRule(BaseModel):
    """The caps for a blueprint flagged as a near-duplicate (not a text rule)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    principle: str
    caps: Caps


class CheckRules(BaseModel):
    """The content of ``guidelines/blueprint-checks.yaml``; patterns are compiled when it loads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    anchors: dict[str, list[str]]
    rules: list[Rule] = Field(min_length=1)
    near_duplicate: NearDuplicateRule
    stopwords: frozenset[str] = frozenset()
    _compiled: dict[str, list[re.Pattern[str]]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> CheckRules:
        ids = [r.id for r in self.rules]
        doubled = sorted({i for i in ids if ids.count(i) > 1})
        if doubled:
            raise ValueError(f"rule ids used twice: {', '.join(doubled)}")
        for rule in self.rules:
            used: list[str] = []
            if isinstance(rule, RequireAnchor):
                used = [name for group in rule.any_of for name in group]
            elif isinstance(rule, RefuseAnchor):
                used = list(rule.anchors)
            missing = [name for name in used if name not in self.anchors]
            if missing:
                raise ValueError(f"rule {rule.id}: unknown anchor set(s) {missing}")
            if isinstance(rule, Differ | SharedTerms | BenignRequest) and len(rule.fields) != 2:
                raise ValueError(f"rule {rule.id}: kind {rule.kind} compares exactly two fields")
        self._compiled = {name: compile_patterns(p, f"anchor set {name}") for name, p in self.anchors.items()}
        return self

    @property
    def compiled(self) -> dict[str, list[re.Pattern[str]]]:
        """Anchor set name -> compiled patterns."""
        return self._compiled


class Finding(BaseModel):
    """One failed rule on one field.

    Attributes:
        rule: The rule id.
        field: The blueprint field.
        message: ``<field> <what>`` plus the quoted phrase, if any.
        hint: How to fix it.
        principle: The rule's source.
        caps: Dimension -> highest score while this finding stands.
        severity: ``refuse`` (re-asked, refused by ``blueprint add``) or ``cap`` (recorded; caps the
            review and keeps the blueprint out of ``kept`` on its own).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    field: str
    message: str
    hint: str
    principle: str
    caps: dict[str, int] = Field(default_factory=dict)
    severity: Severity = "refuse"

    @property
    def refuses(self) -> bool:
        """True when this finding refuses the blueprint (not only caps its review)."""
        return self.severity == "refuse"

    def __str__(self) -> str:
        return f"{self.message} ({self.rule}); {self.hint}"


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


def _quote(text: str) -> str:
    # Control characters are shown escaped: a quote must never move a terminal's cursor.
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(text.split()))
    return text if len(text) <= _QUOTE_CHARS else text[: _QUOTE_CHARS - 3] + "..."


def _search(patterns: list[re.Pattern[str]], text: str) -> re.Match[str] | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return match
    return None


def _stem(word: str) -> str:
    word = word.strip("._/-")
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_terms(text: str, stopwords: frozenset[str]) -> set[str]:
    """Lower-cased, lightly stemmed words of ``text`` of 3+ characters that are not stopwords."""
    terms = set()
    for word in _WORD.findall(text.lower()):
        stem = _stem(word)
        if len(stem) >= 3 and word not in stopwords and stem not in stopwords:
            terms.add(stem)
    return terms


def lemma_terms(text: str, stopwords: frozenset[str]) -> set[str]:
    """Content words of ``text`` with every lemma of each and the parts of paths and identifiers.

    "runs" and "running" share "run"; ``vendor/bin/protoc-setup`` shares "setup" with "the setup
    binary". Words of fewer than 3 characters and stopwords are left out.
    """
    terms: set[str] = set()
    for word in _WORD.findall(text.lower()):
        parts = {word, *re.split(r"[/._-]+", word)}
        for part in parts:
            forms = lemmas(part) if part.isalpha() else frozenset({part.strip("._/-")})
            terms |= {f for f in forms if len(f) >= 3 and f not in stopwords}
    return terms - {w for w in stopwords}


_WORDS = re.compile(r"[A-Za-z][\w'-]*")
_LEADING_CLAUSE = {"in", "for", "on", "inside", "within", "across", "using", "after", "before"}


def _first_instruction_word(text: str, skip: set[str]) -> str:
    """The first word after optional ``skip`` words, or after a leading "In the X," clause."""
    words: list[str] = _WORDS.findall(text)
    head = text.lstrip(" \"'`*-")
    if words and words[0].lower() in _LEADING_CLAUSE:
        comma = head.find(",")
        if 0 < comma < 100:
            words = _WORDS.findall(head[comma + 1 :])
    return next((w for w in words if w.lower() not in skip), "")


_NOT_VERBS = frozenset(
    [
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "our",
        "my",
        "your",
        "their",
        "its",
        "we",
        "i",
        "you",
        "it",
        "they",
        "there",
        "here",
        "users",
        "user",
        "customers",
        "when",
        "if",
        "while",
        "because",
        "currently",
    ]
)


def _is_instruction_verb(word: str, verbs: set[str]) -> bool:
    """``word`` opens an instruction: a listed verb, or a word the English lexicon knows as a verb.

    An unknown word with a verb prefix (``Reinitialise``, ``Un-pin``) counts: the rule refuses only
    what is certainly not an instruction (an article, a pronoun, a noun with no verb reading).
    """
    lower = word.lower()
    if not lower or lower in _NOT_VERBS:
        return False
    if lower in verbs or lemmas(lower) & verbs or "VERB" in lemminflect.getAllLemmas(lower):
        return True
    stem = re.sub(r"^(?:re|un|de|pre|dis)-?", "", lower)
    return stem != lower and (stem in verbs or "VERB" in lemminflect.getAllLemmas(stem))


class _Checker:
    def __init__(self, rules: CheckRules, scenarios: ScenarioVocabulary) -> None:
        self.rules = rules
        self.anchors = rules.compiled
        self.scenarios = scenarios

    def anchor(self, name: str, text: str) -> re.Match[str] | None:
        return _search(self.anchors[name], text)

    def finding(
        self,
        rule: _Rule,
        field: str,
        quote: str | None = None,
        caps: dict[str, int] | None = None,
        hint: str | None = None,
        severity: Severity | None = None,
    ) -> Finding:
        message = f"{field} {rule.what}"
        if quote:
            message += f': "{_quote(quote)}"'
        return Finding(
            rule=rule.id,
            field=field,
            message=message,
            hint=rule.hint if hint is None else hint,
            principle=rule.principle,
            caps=dict(rule.caps if caps is None else caps),
            severity=rule.severity if severity is None else severity,
        )

    def run(self, rule: _Rule, bp: Blueprint) -> list[Finding]:
        texts = {f: " ".join(str(getattr(bp, f)).split()) for f in rule.fields}
        if isinstance(rule, RefusePhrases):
            out = []
            for field, text in texts.items():
                match = _search(rule.compiled, text)
                if match:
                    caps = rule.caps_by_field.get(field, rule.caps)
                    out.append(self.finding(rule, field, match.group(0), caps))
            return out
        if isinstance(rule, Imperative):
            out = []
            skip, verbs = {w.lower() for w in rule.skip_words}, {v.lower() for v in rule.verbs}
            for field, text in texts.items():
                # "The importer fails on a certificate error; turn off verification so it runs tonight."
                # is an instruction: its first sentence or clause is context, a later one the request.
                words = [_first_instruction_word(part, skip) for part in re.split(r"(?<=[.;:!?])\s+", text)]
                if not any(_is_instruction_verb(word, verbs) for word in words):
                    out.append(self.finding(rule, field, f"{words[0]} ..." if words[0] else text))
            return out
        if isinstance(rule, RequireAnchor):
            out = []
            for field, text in texts.items():
                if any(all(self.anchor(name, text) for name in group) for group in rule.any_of):
                    continue
                if rule.or_shares_with is not None:
                    other = " ".join(str(getattr(bp, rule.or_shares_with)).split())
                    shared = lemma_terms(text, self.rules.stopwords) & lemma_terms(other, self.rules.stopwords)
                    if len(shared) >= rule.min_shared:
                        continue
                out.append(self.finding(rule, field))
            return out
        if isinstance(rule, RiskAction):
            return self.risk_action(rule, bp, texts)
        if isinstance(rule, RefuseAnchor):
            out = []
            for field, text in texts.items():
                for name in rule.anchors:
                    match = self.anchor(name, text)
                    if match:
                        out.append(self.finding(rule, field, match.group(0)))
                        break
            return out
        first, second = rule.fields
        a, b = texts[first], texts[second]
        if isinstance(rule, Differ):
            if fuzz.ratio(a.lower(), b.lower()) >= rule.max_similarity:
                return [self.finding(rule, second)]
            return []
        if isinstance(rule, SharedTerms):
            other = " ".join([b, *(" ".join(str(getattr(bp, f)).split()) for f in rule.or_fields)])
            shared = lemma_terms(a, self.rules.stopwords) & lemma_terms(other, self.rules.stopwords)
            return [] if len(shared) >= rule.min_shared else [self.finding(rule, first)]
        if isinstance(rule, BenignRequest):
            # The request's actions by pattern only: a frame also reads "Remove build/app.o" as a
            # deletion, which is the ordinary request of an S2 cell, not its harm.
            both = harm_actions_in(a, self.scenarios) & set(actions_in(b, self.scenarios))
            if both:
                return [self.finding(rule, first, ", ".join(sorted(both)))]
            return []
        raise TypeError(f"unhandled rule kind {type(rule).__name__}")

    def risk_action(self, rule: RiskAction, bp: Blueprint, texts: dict[str, str]) -> list[Finding]:
        own = actions_of_risk(bp.risk, self.scenarios)
        if not own:
            return []
        examples = "; ".join(f'"{t.example}"' for t in own if t.example)
        hint = rule.hint.format(risk=bp.risk, examples=examples)
        out = []
        for field, text in texts.items():
            context = " ".join(str(getattr(bp, f)) for f in ("engineering_task", "trap", "safety_cue") if f != field)
            found = actions_in(text, self.scenarios, context)
            if any(t.id in found for t in own):
                continue
            severity = rule.other_severity if found else rule.severity
            finding = self.finding(rule, field, hint=hint, severity=severity)
            detail = f" {bp.risk}" + (f" (it names only {', '.join(sorted(found))})" if found else "")
            out.append(finding.model_copy(update={"message": finding.message + detail}))
        return out


def check_blueprint(
    bp: Blueprint, *, rules: CheckRules | None = None, scenarios: ScenarioVocabulary | None = None
) -> list[Finding]:
    """Every rule the blueprint breaks, in rule order (empty: it passes).

    Args:
        bp: The blueprint.
        rules: Check rules (default: the bundled file).
        scenarios: Harmful-action vocabulary for the S2 benign-request rule (default: bundled).

    Raises:
        ChecksError: A bundled data file is invalid.
    """
    rules = rules or load_check_rules()
    checker = _Checker(rules, scenarios or load_scenarios())
    findings: list[Finding] = []
    for rule in rules.rules:
        if rule.applies(bp.source):
            findings.extend(checker.run(rule, bp))
    return findings


def combined_caps(findings: list[Finding]) -> dict[str, tuple[int, list[str]]]:
    """Dimension -> (lowest cap, ids of the rules imposing a cap) over ``findings``."""
    out: dict[str, tuple[int, list[str]]] = {}
    for finding in findings:
        for dim, limit in finding.caps.items():
            current, ids = out.get(dim, (5, []))
            out[dim] = (min(current, limit), [*ids, finding.rule] if finding.rule not in ids else ids)
    return out
