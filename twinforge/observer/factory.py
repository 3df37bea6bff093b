"""Build the observer a workspace's ``[observer]`` and ``[models.observer]`` sections describe."""

from __future__ import annotations

from collections.abc import Callable

from twinforge.core.llm import make_chat_model
from twinforge.core.settings import ModelSettings, ObserverSettings
from twinforge.observer.classifier import MisbehaviourClassifier
from twinforge.observer.core import Observer
from twinforge.observer.guidance import GuidanceWriter
from twinforge.observer.plan import DetectorPlan
from twinforge.observer.spec import RunSpec


def plan_for(settings: ObserverSettings, model: ModelSettings | None) -> DetectorPlan:
    """The finder plan of ``[observer]``; the classifier is built only when a class uses it.

    Raises:
        ConfigError: A class asks for the classifier without a ``[models.observer]`` model.
    """
    choices = {"reasoning": settings.reasoning, "tool_failure": settings.tool_failure, "drift": settings.drift}
    wanted = any(choice != "rules" for choice in choices.values())
    classifier = (
        MisbehaviourClassifier(make_chat_model(model, role="observer"), max_steps=settings.classifier_steps)
        if wanted and model is not None
        else None
    )
    return DetectorPlan(choices=choices, classifier=classifier)  # type: ignore[arg-type]


def observer_for(
    settings: ObserverSettings,
    model: ModelSettings | None,
    spec: RunSpec | None = None,
    exists: Callable[[str], bool] | None = None,
) -> Observer:
    """An observer configured by the workspace (interval, finders, shadow mode, guidance model)."""
    writer = GuidanceWriter(model=make_chat_model(model, role="observer") if model is not None else None)
    return Observer(
        interval=settings.interval,
        spec=spec,
        exists=exists,
        writer=writer,
        plan=plan_for(settings, model),
        shadow=settings.shadow,
    )
