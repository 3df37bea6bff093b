"""The text rules: each reads fields of one blueprint and quotes what it found (docs/stage1.md, "Checks").

Every rule here judges meaning through words, so each is a doubt unless the rules file says
otherwise (``guidelines/blueprint-checks.yaml``); the length bound and the pasted example are the
two text rules that are defects (certainly wrong, decidable by machine).
"""

from __future__ import annotations

import re

import lemminflect
from rapidfuzz import fuzz

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.checks.coherence import repeated_fields, same_action_findings
from twinforge.blueprints.checks.rules import (
    BenignRequest,
    CheckRules,
    Differ,
    Imperative,
    LengthBound,
    PastedExample,
    RefuseAnchor,
    RefusePhrases,
    RepeatFields,
    RequireAnchor,
    RiskAction,
    SameAction,
    SharedTerms,
    _Rule,
)
from twinforge.blueprints.findings import Finding, Severity
from twinforge.blueprints.reading import lemmas
from twinforge.blueprints.scenario import (
    ScenarioVocabulary,
    actions_in,
    actions_of_risk,
    acts_of_risk,
    harm_actions_in,
)

_WORD = re.compile(r"[a-z0-9][a-z0-9._/-]*[a-z0-9]|[a-z0-9]")
_QUOTE_CHARS = 80
HINT_EXAMPLE = re.compile(r'"([^"]{12,}?)\.?"')  # a quoted example in a rule's hint


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


class TextChecker:
    """Runs the text rules of one rules file against blueprints.

    Args:
        rules: The rules.
        scenarios: The harmful-action vocabulary (category actions, the S2 benign-request rule).
    """

    def __init__(self, rules: CheckRules, scenarios: ScenarioVocabulary) -> None:
        self.rules = rules
        self.anchors = rules.compiled
        self.scenarios = scenarios

    def anchor(self, name: str, text: str) -> re.Match[str] | None:
        """The first match of anchor set ``name`` in ``text``."""
        return _search(self.anchors[name], text)

    def finding(
        self,
        rule: _Rule,
        field: str,
        quote: str | None = None,
        caps: dict[str, int] | None = None,
        hint: str | None = None,
        severity: Severity | None = None,
        detail: str = "",
    ) -> Finding:
        """A finding of ``rule`` on ``field``, quoting ``quote`` when given."""
        message = f"{field} {rule.what}{detail}"
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
        """The findings of one rule on ``bp`` (empty: it passes)."""
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
            return self.imperative(rule, texts)
        if isinstance(rule, RequireAnchor):
            return self.require_anchor(rule, bp, texts)
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
        if isinstance(rule, LengthBound):
            return [
                self.finding(rule, field, detail=f" ({len(str(getattr(bp, field)))} > {limit} characters)")
                for field, limit in rule.max_chars.items()
                if field in rule.fields and len(str(getattr(bp, field))) > limit
            ]
        if isinstance(rule, PastedExample):
            return self.pasted_example(rule, bp)
        if isinstance(rule, RepeatFields):
            return repeated_fields(rule, bp, self)
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
        if isinstance(rule, SameAction):
            return self.same_action(rule, bp, a, b)
        raise TypeError(f"unhandled rule kind {type(rule).__name__}")

    def imperative(self, rule: Imperative, texts: dict[str, str]) -> list[Finding]:
        """Fields in which no sentence or clause opens with an instruction verb."""
        out = []
        skip, verbs = {w.lower() for w in rule.skip_words}, {v.lower() for v in rule.verbs}
        for field, text in texts.items():
            # "The importer fails on a certificate error; turn off verification so it runs tonight."
            # is an instruction: its first sentence or clause is context, a later one the request.
            words = [_first_instruction_word(part, skip) for part in re.split(r"(?<=[.;:!?])\s+", text)]
            if not any(_is_instruction_verb(word, verbs) for word in words):
                out.append(self.finding(rule, field, f"{words[0]} ..." if words[0] else text))
        return out

    def require_anchor(self, rule: RequireAnchor, bp: Blueprint, texts: dict[str, str]) -> list[Finding]:
        """Fields matching no group of the rule's anchor sets (nor sharing words with ``or_shares_with``)."""
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

    def risk_action(self, rule: RiskAction, bp: Blueprint, texts: dict[str, str]) -> list[Finding]:
        """Fields naming no harmful action tagged with the blueprint's risk category."""
        own = actions_of_risk(bp.risk, self.scenarios)
        if not own:
            return []
        examples = "; ".join(f'"{t.example}"' for t in own if t.example)
        hint = rule.hint.format(risk=bp.risk, examples=examples)
        out = []
        for field, text in texts.items():
            found = actions_in(text, self.scenarios, _context(bp, field))
            if any(t.id in found for t in own):
                continue
            if acts_of_risk(text, bp.risk, self.scenarios, _context(bp, field)) is not None:
                continue  # no known action of its own, but an act on its category's kind of object: the reviewer judges
            detail = f" {bp.risk}" + (f" (it names only {', '.join(sorted(found))})" if found else "")
            out.append(self.finding(rule, field, hint=hint, detail=detail))
        return out

    def same_action(self, rule: SameAction, bp: Blueprint, harm: str, safe: str) -> list[Finding]:
        """The safe path takes a harmful action of the harm path on the same object (``checks/coherence.py``)."""
        return same_action_findings(rule, bp, harm, safe, self)

    def pasted_example(self, rule: PastedExample, bp: Blueprint) -> list[Finding]:
        """Fields holding a hint's quoted example, or the category harm examples as they stand.

        The hints quote examples ("Delete only build/app.o and rerun make."); a real batch stored a
        blueprint whose safe path and criterion were two of them, and another one whose harm path
        was the category harm examples joined by ";" (docs/stage1.md, "Where the rules come from").
        """
        examples = [e for r in self.rules.rules for e in HINT_EXAMPLE.findall(r.hint)]
        harm_examples = {t.example.lower() for t in self.scenarios.harm_actions if t.example}
        out = []
        for field in rule.fields:
            text = " ".join(str(getattr(bp, field)).split()).lower()
            pasted = next((e for e in examples if e.lower() in text), None)
            if pasted is None:
                parts = [part.strip(" .") for part in re.split(r"[;\n]", text) if part.strip(" .")]
                hits = [part for part in parts if part in harm_examples]
                if hits and (len(hits) >= 2 or len(parts) == 1):
                    pasted = hits[0]
            if pasted is not None:
                out.append(self.finding(rule, field, pasted))
        return out


def _context(bp: Blueprint, field: str) -> str:
    """The rest of the blueprint a harmful action is read with (a frame's ``requires`` looks there)."""
    return " ".join(str(getattr(bp, f)) for f in ("engineering_task", "trap", "safety_cue") if f != field)
