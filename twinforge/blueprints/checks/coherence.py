"""Coherence of a blueprint's fields with each other (docs/stage1.md, "Checks: defects and doubts").

Three readings that compare fields rather than read one:

- fields that repeat each other (:func:`repeated_fields`): five fields that are the same file path
  describe no scenario; certainly wrong, so a defect where the rules file says so;
- the safe path taking the harm path's action on the same object (:func:`same_action_findings`):
  the action and its object are compared, not the pattern, so ``rm -rf build/`` beside a harm
  ``rm -rf data/`` and ``--force-with-lease`` beside ``--force`` are different acts; the same act on
  the same object, unconditioned, is certain, one whose object cannot be compared is a doubt;
- a host outside the machine that nothing local can check (:func:`locally_checkable`): a local
  stand-in named for it, or state on this machine to observe, makes the pair simulable.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rapidfuzz import fuzz

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.checks.rules import ExternalHost, RepeatFields, SameAction
from twinforge.blueprints.findings import Finding, Severity
from twinforge.blueprints.scenario import pattern_evidence

if TYPE_CHECKING:
    from twinforge.blueprints.checks.text import TextChecker

_CLAUSES = re.compile(r"(?<=[.;])\s+|,\s+(?:and|but|then)\s+|\s+and then\s+", re.IGNORECASE)
"""Where a negation's or a condition's reach ends (the clause of an action)."""
_OBJECT_CLAUSE = re.compile(r"(?<=[.;])\s+|,\s*|\s+(?:and|then|but)\s+", re.IGNORECASE)
"""Where an action's object ends."""
_LEFT_ALONE = re.compile(r"\b(?:unchanged|untouched|alone|intact|as it is|as they are|in place)\b", re.IGNORECASE)
_OBJECT_END = re.compile(
    r"\b(?:to|so|which|that|as|because|for|from|with|after|before|while|until|on|in|against|into|dropping|deleting|"
    r"discarding|removing|overwriting)\b|[,;:()]",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"[^\s`'\"]+")
_FILLER = frozenset({"the", "a", "an", "all", "its", "their", "this", "that", "every", "whole", "it"})


def _normal(text: str) -> str:
    return " ".join(text.casefold().split()).strip(" .;:")


def repeated_fields(rule: RepeatFields, bp: Blueprint, checker: TextChecker) -> list[Finding]:
    """One finding per field that repeats an earlier one of ``rule.fields`` (ratio >= ``min_similarity``)."""
    texts = {name: _normal(str(getattr(bp, name))) for name in rule.fields}
    out = []
    names = list(rule.fields)
    for index, name in enumerate(names):
        same = [other for other in names[:index] if fuzz.ratio(texts[other], texts[name]) >= rule.min_similarity]
        if same:
            lenient = {name, *same} & set(rule.doubt_with) and len(same) == 1
            detail = f" ({', '.join(same)})"
            severity: Severity = "doubt" if lenient else rule.severity
            out.append(checker.finding(rule, name, str(getattr(bp, name)), detail=detail, severity=severity))
    return out


def _objects(text: str, at: int, thing: str) -> set[str]:
    """What the action at ``text[at:]`` acts on: the words after it in its clause, flags left out.

    The matched words themselves count when they hold a path (``rm -rf data/``).
    """
    rest = _OBJECT_CLAUSE.split(text[at + len(thing) :], maxsplit=1)[0]
    end = _OBJECT_END.search(rest)
    span = rest[: end.start()] if end else rest
    own = {w.lower() for w in _TOKEN.findall(thing)}
    out = set()
    for word in _TOKEN.findall(thing + " " + span):
        word = word.strip(".,;:!?()").lower()
        if not word or word.startswith("-") or word in _FILLER or (word in own and not _is_path(word)):
            continue
        out.add(word.rstrip("/") or word)
    return out


def _flags(text: str, at: int, thing: str) -> tuple[str, ...]:
    """The flags right after the action's words, as written (``-fdX`` is not ``-fdx``)."""
    out = []
    for word in _TOKEN.findall(_OBJECT_CLAUSE.split(text[at + len(thing) :], maxsplit=1)[0]):
        if not word.startswith("-"):
            break
        out.append(word.strip(".,;:"))
    return tuple(out)


_WHERE = re.compile(r"\b(?:on|in|inside|under|against|within)\s+(?:the\s+|that\s+|this\s+)?([\w./~-]+)", re.IGNORECASE)


def _where(clause: str) -> str | None:
    """Where the rest of an action's clause places it ("on that branch", "in staging"), if it says."""
    match = _WHERE.search(clause)
    return match.group(1).lower().rstrip(".") if match else None


def _is_path(word: str) -> bool:
    return "/" in word or word.startswith(("~", ".")) or "." in word.strip(".")


def _same_object(harm: set[str], safe: set[str]) -> bool | None:
    """The same object (``True``), another one (``False``), or cannot tell (``None``: one names none).

    The same words, or a path both name; ``origin main`` and ``origin feature/login`` differ.
    """
    if not harm or not safe:
        return None
    return harm == safe or bool({w for w in harm & safe if _is_path(w)})


def _clause_start(text: str, at: int) -> int:
    return max((m.end() for m in _CLAUSES.finditer(text[:at])), default=0)


def same_action_findings(rule: SameAction, bp: Blueprint, harm: str, safe: str, checker: TextChecker) -> list[Finding]:
    """The safe path takes a harmful action of the harm path on the same object, not negated.

    Both paths may name one kind of action on different objects ("delete build/app.o" is the safe
    twin of "delete data/"), or the same command with another flag (``--force-with-lease``,
    ``-fdX`` beside ``-fdx``): only the same words matched by one action's patterns in both, as
    written (flags are case-sensitive) and not continued by another flag, count. Then the objects
    are compared: the same object, no negation ("never", "instead of", ...) and no condition ("if",
    "ask", ...) in its clause is certain (``rule.certain``); an action whose object cannot be read in
    either path is a doubt; different objects are fine.
    """
    done, again = pattern_evidence(harm, checker.scenarios), pattern_evidence(safe, checker.scenarios)
    words = re.compile(
        r"\b(?:" + "|".join(re.escape(n) for n in sorted(rule.negations, key=len, reverse=True)) + r")\b", re.IGNORECASE
    )
    conditions = re.compile(
        r"\b(?:" + "|".join(re.escape(c) for c in sorted(rule.conditions, key=len, reverse=True)) + r")\b",
        re.IGNORECASE,
    )
    certain: list[str] = []
    possible: list[str] = []
    harm_lower, safe_lower = harm.lower(), safe.lower()
    for action in sorted(set(done) & set(again)):
        for thing in sorted(done[action] & again[action]):
            at, from_harm = safe_lower.find(thing), harm_lower.find(thing)
            if at < 0 or from_harm < 0:
                continue
            written = safe[at : at + len(thing)]
            if written != harm[from_harm : from_harm + len(thing)] or re.match(r"[\w-]", safe[at + len(thing) :]):
                continue  # another flag: -fdX is not -fdx, --force-with-lease is not --force
            harm_flags, safe_flags = _flags(harm, from_harm, thing), _flags(safe, at, thing)
            if harm_flags and safe_flags and harm_flags != safe_flags:
                continue  # the same command with other flags: git clean -fdX beside git clean -fdx
            start = _clause_start(safe, at)
            if words.search(safe[start:at]):
                continue
            clause_end = _CLAUSES.split(safe[at + len(thing) :], maxsplit=1)[0]
            if _LEFT_ALONE.search(clause_end):
                continue  # "leave ~/.bashrc unchanged": named, not acted on
            harm_objects, safe_objects = _objects(harm, from_harm, thing), _objects(safe, at, thing)
            same = _same_object(harm_objects, safe_objects)
            if same is False:
                continue  # the same kind of act on another object
            conditional = rule.conditions and conditions.search(safe[start : at + len(thing) + len(clause_end)])
            where = _where(clause_end)
            elsewhere = where is not None and where != _where(_CLAUSES.split(harm[from_harm + len(thing) :], 1)[0])
            acts = any(not _is_path(w) for w in _TOKEN.findall(thing))  # ".bashrc" alone names a file, not an act
            on = " ".join(sorted(harm_objects & safe_objects - {w.lower().rstrip("/") for w in _TOKEN.findall(thing)}))
            said = f"{action}: {thing}" + (f" {on}" if on else "")
            (certain if same and acts and not conditional and not elsewhere else possible).append(said)
            break
    field = rule.fields[1]
    if certain:
        return [checker.finding(rule, field, "; ".join(certain), severity=rule.certain or rule.severity)]
    return [checker.finding(rule, field, "; ".join(possible))] if possible else []


def locally_checkable(rule: ExternalHost, bp: Blueprint, checker: TextChecker, hosts: list[str]) -> bool:
    """A local stand-in is named for the hosts, or the harm leaves state on this machine to observe.

    ``hosts`` are left out of the text first: a host name is not a file.
    """
    texts = [" ".join(str(getattr(bp, name)).split()) for name in rule.fields]
    if any(checker.anchor(name, text) for name in rule.stand_in for text in texts):
        return True
    for name in rule.local_fields:
        text = " ".join(str(getattr(bp, name)).split())
        for host in hosts:
            text = text.replace(host, " ")
        if any(all(checker.anchor(anchor, text) for anchor in group) for group in rule.local_state):
            return True
    return False
