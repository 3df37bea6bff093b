"""The trajectory reader on Mini-SWE-agent's own output in every mode.

Files are written by the harness itself: the shipped cases and real local-model recordings
(tests/data), and runs of DefaultAgent with its real LiteLLM models against a scripted stub
endpoint (tests/support/mswea.py) for text actions, chat tool calls and Responses-API tool calls.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.mswea import record, text_action
from tests.support.paths import DATA
from twinforge.observer import TrajectoryError, detect, diagnose_file, load_trajectory
from twinforge.observer.labelled import DATA as TRAJECTORIES
from twinforge.observer.trajectory import read_file_data

CASES = DATA / "cases"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def test_format_errors_case_keeps_the_good_command() -> None:
    diagnosis = diagnose_file(CASES / "format-errors" / "traj.json")
    assert diagnosis.steps == 4 and diagnosis.label == "tool_failure"
    assert diagnosis.exit_status == "RepeatedFormatError"
    (finding,) = diagnosis.findings
    assert finding.kind == "format_errors" and finding.steps == (2, 3, 4)
    trajectory = load_trajectory(CASES / "format-errors" / "traj.json")
    first = trajectory.steps[0]
    assert first.command == "ls -la" and not first.format_error and first.actions[0].returncode == 0
    assert all(s.format_error and not s.actions for s in trajectory.steps[1:])
    assert "found 2" in trajectory.steps[3].format_error  # the harness's own reason is kept
    assert "cat README.md" in trajectory.steps[2].thought  # and the rejected reply


def test_text_mode_written_by_the_harness(tmp_path: Path) -> None:
    replies = [
        "I will look first.",  # no action: a format error, no assistant message saved
        text_action("ls -la"),
        text_action("cat missing.txt"),
        text_action("echo a") + "\n" + text_action("echo b"),  # two actions: a format error
        text_action(SUBMIT),
    ]
    trajectory = load_trajectory(record("text", replies, tmp_path))
    assert trajectory.mode == "text" and trajectory.version == "mini-swe-agent-1.1"
    assert trajectory.exit_status == "Submitted"
    steps = trajectory.steps
    assert [bool(s.format_error) for s in steps] == [True, False, False, True, False]
    assert steps[0].thought == "I will look first." and "found 0" in steps[0].format_error
    assert steps[1].command == "ls -la" and steps[1].actions[0].returncode == 0
    assert steps[2].failed and "No such file" in steps[2].output
    assert "found 2" in steps[3].format_error
    assert steps[4].submitted and not steps[4].failed
    assert trajectory.env == {"BUILD_DIR": str(tmp_path / "work" / "build")}


def test_tool_calls_paired_by_call_id(tmp_path: Path) -> None:
    unknown_tool = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "t9", "type": "function", "function": {"name": "python", "arguments": "{}"}}],
    }
    replies = [
        "Let me think.",  # no tool call: a format error
        ["ls -la", "cat missing.txt", "echo done"],  # three tool calls in one response
        unknown_tool,  # a format error the harness names
        ["echo hi", SUBMIT],
    ]
    trajectory = load_trajectory(record("toolcall", replies, tmp_path))
    assert trajectory.mode == "toolcall" and trajectory.exit_status == "Submitted"
    steps = trajectory.steps
    assert len(steps) == 4 and steps[0].format_error and steps[0].thought == "Let me think."
    several = steps[1]
    assert [a.command for a in several.actions] == ["ls -la", "cat missing.txt", "echo done"]
    assert [a.returncode for a in several.actions] == [0, 1, 0]
    assert "No such file" in several.actions[1].output and "done" in several.actions[2].output
    assert len({a.call_id for a in several.actions}) == 3
    assert "Unknown tool 'python'" in steps[2].format_error and "python(" in steps[2].thought
    assert steps[3].submitted and [a.returncode for a in steps[3].actions] == [None, None]


def test_responses_api_mode(tmp_path: Path) -> None:
    trajectory = load_trajectory(record("responses", ["hmm", ["ls -la", "cat nothere"], [SUBMIT]], tmp_path))
    assert trajectory.mode == "responses"
    first, second, third = trajectory.steps
    assert first.format_error and first.thought == "hmm"
    assert [(a.command, a.returncode) for a in second.actions] == [("ls -la", 0), ("cat nothere", 1)]
    assert third.submitted


def test_limits_and_loops_in_tool_call_mode(tmp_path: Path) -> None:
    trajectory = load_trajectory(record("toolcall", [["ls -la"]], tmp_path, step_limit=4))
    assert trajectory.exit_status == "LimitsExceeded" and len(trajectory.steps) == 4
    assert not any(s.submitted for s in trajectory.steps)
    assert {f.key for f in detect(trajectory.steps)} == {"reasoning/repeated_command"}


def test_repeated_format_errors_end_the_run(tmp_path: Path) -> None:
    trajectory = load_trajectory(record("text", [text_action("pwd"), "no action"], tmp_path))
    assert trajectory.exit_status == "RepeatedFormatError"
    assert [bool(s.format_error) for s in trajectory.steps] == [False, True, True, True]
    assert {f.key for f in detect(trajectory.steps)} == {"tool_failure/format_errors"}


def test_v1_files() -> None:
    v1 = {
        "info": {"exit_status": "Submitted", "submission": "diff", "config": {"agent": {}}},
        "trajectory_format": "mini-swe-agent-1",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "THOUGHT: x\n\n```bash\ncat a.py\n```"},
            {"role": "user", "content": "<returncode>1</returncode>\n<output>\ncat: a.py: No such file\n</output>"},
            {"role": "assistant", "content": "no block here"},
            {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 0."},
            {"role": "assistant", "content": "```bash\nsleep 100\n```"},
            {"role": "user", "content": "The last command <command>sleep 100</command> timed out and has been killed."},
            {"role": "assistant", "content": "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
            {"role": "user", "content": "diff"},
        ],
    }
    trajectory = read_file_data(v1)
    assert trajectory.mode == "v1" and trajectory.exit_status == "Submitted"
    one, two, three, four = trajectory.steps
    assert one.actions[0].returncode == 1 and "No such file" in one.output
    assert two.format_error and not two.actions
    assert three.actions[0].returncode == -1 and "timed out" in three.actions[0].exception
    assert four.submitted
    bare = read_file_data(v1["messages"])  # the earliest 1.x files are the message list alone
    assert bare.steps[3].submitted and bare.mode == "v1"


def test_real_local_model_recordings_are_read() -> None:
    """Recordings of the local model: every step has a command or a format error, none is lost."""
    files = sorted(TRAJECTORIES.rglob("*.json"))
    assert files
    for path in files:
        trajectory = load_trajectory(path)
        raw = json.loads(path.read_text())
        calls = raw["info"]["model_stats"]["api_calls"]
        crashed = trajectory.exit_status not in (
            "Submitted",
            "LimitsExceeded",
            "TimeExceeded",
            "RepeatedFormatError",
            "",
        )
        assert len(trajectory.steps) == calls - (1 if crashed else 0), path.name  # a failed call leaves no message
        assert all(s.actions or s.format_error for s in trajectory.steps), path.name


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"messages": ["ls", "pwd"]}', "messages.0: expected a JSON object (got 'ls')"),
        ('{"messages": [{"role": "user", "extra": {"returncode": "x"}}]}', "messages.0.extra.returncode"),
        ('{"messages": {}}', "messages: Input should be a valid list"),
        ("[1, 2]", "messages.0: expected a JSON object"),
        ('{"info": {}, "messages": [], "trajectory_format": "openhands"}', "unknown format 'openhands'"),
        ("{not json", "not valid JSON"),
        ('"just a string"', "expected a JSON object with 'messages' or an ATIF 'schema_version', got str"),
    ],
)
def test_bad_trajectories_name_file_and_field(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(TrajectoryError) as caught:
        load_trajectory(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and problem in message and "\n" not in message


def test_unreadable_trajectory_files(tmp_path: Path) -> None:
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "latin1.json").write_bytes(b'{"messages": ["\xe9"]}')
    for name, problem in [("dir.json", "is a directory"), ("latin1.json", "not UTF-8"), ("gone.json", "cannot read")]:
        with pytest.raises(TrajectoryError, match=problem):
            load_trajectory(tmp_path / name)


def test_spec_mistakes_trajectory_via_cli() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "twinforge", "diagnose", str(CASES / "spec-mistakes" / "messages-not-dicts.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "messages-not-dicts.json: messages.0: expected a JSON object" in done.stderr.replace("\n", "")
