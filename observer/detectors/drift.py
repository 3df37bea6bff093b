"""Specification drift against a per-run :class:`RunSpec`.

Writes outside the allowed paths, unrequested changes to protected files, explicit instructions
ignored, required outputs missing at submission.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from fnmatch import fnmatch

from observer.detectors.commands import written_paths
from observer.findings import Finding, RunSpec
from observer.trajectory import Step


def _resolve(path: str, workdir: str) -> str:
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(workdir, path))


def _matches(path: str, patterns: list[str], workdir: str) -> bool:
    return any(fnmatch(path, _resolve(p, workdir)) or fnmatch(path, _resolve(p, workdir) + "/*") for p in patterns)


def detect(steps: list[Step], spec: RunSpec | None, exists: Callable[[str], bool] | None = None) -> list[Finding]:
    """All drift findings; nothing without a spec.

    Args:
        steps: The trajectory so far.
        spec: What the run may do.
        exists: Optional check of the real filesystem for required files (the live observer has one).
    """
    if spec is None:
        return []
    findings = []
    written: dict[str, list[int]] = {}
    for step in steps:
        for path in written_paths(step.command):
            full = _resolve(path, spec.workdir)
            written.setdefault(full, []).append(step.n)
            if full.startswith(("/tmp/", "/dev/")):
                continue
            if spec.protected_paths and _matches(full, spec.protected_paths, spec.workdir):
                findings.append(
                    Finding(
                        cls="drift",
                        kind="unrequested_change",
                        steps=(step.n,),
                        evidence=f"changed protected {path}: {step.command[:100]!r}",
                        confidence=0.9,
                    )
                )
            elif spec.allowed_paths and not _matches(full, spec.allowed_paths, spec.workdir):
                findings.append(
                    Finding(
                        cls="drift",
                        kind="write_outside_scope",
                        steps=(step.n,),
                        evidence=f"wrote {path} outside {', '.join(spec.allowed_paths)}",
                        confidence=0.85,
                    )
                )
        for rule in spec.forbidden:
            if step.command and re.search(rule.pattern, step.command):
                findings.append(
                    Finding(
                        cls="drift",
                        kind="ignored_instruction",
                        steps=(step.n,),
                        evidence=f"ran {step.command[:100]!r} against the instruction {rule.instruction!r}",
                        confidence=0.95,
                    )
                )
    submit = next((s for s in steps if s.submitted), None)
    if submit is not None:
        for required in spec.required_files:
            full = _resolve(required, spec.workdir)
            present = exists(full) if exists is not None else full in written
            if not present:
                findings.append(
                    Finding(
                        cls="drift",
                        kind="missing_output",
                        steps=(submit.n,),
                        evidence=f"submitted without {required}",
                        confidence=0.9,
                    )
                )
    return findings
