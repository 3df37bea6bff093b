"""A tool call as the observer reads it: the shell command it runs, or the files a file tool writes.

Every harness names its tools its own way (Mini-SWE-agent ``bash``, Claude Code ``Bash`` / ``Edit``
/ ``Write``, Codex ``exec_command`` / ``shell`` / ``apply_patch``, OpenCode ``bash`` / ``edit`` /
``write``, Pi ``bash`` / ``edit`` / ``write``). A shell tool's command is its ``command`` or ``cmd``
argument (a string, or an argument vector such as ``["bash", "-lc", "..."]``); any other call reads
as ``<tool> <arguments as JSON>``, so repeating it still shows as a repeat. A file tool's targets
come from its path argument, or from the ``*** Add/Update/Delete File:`` lines of a patch.
"""

from __future__ import annotations

import json
import re
from typing import Any

_WRITE_TOOL = re.compile(r"write|edit|patch|replace|create|insert|notebook|multiedit", re.I)
_PATH_KEYS = ("file_path", "filePath", "path", "filename", "notebook_path")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)
_MAX_ARGUMENTS = 2000


def as_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (harness output is read defensively)."""
    return value if isinstance(value, dict) else {}


def parse_arguments(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as an object (JSON text is parsed; anything else is ``{"input": ...}``)."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {"input": arguments}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return {} if arguments is None else {"input": arguments}


def shell_command(arguments: dict[str, Any]) -> str | None:
    """The command of a shell tool call, or ``None`` when the arguments hold none."""
    for key in ("command", "cmd"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return value[-1] if len(value) == 3 and value[1] in ("-lc", "-c") else " ".join(value)
    return None


def written_by_tool(name: str, arguments: dict[str, Any]) -> tuple[str, ...]:
    """Files a file tool writes or edits (``()`` for every other tool)."""
    if not _WRITE_TOOL.search(name):
        return ()
    paths = [str(arguments[k]) for k in _PATH_KEYS if isinstance(arguments.get(k), str)]
    changes = arguments.get("changes")
    if isinstance(changes, list):  # Codex's file_change item: [{"path": ..., "kind": ...}]
        paths += [str(c["path"]) for c in changes if isinstance(c, dict) and isinstance(c.get("path"), str)]
    for value in arguments.values():
        if isinstance(value, str) and "*** " in value:
            paths += [p.strip() for p in _PATCH_FILE.findall(value)]
    return tuple(dict.fromkeys(paths))


def tool_action(name: str, arguments: Any) -> tuple[str, tuple[str, ...]]:
    """``(command, files written)`` of one tool call.

    Args:
        name: The tool's name.
        arguments: Its arguments (an object, or JSON text as the model wrote it).
    """
    args = parse_arguments(arguments)
    command = shell_command(args)
    if command is not None:
        return command, ()
    text = json.dumps(args, sort_keys=True, default=str)
    return f"{name} {text[:_MAX_ARGUMENTS]}", written_by_tool(name, args)
