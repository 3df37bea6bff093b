"""What the detectors see: a trajectory as numbered steps, each one model call and its actions' results."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

Mode = Literal["text", "toolcall", "responses", "v1", "atif", "unknown"]
"""How the harness exchanged actions: Mini-SWE-agent 2.x text actions (``LitellmTextbasedModel``),
chat tool calls (``LitellmModel``), Responses-API tool calls (``LitellmResponseModel``), a 1.x
file, or an ATIF trajectory (any harness, docs/observer.md "One trajectory format")."""


@dataclass
class Action:
    """One command the agent issued and what running it gave.

    Attributes:
        command: The shell command.
        call_id: The tool call id it was issued under ('' for text actions).
        output: What it printed (the harness's raw output, before its templates).
        returncode: Exit code; ``-1`` when the harness reports an exception (e.g. a timeout) or a
            command it did not execute; ``None`` when no result was recorded (the action ended the
            run with the completion signal, or a later action's exception aborted the step).
        exception: The harness's ``exception_info`` (timeout, not executed), '' when none.
        tool: The tool called ('' for a text action; ``bash``, ``Bash``, ``exec_command``, ``Edit``, ...).
        writes: Files a file tool (not a shell) writes or edits, as the model named them.
    """

    command: str
    call_id: str = ""
    output: str = ""
    returncode: int | None = None
    exception: str = ""
    tool: str = ""
    writes: tuple[str, ...] = ()

    @property
    def ran(self) -> bool:
        """A result was recorded for this action."""
        return self.returncode is not None

    @property
    def failed(self) -> bool:
        """The command ran and exited non-zero (or the harness reported an exception for it)."""
        return self.returncode not in (None, 0)


@dataclass
class Step:
    """One agent turn: one model call (or one command a human typed in Mini-SWE-agent's human mode).

    Attributes:
        n: 1-based step number, in the order the harness recorded the turns.
        thought: The reply's text (for a format error: the rejected reply, when the file keeps it).
        actions: The commands of the reply, in order, each with its result (several for one
            response with several tool calls).
        format_error: Why the harness rejected the reply ('' when it was well formed), e.g.
            ``Expected exactly 1 action, found 0.``.
        submitted: One of this step's actions was accepted as the completion signal.
        interrupted: Interrupt type that stopped this step's actions (``UserRejection`` ...), else ''.
        by: ``model``, or ``human`` for a command typed in human mode.
    """

    n: int
    thought: str = ""
    actions: list[Action] = field(default_factory=list)
    format_error: str = ""
    submitted: bool = False
    interrupted: str = ""
    by: Literal["model", "human"] = "model"

    @cached_property
    def command(self) -> str:
        """The step's commands, one per line ('' for a format error); read once the actions are set."""
        return "\n".join(a.command for a in self.actions)

    @property
    def output(self) -> str:
        """The outputs of the step's actions, in order."""
        return "\n".join(a.output for a in self.actions if a.output)

    @property
    def returncode(self) -> int | None:
        """The first non-zero exit code among the actions, else the last recorded one (``None``: none ran)."""
        codes = [a.returncode for a in self.actions if a.returncode is not None]
        return next((c for c in codes if c != 0), codes[-1] if codes else None)

    @property
    def failed(self) -> bool:
        """An action ran and failed (the submitting step never counts as failed)."""
        return not self.submitted and any(a.failed for a in self.actions)


@dataclass
class Trajectory:
    """A whole saved (or live) run, as the observer's rules read it (from any harness's output).

    Attributes:
        steps: The steps in order.
        exit_status: The harness's exit status (``Submitted``, ``LimitsExceeded``, ``TimeExceeded``,
            ``RepeatedFormatError``, an exception's class name, ...), '' while running.
        submission: What the agent submitted.
        mode: The action format the file was written in.
        version: ``trajectory_format`` of the file ('' for live messages).
        env: Variables the harness set for every command (``info.config.environment.env``).
        cwd: The working directory commands started in (``info.config.environment.cwd``), '' if unknown.
        interventions: Step numbers after which an observer message was delivered.
        task: The task the agent was given ('' when the source does not keep it).
        system: The harness's system prompt ('' when the source does not keep it).
        notes: The observer messages delivered, in order (text and the saved intervention record).
    """

    steps: list[Step]
    exit_status: str = ""
    submission: str = ""
    mode: Mode = "unknown"
    version: str = ""
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    interventions: list[int] = field(default_factory=list)
    task: str = ""
    system: str = ""
    notes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
