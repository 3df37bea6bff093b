"""The LLM misbehaviour classifier option, the detector plan per class, and shadow mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import CASES
from twinforge.core.exceptions import ConfigError
from twinforge.core.llm import ScriptedChat
from twinforge.core.settings import ModelSettings, ObserverSettings
from twinforge.observer import Finding, Observer, RunSpec, load_trajectory
from twinforge.observer.classifier import MisbehaviourClassifier
from twinforge.observer.exceptions import ClassifierError
from twinforge.observer.factory import observer_for, plan_for
from twinforge.observer.plan import DetectorPlan, combine
from twinforge.observer.trajectory import Action, Step


def steps_of(*commands: str) -> list[Step]:
    return [Step(n=i + 1, thought="THOUGHT: go", actions=[Action(c, returncode=0)]) for i, c in enumerate(commands)]


def test_prompt_per_class_shows_the_prefix_and_the_rules() -> None:
    classifier = MisbehaviourClassifier(ScriptedChat([]), max_steps=3)
    trajectory = load_trajectory(CASES / "format-errors" / "traj.json")
    (_, user) = classifier.prompt(trajectory.steps, "tool_failure")
    assert "a tool-call failure" in user.content and "3 of 4 steps" in user.content
    assert "--- step 2" in user.content and "--- step 1" not in user.content  # only the latest steps
    assert "REJECTED REPLY (the harness refused it: Expected exactly 1 action, found 0.)" in user.content
    spec = RunSpec(workdir="/repo", protected_paths=["/root/**"])
    (_, drift) = classifier.prompt(steps_of("rm -rf ~"), "drift", spec)
    assert "must not change: /root/**" in drift.content and "$ rm -rf ~" in drift.content
    versions = classifier.versions
    assert len(set(versions.values())) == 3 and all(len(v) == 12 for v in versions.values())


def test_classify_yes_with_evidence_step() -> None:
    chat = ScriptedChat([{"present": True, "step": 2, "evidence": "ran ls three times"}])
    result = MisbehaviourClassifier(chat).classify(steps_of("ls", "ls", "ls"), "reasoning")
    assert result.finding is not None and result.finding.steps == (2,) and result.finding.kind == "classifier"
    assert result.finding.cls == "reasoning" and "ran ls three times" in result.finding.evidence
    assert result.prompt_version == MisbehaviourClassifier(chat).versions["reasoning"]
    assert len(result.completions) == 1


def test_classify_no_and_bad_answers() -> None:
    no = MisbehaviourClassifier(ScriptedChat([{"present": False, "step": None, "evidence": ""}]))
    assert no.classify(steps_of("ls"), "drift").finding is None
    far = MisbehaviourClassifier(ScriptedChat([{"present": True, "step": 99, "evidence": "x"}]))
    finding = far.classify(steps_of("ls", "pwd"), "drift").finding
    assert finding is not None and finding.steps == (2,)  # a step outside the prefix: the last one
    broken = MisbehaviourClassifier(ScriptedChat(["not json", "still not json"]))
    with pytest.raises(ClassifierError, match="drift classifier"):
        broken.classify(steps_of("ls"), "drift")


def test_combination_rules() -> None:
    rule = Finding(cls="drift", kind="unrequested_change", steps=(1,), evidence="e", confidence=0.9)
    llm = Finding(cls="drift", kind="classifier", steps=(1,), evidence="c", confidence=0.8)
    assert combine("rules", [rule], None) == [rule]
    assert combine("classifier", [rule], None) == []
    assert combine("classifier", [], llm) == [llm]
    assert combine("either", [], llm) == [llm] and combine("either", [rule], llm) == [rule]
    assert combine("both", [rule], None) == [] and combine("both", [rule], llm) == [rule]


def test_plan_asks_only_where_chosen_and_falls_back_on_failure() -> None:
    chat = ScriptedChat([{"present": True, "step": 1, "evidence": "loops"}, "bad", "bad"])
    plan = DetectorPlan(choices={"reasoning": "classifier", "drift": "both"}, classifier=MisbehaviourClassifier(chat))
    rule = Finding(cls="drift", kind="unrequested_change", steps=(1,), evidence="e", confidence=0.9)
    found = plan.apply([rule], steps_of("ls"))
    assert [f.kind for f in found] == ["unrequested_change", "classifier"]  # drift: classifier failed -> rules
    assert len(plan.classifications) == 1 and len(plan.errors) == 1 and len(chat.calls) == 3
    with pytest.raises(ConfigError, match=r"observer.reasoning = 'classifier' needs a \[models.observer\]"):
        DetectorPlan(choices={"reasoning": "classifier"})


def test_settings_build_the_plan(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(json.dumps([{"present": False, "step": None, "evidence": ""}]))
    model = ModelSettings(provider="scripted", script=script)
    assert plan_for(ObserverSettings(), None).classifier is None  # rules by default, no model needed
    plan = plan_for(ObserverSettings(tool_failure="either"), model)
    assert plan.classifier is not None and plan.choices["tool_failure"] == "either"
    with pytest.raises(ConfigError):
        plan_for(ObserverSettings(drift="classifier"), None)
    observer = observer_for(ObserverSettings(shadow=True, interval=5), None)
    assert observer.shadow and observer.interval == 5


def test_shadow_mode_records_and_never_intervenes(tmp_path: Path) -> None:
    from tests.support.observer import guidance_messages, observed_run

    agent, info, observer = observed_run(tmp_path, lambda messages: "ls -la", steps=12, shadow=True)
    assert info["exit_status"] == "LimitsExceeded" and agent.n_calls == 12  # ran to the limit, never stopped
    assert guidance_messages(agent) == [] and observer.interventions == []
    assert [i.level for i in observer.shadowed][:3] == ["nudge", "plan", "stop"]  # what it would have done
    saved: dict[str, Any] = agent.serialize()["info"]["observer"]
    assert saved["mode"] == "shadow" and saved["shadowed"] and not saved["interventions"]


def test_a_check_that_fails_never_reaches_the_agent() -> None:
    observer = Observer(interval=1)
    observer.observe([{"role": "assistant", "extra": {"returncode": "not a number"}}], 1)
    assert observer.settle(timeout=60)
    assert observer.ready(2) is None and observer.errors and "returncode" in observer.errors[0]


@pytest.mark.model
@pytest.mark.slow
def test_classifier_on_the_real_local_server(gemma: Any) -> None:
    """Real path: the classifier's prompt and schema through a real llama.cpp server (gemma3-270m)."""
    from twinforge.core.llm import make_chat_model

    settings = ModelSettings(
        base_url=gemma.base_url, structured_output="json_object", max_tokens=120, temperature=0.0, validation_retries=1
    )
    classifier = MisbehaviourClassifier(make_chat_model(settings, role="observer"), max_steps=4)
    trajectory = load_trajectory(CASES / "format-errors" / "traj.json")
    problem = ""
    try:
        result = classifier.classify(trajectory.steps, "tool_failure")
    except ClassifierError as exc:  # the 270M model may not manage the schema: the error is ours
        problem = str(exc)
    if problem:
        assert "tool_failure classifier" in problem
        return
    assert result.completions and result.completions[0].prompt_tokens > 0
    assert result.finding is None or result.finding.steps[0] in (1, 2, 3, 4)
