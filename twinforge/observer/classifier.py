"""LLM misbehaviour classifiers: one binary question per class over a trajectory prefix.

The design follows Wink's detectors (an LLM binary classifier per misbehaviour class, calibrated
on labelled trajectories): the prompt of each class is a jinja2 template in
``guidelines/observer/classify-<class>.j2``; the trajectory prefix goes in, ``{"present", "step",
"evidence"}`` comes out through the structured-output layer (validated, re-asked once). A prompt's
version id (sha256 of its templates) is recorded on every result, so a prompt change shows.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from pydantic import BaseModel, field_validator

from twinforge.core.exceptions import ModelCallError, StructuredOutputError
from twinforge.core.llm import ChatModel, Completion, Message, Usage, request_object
from twinforge.core.paths import guidelines_dir
from twinforge.observer.exceptions import ClassifierError
from twinforge.observer.findings import Finding, MisbehaviourClass
from twinforge.observer.spec import RunSpec
from twinforge.observer.trajectory import Step

NAMES: dict[MisbehaviourClass, str] = {
    "reasoning": "a reasoning problem (a loop)",
    "tool_failure": "a tool-call failure",
    "drift": "specification drift",
}
CONFIDENCE = 0.8
"""Confidence given to a classifier finding: above the observer's 0.7 action threshold, below the
rules' exact matches (0.9-0.95)."""


class ClassifierVerdict(BaseModel):
    """The classifier's answer for one class."""

    present: bool
    """The misbehaviour is in the trajectory."""
    step: int | None = None
    """The step that shows it most clearly (1-based), ``None`` when absent."""
    evidence: str = ""
    """One sentence quoting what was seen (cut to 300 characters)."""

    @field_validator("evidence")
    @classmethod
    def _short(cls, value: str) -> str:
        return value[:300]


@dataclass
class Classification:
    """One classifier check.

    Attributes:
        cls: The class asked about.
        verdict: The model's answer.
        finding: The finding it makes (``None`` when absent).
        completions: Every model call it took (tokens, seconds).
        prompt_version: sha256 prefix of the templates used.
        seconds: Wall time of the check.
    """

    cls: MisbehaviourClass
    verdict: ClassifierVerdict
    finding: Finding | None
    completions: list[Completion] = field(default_factory=list)
    prompt_version: str = ""
    seconds: float = 0.0

    @property
    def usage(self) -> Usage:
        """Calls, tokens and model time over every call of the check."""
        return Usage.of(self.completions)

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens over every call."""
        return self.usage.tokens


def _tail(text: str, chars: int = 400) -> str:
    return text if len(text) <= chars else "..." + text[-chars:]


class MisbehaviourClassifier:
    """Asks a chat model one yes/no question per misbehaviour class.

    Args:
        model: The ``[models.observer]`` chat model.
        folder: Template folder (default ``guidelines/observer``).
        max_steps: How many of the latest steps the prompt shows (small context windows).
        retries: Re-asks after an invalid answer.
    """

    def __init__(self, model: ChatModel, folder: Path | None = None, max_steps: int = 12, retries: int = 1) -> None:
        self.model = model
        self.folder = folder or guidelines_dir() / "observer"
        self.max_steps = max_steps
        self.retries = retries
        self._env = Environment(
            loader=FileSystemLoader(self.folder), undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True
        )
        self._env.filters["tail"] = _tail

    @cached_property
    def versions(self) -> dict[MisbehaviourClass, str]:
        """Prompt version id per class: sha256 of the base and the class template, 12 hex digits."""
        base = (self.folder / "classify-base.j2").read_bytes()
        return {
            cls: hashlib.sha256(base + (self.folder / f"classify-{cls}.j2").read_bytes()).hexdigest()[:12]
            for cls in NAMES
        }

    def prompt(self, steps: list[Step], cls: MisbehaviourClass, spec: RunSpec | None = None) -> list[Message]:
        """The messages sent for one class."""
        shown = steps[-self.max_steps :]
        text = self._env.get_template(f"classify-{cls}.j2").render(
            name=NAMES[cls], steps=shown, shown=len(shown), total=len(steps), spec=spec
        )
        return [
            Message(role="system", content="You classify coding-agent trajectories. Answer with JSON only."),
            Message(role="user", content=text.strip()),
        ]

    def classify(self, steps: list[Step], cls: MisbehaviourClass, spec: RunSpec | None = None) -> Classification:
        """Ask whether ``steps`` show ``cls``.

        Raises:
            ClassifierError: The model call failed or its answer stayed invalid.
        """
        started = time.monotonic()
        try:
            result = request_object(
                self.model,
                self.prompt(steps, cls, spec),
                ClassifierVerdict,
                schema_name="verdict",
                retries=self.retries,
            )
        except (ModelCallError, StructuredOutputError) as exc:
            raise ClassifierError(f"{cls} classifier: {str(exc).splitlines()[0]}") from exc
        verdict = result.value
        finding = None
        if verdict.present and steps:
            numbers = [s.n for s in steps[-self.max_steps :]]
            step = verdict.step if verdict.step in numbers else numbers[-1]
            finding = Finding(
                cls=cls,
                kind="classifier",
                steps=(step,),
                evidence=f"classifier: {verdict.evidence or 'present'}",
                confidence=CONFIDENCE,
            )
        return Classification(cls, verdict, finding, result.completions, self.versions[cls], time.monotonic() - started)
