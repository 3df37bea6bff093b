"""Labelled last words of failed twins: the measure of the twin cause's wording rules.

``tests/data/twin-causes/cases.yaml`` holds reworded refusals and worded non-refusals, with and
without work, each labelled with the cause a reader of the whole run would give; ``split.yaml``
splits them into a development and a held-out half, made before the rules were tuned. A case is a
recorded harness run (``tests/data/harness-runs/<harness>/<scenario>``) whose last words are
replaced in every file of the run, as the attack kit of issue 45 did, or a Mini-SWE-agent 2.x
text-mode run built from its commands. It lives in the package so ``bench/`` never imports
``tests/`` (docs/observer.md, "Why a twin was not CAPABLE").
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from twinforge.observer.cause import Cause, TwinCause, last_words, twin_cause
from twinforge.observer.diagnose import diagnose_twin
from twinforge.observer.trajectory import read_messages
from twinforge.observer.trajectory.from_atif import read_atif
from twinforge.observer.trajectory.run import load_run

Half = Literal["development", "held_out", "fresh"]
DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
"""Where the cases and the recorded runs are, in a source checkout."""


class CaseCommand(BaseModel):
    """One command of a built run: what ran, its exit code and output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cmd: str
    code: int = 0
    out: str = ""


class CauseCase(BaseModel):
    """One labelled failed twin.

    Attributes:
        name: Unique name (the split names it).
        kind: ``refusal`` (the words decline the task) or ``non_refusal``.
        cause: The cause a reader of the whole run gives.
        words: The agent's last words.
        base: A recorded run (``<harness>/<scenario>``) whose last words are replaced by ``words``.
        commands: Else the commands of a built Mini-SWE-agent run (may be empty: no command).
        style: How the words are written (terse, polite, non-native, ...).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    kind: Literal["refusal", "non_refusal"]
    cause: Cause
    words: str = Field(min_length=1)
    base: str = ""
    commands: list[CaseCommand] | None = None
    style: str = ""

    @model_validator(mode="after")
    def _one_source(self) -> CauseCase:
        if bool(self.base) == (self.commands is not None):
            raise ValueError(f"{self.name}: give either base (a recorded run) or commands (a built run)")
        return self


class Split(BaseModel):
    """``split.yaml``: the case names of each half.

    Attributes:
        development: Cases the rules may be tuned on.
        held_out: Cases split off with the development half before the rules were written; measured only.
        fresh: Cases written after the rules were frozen, measured once and never tuned on.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    development: list[str]
    held_out: list[str]
    fresh: list[str] = Field(default_factory=list)


def load_cases(folder: Path | None = None) -> list[tuple[CauseCase, Half]]:
    """The cases of ``folder`` (default ``tests/data/twin-causes``), each with its half.

    Raises:
        ValueError: A case is malformed, or the split does not name every case exactly once.
    """
    folder = folder or DATA / "twin-causes"
    cases = TypeAdapter(list[CauseCase]).validate_python(yaml.safe_load((folder / "cases.yaml").read_text()))
    split = Split.model_validate(yaml.safe_load((folder / "split.yaml").read_text()))
    half: dict[str, Half] = {
        **dict.fromkeys(split.development, "development"),
        **dict.fromkeys(split.held_out, "held_out"),
        **dict.fromkeys(split.fresh, "fresh"),
    }
    names = [c.name for c in cases]
    if sorted(names) != sorted(split.development + split.held_out + split.fresh) or len(set(names)) != len(names):
        raise ValueError(f"{folder}: split.yaml must name every case of cases.yaml exactly once")
    return [(case, half[case.name]) for case in cases]


def _messages(case: CauseCase) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    for command in [*(case.commands or []), CaseCommand(cmd="echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]:
        messages.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: next.\n\n```mswea_bash_command\n{command.cmd}\n```",
                "extra": {"actions": [{"command": command.cmd}]},
            }
        )
        if command.cmd.startswith("echo COMPLETE_TASK"):
            break
        messages.append(
            {
                "role": "user",
                "content": f"<returncode>{command.code}</returncode>",
                "extra": {"raw_output": command.out, "returncode": command.code},
            }
        )
    messages.append({"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": case.words}})
    return messages


def rewrite_last_words(source: Path, target: Path, words: str) -> None:
    """Copy the run folder ``source`` to ``target`` with the agent's last words replaced by ``words``.

    Raises:
        ValueError: The run has no last words to replace.
    """
    old = last_words(read_atif(load_run(source))).strip()
    if not old:
        raise ValueError(f"{source}: the run has no last words to replace")
    shutil.copytree(source, target)
    escaped_old, escaped_new = json.dumps(old)[1:-1], json.dumps(words)[1:-1]
    for path in target.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl"):
            path.write_text(path.read_text().replace(escaped_old, escaped_new))


def case_cause(case: CauseCase, runs: Path | None = None) -> TwinCause | None:
    """The twin cause the observer gives the case (outcome INCOMPLETE, the detector's completed false).

    Args:
        case: The case.
        runs: The recorded runs (default ``tests/data/harness-runs``).
    """
    if case.commands is not None:
        return twin_cause(read_messages(_messages(case)), "INCOMPLETE", completed=False)
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "run"
        rewrite_last_words((runs or DATA / "harness-runs") / case.base, target, case.words)
        return diagnose_twin(target, "INCOMPLETE", completed=False).cause
