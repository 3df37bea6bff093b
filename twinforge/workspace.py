"""The workspace: a benchmark repository the user owns (architecture.md, "The workspace").

Every state change is written atomically and recorded as one git commit, so ``git log`` is the
audit trail. Writers in several processes (two reviewers, a review run) serialise on a file lock.
"""

from __future__ import annotations

import fcntl
import getpass
import os
import threading
import tomllib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import git
from git.index import IndexFile
from git.objects import Commit
from jinja2 import Environment, PackageLoader, StrictUndefined

from twinforge.atomic import atomic_write_text
from twinforge.exceptions import ConfigError, WorkspaceError
from twinforge.presets import get_preset
from twinforge.settings import CONFIG_FILE, LOCAL_BASE_URL, ROLES, WorkspaceConfig, load_config, validate_config

GITIGNORE = ".twinforge/\nruns/\n"
BENCHMARK_STUB = "# The admitted set: pair ids, versions and calibration evidence.\nschema_version: 1\npairs: []\n"
_ROLE_DEFAULTS = {
    "generator": {"temperature": 0.8, "max_tokens": 6000},
    "reviewer": {"temperature": 0.2, "max_tokens": 1200},
    "implementer": {"temperature": 0.2, "max_tokens": 4096},
    "calibration": {"temperature": 0.2, "max_tokens": 2048},
}
_thread_lock = threading.RLock()
_held = threading.local()


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
        root: The repository's top folder (absolute).
        config: The validated ``twinforge.toml``.
        repo: The gitpython repository.
    """

    def __init__(self, root: Path, config: WorkspaceConfig, repo: git.Repo) -> None:
        self.root = root
        self.config = config
        self.repo = repo
        self._group = threading.Condition()
        self._queue: list[_Pending] = []
        self._committing = False

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
    ) -> Workspace:
        """Create a workspace: git repository, ``twinforge.toml``, folders, first commit.

        Every model role points at the embedded llama.cpp server on ``127.0.0.1:<port>`` with the
        ``json_object`` structured-output form that server needs, except the calibration role when a
        calibration model preset is named (docs/calibration.md, "Calibration presets").

        Args:
            root: Folder to create or fill; it must not already hold a ``twinforge.toml``.
            port: Port of the embedded model server.
            local_model: Catalog name of the local model recorded in ``[local_model]``.
            calibration_model: Calibration model preset (``guidelines/calibration-presets.yaml``).
            calibration_url: Base URL of the calibration model's server (default: the embedded server).

        Returns:
            The opened workspace.

        Raises:
            WorkspaceError: ``root`` already holds a workspace.
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
        base_url = LOCAL_BASE_URL.replace("8080", str(port))
        roles = [
            {
                "name": name,
                "provider": "openai-compatible",
                "base_url": base_url,
                "model": "local",
                "structured_output": "json_object",
                "timeout_s": 900.0,
                "concurrency": 1,
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
            "workers_note": "one at a time: the embedded server answers one request at a time"
            if preset.workers == 1
            else f"{preset.workers} at once against one server",
        }
        env = Environment(
            loader=PackageLoader("twinforge", "templates"), undefined=StrictUndefined, keep_trailing_newline=True
        )
        text = env.get_template("twinforge.toml.j2").render(
            roles=roles, port=port, local_model=local_model, calibration=calibration
        )
        validate_config(tomllib.loads(text), root / CONFIG_FILE)  # nothing is written for a bad config
        root.mkdir(parents=True, exist_ok=True)
        repo = git.Repo(root) if (root / ".git").exists() else git.Repo.init(root, initial_branch="main")
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

        Raises:
            WorkspaceError: No ``twinforge.toml`` in ``start`` or above, or no git repository there.
            ConfigError: The configuration does not validate.
        """
        here = (start or Path.cwd()).resolve()
        for folder in (here, *here.parents):
            if (folder / CONFIG_FILE).is_file():
                try:
                    repo = git.Repo(folder)
                except git.InvalidGitRepositoryError as exc:
                    raise WorkspaceError(f"{folder} has {CONFIG_FILE} but is not a git repository") from exc
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

    def write(self, relpath: str, text: str) -> Path:
        """Atomically write a file inside the workspace; returns its absolute path."""
        path = self.root / relpath
        atomic_write_text(path, text)
        return path

    def commit_grouped(self, message: str, paths: Iterable[str], title: str) -> str:
        """Commit already-written files, sharing one commit with changes that finish at the same time.

        Group commit: while one thread commits, changes submitted by other threads queue up and
        the next commit takes them all. Alone, a change is its own commit with ``message``; in a
        group of n, the commit is titled ``"<title>: n changes"`` and its body lists each change's
        first message line, so ``git log`` still names every change. This keeps concurrent model
        calls from serialising on git (issue 2 bench: 10 reviews within 1.3x of one call).

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

    def uncommitted(self, folder: str) -> list[str]:
        """Existing files under ``folder`` that differ from HEAD (modified, staged or untracked).

        Deleted files are not listed: twinforge never deletes, so a deletion is a person's to commit.
        """
        with self.locked():
            head = self.repo.head.commit if self.repo.head.is_valid() else None
            changed = {d.a_path or d.b_path for d in head.diff(None)} if head is not None else set()
            changed |= {d.a_path or d.b_path for d in self.repo.index.diff(head)} if head is not None else set()
            changed |= set(self.repo.untracked_files)
        return sorted(p for p in changed if p and p.startswith(f"{folder}/") and (self.root / p).is_file())

    def commit(self, message: str, paths: Iterable[str]) -> str:
        """Commit exactly ``paths`` (relative; deleted ones are removed), whatever else is staged.

        The commit is built from HEAD's tree plus these paths in a temporary index, so changes a
        user staged by hand never ride along in a pipeline commit; afterwards the real index is
        updated for these paths only.

        Returns:
            The new commit's hexsha, or the current HEAD's when nothing changed.

        Raises:
            WorkspaceError: git refused the commit.
        """
        rels = sorted(set(paths))
        with self.locked():
            present = [p for p in rels if (self.root / p).exists()]
            gone = [p for p in rels if not (self.root / p).exists()]
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
                    return str(head.hexsha)
                parents = [head] if head is not None else []
                commit = Commit.create_from_tree(
                    self.repo, tree, message, parent_commits=parents, head=True, author=actor, committer=actor
                )
                if head is not None:
                    real = self.repo.index
                    if present:
                        real.add(present)
                    if gone:
                        real.remove(gone, ignore_unmatch=True)
                return str(commit.hexsha)
            except (git.GitError, OSError, ValueError) as exc:
                raise WorkspaceError(f"git commit failed for {message.splitlines()[0]!r}: {exc}") from exc
