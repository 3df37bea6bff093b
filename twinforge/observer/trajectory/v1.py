"""Steps from Mini-SWE-agent 1.x files (``trajectory_format: mini-swe-agent-1``).

1.x (1.17.5 ``agents/default.py``) saves plain ``{role, content}`` messages: an assistant reply,
then one user message that is either the observation (``action_observation_template``, by default
``<returncode>N</returncode>`` and ``<output>``), the format error (the reply did not hold exactly
one match of ``action_regex``), the timeout message, or, last, the submission (``Submitted``) or an
empty message (``LimitsExceeded``). 1.x decided the format error with ``action_regex``, so the
reader applies the same regex (from ``info.config.agent``) to tell them apart.
"""

from __future__ import annotations

import re

from twinforge.observer.exceptions import TrajectoryError
from twinforge.observer.trajectory.model import TrajectoryInfo, TrajectoryMessage
from twinforge.observer.trajectory.steps import Action, Step, Trajectory
from twinforge.observer.trajectory.v2 import text_of

V1_ACTION_REGEX = r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```"
"""1.x's default ``action_regex`` (```` ```bash ````), plus the fence later 1.x configs switched to."""
_RETURNCODE = re.compile(r"<returncode>(-?\d{1,9})</returncode>")
_OUTPUT = re.compile(r"<output>\n?(.*?)</output>", re.DOTALL)
_TIMEOUT = "timed out and has been killed"
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def _regex(info: TrajectoryInfo) -> re.Pattern[str]:
    agent = info.config.get("agent")
    pattern = agent.get("action_regex") if isinstance(agent, dict) else None
    if not isinstance(pattern, str):
        return re.compile(V1_ACTION_REGEX, re.DOTALL)
    try:
        return re.compile(pattern, re.DOTALL)
    except re.error as exc:
        raise TrajectoryError(f"info.config.agent.action_regex: invalid regular expression: {exc}") from exc


def _observe(action: Action, text: str) -> None:
    output = _OUTPUT.search(text)
    action.output = output.group(1) if output else text.removeprefix("Observation: ")
    if _TIMEOUT in text:
        action.returncode, action.exception = -1, "The command timed out and was killed."
        return
    code = _RETURNCODE.search(text)
    action.returncode = int(code.group(1)) if code else 0


def _is_submission(step: Step, text: str) -> bool:
    """Files saved before 1.x recorded an exit status: the completion signal's reply is the submission."""
    return SUBMIT in step.actions[0].command and not _RETURNCODE.search(text)


def read_v1(messages: list[TrajectoryMessage], info: TrajectoryInfo) -> Trajectory:
    """Turn validated 1.x messages into a :class:`Trajectory`.

    Raises:
        TrajectoryError: The file's ``action_regex`` is not a valid regular expression.
    """
    regex = _regex(info)
    exit_status = info.exit_status or ""
    steps: list[Step] = []
    expecting = False  # the next user message answers the last step
    for i, message in enumerate(messages):
        text = text_of(message.content)
        if message.role == "assistant":
            found = [f if isinstance(f, str) else str(f[0]) for f in regex.findall(text)]
            step = Step(n=len(steps) + 1, thought=text)
            if len(found) == 1:
                step.actions = [Action(found[0].strip())]
            else:
                step.format_error = f"Expected exactly 1 action, found {len(found)}."
            steps.append(step)
            expecting = True
        elif message.role == "user" and expecting:
            expecting = False
            last = steps[-1]
            if not last.actions:
                continue
            final = i == len(messages) - 1
            if final and (exit_status == "Submitted" or (not exit_status and _is_submission(last, text))):
                last.submitted = True
            else:
                _observe(last.actions[0], text)
    system = next((text_of(m.content) for m in messages if m.role == "system"), "")
    task = next((text_of(m.content) for m in messages if m.role == "user"), "")
    return Trajectory(steps, exit_status, info.submission or "", "v1", task=task, system=system)
