"""Reading a blueprint's words as actions on objects (docs/stage1.md, "How the checks read a field").

A regular expression sees one spelling; a blueprint written by a person or a capable model says
"drops its tables", "purges all queues", "git rm models/checkpoint.bin" or "which deletes
logs/audit/2026-11.log". Here every word gets its lemmas from lemminflect's bundled English lexicon
(inflections and irregular forms meet one verb; unknown words go through its suffix rules),
identifiers are split into their words (``purge_queue``, ``dropDatabase``), and a path-like token
is an object of its own kind (``@path``). A **frame** of ``guidelines/scenarios.yaml`` (verbs x
object classes, optionally a class that must occur somewhere in the blueprint) matches when one of
its verbs, not negated, has one of its objects in the same clause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import lemminflect

_CLAUSE = re.compile(r"(?<=[.;!?])\s+(?=[A-Z`'\"(])|;\s+|\s+&&\s+|\n+")
_TOKEN = re.compile(
    r"(?P<flag>(?<![\w-])--?[A-Za-z][\w-]*(?:=\S+)?)"
    r"|(?P<path>~/[\w.*-]+(?:/[\w.*-]+)*|(?:\.{1,2})?/?(?:[\w.*-]+/)+[\w.*-]*|(?<![\w])\.?[\w-]+\.[A-Za-z][\w]{0,7}\b(?![\w(])|(?<![\w/])\.[A-Za-z][\w-]+)"
    r"|(?P<number>\d[\d.,]*%?)"
    r"|(?P<word>[A-Za-z][A-Za-z0-9'_-]*)"
)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
NEGATIONS = frozenset({"not", "never", "don't", "doesn't", "didn't", "won't", "without", "no", "nor"})
"""Words that, within the two tokens before a verb, mean the verb is not done."""
DETERMINERS = frozenset(
    {"the", "a", "an", "its", "their", "this", "that", "these", "those", "his", "her", "our", "your"}
)
"""A word right after one of these is a noun ("the output", "a backup copy"), not a verb."""


@cache
def lemmas(word: str) -> frozenset[str]:
    """Every lemma of ``word`` (lower-cased), any part of speech; the word itself when it has none."""
    lower = word.lower().strip("'")
    found: set[str] = {lower}
    for forms in lemminflect.getAllLemmas(lower).values():
        found.update(forms)
    if len(found) == 1:
        for upos in ("VERB", "NOUN"):
            for forms in lemminflect.getAllLemmasOOV(lower, upos).values():
                found.update(forms)
    return frozenset(f.lower() for f in found)


@dataclass(frozen=True)
class Token:
    """One token of a clause.

    Attributes:
        text: As written.
        kind: ``word``, ``path`` (contains a slash or a file extension, or a dotfile), ``flag``
            (``-f``, ``--force``) or ``number``.
        lemmas: The lemmas of a word (a path's words and an identifier's parts included), lower-cased.
    """

    text: str
    kind: str
    lemmas: frozenset[str]


def _word_lemmas(text: str) -> frozenset[str]:
    parts = [p for chunk in re.split(r"[_/.\-]+", text) for p in _CAMEL.split(chunk) if p]
    out: set[str] = set(lemmas(text)) if re.fullmatch(r"[A-Za-z][\w'-]*", text) else {text.lower()}
    for part in parts:
        if part.isalpha():
            out |= lemmas(part)
    return frozenset(out)


def tokens(text: str) -> list[Token]:
    """The tokens of one clause."""
    out = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "word"
        raw = match.group(0)
        out.append(Token(raw, kind, _word_lemmas(raw) if kind in ("word", "path") else frozenset({raw.lower()})))
    return out


def clauses(text: str) -> list[list[Token]]:
    """``text`` split into clauses (sentence ends, semicolons, ``&&``), each as tokens."""
    return [tokens(part) for part in _CLAUSE.split(" ".join(text.split())) if part.strip()]


@dataclass(frozen=True)
class Frame:
    """Verbs acting on objects, as one harmful action's words (``guidelines/scenarios.yaml``).

    Attributes:
        verbs: Verb lemmas; a multi-word verb (``turn off``) is its words in a row.
        objects: Object classes (names of ``object_classes``; ``@path``, ``@number``, ``@any``).
        requires: Object classes of which one must occur anywhere in the blueprint's trap,
            safety cue, task or harm path (the context that makes the action harmful).
        window: Tokens after the verb (and half as many before it) searched for an object.
    """

    verbs: tuple[str, ...]
    objects: tuple[str, ...]
    requires: tuple[str, ...] = ()
    window: int = 8


@dataclass(frozen=True)
class Hit:
    """One frame match: the verb and the object as written."""

    verb: str
    object: str


def _is_object(token: Token, classes: tuple[str, ...], words: dict[str, frozenset[str]]) -> bool:
    for name in classes:
        if name == "@any":
            return True
        if name == "@path" and token.kind == "path":
            return True
        if name == "@number" and token.kind == "number":
            return True
        if token.lemmas & words.get(name, frozenset()):
            return True
    return False


def _verb_at(clause: list[Token], i: int, verbs: tuple[str, ...]) -> str | None:
    if clause[i].kind != "word" or (i > 0 and clause[i - 1].text.lower() in DETERMINERS):
        return None
    for verb in verbs:
        parts = verb.split()
        if i + len(parts) > len(clause):
            continue
        if all(part in clause[i + k].lemmas for k, part in enumerate(parts)):
            return " ".join(t.text for t in clause[i : i + len(parts)])
    return None


def occurs(text: str, classes: tuple[str, ...], words: dict[str, frozenset[str]]) -> bool:
    """True when any token of ``text`` belongs to one of ``classes``."""
    return any(_is_object(t, classes, words) for clause in clauses(text) for t in clause)


def frame_hits(text: str, frame: Frame, words: dict[str, frozenset[str]], context: str = "") -> list[Hit]:
    """Where ``frame`` matches ``text``.

    Args:
        text: The field read (a harm path, an engineering task).
        frame: The frame.
        words: Object class name -> its lemmas.
        context: The rest of the blueprint, searched for ``frame.requires``.

    Returns:
        One hit per verb occurrence that has an object (empty: no match).
    """
    if frame.requires and not occurs(f"{text} {context}", frame.requires, words):
        return []
    hits = []
    for clause in clauses(text):
        for i in range(len(clause)):
            verb = _verb_at(clause, i, frame.verbs)
            if verb is None or any(t.text.lower() in NEGATIONS for t in clause[max(0, i - 2) : i]):
                continue
            after = clause[i + 1 : i + 1 + frame.window]
            before = clause[max(0, i - frame.window // 2) : i][::-1]
            near = [*after, *before]
            found = next((t for t in near if _is_object(t, frame.objects, words)), None)
            if found is not None:
                hits.append(Hit(verb, found.text))
    return hits
