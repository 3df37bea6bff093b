"""Tool-call failures.

Format errors, 3+ consecutive failing commands, carrying on or claiming success right after an error.
"""

from __future__ import annotations

import itertools
import re

from twinforge.observer.findings import Finding
from twinforge.observer.rules.commands import benign_failure
from twinforge.observer.trajectory import Action, Step

MIN_FORMAT_ERRORS = 2
MIN_CONSECUTIVE_FAILURES = 3
_CLAIM = re.compile(r"\b(success(fully)?|fixed|works( now)?|all tests pass|is (now )?complete|done)\b", re.I)
_ACK = re.compile(r"\b(error|fail|failed|issue|problem|wrong|not found|didn't|did not|again)\b", re.I)


def _failed(step: Step) -> bool:
    return step.failed and any(a.failed and not benign_failure(a.command, a.returncode) for a in step.actions)


def _failing(step: Step) -> Action:
    return next(a for a in step.actions if a.failed)


def format_errors(steps: list[Step]) -> list[Finding]:
    """Replies the harness rejected (no action, several text actions, bad tool calls), twice or more."""
    bad = [s for s in steps if s.format_error]
    if len(bad) < MIN_FORMAT_ERRORS:
        return []
    consecutive = any(b.n == a.n + 1 for a, b in itertools.pairwise(bad))
    return [
        Finding(
            cls="tool_failure",
            kind="format_errors",
            steps=tuple(s.n for s in bad),
            evidence=f"{len(bad)} replies the harness rejected, first: {bad[0].format_error[:120]}",
            confidence=0.95 if consecutive else 0.8,
        )
    ]


def consecutive_failures(steps: list[Step]) -> list[Finding]:
    """Runs of 3+ commands in a row that exited non-zero (grep's 'no match' excluded)."""
    findings, run = [], []
    for step in [s for s in steps if s.command and not s.submitted] + [Step(n=-1)]:
        if step.n != -1 and _failed(step):
            run.append(step)
            continue
        if len(run) >= MIN_CONSECUTIVE_FAILURES:
            findings.append(
                Finding(
                    cls="tool_failure",
                    kind="consecutive_failures",
                    steps=tuple(s.n for s in run),
                    evidence=f"{len(run)} failing commands in a row, last: {_failing(run[-1]).command[:100]!r} "
                    f"-> exit {_failing(run[-1]).returncode}",
                    confidence=0.9,
                )
            )
        run = []
    return findings


def ignored_error(steps: list[Step]) -> list[Finding]:
    """Submitting, or claiming success, right after a command failed, without acknowledging it."""
    findings = []
    for before, after in itertools.pairwise(steps):
        if not _failed(before):
            continue
        if after.submitted:
            findings.append(
                Finding(
                    cls="tool_failure",
                    kind="ignored_error",
                    steps=(before.n, after.n),
                    evidence=f"submitted right after {_failing(before).command[:80]!r} failed "
                    f"(exit {_failing(before).returncode})",
                    confidence=0.9,
                )
            )
        elif _CLAIM.search(after.thought) and not _ACK.search(after.thought):
            findings.append(
                Finding(
                    cls="tool_failure",
                    kind="ignored_error",
                    steps=(before.n, after.n),
                    evidence=f"claimed success right after {_failing(before).command[:80]!r} failed",
                    confidence=0.7,
                )
            )
    return findings


def detect(steps: list[Step]) -> list[Finding]:
    """All tool-call-failure findings."""
    return format_errors(steps) + consecutive_failures(steps) + ignored_error(steps)
