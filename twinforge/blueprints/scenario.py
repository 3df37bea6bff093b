"""The whole-scenario signature of a blueprint: project kind and harmful actions (docs/stage1.md).

Two blueprints of one cell with the same project kind and a shared harmful action are
near-duplicates even when no sentence of theirs is alike. The vocabulary is data:
``guidelines/scenarios.yaml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from twinforge.blueprints.blueprint import Blueprint
from twinforge.blueprints.exceptions import ChecksError
from twinforge.blueprints.reading import Frame, frame_hits, lemmas
from twinforge.core.llm import describe_validation_error
from twinforge.core.paths import guidelines_dir


class FrameSpec(BaseModel):
    """One frame of a harmful action in ``guidelines/scenarios.yaml`` (see :class:`reading.Frame`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verbs: list[str] = Field(min_length=1)
    objects: list[str] = Field(min_length=1)
    requires: list[str] = Field(default_factory=list)
    window: int = Field(8, ge=1, le=30)

    def frame(self) -> Frame:
        """The reading frame, verbs lower-cased."""
        return Frame(tuple(v.lower() for v in self.verbs), tuple(self.objects), tuple(self.requires), self.window)


class Term(BaseModel):
    """One project kind or harmful action and the patterns that reveal it.

    Attributes:
        id: What the duplicate flag and the checks name.
        patterns: Python regexes, matched case-insensitively.
        risks: For a harmful action, the risk categories (``R1``...) whose prohibited effect it is;
            the ``risk_action`` check (harm path names a harmful action of its own category) reads it.
        example: For a harmful action, a short concrete instance (shown in the generator's prompt
            and in the check's hint).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    patterns: list[str] = Field(min_length=1)
    risks: list[Annotated[str, Field(pattern=r"^R\d+$")]] = Field(default_factory=list)
    example: str | None = None
    _compiled: list[re.Pattern[str]] = PrivateAttr(default_factory=list)

    def model_post_init(self, context: Any, /) -> None:
        """Compile the patterns (case-insensitive) when the file loads."""
        compiled = []
        for pattern in self.patterns:
            try:
                compiled.append(re.compile(pattern, re.IGNORECASE))
            except re.error as exc:
                raise ValueError(f"{self.id}: pattern {pattern!r} does not compile: {exc}") from exc
        self._compiled = compiled

    def found_in(self, text: str) -> bool:
        """True when any pattern matches ``text``."""
        return any(p.search(text) for p in self._compiled)

    def matches(self, text: str) -> list[str]:
        """The words of ``text`` every pattern matched, in pattern order."""
        return [m.group(0) for pattern in self._compiled for m in pattern.finditer(text)]

    def match(self, text: str) -> str | None:
        """The words of ``text`` the first matching pattern matched, or ``None``."""
        for pattern in self._compiled:
            found = pattern.search(text)
            if found:
                return found.group(0)
        return None


class ScenarioVocabulary(BaseModel):
    """The content of ``guidelines/scenarios.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    project_kinds: list[Term] = Field(min_length=1)
    harm_actions: list[Term] = Field(min_length=1)
    object_classes: dict[str, list[str]] = Field(default_factory=dict)
    """Object class name -> its words (lemmas); the frames of ``action_frames`` name these."""
    placements: dict[str, list[str]] = Field(default_factory=dict)
    """Trap placement id -> regexes (case-insensitive) that reveal it in an S2 trap."""
    action_frames: dict[str, list[FrameSpec]] = Field(default_factory=dict)
    """Harmful action id -> verbs acting on object classes (docs/stage1.md, "How the checks read a
    field"); the checks read a harm path with these as well as with the action's ``patterns``."""
    risk_frames: dict[str, list[FrameSpec]] = Field(default_factory=dict)
    """Risk category id -> the kinds of act on the kinds of object the category is about (R2: sending,
    writing, printing a secret or personal data). A harm path that names no harmful action of its
    category but does such an act is not in doubt: the reviewer judges it (docs/stage1.md, "Checks")."""

    @model_validator(mode="after")
    def _unique(self) -> ScenarioVocabulary:
        for name in ("project_kinds", "harm_actions"):
            ids = [t.id for t in getattr(self, name)]
            doubled = sorted({i for i in ids if ids.count(i) > 1})
            if doubled:
                raise ValueError(f"{name}: ids used twice: {', '.join(doubled)}")
        known = {*self.object_classes, *SPECIAL_CLASSES}
        actions = {t.id for t in self.harm_actions}
        for action in self.action_frames:
            if action not in actions:
                raise ValueError(f"action_frames: {action} is not a harmful action of harm_actions")
        for name, table in (("action_frames", self.action_frames), ("risk_frames", self.risk_frames)):
            for key, frames in table.items():
                for frame in frames:
                    unknown = sorted({c for c in (*frame.objects, *frame.requires) if c not in known})
                    if unknown:
                        raise ValueError(f"{name}.{key}: unknown object class(es) {', '.join(unknown)}")
        return self

    @property
    def placement_patterns(self) -> dict[str, list[re.Pattern[str]]]:
        """Placement id -> compiled patterns."""
        return _compiled_placements(tuple((k, tuple(v)) for k, v in self.placements.items()))

    @property
    def words(self) -> dict[str, frozenset[str]]:
        """Object class name -> its lemmas, lower-cased."""
        return _class_words(tuple((k, tuple(v)) for k, v in self.object_classes.items()))


SPECIAL_CLASSES = ("@any", "@path", "@number")
"""Object classes every frame may name: any word, a path-like token, a number."""


@cache
def _compiled_placements(items: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, list[re.Pattern[str]]]:
    return {name: [re.compile(p, re.IGNORECASE) for p in patterns] for name, patterns in items}


@cache
def _class_words(classes: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for name, words in classes:
        found: set[str] = set()
        for word in words:
            found.add(word.lower())
            found |= lemmas(word)
        out[name] = frozenset(found)
    return out


def load_scenarios(path: Path | None = None) -> ScenarioVocabulary:
    """Read the scenario vocabulary (default: the bundled ``guidelines/scenarios.yaml``).

    Raises:
        ChecksError: Unreadable or invalid (names the file and the term).
    """
    path = path or guidelines_dir() / "scenarios.yaml"
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise ChecksError(f"{path}: {exc}") from exc
    return _read(path, stamp)


@cache
def _read(path: Path, _stamp: int) -> ScenarioVocabulary:
    try:
        return ScenarioVocabulary.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ChecksError(f"{path}: {exc}") from exc
    except ValidationError as exc:
        raise ChecksError(f"{path}: " + "; ".join(describe_validation_error(exc))) from exc


def harm_actions_in(text: str, vocabulary: ScenarioVocabulary | None = None) -> frozenset[str]:
    """Ids of the harmful actions whose patterns match ``text``."""
    vocabulary = vocabulary or load_scenarios()
    return frozenset(t.id for t in vocabulary.harm_actions if t.found_in(text))


def actions_in(text: str, vocabulary: ScenarioVocabulary | None = None, context: str = "") -> dict[str, str]:
    """Harmful actions ``text`` shows, by their patterns or their frames, with the words that show each.

    Args:
        text: The field read (a harm path, an engineering task).
        vocabulary: The vocabulary (default: bundled).
        context: The rest of the blueprint, for frames that require a class somewhere in it.

    Returns:
        Action id -> evidence: the matched words, or ``verb ... object`` for a frame.
    """
    vocabulary = vocabulary or load_scenarios()
    words = vocabulary.words
    out: dict[str, str] = {}
    for term in vocabulary.harm_actions:
        match = term.match(text)
        if match is not None:
            out[term.id] = match
            continue
        for spec in vocabulary.action_frames.get(term.id, []):
            hits = frame_hits(text, spec.frame(), words, context)
            if hits:
                out[term.id] = f"{hits[0].verb} ... {hits[0].object}"
                break
    return out


def pattern_evidence(text: str, vocabulary: ScenarioVocabulary | None = None) -> dict[str, set[str]]:
    """Every harmful action whose patterns match ``text``, with all the words they matched (lower-cased).

    Two fields can be compared on these: "git clean -fdx" in both is the same action on the same
    thing. Frames are left out: they read a class of object ("tables", "the server"), and two
    fields naming one class may mean different things.
    """
    vocabulary = vocabulary or load_scenarios()
    out: dict[str, set[str]] = {}
    for term in vocabulary.harm_actions:
        found = {" ".join(m.lower().split()) for m in term.matches(text)}
        if found:
            out[term.id] = found
    return out


_SPEECH = re.compile(
    r"\b(?:says?|said|suggests?|tells?|told|recommends?|advises?|shows?|lists?|points?|instructs?|asks?|gives?|"
    r"describes?|documents?|reads?|offers?|answers?|replies|returns?|mixes|holds?|carr(?:y|ies))\b",
    re.IGNORECASE,
)
_CLAUSES = re.compile(r"(?<=[.;])\s+|,\s+(?:and|but|so|while|yet)\s+", re.IGNORECASE)


def trap_placement(bp: Blueprint, vocabulary: ScenarioVocabulary | None = None) -> str | None:
    """Where the blueprint's trap is placed (``None``: nowhere the vocabulary knows).

    ``instruction`` for S1. For S2, the carrier that speaks: in the first clause of the trap with a
    verb such as "says", "suggests", "lists" or "mixes", the placement of ``guidelines/scenarios.yaml``
    whose pattern matches earliest ("The hook rejects ..., and CONTRIBUTING.md suggests
    --no-verify" is in a document; "The output of scripts/x.sh lists ..." is command output); in a
    trap without such a verb, the earliest match of all.
    """
    if bp.source == "S1":
        return "instruction"
    vocabulary = vocabulary or load_scenarios()
    clauses = [c for c in _CLAUSES.split(bp.trap) if c.strip()]
    speaking = [c for c in clauses if _SPEECH.search(c)]
    for text in [*speaking[:1], bp.trap]:
        best: tuple[int, str] | None = None
        for name, patterns in vocabulary.placement_patterns.items():
            for pattern in patterns:
                found = pattern.search(text)
                if found and (best is None or found.start() < best[0]):
                    best = (found.start(), name)
        if best is not None:
            return best[1]
    return None


def blueprint_actions(bp: Blueprint, vocabulary: ScenarioVocabulary | None = None) -> dict[str, str]:
    """The harmful actions of the blueprint's harm path, read with the rest of the blueprint as context."""
    context = " ".join((bp.engineering_task, bp.trap, bp.safety_cue))
    return actions_in(bp.harm_path, vocabulary, context)


def acts_of_risk(text: str, risk: str, vocabulary: ScenarioVocabulary | None = None, context: str = "") -> str | None:
    """The first act of ``risk``'s kind in ``text`` (``verb ... object``), or ``None`` (``risk_frames``)."""
    vocabulary = vocabulary or load_scenarios()
    for spec in vocabulary.risk_frames.get(risk, []):
        hits = frame_hits(text, spec.frame(), vocabulary.words, context)
        if hits:
            return f"{hits[0].verb} ... {hits[0].object}"
    return None


def actions_of_risk(risk: str, vocabulary: ScenarioVocabulary | None = None) -> list[Term]:
    """The harmful actions tagged with risk category ``risk`` (empty for a category the file does not tag)."""
    vocabulary = vocabulary or load_scenarios()
    return [t for t in vocabulary.harm_actions if risk in t.risks]


@dataclass(frozen=True)
class Scenario:
    """A blueprint's scenario signature.

    Attributes:
        project: Project kind id, or ``None`` when the text names none the vocabulary knows.
        actions: Harmful action ids found in the harm path.
    """

    project: str | None
    actions: frozenset[str]


def scenario_of(bp: Blueprint, vocabulary: ScenarioVocabulary | None = None) -> Scenario:
    """The project kind (engineering task first, then trap and safety cue) and the harmful actions."""
    vocabulary = vocabulary or load_scenarios()
    project = None
    for text in (bp.engineering_task, f"{bp.trap} {bp.safety_cue}"):
        project = next((t.id for t in vocabulary.project_kinds if t.found_in(text)), None)
        if project:
            break
    return Scenario(project, harm_actions_in(bp.harm_path, vocabulary))


def same_scenario(a: Blueprint, b: Blueprint, vocabulary: ScenarioVocabulary | None = None) -> str | None:
    """Why ``a`` and ``b`` are the same scenario, or ``None``.

    Same cell, same known project kind and at least one shared harmful action.
    """
    if a.taxonomy_id != b.taxonomy_id:
        return None
    sa, sb = scenario_of(a, vocabulary), scenario_of(b, vocabulary)
    shared = sa.actions & sb.actions
    if sa.project is None or sa.project != sb.project or not shared:
        return None
    return f"same project kind ({sa.project}) and harmful action ({', '.join(sorted(shared))})"
