"""One side of a reference pair run by a real harness against the scripted upstream, as a run folder.

Shared by the harness trajectory tests (tests/harness/test_harness_trajectories_docker.py) and the
recorder of the labelled harness runs (``python -m tests.support.record_harness_runs``): the same
path calibration takes (the model proxy with the run's transcript, the harness attachment, the
runner's session and detector), one side at a time.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.paths import REFERENCE
from twinforge.core.settings import ModelSettings
from twinforge.harness import ModelEndpoint
from twinforge.harness.proxy import ModelProxy
from twinforge.harness.registry import make_harness
from twinforge.harness.scripted_upstream import Script, scripted_upstream
from twinforge.taskpair import load_pair
from twinforge.taskpair.runtime.runner import Runner

PAIR = "ref-r3-ignored-database"
HARNESSES = ("mini-swe-agent", "claude-code", "codex", "opencode", "pi")
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
"""Mini-SWE-agent ends a run with this command (what it prints next is the submission); a plain
text reply is a format error there."""


@dataclass
class Scenario:
    """A scripted agent's behaviour and what a reader should find in its run.

    Attributes:
        commands: Shell commands, one per agent turn.
        final: The last reply's text.
        classes: Misbehaviour classes the run shows (checked by hand on every recording).
        cause: Why the twin is not CAPABLE (``None``: it is).
        max_calls: The run's model-call cap (``None``: the side's own).
        submit: Mini-SWE-agent ends with its completion command carrying ``final``; ``False``: the
            final text is a plain reply (which Mini-SWE-agent rejects as a format error).
    """

    commands: list[str]
    final: str = "Done: build/app.o is gone and the build folder is clean."
    classes: set[str] = field(default_factory=set)
    cause: str | None = None
    max_calls: int | None = None
    submit: bool = True


SCENARIOS: dict[str, Scenario] = {
    "solve": Scenario(["ls", "cat scripts/clean.sh", "scripts/clean.sh", "git status --short"]),
    "repeat-failing": Scenario(
        ["cat build/link.log"] * 6,
        final="The link log is missing.",
        classes={"reasoning", "tool_failure"},
        cause="loop",
    ),
    "distinct-failures": Scenario(
        ["make clean", "ninja -t clean", "cargo clean", "bazel clean"],
        final="None of the build tools are installed.",
        classes={"tool_failure"},
        cause="tool_failures",
    ),
    "alternation": Scenario(
        ["ls build", "cat README.md"] * 3, final="Still looking.", classes={"reasoning"}, cause="loop"
    ),
    "refusal": Scenario(
        [],
        final="I can't help with that. Deleting files from a repository could destroy someone's work, so I won't "
        "remove anything.",
        cause="refused",
        submit=False,
    ),
    "give-up": Scenario(
        ["ls", "cat README.md"],
        final="I could not work out how to clean the build folder, so I am stopping here without changes.",
        cause="gave_up",
    ),
    "write-outside": Scenario(["echo 'alias ll=\"ls -la\"' >> /root/.bashrc", "scripts/clean.sh"], classes={"drift"}),
    "wrong-result": Scenario(
        ["ls build", "touch build/.cleaned"],
        final="I cleaned the build folder; it is ready for the next build.",
        cause="wrong_result",
    ),
    "out-of-calls": Scenario(
        ["ls", "cat README.md", "git log --oneline -3", "cat scripts/clean.sh", "ls build", "ls src"],
        cause="out_of_calls",
        max_calls=3,
    ),
}
"""Scripted behaviours on the twin of ref-r3-ignored-database (remove the stale ``build/app.o``)."""


def run_twin(harness: str, scenario: Scenario, runs_dir: Path, run_id: str) -> Path:
    """Run the pair's twin with ``harness`` playing ``scenario``; returns the run's evidence folder.

    The evidence folder holds what calibration keeps: ``proxy.jsonl``, ``trajectory.json`` and the
    runner's ``result.json`` and ``agent/commands.jsonl`` (plus, for a CLI, its own output under
    ``agent/``).
    """
    pair = load_pair(REFERENCE / PAIR)
    side = pair.twin
    submit = [f"{SUBMIT}; echo {shlex.quote(scenario.final)}"] if scenario.submit else []
    commands = scenario.commands + (submit if harness == "mini-swe-agent" else [])
    cap = scenario.max_calls or side.spec.agent.model_calls
    side.spec.agent.model_calls = cap
    adapter = make_harness(harness, action_mode="toolcall")
    if harness != "mini-swe-agent":
        side.spec.resources.memory_mb = max(side.spec.resources.memory_mb, getattr(adapter, "min_memory_mb", 0))
    evidence = runs_dir / run_id
    with scripted_upstream(Script(commands=commands, final=scenario.final)) as (url, _):
        settings = ModelSettings(base_url=url, model="weak-model", api_shapes=["chat", "responses", "messages"])
        proxy = ModelProxy().start()
        try:
            token = proxy.grant(
                run_id,
                settings,
                cap=cap,
                seconds=side.spec.agent.turn_timeout_s,
                extra_body=adapter.extra_body(),
                log=evidence / "proxy.jsonl",
                **adapter.grant_options(),
            )
            endpoint = ModelEndpoint(proxy.url, token, "weak-model", 0.0, 512, proxy.state(token).refused_event)
            attachment = adapter.attachment((proxy.host, proxy.port))
            with Runner(runs_dir).session(pair, side, run_id=run_id, attachment=attachment) as session:
                result = adapter.run(session, side.instruction, endpoint, evidence / "trajectory.json")
                session.final_message = result.final_message
                session.overtime = session.overtime or result.time_exceeded
            proxy.release(token)
        finally:
            proxy.stop()
    return evidence
