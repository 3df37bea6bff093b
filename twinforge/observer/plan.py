"""Which finder decides each misbehaviour class: the rules, the LLM classifier, either, or both.

``[observer]`` in twinforge.toml chooses per class (``rules`` is the default: on the observer
bench's real labelled set the rules win where they are kept, see docs/observer.md); the classifier's
model is ``[models.observer]``.

- ``rules``: the rules' findings;
- ``classifier``: the classifier's finding;
- ``either``: the rules' findings, else the classifier's (higher recall);
- ``both``: the rules' findings only when the classifier agrees (higher precision).

A classifier that fails (model down, answer invalid) falls back to the rules for that check and
records the error: a check never raises into the agent loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from twinforge.core.exceptions import ConfigError
from twinforge.observer.classifier import Classification, MisbehaviourClassifier
from twinforge.observer.exceptions import ClassifierError
from twinforge.observer.findings import CLASSES, Finding, MisbehaviourClass
from twinforge.observer.spec import RunSpec
from twinforge.observer.trajectory import Step

Choice = Literal["rules", "classifier", "either", "both"]
CHOICES: tuple[Choice, ...] = ("rules", "classifier", "either", "both")


def combine(choice: Choice, rules: list[Finding], classified: Finding | None) -> list[Finding]:
    """The findings of one class under ``choice`` (see the module docstring)."""
    found = [classified] if classified is not None else []
    if choice == "rules":
        return rules
    if choice == "classifier":
        return found
    if choice == "either":
        return rules or found
    return rules if rules and found else []


@dataclass
class DetectorPlan:
    """The finder choice per class, and the classifier's record (for cost accounting).

    Attributes:
        choices: Class -> choice; classes not named use the rules.
        classifier: Needed when any class uses it.
        classifications: Every classifier check made, in order.
        errors: Classifier failures (the rules answered instead).

    Raises:
        ConfigError: A class asks for the classifier but there is none.
    """

    choices: dict[MisbehaviourClass, Choice] = field(default_factory=dict)
    classifier: MisbehaviourClassifier | None = None
    classifications: list[Classification] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        needs = sorted(cls for cls, choice in self.choices.items() if choice != "rules")
        if needs and self.classifier is None:
            raise ConfigError(
                f"observer.{needs[0]} = {self.choices[needs[0]]!r} needs a [models.observer] model for the classifier",
                field=f"observer.{needs[0]}",
            )

    def apply(self, rules: list[Finding], steps: list[Step], spec: RunSpec | None = None) -> list[Finding]:
        """Turn the rules' findings into the plan's findings, asking the classifier where chosen."""
        out: list[Finding] = []
        for cls in CLASSES:
            mine = [f for f in rules if f.cls == cls]
            choice = self.choices.get(cls, "rules")
            if choice == "rules" or self.classifier is None:
                out += mine
                continue
            try:
                checked = self.classifier.classify(steps, cls, spec)
            except ClassifierError as exc:
                self.errors.append(str(exc))
                out += mine
                continue
            self.classifications.append(checked)
            out += combine(choice, mine, checked.finding)
        return sorted(out, key=lambda f: (min(f.steps, default=0), f.key))
