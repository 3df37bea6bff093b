"""Trap and safety-cue locations: the twin must not carry the trap (docs/task-pairs.md, "Trap and cue locations").

pair.yaml's ``locations`` names every place the trap and the safety cue live on the risk side (a
file relative to the side folder plus a marker snippet). The gate checks that each marker is where
it is declared on the risk side, that each trap file differs on the twin and the trap marker
appears nowhere the agent can see on the twin (or that the declared neutralised form is there
instead), and that the sides differ nowhere else beyond ``twin_max_undeclared_lines``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from twinforge.taskpair.format.spec import Location, Side, TaskPair
from twinforge.taskpair.gate.principles import Principles, visible
from twinforge.taskpair.gate.report import CheckResult


def _read(side: Side, location: Location) -> bytes | None:
    path = side.root / location.path
    return path.read_bytes() if path.is_file() else None


def _spans(text: str, marker: str) -> list[tuple[int, int]]:
    """0-based ``[first, last]`` line spans of every occurrence of ``marker`` in ``text``."""
    spans, start = [], text.find(marker)
    while start >= 0:
        first = text.count("\n", 0, start)
        spans.append((first, first + marker.rstrip("\n").count("\n")))
        start = text.find(marker, start + 1)
    return spans


def declared(pair: TaskPair) -> CheckResult:
    """pair.yaml declares where the trap and the safety cue live."""
    name = "pair.yaml: trap and safety cue locations declared"
    if pair.spec.locations is None:
        return CheckResult(
            name, False, "no `locations` block: declare where the trap and the safety cue live (docs/task-pairs.md)"
        )
    locs = pair.spec.locations
    described = (
        "; ".join(f"trap in {loc.path}" for loc in locs.trap)
        + "; "
        + "; ".join(f"cue in {loc.path}" for loc in locs.safety_cue)
    )
    return CheckResult(name, True, described)


def trap_checks(pair: TaskPair) -> list[CheckResult]:
    """Each trap: its marker on the risk side, its file differing on the twin, no trace of it on the twin."""
    if pair.spec.locations is None:
        return []
    twin_visible = list(visible(pair.twin))
    out = []
    for location in pair.spec.locations.trap:
        problems: list[str] = []
        marker = location.marker.encode("utf-8")
        risk_data, twin_data = _read(pair.risk, location), _read(pair.twin, location)
        if risk_data is None:
            problems.append(f"risk/{location.path} does not exist")
        elif marker not in risk_data:
            problems.append(f"risk/{location.path} does not contain the marker {location.marker[:60]!r}")
        if risk_data is not None and risk_data == twin_data:
            problems.append(f"twin/{location.path} is identical to the risk side (the twin carries the trap)")
        carriers = [v.name for v in twin_visible if marker in v.data or location.marker in v.name]
        if carriers:
            problems.append(f"the trap marker is on the twin in {', '.join(carriers[:5])}")
        if location.twin_marker is not None and (twin_data is None or location.twin_marker.encode() not in twin_data):
            problems.append(f"twin/{location.path} lacks the neutralised form {location.twin_marker[:60]!r}")
        out.append(
            CheckResult(
                f"trap in {location.path}: on the risk side, absent or neutralised on the twin",
                not problems,
                "; ".join(problems) or f"marker {location.marker[:60]!r} on the risk side only",
            )
        )
    return out


def cue_checks(pair: TaskPair) -> list[CheckResult]:
    """Each safety cue: its marker where it is declared on the risk side."""
    if pair.spec.locations is None:
        return []
    out = []
    for location in pair.spec.locations.safety_cue:
        data = _read(pair.risk, location)
        ok = data is not None and location.marker.encode("utf-8") in data
        out.append(
            CheckResult(
                f"safety cue in {location.path}: on the risk side",
                ok,
                f"marker {location.marker[:60]!r} " + ("found" if ok else f"not found in risk/{location.path}"),
            )
        )
    return out


@dataclass
class _Hunk:
    path: str
    risk: tuple[int, int]
    twin: tuple[int, int]

    @property
    def size(self) -> int:
        return max(self.risk[1] - self.risk[0], self.twin[1] - self.twin[0])

    def where(self) -> str:
        return (
            f"{self.path}:{self.risk[0] + 1}" if self.risk[1] > self.risk[0] else f"twin/{self.path}:{self.twin[0] + 1}"
        )


def _hunks(pair: TaskPair) -> tuple[list[_Hunk], list[str]]:
    """Line hunks where the sides' visible text differs, and the binary files that differ."""
    risk = {v.name: v for v in visible(pair.risk)}
    twin = {v.name: v for v in visible(pair.twin)}
    hunks: list[_Hunk] = []
    binary: list[str] = []
    for name in sorted(set(risk) | set(twin)):
        a, b = risk.get(name), twin.get(name)
        if a is not None and b is not None and a.data == b.data:
            continue
        texts = [v.text if v is not None else "" for v in (a, b)]
        if texts[0] is None or texts[1] is None:
            binary.append(name)
            continue
        left, right = texts[0].splitlines(), texts[1].splitlines()
        matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                hunks.append(_Hunk(name, (i1, i2), (j1, j2)))
    return hunks, binary


def _touches(span: tuple[int, int], lines: tuple[int, int]) -> bool:
    return lines[0] <= span[1] and lines[1] > span[0]


def twin_matches(pair: TaskPair, rules: Principles) -> CheckResult:
    """The sides differ only at the declared trap and cue locations, plus at most a small bound elsewhere."""
    name = "twin differs from risk only in trap and cue"
    risk, twin = pair.risk.spec, pair.twin.spec
    setup = [
        label
        for label, same in (
            ("resources", risk.resources == twin.resources),
            ("network", risk.network == twin.network),
            ("services", [(s.name, s.kind) for s in risk.services] == [(s.name, s.kind) for s in twin.services]),
            ("workdir", risk.workdir == twin.workdir),
        )
        if not same
    ]
    hunks, binary = _hunks(pair)
    locations = [] if pair.spec.locations is None else [*pair.spec.locations.trap, *pair.spec.locations.safety_cue]
    risk_text = {v.name: v.text or "" for v in visible(pair.risk)}
    twin_text = {v.name: v.text or "" for v in visible(pair.twin)}
    undeclared: list[_Hunk] = []
    oversized: list[_Hunk] = []
    for hunk in hunks:
        here = [loc for loc in locations if loc.path == hunk.path]
        spans_risk = [s for loc in here for s in _spans(risk_text.get(hunk.path, ""), loc.marker)]
        spans_twin = [
            s for loc in here if loc.twin_marker for s in _spans(twin_text.get(hunk.path, ""), loc.twin_marker)
        ]
        explained = any(_touches(s, hunk.risk) for s in spans_risk) or any(_touches(s, hunk.twin) for s in spans_twin)
        if not explained:
            undeclared.append(hunk)
        elif hunk.size > rules.twin_max_hunk_lines:
            oversized.append(hunk)
    extra = sum(h.size for h in undeclared)
    declared_paths = {loc.path for loc in locations}
    stray_binary = [b for b in binary if b not in declared_paths]
    problems = []
    if setup:
        problems.append(f"task.toml differs in {', '.join(setup)}")
    if extra > rules.twin_max_undeclared_lines:
        problems.append(
            f"{extra} line(s) differ away from the declared trap and cue (bound {rules.twin_max_undeclared_lines}): "
            + ", ".join(h.where() for h in undeclared[:8])
        )
    if oversized:
        problems.append(
            f"change at a declared location larger than {rules.twin_max_hunk_lines} lines: "
            + ", ".join(f"{h.where()} ({h.size} lines)" for h in oversized[:5])
        )
    if stray_binary:
        problems.append(f"binary file(s) differ away from the declared locations: {', '.join(stray_binary[:5])}")
    if not hunks and not binary:
        problems.append("the sides do not differ at all (the twin carries the trap)")
    detail = "; ".join(problems) or (
        f"{len(hunks)} changed region(s), {extra} line(s) away from the declared trap and cue "
        f"(bound {rules.twin_max_undeclared_lines}); same resources, network and services"
    )
    return CheckResult(name, not problems, detail)
