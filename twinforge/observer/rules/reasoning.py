"""Reasoning problems.

Loops (the same or a similar action 3+ times in a row, A-B alternation), repeated edits of one
file, repeated attempts to fix an error the agent introduced itself.
"""

from __future__ import annotations

from collections import defaultdict

from twinforge.observer.findings import Finding
from twinforge.observer.rules.commands import error_signature, normalize, similar, written_paths
from twinforge.observer.trajectory import Step

MIN_REPEATS = 3  # docs/design.md, "Self-intervention": "the same or a similar tool call 3 or more times in a row"
MIN_EDITS = 4
MIN_FIX_ATTEMPTS = 3


def repeated_command(steps: list[Step]) -> list[Finding]:
    """Runs of 3+ consecutive steps whose commands are the same or similar."""
    findings = []
    i = 0
    acted = [s for s in steps if s.command and not s.submitted]
    while i < len(acted):
        j = i + 1
        while j < len(acted) and similar(acted[i].command, acted[j].command):
            j += 1
        if j - i >= MIN_REPEATS:
            run = acted[i:j]
            exact = all(normalize(s.command) == normalize(run[0].command) for s in run)
            findings.append(
                Finding(
                    cls="reasoning",
                    kind="repeated_command",
                    steps=tuple(s.n for s in run),
                    evidence=f"{len(run)} times in a row: {run[0].command[:120]!r}",
                    confidence=0.95 if exact else 0.8,
                )
            )
        i = j
    return findings


def alternation(steps: list[Step]) -> list[Finding]:
    """A, B, A, B: two different actions alternating at least twice each."""
    acted = [s for s in steps if s.command and not s.submitted]
    findings = []
    i = 0
    while i + 3 < len(acted):
        a, b = acted[i], acted[i + 1]
        if similar(a.command, b.command):
            i += 1
            continue
        j = i + 2
        while j < len(acted) and similar(acted[j].command, (a if (j - i) % 2 == 0 else b).command):
            j += 1
        if j - i >= 4:
            run = acted[i:j]
            findings.append(
                Finding(
                    cls="reasoning",
                    kind="alternation",
                    steps=tuple(s.n for s in run),
                    evidence=f"alternating {a.command[:60]!r} and {b.command[:60]!r} ({len(run)} steps)",
                    confidence=0.85,
                )
            )
            i = j
        else:
            i += 1
    return findings


def repeated_edits(steps: list[Step]) -> list[Finding]:
    """One file edited 4+ times, or the very same edit made twice."""
    edits: dict[str, list[Step]] = defaultdict(list)
    for step in steps:
        for path in written_paths(step.command):
            edits[path].append(step)
    findings = []
    for path, touched in edits.items():
        same = [s for s in touched if sum(normalize(t.command) == normalize(s.command) for t in touched) >= 2]
        if len(touched) >= MIN_EDITS or len(same) >= 2:
            findings.append(
                Finding(
                    cls="reasoning",
                    kind="repeated_edits",
                    steps=tuple(s.n for s in touched),
                    evidence=f"{path} edited {len(touched)} times" + (" (the same edit repeated)" if same else ""),
                    confidence=0.85 if same else 0.7,
                )
            )
    return findings


def fix_loop(steps: list[Step]) -> list[Finding]:
    """The same error, first seen after the agent's own edits, keeps coming back across 3+ fix attempts."""
    first_edit = next((s.n for s in steps if written_paths(s.command)), None)
    if first_edit is None:
        return []
    seen_before = {error_signature(s.output) for s in steps if s.n < first_edit and s.failed}
    by_error: dict[str, list[Step]] = defaultdict(list)
    for step in steps:
        if step.n > first_edit and step.failed:
            signature = error_signature(step.output)
            if signature and signature not in seen_before:
                by_error[signature].append(step)
    findings = []
    for signature, failing in by_error.items():
        edits_between = sum(1 for s in steps if failing[0].n < s.n < failing[-1].n and written_paths(s.command))
        if len(failing) >= MIN_FIX_ATTEMPTS and edits_between >= 2:
            findings.append(
                Finding(
                    cls="reasoning",
                    kind="fix_loop",
                    steps=tuple(s.n for s in failing),
                    evidence=f"self-introduced error keeps returning after {edits_between} edits: {signature[:120]}",
                    confidence=0.8,
                )
            )
    return findings


def detect(steps: list[Step]) -> list[Finding]:
    """All reasoning-problem findings."""
    return repeated_command(steps) + alternation(steps) + repeated_edits(steps) + fix_loop(steps)
