"""Recovering twinforge's own interrupted writes, and only those (docs/workspace.md, "Recovery").

A run killed between writing a file and committing it leaves a journal entry
(:mod:`twinforge.core.journal`). The next run commits such a file only while it still holds exactly the
bytes twinforge wrote; a file someone changed since is left alone and reported, and files
twinforge did not write are never touched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from twinforge.core.exceptions import TwinforgeError, WorkspaceError
from twinforge.core.gitrepo import blob_sha, head_blob
from twinforge.core.journal import content_sha256

if TYPE_CHECKING:
    from twinforge.core.workspace import Workspace


@dataclass
class Recovery:
    """What :meth:`Workspace.recover` found.

    Attributes:
        committed: Files committed (twinforge's own interrupted writes).
        sha: The recovery commit, if one was made.
        invalid: ``(path, error)`` of journaled files that do not validate (left uncommitted).
        foreign: Journaled files changed by someone since twinforge wrote them (left alone).
        error: Why the recovery commit failed, if it did (the files stay journaled).
    """

    committed: list[str] = field(default_factory=list)
    sha: str | None = None
    invalid: list[tuple[str, str]] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    error: str | None = None


def recover_writes(
    workspace: Workspace, folder: str | None, validate: Callable[[Path], object] | None = None
) -> Recovery:
    """Commit twinforge's own writes under ``folder`` that an interrupted run left uncommitted.

    Only journaled files that still hold exactly the bytes twinforge wrote are committed; a file
    someone changed since is left alone (and reported), as is every file twinforge did not write.
    Leftover temporary files of interrupted atomic writes in ``folder`` are removed.

    Args:
        workspace: The workspace.
        folder: Workspace-relative folder, e.g. ``blueprints``; ``None`` for every journaled file.
        validate: Raises a :class:`TwinforgeError` for a file that must not be committed.

    Returns:
        What was committed, left alone, or refused.
    """
    report = Recovery()
    with workspace.locked():
        if folder is not None:
            for leftover in (workspace.root / folder).glob(".*.tmp"):
                leftover.unlink(missing_ok=True)
        for entry in workspace.journal.entries():
            if folder is not None and not entry.path.startswith(f"{folder}/"):
                continue
            path = workspace.root / entry.path
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                workspace.journal.clear([entry.path])  # removed since: nothing of twinforge's is left there
                continue
            if head_blob(workspace.repo, workspace.git_path(entry.path)) == blob_sha(data):
                workspace.journal.clear([entry.path])  # committed after all (killed before clearing)
                continue
            if content_sha256(data) != entry.sha256:
                report.foreign.append(entry.path)
                workspace.journal.clear([entry.path])  # a person's file now
                continue
            if validate is not None:
                try:
                    validate(path)
                except TwinforgeError as exc:
                    report.invalid.append((entry.path, str(exc)))
                    continue
            report.committed.append(entry.path)
        if report.committed:
            try:
                workspace.check_ready()
                report.sha = workspace.commit(
                    f"recover: {len(report.committed)} change(s) left uncommitted by an interrupted twinforge run",
                    report.committed,
                )
            except WorkspaceError as exc:
                report.error = str(exc)
                report.committed = []
    return report


def recovery_lines(recovery: Recovery) -> list[str]:
    """What a start-of-run recovery did, one line each, for a command's output (empty when nothing)."""
    lines = []
    if recovery.committed:
        lines.append(
            f"recovered {len(recovery.committed)} file(s) an interrupted twinforge run wrote but did not commit "
            f"({', '.join(recovery.committed)}): commit {(recovery.sha or '')[:10]}"
        )
    lines += [f"not recovered (does not validate): {path}: {error}" for path, error in recovery.invalid]
    lines += [
        f"not recovered: {path} was changed by someone after twinforge wrote it; it is left to you"
        for path in recovery.foreign
    ]
    if recovery.error:
        lines.append(f"recovery commit failed: {recovery.error}")
    return lines
