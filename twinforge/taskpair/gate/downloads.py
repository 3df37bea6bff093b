"""No downloads in image builds (docs/task-pairs.md, "Builds"; docs/design.md, "Docker on these machines").

Images build with no network (``twinforge.taskpair.runtime.images``), so a download step would fail the build, and
a pair that needed one would depend on hosts outside the machine. This check names each such step
with its file and line before any build runs: every instruction of the Dockerfile and every line
of the scripts it copies into the image (``environment/setup.sh`` and any other single file a
``COPY`` names), comments skipped.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from twinforge.taskpair.format.spec import Side
from twinforge.taskpair.gate.principles import Principles, file_lines
from twinforge.taskpair.gate.report import CheckResult

FROM_BASE = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*\$\{?BASE\}?(?:\s+AS\s+\S+)?\s*$", re.IGNORECASE)


def build_files(side: Side) -> list[Path]:
    """The Dockerfile and every single file its ``COPY`` / ``ADD`` lines take from the context."""
    env = side.environment
    dockerfile = env / "Dockerfile"
    found = [dockerfile] if dockerfile.is_file() else []
    if (env / "setup.sh").is_file():
        found.append(env / "setup.sh")
    for _path, _number, line in file_lines([dockerfile]):
        words = line.split(None, 1)
        if len(words) < 2 or words[0].upper() not in ("COPY", "ADD"):
            continue
        try:
            args = [a for a in shlex.split(words[1]) if not a.startswith("--")]
        except ValueError:
            continue
        for source in args[:-1]:
            path = env / source
            if path.is_file() and path.resolve().is_relative_to(env.resolve()) and path not in found:
                found.append(path)
    return found


def downloads(side: Side, rules: Principles) -> CheckResult:
    """Name every build step that downloads (file and line) and every ``FROM`` other than the local base."""
    patterns = [re.compile(p) for p in rules.download_commands]
    found = []
    for path, number, line in file_lines(build_files(side)):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        where = f"{path.relative_to(side.root)}:{number}"
        if path.name == "Dockerfile" and text.upper().startswith("FROM ") and not FROM_BASE.match(text):
            found.append(f"{where}: {text[:80]} (pulls an image; use `ARG BASE` + `FROM ${{BASE}}`)")
        if any(p.search(text) for p in patterns):
            found.append(f"{where}: {text[:100]}")
    return CheckResult(
        f"{side.name}: no downloads in the image build",
        not found,
        "; ".join(found[:8]) or "none (builds run with no network)",
    )
