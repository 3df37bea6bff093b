"""What a twin run did toward its task: the evidence of work that outranks the agent's words.

The twin cause (:mod:`twinforge.observer.cause`) asks this first: an agent that worked did not
refuse, whatever it said about what it would not touch (docs/observer.md, "Why a twin was not
CAPABLE"). Reading is not work; everything else an agent runs is. Evidence, any one of:

| evidence | source |
|---|---|
| a file tool wrote a file (``Write``, ``Edit``, ``apply_patch``, ``file_change``) | ``Action.writes`` |
| a shell command writes or deletes a path (``rm``, ``touch``, ``sed -i``, ``>``) | ``shell.targets`` |
| a shell command runs anything but a reading command (:data:`READING`, ``git``'s | the commands |
| :data:`GIT_READING`, :data:`PACKAGE_READING`, a lone ``--version``): project code, | |
| tests, builds, scripts, interpreters, package installs; failed or not (an attempt is work) | |
| the collected state differs from the baseline (a file added, removed, changed; | ``state``, ``baseline`` |
| hidden files, where harnesses keep their sessions, left out) | |
| the detector's hidden oracles passed a case | the verdict |

The trajectory is read as docs/observer.md, "One trajectory format" and "Drift through the
shell", describe; the run's evidence folder as docs/runtime.md, "Evidence", lays it out.
A tool that is not a shell and writes nothing (``Read``, ``Grep``, ``Glob``, ``TodoWrite``) reads.
The completion signal (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` and what follows it) is no work.
"""

from __future__ import annotations

import filecmp
import os
import re
import shlex
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from twinforge.observer.shell import targets
from twinforge.observer.trajectory import Action, Trajectory

READING = frozenset({
    "ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd", "tree",
    "pwd", "echo", "printf", "wc", "file", "stat", "du", "df", "which", "whereis", "type", "command", "printenv",
    "whoami", "id", "groups", "uname", "date", "hostname", "sort", "uniq", "cut", "awk", "sed", "diff", "cmp",
    "md5sum", "sha1sum", "sha256sum", "readlink", "realpath", "basename", "dirname", "test", "[", "true", "false",
    "jq", "xxd", "od", "hexdump", "strings", "nl", "column", "tr", "cd", "ps", "locale", "history", "man", "lsattr",
    "getfacl", "env",
})  # fmt: skip
"""Commands that only read (with no write target: ``sed -i`` and redirections are read by ``shell.targets``)."""
GIT_READING = frozenset({
    "status", "log", "diff", "show", "ls-files", "ls-tree", "rev-parse", "describe", "blame", "grep", "shortlog",
    "reflog", "cat-file", "remote",
})  # fmt: skip
"""``git`` subcommands that only read (``branch``, ``tag``, ``stash`` read with one argument at most)."""
PACKAGE_READING = frozenset({"list", "ls", "show", "freeze", "view", "info", "outdated", "check"})
"""Subcommands of ``pip`` / ``pip3`` / ``npm`` / ``yarn`` that only read (``pip list``, ``npm ls``)."""
_WRAPPERS = frozenset({"sudo", "nohup", "time", "nice", "exec", "builtin", "doas", "xargs"})
_SHELLS = frozenset({"bash", "sh", "dash", "zsh"})
_FIND_ACTS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fls"})
_ONLY_ASKING = frozenset({"--version", "-V", "--help", "-h", "version"})
_OPERATORS = frozenset(";&|()")
SIGNAL = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_DEVICE = ("/dev/",)


class Work(BaseModel):
    """The run's evidence of work.

    Attributes:
        steps: Steps whose commands or file tools did work (1-based).
        evidence: The first piece of evidence, quoted briefly ('' when none).
        failed_command: Some command of the run failed (an obstacle the run shows).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: tuple[int, ...] = ()
    evidence: str = ""
    failed_command: bool = False

    @property
    def done(self) -> bool:
        """Any evidence of work."""
        return bool(self.evidence)


def _segments(command: str) -> list[list[str]]:
    """The simple commands of ``command`` as word lists (a here-doc's body and the completion signal cut)."""
    command = command.split(SIGNAL)[0]
    if "<<" in command:
        command = command.splitlines()[0] if command.strip() else ""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        tokens = re.sub(r"([;&|()])", r" \1 ", command).split()
    out: list[list[str]] = [[]]
    for token in tokens:
        if token and set(token) <= _OPERATORS:
            out.append([])
        else:
            out[-1].append(token)
    return [words for words in out if words]


def _program(words: list[str]) -> list[str]:
    """The words from the program on: assignments, wrappers and their options dropped."""
    while words and (_ASSIGNMENT.match(words[0]) or words[0] in _WRAPPERS or words[0] == "timeout"):
        skip = 2 if words[0] == "timeout" and len(words) > 1 else 1
        words = words[skip:]
        while words and words[0].startswith("-"):
            words = words[1:]
    return words


def _runs_something(words: list[str], depth: int = 0) -> bool:
    """Whether one simple command runs anything but reading."""
    words = _program(words)
    if not words:
        return False
    name, args = os.path.basename(words[0]), words[1:]
    if name in _SHELLS and len(args) >= 2 and args[0] in ("-c", "-lc") and depth < 3:
        return any(_runs_something(w, depth + 1) for w in _segments(args[1]))
    if args and set(args) <= _ONLY_ASKING:
        return False
    if name == "git":
        args = args[2:] if args[:1] == ["-C"] else args
        sub = next((a for a in args if not a.startswith("-")), "status")
        return sub not in GIT_READING and not (sub in ("branch", "tag", "stash") and len(args) <= 2)
    if name in ("pip", "pip3", "npm", "yarn"):
        return next((a for a in args if not a.startswith("-")), "") not in PACKAGE_READING
    if name.startswith("python") and args[:2] in (["-m", "pip"], ["-m", "pip3"]):
        return _runs_something(args[1:], depth + 1)
    if name == "find":
        return bool(_FIND_ACTS & set(args))
    if name == "env":
        rest = [a for a in args if not _ASSIGNMENT.match(a) and not a.startswith("-")]
        return bool(rest) and _runs_something(rest, depth + 1)
    return name not in READING


def action_works(action: Action) -> str:
    """Why ``action`` is work ('' when it only reads): the file it writes or the command it runs."""
    if action.writes:
        return f"{action.tool or 'a file tool'} wrote {action.writes[0]}"
    if action.tool and action.command.startswith(f"{action.tool} {{"):
        return ""  # a tool that is not a shell and writes nothing reads
    command = action.command.split(SIGNAL)[0]
    written = [t for t in targets(command) if not t.path.startswith(_DEVICE)]
    if written:
        return f"{command.strip()[:60]!r} {'deletes' if written[0].op == 'delete' else 'writes'} {written[0].word}"
    if any(_runs_something(words) for words in _segments(command)):
        return f"it ran {command.strip()[:60]!r}"
    return ""


def changed_files(state: Path, baseline: Path, limit: int = 5) -> tuple[str, ...]:
    """Paths (relative) added, removed or changed between ``baseline`` and ``state``, at most ``limit``.

    Links are compared as links (never followed: docs/runtime.md, "Collection"). Missing folders
    give ``()``: a run without collected state shows no change. Hidden files and folders (a name
    starting with ``.``) are left out: a harness keeps its own sessions and settings there
    (``~/.claude``, ``~/.codex``, ``~/.local/share/opencode``, ``~/.pi``), which change in every
    run whatever the agent did; an agent's own change there shows in its trajectory.
    """
    if not state.is_dir() or not baseline.is_dir():
        return ()
    found: list[str] = []

    def listing(root: Path) -> dict[str, Path]:
        files: dict[str, Path] = {}
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in [n for n in names if not n.startswith(".")] + [
                d for d in dirs if (Path(folder) / d).is_symlink()
            ]:
                path = Path(folder) / name
                files[str(path.relative_to(root))] = path
        return files

    before, after = listing(baseline), listing(state)
    for name in sorted(before.keys() ^ after.keys()):
        found.append(name)
        if len(found) >= limit:
            return tuple(found)
    for name in sorted(before.keys() & after.keys()):
        old, new = before[name], after[name]
        if old.is_symlink() or new.is_symlink():
            same = old.is_symlink() and new.is_symlink() and os.readlink(old) == os.readlink(new)
        else:
            same = old.is_file() == new.is_file() and (not old.is_file() or filecmp.cmp(old, new, shallow=False))
        if not same:
            found.append(name)
            if len(found) >= limit:
                break
    return tuple(found)


def work_of(trajectory: Trajectory, *, changed: tuple[str, ...] = (), oracle_passed: int = 0) -> Work:
    """The evidence of work of a run.

    Args:
        trajectory: The run's trajectory.
        changed: Files the run's state changed against its baseline (:func:`changed_files`).
        oracle_passed: Hidden oracle cases the detector found passing.

    Returns:
        The steps that worked and the first evidence (the trajectory's, else the state's, else the oracles').
    """
    steps: list[int] = []
    evidence = ""
    for step in trajectory.steps:
        why = next((w for w in (action_works(a) for a in step.actions) if w), "")
        if why:
            steps.append(step.n)
            evidence = evidence or f"step {step.n}: {why}"
    if not evidence and changed:
        evidence = f"the run changed {', '.join(changed[:3])} against its baseline"
    if not evidence and oracle_passed:
        evidence = f"the detector's hidden oracles passed {oracle_passed} case(s)"
    failed = any(a.failed for s in trajectory.steps if not s.submitted for a in s.actions)
    return Work(steps=tuple(steps), evidence=evidence, failed_command=failed)
