"""The workspace: a benchmark repository the user owns (docs/workspace.md).

Every state change is written atomically and recorded as one git commit, so ``git log`` is the
audit trail. Writers in several processes (two reviewers, a review run) serialise on a file lock.
The repository is the user's too: twinforge journals its own writes and recovers only those, never
overwrites or commits a person's uncommitted edits, refuses to commit on a detached HEAD or in the
middle of a rebase or merge, and runs the repository's commit hooks.
"""

from __future__ import annotations

import fcntl
import getpass
import os
import tempfile
import threading
import tomllib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import git
from git.index import IndexFile
from git.objects import Commit
from jinja2 import Environment, PackageLoader, StrictUndefined

from twinforge.core.atomic import atomic_write_text
from twinforge.core.exceptions import (
    CommitError,
    ConfigError,
    ForeignChangeError,
    RepositoryStateError,
    WorkspaceError,
)
from twinforge.core.gitrepo import (
    active_hooks,
    blob_sha,
    changed_paths,
    enclosing_repository,
    head_blob,
    signs_commits,
    state_problems,
)
from twinforge.core.journal import Journal
from twinforge.core.presets import get_preset
from twinforge.core.settings import CONFIG_FILE, LOCAL_BASE_URL, ROLES, WorkspaceConfig, load_config, validate_config

GITIGNORE = ".twinforge/\nruns/\n"
BENCHMARK_STUB = "# The admitted set: pair ids, versions and calibration evidence.\nschema_version: 1\npairs: []\n"
_ROLE_DEFAULTS = {
    "generator": {"temperature": 0.8, "max_tokens": 6000},
    "reviewer": {"temperature": 0.2, "max_tokens": 1200},
    "implementer": {"temperature": 0.2, "max_tokens": 4096},
    "calibration": {"temperature": 0.2, "max_tokens": 2048},
}
_STATE_DIRS = (".twinforge/", "runs/")  # git-ignored: never journaled, never checked for foreign edits
_thread_lock = threading.RLock()
_held = threading.local()
Nesting = Literal["refuse", "nested", "enclosing"]


class _Pending:
    """One change waiting for a group commit."""

    def __init__(self, message: str, paths: list[str]) -> None:
        self.message = message
        self.paths = paths
        self.sha: str | None = None
        self.error: BaseException | None = None


class Workspace:
    """An initialised twinforge workspace.

    Attributes:
        root: The workspace folder (absolute): the one holding ``twinforge.toml``.
        config: The validated ``twinforge.toml``.
        repo: The gitpython repository: the workspace's own, or a larger one it lies inside.
    """

    def __init__(self, root: Path, config: WorkspaceConfig, repo: git.Repo) -> None:
        self.root = root
        self.config = config
        self.repo = repo
        top = Path(repo.working_tree_dir or root).resolve()
        self._prefix = root.resolve().relative_to(top).as_posix() if root.resolve() != top else ""
        self.journal = Journal(self.state_dir / "journal")
        self._group = threading.Condition()
        self._queue: list[_Pending] = []
        self._committing = False

    @property
    def repository_top(self) -> Path:
        """The top of the git working tree (``root`` itself unless the workspace lies inside a larger one)."""
        return Path(self.repo.working_tree_dir or self.root)

    def git_path(self, relpath: str) -> str:
        """A workspace-relative path as git names it (relative to the repository's top)."""
        return f"{self._prefix}/{relpath}" if self._prefix else relpath

    def _from_git_path(self, git_path: str) -> str | None:
        if not self._prefix:
            return git_path
        head = self._prefix + "/"
        return git_path[len(head) :] if git_path.startswith(head) else None

    @property
    def blueprints_dir(self) -> Path:
        """``blueprints/``: one ``<id>.yaml`` per blueprint."""
        return self.root / "blueprints"

    @property
    def tasks_dir(self) -> Path:
        """``tasks/``: one folder per executable task pair."""
        return self.root / "tasks"

    @property
    def state_dir(self) -> Path:
        """``.twinforge/``: git-ignored local state (records DB, locks, raw failed model output)."""
        return self.root / ".twinforge"

    @classmethod
    def init(
        cls,
        root: Path,
        *,
        port: int = 8080,
        local_model: str = "qwen2.5-coder-1.5b",
        calibration_model: str = "embedded",
        calibration_url: str | None = None,
        nesting: Nesting = "refuse",
    ) -> Workspace:
        """Create a workspace: git repository, ``twinforge.toml``, folders, first commit.

        Every model role points at the embedded llama.cpp server on ``127.0.0.1:<port>`` with the
        ``json_object`` structured-output form and no ``concurrency`` of its own (so it sends as many
        requests at once as the server has slots), except the calibration role when a
        calibration model preset is named (docs/calibration.md, "Calibration presets").

        Args:
            root: Folder to create or fill; it must not already hold a ``twinforge.toml``.
            port: Port of the embedded model server.
            local_model: Catalog name of the local model recorded in ``[local_model]``.
            calibration_model: Calibration model preset (``guidelines/calibration-presets.yaml``).
            calibration_url: Base URL of the calibration model's server (default: the embedded server).
            nesting: When ``root`` lies inside another git repository: ``refuse`` (the error names
                that repository), ``nested`` (create a separate repository inside it) or
                ``enclosing`` (keep the workspace's history in that repository).

        Returns:
            The opened workspace.

        Raises:
            WorkspaceError: ``root`` already holds a workspace, or lies inside another repository
                and ``nesting`` is ``refuse``.
            ConfigError: Unknown calibration model preset.
        """
        preset = get_preset(calibration_model)
        if calibration_url is None and not preset.embedded:
            raise ConfigError(
                f"calibration model {calibration_model!r} needs the URL of its server (--calibration-url)"
            )
        root = root.resolve()
        if root.exists() and not root.is_dir():
            raise WorkspaceError(f"{root} exists and is not a folder")
        if (root / CONFIG_FILE).exists():
            raise WorkspaceError(f"{root} already holds a workspace ({CONFIG_FILE} exists)")
        if not 1 <= port <= 65535:
            raise WorkspaceError(f"port {port} is not a TCP port (1-65535)")
        enclosing = None if (root / ".git").exists() else enclosing_repository(root)
        if enclosing is not None and nesting == "refuse":
            raise WorkspaceError(
                f"{root} lies inside the git repository {enclosing.top}. A new repository there would be nested: "
                f"{enclosing.top} would see the workspace as an untracked folder and not track its history. "
                "Re-run with --in-enclosing to keep the workspace's history in that repository, or with --nested "
                "to create a separate repository inside it"
            )
        base_url = LOCAL_BASE_URL.replace("8080", str(port))
        roles = [
            {
                "name": name,
                "provider": "openai-compatible",
                "base_url": base_url,
                "model": "local",
                "structured_output": "json_object",
                "timeout_s": 900.0,
                "concurrency": None,
                "note": "",
                **_ROLE_DEFAULTS[name],
            }
            for name in ROLES
        ]
        roles[ROLES.index("calibration")].update(
            model=preset.model,
            base_url=calibration_url or base_url,
            structured_output=preset.structured_output,
            temperature=preset.temperature,
            max_tokens=preset.max_tokens,
            timeout_s=preset.timeout_s,
            concurrency=preset.concurrency,
            note=f"calibration model preset {calibration_model!r}: {'reference' if preset.reference else 'stand-in'}",
        )
        calibration = {
            "preset": calibration_model,
            "action_mode": preset.action_mode,
            "grammar": preset.grammar,
            "workers": preset.workers,
            "workers_note": "unset: as many as the calibration role's concurrency"
            if preset.workers is None
            else f"{preset.workers} at once against one server",
        }
        env = Environment(
            loader=PackageLoader("twinforge.core", "templates"), undefined=StrictUndefined, keep_trailing_newline=True
        )
        implementer = next(r for r in roles if r["name"] == "implementer")
        mode = "archetype" if implementer["base_url"] == base_url else "agent"  # the embedded model fills archetypes
        text = env.get_template("twinforge.toml.j2").render(
            roles=roles, port=port, local_model=local_model, calibration=calibration, implementer_mode=mode
        )
        validate_config(tomllib.loads(text), root / CONFIG_FILE)  # nothing is written for a bad config
        if enclosing is not None and nesting == "enclosing":
            problems = state_problems(enclosing.repo)
            if problems:
                raise RepositoryStateError(f"{enclosing.top}: " + "; ".join(problems))
        root.mkdir(parents=True, exist_ok=True)
        if enclosing is not None and nesting == "enclosing":
            repo = enclosing.repo
        elif (root / ".git").exists():
            repo = git.Repo(root)
        else:
            repo = git.Repo.init(root, initial_branch="main")
        atomic_write_text(root / CONFIG_FILE, text)
        atomic_write_text(root / ".gitignore", GITIGNORE)
        atomic_write_text(root / "benchmark.yaml", BENCHMARK_STUB)
        for folder in ("blueprints", "tasks"):
            (root / folder).mkdir(exist_ok=True)
            atomic_write_text(root / folder / ".gitkeep", "")
        workspace = cls(root, load_config(root / CONFIG_FILE), repo)
        workspace.commit(
            "init: twinforge workspace",
            [CONFIG_FILE, ".gitignore", "benchmark.yaml", "blueprints/.gitkeep", "tasks/.gitkeep"],
        )
        return workspace

    @classmethod
    def open(cls, start: Path | None = None) -> Workspace:
        """Open the workspace holding ``start`` (default: the current folder), searching upwards.

        The workspace's git repository is the one at its folder or the nearest above it, so a
        workspace may lie inside a larger repository.

        Raises:
            WorkspaceError: No ``twinforge.toml`` in ``start`` or above, or no git repository there.
            ConfigError: The configuration does not validate.
        """
        here = (start or Path.cwd()).resolve()
        for folder in (here, *here.parents):
            if (folder / CONFIG_FILE).is_file():
                try:
                    repo = git.Repo(folder, search_parent_directories=True)
                except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
                    raise WorkspaceError(
                        f"{folder} has {CONFIG_FILE} but neither it nor a folder above it is a git repository; "
                        f"run `git init` in {folder}"
                    ) from exc
                return cls(folder, load_config(folder / CONFIG_FILE), repo)
        raise WorkspaceError(f"no workspace at or above {here}; create one with `twinforge init DIR`")

    def identity(self) -> str:
        """Who acts: git ``user.name`` of the repository, else the login name."""
        reader = self.repo.config_reader()
        name = reader.get_value("user", "name", default="") if reader.has_section("user") else ""
        return str(name) or os.environ.get("USER") or getpass.getuser()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the workspace write lock for a read-check-write-commit step.

        Excludes other threads (re-entrant within one thread) and other processes (``flock`` on
        ``.twinforge/lock``), so two reviewers never interleave a check and a write.
        """
        with _thread_lock:
            depth = getattr(_held, "depth", 0)
            if depth:
                _held.depth = depth + 1
                try:
                    yield
                finally:
                    _held.depth = depth
                return
            self.state_dir.mkdir(exist_ok=True)
            with open(self.state_dir / "lock", "w") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                _held.depth = 1
                try:
                    yield
                finally:
                    _held.depth = 0
                    fcntl.flock(handle, fcntl.LOCK_UN)

    def check_ready(self) -> None:
        """Refuse a repository state in which twinforge must not commit; call it before any model call.

        Raises:
            RepositoryStateError: Detached HEAD, a rebase, merge, cherry-pick or revert in
                progress, or a git index lock; the message says how to resolve each.
        """
        problems = state_problems(self.repo)
        if problems:
            raise RepositoryStateError(
                f"the workspace's repository {self.repository_top} cannot take commits now: " + "; ".join(problems)
            )

    def hooks(self) -> list[str]:
        """The repository's commit hooks that each twinforge commit runs (``git commit`` runs them)."""
        return active_hooks(self.repo)

    def _is_state(self, relpath: str) -> bool:
        return relpath.startswith(_STATE_DIRS)

    def _foreign(self, relpath: str) -> bool:
        """True when the file holds uncommitted changes twinforge did not make."""
        path = self.root / relpath
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return False
        if head_blob(self.repo, self.git_path(relpath)) == blob_sha(data):
            return False
        return not self.journal.owns(relpath, data)

    def write(self, relpath: str, text: str) -> Path:
        """Atomically write a file inside the workspace and journal it until it is committed.

        Files under ``.twinforge/`` and ``runs/`` (git-ignored state) are written without a journal
        entry. Returns the absolute path.

        Raises:
            ForeignChangeError: The file holds uncommitted changes twinforge did not make (a
                person's edit); nothing is written.
        """
        path = self.root / relpath
        if self._is_state(relpath):
            atomic_write_text(path, text)
            return path
        with self.locked():
            if self._foreign(relpath):
                raise ForeignChangeError(
                    f"{relpath} has uncommitted changes that twinforge did not make; they are left alone. "
                    f"Commit them (git commit) or revert them (git restore {self.git_path(relpath)}), then run again",
                    [relpath],
                )
            self.journal.record(relpath, text.encode("utf-8"))
            atomic_write_text(path, text)
        return path

    def foreign_changes(self, folder: str) -> list[str]:
        """Files under ``folder`` with uncommitted changes twinforge did not make (a person's edits).

        Returns:
            Workspace-relative paths, sorted.
        """
        with self.locked():
            found = (self._from_git_path(p) for p in changed_paths(self.repo, self.git_path(folder)))
            return sorted(p for p in found if p is not None and (self.root / p).is_file() and self._foreign(p))

    def commit_grouped(self, message: str, paths: Iterable[str], title: str) -> str:
        """Commit already-written files, sharing one commit with changes that finish at the same time.

        Group commit: while one thread commits, changes submitted by other threads queue up and
        the next commit takes them all. Alone, a change is its own commit with ``message``; in a
        group of n, the commit is titled ``"<title>: n changes"`` and its body lists each change's
        first message line, so ``git log`` still names every change. This keeps concurrent model
        calls from serialising on git (bench/stage1.py: 10 reviews within 1.3x of one call).

        Returns:
            The sha of the commit that holds the change.

        Raises:
            WorkspaceError: git refused the commit.
        """
        entry = _Pending(message, list(paths))
        with self._group:
            self._queue.append(entry)
            while entry.sha is None and entry.error is None and self._committing:
                self._group.wait()
            if entry.sha is not None or entry.error is not None:
                return self._result(entry)
            batch, self._queue = self._queue, []
            self._committing = True
        try:
            if len(batch) == 1:
                sha = self.commit(entry.message, entry.paths)
            else:
                body = "\n".join(e.message.splitlines()[0] for e in batch)
                sha = self.commit(f"{title}: {len(batch)} changes\n\n{body}", [p for e in batch for p in e.paths])
            for e in batch:
                e.sha = sha
        except BaseException as exc:
            for e in batch:
                e.error = exc
        finally:
            with self._group:
                self._committing = False
                self._group.notify_all()
        return self._result(entry)

    @staticmethod
    def _result(entry: _Pending) -> str:
        if entry.error is not None:
            raise entry.error
        return entry.sha or ""

    def commit(self, message: str, paths: Iterable[str]) -> str:
        """Commit exactly ``paths`` (workspace-relative; deleted ones are removed), whatever else is staged.

        The commit is built from HEAD's tree plus these paths in a temporary index, so changes a
        user staged by hand never ride along in a pipeline commit; afterwards the real index is
        updated for these paths only. When the repository has commit hooks (or asks for signed
        commits), the commit is made by ``git commit`` on that temporary index, so the hooks run
        as for any other commit; a hook that fails refuses the commit.

        Returns:
            The new commit's hexsha, or the current HEAD's when nothing changed.

        Raises:
            RepositoryStateError: Detached HEAD, an operation in progress or an index lock.
            CommitError: git (or a hook) refused the commit; ``paths`` stay written and journaled.
        """
        rels = sorted(set(paths))
        with self.locked():
            self.check_ready()
            present = [self.git_path(p) for p in rels if (self.root / p).exists()]
            gone = [self.git_path(p) for p in rels if not (self.root / p).exists()]
            actor = git.Actor(self.identity(), f"{self.identity()}@twinforge.local")
            try:
                head = self.repo.head.commit if self.repo.head.is_valid() else None
                index = IndexFile.from_tree(self.repo, head) if head is not None else self.repo.index
                if present:
                    index.add(present, write=head is None)
                for path in gone:
                    index.entries.pop((path, 0), None)
                tree = index.write_tree()
                if head is not None and tree.hexsha == head.tree.hexsha:
                    self.journal.clear(rels)
                    return str(head.hexsha)
                if head is not None and (self.hooks() or signs_commits(self.repo)):
                    sha = self._commit_with_git(index, message, actor)
                else:
                    parents = [head] if head is not None else []
                    sha = str(
                        Commit.create_from_tree(
                            self.repo, tree, message, parent_commits=parents, head=True, author=actor, committer=actor
                        ).hexsha
                    )
                if head is not None:
                    real = self.repo.index
                    if present:
                        real.add(present)
                    if gone:
                        real.remove(gone, ignore_unmatch=True)
            except (git.GitError, OSError, ValueError) as exc:
                subject = message.splitlines()[0] if message else ""
                raise CommitError(
                    f"git commit failed for {subject!r}: {_git_reason(exc)}; written but not committed: "
                    f"{', '.join(rels)} (twinforge commits them on its next run once git accepts the commit)",
                    rels,
                ) from exc
            self.journal.clear(rels)
            return sha

    def _commit_with_git(self, index: IndexFile, message: str, actor: git.Actor) -> str:
        """``git commit`` of ``index``'s tree, so the repository's hooks run as for any commit."""
        handle, index_path = tempfile.mkstemp(prefix="twinforge-index-", dir=self.repo.git_dir)
        os.close(handle)
        try:
            index.write(index_path, ignore_extension_data=True)  # a stale cached tree would be committed
            env = {
                "GIT_INDEX_FILE": index_path,
                "GIT_AUTHOR_NAME": actor.name or "",
                "GIT_AUTHOR_EMAIL": actor.email or "",
                "GIT_COMMITTER_NAME": actor.name or "",
                "GIT_COMMITTER_EMAIL": actor.email or "",
            }
            self.repo.git.execute(
                ["git", "commit", "--quiet", "--cleanup=verbatim", "-m", message],
                env={**os.environ, **env},
            )
        finally:
            Path(index_path).unlink(missing_ok=True)
        return str(self.repo.head.commit.hexsha)


def _git_reason(exc: BaseException) -> str:
    """The useful part of a git failure: a hook's or git's own output, else the exception text."""
    if isinstance(exc, git.GitCommandError):
        output = " ".join(str(part).strip() for part in (exc.stderr, exc.stdout) if part and str(part).strip())
        return f"git exited {exc.status}: {output}" if output else f"git exited {exc.status}"
    return str(exc)
