"""What twinforge reads about the workspace's git repository before it commits (docs/workspace.md).

The workspace is the user's repository too: these checks find the states in which a pipeline
commit would go wrong (on no branch, into the middle of a rebase or merge, against another git
process's index lock), the repository's commit hooks, and whether a folder sits inside a larger
repository.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import git

# git's own markers of an operation in progress (git-rebase, git-merge, git-cherry-pick, git-revert,
# git-am: the files each keeps in the git directory until it is continued or aborted).
_IN_PROGRESS = (
    ("rebase-merge", "a rebase is in progress", "git rebase --continue, or git rebase --abort"),
    ("rebase-apply", "a rebase or git am is in progress", "git rebase --continue / git am --continue, or --abort"),
    ("MERGE_HEAD", "a merge is in progress", "git merge --continue, or git merge --abort"),
    ("CHERRY_PICK_HEAD", "a cherry-pick is in progress", "git cherry-pick --continue, or --abort"),
    ("REVERT_HEAD", "a revert is in progress", "git revert --continue, or --abort"),
)
# Hooks `git commit` runs (githooks(5)); any of them present means twinforge commits through git.
COMMIT_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit")


def state_problems(repo: git.Repo) -> list[str]:
    """Why twinforge must not commit to ``repo`` now (empty when it may).

    Args:
        repo: The repository.

    Returns:
        One sentence per problem, each with the command that resolves it.
    """
    problems = []
    git_dir = Path(repo.git_dir)
    if repo.head.is_detached:
        at = repo.head.commit.hexsha[:10]
        problems.append(
            f"HEAD is detached (at {at}): twinforge's commits would belong to no branch; switch to a branch first "
            "(git switch <branch>)"
        )
    for marker, what, resolve in _IN_PROGRESS:
        if (git_dir / marker).exists():
            problems.append(f"{what} ({git_dir / marker} exists): finish it first ({resolve})")
    lock = git_dir / "index.lock"
    if lock.exists():
        problems.append(
            f"a git index lock exists ({lock}): another git command is running, or one crashed and left it; "
            "if no git command is running, remove that file"
        )
    return problems


def hooks_dir(repo: git.Repo) -> Path:
    """The folder git takes hooks from: ``core.hooksPath`` (relative to the working tree) or ``hooks/``."""
    reader = repo.config_reader()
    configured = str(reader.get_value("core", "hooksPath", default="")) if reader.has_section("core") else ""
    if configured:
        path = Path(os.path.expanduser(configured))
        return path if path.is_absolute() else Path(repo.working_tree_dir or ".") / path
    return Path(repo.common_dir) / "hooks"


def active_hooks(repo: git.Repo) -> list[str]:
    """Commit hooks present and executable in the repository (what ``git commit`` would run)."""
    folder = hooks_dir(repo)
    return [name for name in COMMIT_HOOKS if os.access(folder / name, os.X_OK) and (folder / name).is_file()]


def signs_commits(repo: git.Repo) -> bool:
    """Whether the repository asks for signed commits (``commit.gpgsign``)."""
    reader = repo.config_reader()
    if not reader.has_section("commit"):
        return False
    return str(reader.get_value("commit", "gpgsign", default="false")).lower() in ("true", "yes", "on", "1")


def blob_sha(data: bytes) -> str:
    """The object id git gives a file with these bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def head_blob(repo: git.Repo, git_path: str) -> str | None:
    """Object id of ``git_path`` in HEAD, or ``None`` when HEAD does not hold it (or has no commit)."""
    if not repo.head.is_valid():
        return None
    try:
        return str((repo.head.commit.tree / git_path).hexsha)
    except KeyError:
        return None


def changed_paths(repo: git.Repo, git_folder: str) -> list[str]:
    """Files under ``git_folder`` whose content differs from HEAD: modified, staged or untracked.

    Read with ``git status --porcelain -z`` without optional locks, so it never takes the index
    lock another git command may need. Deleted files are not listed.
    """
    out = repo.git.execute(
        ["git", "--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=all", "--", git_folder or "."]
    )
    fields = str(out).split("\0")
    paths, i = [], 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":
            i += 1  # the source path of a rename or copy follows
        if "D" not in code:
            paths.append(path)
    return paths


@dataclass(frozen=True)
class Enclosing:
    """A git repository that holds a folder below its top.

    Attributes:
        top: The repository's working tree.
        repo: The repository.
    """

    top: Path
    repo: git.Repo


def enclosing_repository(folder: Path) -> Enclosing | None:
    """The repository ``folder`` (or its nearest existing parent) lies in, when ``folder`` is not its top."""
    probe = folder
    while not probe.exists():
        probe = probe.parent
    try:
        repo = git.Repo(probe, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    top = Path(repo.working_tree_dir or "").resolve()
    if top == folder.resolve():
        return None
    return Enclosing(top, repo)
