"""A repository's git state in the collected workspace, read without its configuration or hooks.

git works on a clean mirror whose objects are the agent's (``gitstate``; docs/runtime.md, "Reading
git state"): the agent's configuration, hooks, attributes and replace refs are never read.
"""

from __future__ import annotations

from collections.abc import Sequence

from twinforge_detectors.errors import EvidenceError
from twinforge_detectors.gitstate import blob_contains, mirror, run_git
from twinforge_detectors.primitives.state import CheckState
from twinforge_detectors.spellings import spellings


def git_broke(err: str) -> bool:
    """True when git's standard error says it ran out of memory (its answer is then no answer)."""
    lowered = err.lower()
    return "out of memory" in lowered or "malloc failed" in lowered or "cannot allocate" in lowered


def git_cause(code: int, err: str | None) -> str:
    """Why git could not answer, in a few words: its exit code or signal and its last error line."""
    tail = (err or "").strip().splitlines()[-1:] or [""]
    what = f"killed by signal {-code}" if code < 0 else f"exit {code}"
    return f"{what} {tail[0][:200]}".strip()


class GitReads(CheckState):
    """git over the collected repositories: the ``git`` part of ``Check``."""

    def git(self, repo: str, *args: str) -> str:
        """Run git over the object database of ``repo`` in the final state; returns stdout ('' when git says no).

        The agent's configuration, hooks, attributes and replace refs are never read: git works on
        a clean mirror whose objects are the agent's (see ``gitstate``). Commands that need a work
        tree (``status``, ``diff`` without revisions) are not available; read files instead. A
        command git answers with an error (a missing path, a bad revision) gives ''.

        Raises:
            EvidenceError: git could not answer: it was killed (e.g. for memory), timed out or ran
                out of memory, or the repository's refs cannot be read as git would read them.
        """
        code, out, err = self._git(repo, args)
        if code < 0 or code > 128 or git_broke(err or ""):
            raise EvidenceError(
                f"git {' '.join(args)[:80]} in {repo} could not answer: {git_cause(code, err)}", by_agent=True
            )
        return out if code == 0 else ""

    def _git(self, repo: str, args: Sequence[str]) -> tuple[int, str, str | None]:
        key = (self.roots.state, repo)
        if key not in self._mirrors:
            self.state_path(repo + "/.git", follow_last=False)  # raises when the repository was not collected
            self._mirrors[key] = mirror(self.roots.state, repo)
        git_dir, problem = self._mirrors[key]
        if git_dir is None:
            if problem and problem.startswith("no repository"):
                return 128, "", problem
            raise EvidenceError(f"git state of {repo} cannot be read as git would read it: {problem}", by_agent=True)
        return run_git(git_dir, list(args))

    def committed_files_contain(self, repo: str, needle: str) -> bool:
        """True when any commit's content in ``repo`` contains ``needle`` (every file of every commit).

        The needle counts in any of its transport spellings (hex, base64, percent:
        :func:`twinforge_detectors.spellings.spellings`) and inside a gzip-compressed file.

        Each distinct blob is streamed once through a bounded window, so a blob larger than the
        detector's memory is still searched (``git grep`` loads whole blobs and was killed).

        Raises:
            EvidenceError: git could not list or read the objects.
        """
        seen: set[str] = set()
        for rev in self.git(repo, "rev-list", "--all").split():
            listing = self.git(repo, "ls-tree", "-r", "-z", rev)
            for entry in listing.split("\0"):
                meta, _, path = entry.partition("\t")
                fields = meta.split()
                if len(fields) != 3 or fields[1] != "blob" or fields[2] in seen:
                    continue
                seen.add(fields[2])
                key = (self.roots.state, repo)
                git_dir = self._mirrors[key][0]
                found, problem = blob_contains(str(git_dir), fields[2], spellings(needle))
                if problem:
                    raise EvidenceError(
                        f"blob {fields[2][:10]} ({path}) in {repo} could not be read: {problem}", by_agent=True
                    )
                if found:
                    self.note(f"{needle[:20]!r}... is committed in {repo} at {rev[:10]} ({path})")
                    return True
        return False
