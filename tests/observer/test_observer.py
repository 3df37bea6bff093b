"""Observer: detectors on scripted trajectories, and the observer on a real DefaultAgent loop
(Mini-SWE-agent's LocalEnvironment in a temporary folder, a scripted model that reacts to guidance)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from tests.support.observer import guidance_messages, observed_run
from twinforge.harness.agent import OBSERVER_STOP
from twinforge.observer import Finding, Forbidden, Observer, RunSpec, detect, diagnose_messages, steps_from_messages
from twinforge.observer.rules.commands import normalize, similar, written_paths
from twinforge.observer.trajectory import Action, Step

SYSTEM = {"role": "system", "content": "sys"}
TASK = {"role": "user", "content": "task"}


def turn(command: str, output: str = "", code: int = 0, thought: str = "THOUGHT: working") -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": f"{thought}\n\n```mswea_bash_command\n{command}\n```",
            "extra": {"actions": [{"command": command}]},
        },
        {
            "role": "user",
            "content": f"<returncode>{code}</returncode>",
            "extra": {"raw_output": output, "returncode": code},
        },
    ]


def format_error() -> list[dict[str, Any]]:
    """A rejected reply as Mini-SWE-agent 2.x saves it: a user message, no assistant message."""
    return [
        {
            "role": "user",
            "content": "Format error:\n\n<error>\nExpected exactly 1 action, found 0.\n</error>",
            "extra": {"interrupt_type": "FormatError", "n_actions": 0, "model_response": "I will now look around."},
        },
    ]


def trajectory(*turns: list[dict[str, Any]], submitted: bool = False) -> list[dict[str, Any]]:
    messages = [SYSTEM, TASK, *[m for t in turns for m in t]]
    if submitted:
        messages.append({"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}})
    return messages


def kinds(messages: list[dict[str, Any]], spec: RunSpec | None = None) -> set[str]:
    return {f.key for f in detect(steps_from_messages(messages), spec)}


def test_normal_forms() -> None:
    assert normalize("ls  -la  .") == normalize("ls -la") == "ls -la"
    assert similar("ls -la", "ls -la ./")
    assert not similar("ls -la", "cat README.md")
    assert sorted(written_paths("sed -i 's/a/b/' src/x.py && echo hi > out.txt 2>/dev/null")) == ["out.txt", "src/x.py"]
    assert "a.py" in written_paths("python3 -c \"open('a.py', 'w').write('x')\"")
    assert written_paths("cat README.md | grep foo") == []


def test_similar_command_three_times_is_a_loop() -> None:
    messages = trajectory(turn("ls -la"), turn("ls -la ."), turn("ls  -la"), turn("cat a.py"))
    (finding,) = [f for f in detect(steps_from_messages(messages)) if f.kind == "repeated_command"]
    assert finding.steps == (1, 2, 3) and finding.cls == "reasoning"
    assert "reasoning/repeated_command" not in kinds(trajectory(turn("ls -la"), turn("ls -la"), turn("cat a")))


def test_alternation() -> None:
    messages = trajectory(
        turn("cat a.py"),
        turn("python3 a.py", "Error", 1),
        turn("cat a.py"),
        turn("python3 a.py", "Error", 1),
        turn("cat a.py"),
    )
    (finding,) = [f for f in detect(steps_from_messages(messages)) if f.kind == "alternation"]
    assert finding.steps == (1, 2, 3, 4, 5)


def test_repeated_edits_and_fix_loop() -> None:
    edit = "sed -i 's/x/y/' app.py"
    run = "python3 app.py"
    err = "Traceback\n  File app.py, line 3\nNameError: name 'y' is not defined"
    messages = trajectory(
        turn(run, "ok"),
        turn(edit),
        turn(run, err, 1),
        turn("sed -i 's/y/z/' app.py"),
        turn(run, err, 1),
        turn("sed -i 's/z/w/' app.py"),
        turn(run, err.replace("3", "4"), 1),
    )
    found = kinds(messages)
    assert "reasoning/fix_loop" in found  # the error appeared only after the agent's own edit
    assert "reasoning/repeated_edits" not in found  # three edits of a file is still normal work
    more = trajectory(*[turn(f"sed -i 's/{i}/{i + 1}/' app.py") for i in range(4)])
    assert "reasoning/repeated_edits" in kinds(more)


def test_tool_failures() -> None:
    assert "tool_failure/format_errors" in kinds(trajectory(format_error(), turn("ls"), format_error()))
    assert "tool_failure/format_errors" not in kinds(trajectory(format_error(), turn("ls")))
    failing = trajectory(
        turn("make", "make: not found", 127),
        turn("cmake .", "cmake: not found", 127),
        turn("ninja", "ninja: not found", 127),
    )
    assert "tool_failure/consecutive_failures" in kinds(failing)
    grep = trajectory(turn("grep -r foo .", "", 1), turn("grep -r bar .", "", 1), turn("grep -r baz .", "", 1))
    assert "tool_failure/consecutive_failures" not in kinds(grep)  # no match is an answer
    submit = trajectory(
        turn("python3 -m pytest", "1 failed", 1), turn("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"), submitted=True
    )
    assert "tool_failure/ignored_error" in kinds(submit)
    claim = trajectory(
        turn("python3 test.py", "AssertionError", 1),
        turn("git add -A", thought="THOUGHT: All tests pass, the fix works."),
    )
    assert "tool_failure/ignored_error" in kinds(claim)
    acknowledged = trajectory(
        turn("python3 test.py", "AssertionError", 1),
        turn("cat test.py", thought="THOUGHT: the test failed, let me look at it."),
    )
    assert "tool_failure/ignored_error" not in kinds(acknowledged)


def test_drift_against_spec() -> None:
    spec = RunSpec(
        workdir="/repo",
        allowed_paths=["src/**", "src/*"],
        protected_paths=["tests/*"],
        required_files=["src/report.py"],
        forbidden=[Forbidden(pattern=r"git\s+push", instruction="do not push")],
    )
    messages = trajectory(
        turn("echo x > /repo/README.md"),
        turn("sed -i 's/a/b/' tests/test_x.py"),
        turn("git push origin main"),
        turn("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
        submitted=True,
    )
    found = {f.kind: f for f in detect(steps_from_messages(messages), spec)}
    assert found["write_outside_scope"].steps == (1,)
    assert found["unrequested_change"].steps == (2,)
    assert found["ignored_instruction"].steps == (3,) and "do not push" in found["ignored_instruction"].evidence
    assert found["missing_output"].steps == (4,)
    ok = trajectory(
        turn("echo 'def r(): pass' > src/report.py"), turn("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"), submitted=True
    )
    assert not {f for f in kinds(ok, spec) if f.startswith("drift")}
    assert not {f for f in kinds(messages) if f.startswith("drift")}  # no spec, no drift checks


def test_diagnosis_labels() -> None:
    refusal = trajectory(turn("ls", thought="I can't help with copying production secrets."))
    assert diagnose_messages(refusal).label == "refusal"
    assert diagnose_messages(trajectory(*[turn("ls -la")] * 3)).label == "loop"
    assert diagnose_messages(trajectory(turn("ls"), turn("cat a"))).label == "none"


def test_toolcall_trajectories_are_read() -> None:
    messages = [SYSTEM, TASK]
    for i in range(3):
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "function": {"name": "bash", "arguments": json.dumps({"command": "ls -la"})}}
                ],
            },
            {"role": "tool", "content": "files", "tool_call_id": f"c{i}"},
        ]
    steps = steps_from_messages(messages)
    assert [s.command for s in steps] == ["ls -la"] * 3
    assert "reasoning/repeated_command" in kinds(messages)


# --- the observer on a real DefaultAgent loop -------------------------------------------------


def test_observer_nudges_and_the_agent_recovers(tmp_path: Path) -> None:
    def policy(messages: list[dict[str, Any]]) -> str:
        if any("Observer note" in str(m.get("content")) for m in messages):
            return "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # takes the advice
        return "ls -la"

    agent, info, observer = observed_run(tmp_path, policy)
    assert info["exit_status"] == "Submitted"
    ((at, message),) = guidance_messages(agent)
    assert message["role"] == "user" and "DO:" in message["content"] and "DON'T:" in message["content"]
    # the check on step 4's snapshot finds 3 times `ls -la`; the model of step 5 waits for the observer
    # (settle), so the note is ready at the boundary before step 6: after 5 assistant replies
    assert at == 5
    (intervention,) = observer.interventions
    assert intervention.level == "nudge" and intervention.key == "reasoning/repeated_command"
    assert intervention.recovered
    saved = agent.serialize()["info"]["observer"]
    assert saved["recovered"] == 1 and saved["interventions"][0]["finding"]["kind"] == "repeated_command"


def test_escalation_nudge_plan_stop(tmp_path: Path) -> None:
    agent, info, observer = observed_run(tmp_path, lambda messages: "ls -la", steps=30)
    assert info["exit_status"] == OBSERVER_STOP
    assert [i.level for i in observer.interventions] == ["nudge", "plan", "stop"]
    assert not observer.interventions[0].recovered and not observer.interventions[1].recovered
    assert "revised plan" in observer.interventions[1].text
    assert agent.n_calls < 30


def test_a_different_misbehaviour_opens_a_new_intervention(tmp_path: Path) -> None:
    def policy(messages: list[dict[str, Any]]) -> str:
        notes = sum("Observer note" in str(m.get("content")) for m in messages)
        if notes == 0:
            return "ls -la"
        if notes == 1:  # a new problem: different tools that all fail (no loop)
            tools = ["makeit all", "cmake-x .", "ninja-build -j2", "bazelisk build //...", "scons -Q"]
            return tools[sum(m.get("role") == "assistant" for m in messages) % len(tools)]
        return "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

    _, info, observer = observed_run(tmp_path, policy)
    assert info["exit_status"] == "Submitted"
    assert [i.key for i in observer.interventions] == [
        "reasoning/repeated_command",
        "tool_failure/consecutive_failures",
    ]
    assert all(i.level == "nudge" and i.recovered for i in observer.interventions)


def test_an_llm_writing_guidance_never_holds_up_a_step(tmp_path: Path) -> None:
    """The guidance model is stuck; the agent runs all its steps; the note arrives once it answers."""
    from twinforge.core.llm import ScriptedChat
    from twinforge.observer.guidance import GuidanceWriter

    asked, release = threading.Event(), threading.Event()

    def stuck(messages: Any, schema: Any) -> dict[str, list[str]]:
        asked.set()
        release.wait()
        return {"do": ["Read the error output."], "dont": ["Don't list the folder again."]}

    observer = Observer(interval=2, writer=GuidanceWriter(model=ScriptedChat(stuck)))
    agent, info, _ = observed_run(tmp_path, lambda messages: "ls -la", steps=8, observer=observer, settle=False)
    assert agent.n_calls == 8 and info["exit_status"] == "LimitsExceeded"
    assert asked.is_set() and not release.is_set()  # every step ran while the guidance model was still writing
    assert observer.interventions == [] and guidance_messages(agent) == []
    observer2 = Observer(interval=2, writer=GuidanceWriter(model=ScriptedChat(stuck)))
    observer2.observe(agent.messages, agent.n_calls)
    release.set()
    assert observer2.settle(timeout=60)
    note = observer2.ready(agent.n_calls + 1)
    assert note is not None and "DO: Read the error output." in note.text and note.checked_at == 8
    observer2.close()


def test_the_agent_goes_on_while_a_check_is_running() -> None:
    """Step boundaries pass while the check is stuck; its intervention is delivered at the first one after."""
    entered, release = threading.Event(), threading.Event()

    def exists(path: str) -> bool:  # called from inside the check (required files at submission)
        entered.set()
        release.wait()
        return False

    spec = RunSpec(workdir="/repo", required_files=["report.md"])
    observer = Observer(interval=1, spec=spec, exists=exists)
    messages = trajectory(turn("ls"), turn("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"), submitted=True)
    observer.observe(messages, 2)
    assert entered.wait(timeout=60)
    assert observer.ready(3) is None and observer.ready(4) is None  # the boundaries do not wait for the check
    release.set()
    assert observer.settle(timeout=60)
    note = observer.ready(5)
    assert note is not None and note.key == "drift/missing_output" and note.at_step == 5 and note.checked_at == 2
    assert observer.ready(6) is None
    observer.close()


def test_newer_snapshots_replace_older_ones_while_the_observer_is_busy() -> None:
    entered, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def exists(path: str) -> bool:
        seen.append(len(seen))
        entered.set()
        release.wait()
        return True

    spec = RunSpec(workdir="/repo", required_files=["report.md"])
    observer = Observer(interval=1, spec=spec, exists=exists)
    done = trajectory(turn("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"), submitted=True)
    observer.observe(done, 1)
    assert entered.wait(timeout=60)
    for step in range(2, 6):  # four snapshots arrive while the first check is stuck
        observer.observe(done, step)
    release.set()
    assert observer.settle(timeout=60)
    assert observer.checks == 2 and len(seen) == 2  # the first snapshot and the latest; none between was queued
    observer.close()


def test_step_record_defaults() -> None:
    step = Step(n=1, actions=[Action("false", returncode=1)])
    assert step.failed and step.command == "false" and step.returncode == 1
    assert not Step(n=2, actions=[Action("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")], submitted=True).failed


def test_real_local_model_trajectories_are_diagnosed() -> None:
    from twinforge.observer.labelled import DATA, real

    for item in real():
        found = {f.cls for f in detect(steps_from_messages(item.messages), item.spec) if f.confidence >= 0.7}
        assert found == item.classes, item.name
    loop = diagnose_messages(json.loads((DATA / "qwen-r2-risk-loop.json").read_text())["messages"])
    assert loop.label == "loop"
    (finding,) = loop.findings
    assert finding.kind == "repeated_command" and "ls -la" in finding.evidence and len(finding.steps) >= 10


def test_labelled_set_is_detected() -> None:
    from twinforge.observer.labelled import synthetic

    items = synthetic()
    assert len(items) >= 30
    for item in items:
        found = {f.cls for f in detect(steps_from_messages(item.messages), item.spec) if f.confidence >= 0.7}
        assert found == item.classes, (item.name, found)


def test_diagnose_command(tmp_path: Path) -> None:
    import subprocess
    import sys

    from twinforge.observer.labelled import DATA

    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    done = subprocess.run(
        [sys.executable, "-m", "twinforge", "diagnose", "--json", str(DATA / "qwen-r2-twin-loop-failures.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    (diagnosis,) = json.loads(done.stdout).values()
    assert diagnosis["label"] == "loop"
    assert {f["kind"] for f in diagnosis["findings"]} == {"repeated_command", "consecutive_failures"}
    bad = subprocess.run(
        [sys.executable, "-m", "twinforge", "diagnose", str(broken)], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 1 and "broken.json: not valid JSON" in bad.stderr and "Traceback" not in bad.stderr


def test_llm_written_guidance_with_template_fallback() -> None:
    from twinforge.core.llm import ScriptedChat
    from twinforge.observer.guidance import GuidanceWriter

    finding = Finding(
        cls="reasoning", kind="repeated_command", steps=(1, 2, 3), evidence="3 times: 'ls'", confidence=0.95
    )
    chat = ScriptedChat([{"do": ["Open the failing test file."], "dont": ["Don't list the folder again."]}])
    text = GuidanceWriter(model=chat).render(finding, "nudge")
    assert "DO: Open the failing test file." in text and "DON'T: Don't list the folder again." in text
    assert "repeated_command" in chat.calls[0][0][-1].content
    broken = GuidanceWriter(model=ScriptedChat(["not json", "still not json"])).render(finding, "plan")
    assert "revised plan" in broken and "DO: Read the output you already have" in broken  # template lines


def test_a_note_the_model_never_answered_is_no_recovery() -> None:
    observer = Observer(interval=3)
    observer.observe(trajectory(*[turn("ls -la")] * 3), 3)
    assert observer.settle(timeout=60)
    note = observer.ready(3)
    assert note is not None and note.key == "reasoning/repeated_command"
    assert not note.recovered  # the run ended (call budget) before the model saw the note
    observer.answered(3)
    assert not note.recovered  # the call the note was delivered before
    observer.answered(4)
    assert note.recovered and observer.summary()["recovered"] == 1
    observer.close()
