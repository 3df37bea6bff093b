"""Mini-SWE-agent's ``Environment`` protocol over a :class:`~twinforge.harness.protocol.Shell`.

Mini-SWE-agent 2.x asks an environment for three things (``minisweagent.Environment``): a
``config``, ``execute(action, cwd="")`` returning ``{"output", "returncode", "exception_info"}``,
``get_template_vars()`` for its prompt templates and ``serialize()`` for the trajectory. This
class implements them over our shell instead of letting Mini-SWE-agent start a container of its
own, so the runner keeps the container (limits, network, labels, reaping) and every command is
recorded on the host side.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from pydantic import BaseModel, Field

from twinforge.harness.protocol import Shell

# mini-swe-agent prints a banner on import: keep the CLI's output clean.
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")

# Mini-SWE-agent's completion signal: the first output line of a successful command
# (its bundled prompts tell the agent to run ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``).
SUBMIT_SIGNAL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


class ShellEnvironmentConfig(BaseModel):
    """The environment's settings, as saved in the trajectory."""

    cwd: str = "/workspace/repo"
    """Where commands run (recorded only: the shell decides the work folder)."""
    timeout: int = Field(30, ge=1)
    """Per-command timeout, seconds (docs/design.md, "Execution and outcomes": 30 s)."""
    shell: str = "runner container"
    """What the commands run in, for the trajectory's reader."""


class ShellEnvironment:
    """Mini-SWE-agent environment whose commands run through a :class:`~twinforge.harness.protocol.Shell`.

    Args:
        shell: Where commands run (a :class:`twinforge.taskpair.runtime.session.Session`, a sandbox, ...).
        config: Recorded settings; ``timeout`` is passed to every command.
    """

    def __init__(self, shell: Shell, config: ShellEnvironmentConfig) -> None:
        self.shell = shell
        self.config = config

    def execute(self, action: dict[str, Any], cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        """Run the action's ``command``; raise Mini-SWE-agent's ``Submitted`` on its completion signal.

        Returns:
            ``{"output", "returncode", "exception_info"}`` as Mini-SWE-agent's own environments return it.

        Raises:
            minisweagent.exceptions.Submitted: The command printed the completion signal first and exited 0.
        """
        record = self.shell.exec(str(action.get("command", "")), timeout_s=timeout or self.config.timeout)
        output: dict[str, Any] = {"output": record.output, "returncode": record.exit_code, "exception_info": ""}
        if record.killed:
            output["exception_info"] = "The command timed out and was killed."
        raise_if_submitted(output)
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        """The config plus the platform fields Mini-SWE-agent's prompts use (``system``, ``release``, ...)."""
        return {**self.config.model_dump(), **platform.uname()._asdict(), **kwargs}

    def serialize(self) -> dict[str, Any]:
        """The environment's part of the trajectory (``info.config.environment``)."""
        return {
            "info": {
                "config": {
                    "environment": self.config.model_dump(mode="json"),
                    "environment_type": f"{type(self).__module__}.{type(self).__name__}",
                }
            }
        }


def raise_if_submitted(output: dict[str, Any]) -> None:
    """Raise ``Submitted`` when the output starts with the completion signal and the command succeeded.

    Same rule as Mini-SWE-agent's own environments: the rest of the output is the submission.

    Raises:
        minisweagent.exceptions.Submitted: The agent submitted.
    """
    from minisweagent.exceptions import Submitted

    lines = str(output.get("output", "")).lstrip().splitlines(keepends=True)
    if lines and lines[0].strip() == SUBMIT_SIGNAL and output.get("returncode") == 0:
        submission = "".join(lines[1:])
        raise Submitted(
            {"role": "exit", "content": submission, "extra": {"exit_status": "Submitted", "submission": submission}}
        )
