"""The pair and blueprint pages' models: files, differences, gate report, history."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from twinforge.viewer.models.base import View
from twinforge.viewer.models.runs import RunItem


class FileEntry(View):
    """One file or folder of a pair side, with the trap and safety-cue marks pair.yaml declares.

    Attributes:
        path: Relative to the side folder.
        is_dir: A folder.
        marks: ``trap`` and/or ``safety cue`` on the risk side; ``trap removed`` on the twin.
        differs: The same path on the other side has other content (or is missing).
    """

    path: str
    is_dir: bool
    marks: list[str] = Field(default_factory=list)
    differs: bool = False


class DiffFile(View):
    """One file where risk and twin differ.

    Attributes:
        path: Relative to the side folder.
        change: ``changed``, ``risk only`` or ``twin only``.
        diff: A unified diff (text files) or a one-line note (binary or large files).
    """

    path: str
    change: str
    diff: str


class CheckView(View):
    """One gate check.

    Attributes:
        name: What was checked.
        passed: It held.
        detail: Evidence.
    """

    name: str
    passed: bool
    detail: str = ""


class CheatView(View):
    """One cheat-battery outcome (cheat x side).

    Attributes:
        cheat: Cheat id.
        side: Side.
        expect_harmful: The pair lists this cheat as its harm.
        harmful: Detector's harmful.
        completed: Detector's completed.
        outcome: The run's outcome.
        held: The detector was not fooled.
        note: Why, in one line.
    """

    cheat: str
    side: str
    expect_harmful: bool
    harmful: bool | None
    completed: bool | None
    outcome: str
    held: bool
    note: str


class GateView(View):
    """The last gate report of a pair.

    Attributes:
        source: Where it was read from (the stored gate report or the implementer record).
        passed: Every check passed.
        at: When the gate ran.
        digest: The pair digest it ran on.
        checks: The checks.
        battery: The cheat battery table.
    """

    source: str
    passed: bool
    at: datetime | None = None
    digest: str = ""
    checks: list[CheckView] = Field(default_factory=list)
    battery: list[CheatView] = Field(default_factory=list)


class Commit(View):
    """One commit of the workspace's git log touching a pair or blueprint.

    Attributes:
        sha: Short hash.
        at: Commit time.
        author: Author name.
        message: First line of the message.
    """

    sha: str
    at: datetime
    author: str
    message: str


class PairItem(View):
    """One pair in the pair list.

    Attributes:
        id: Pair id.
        title: Title.
        cell: Taxonomy cell.
        blueprint_id: Its blueprint.
        blueprint_file: The workspace holds that blueprint's file (a reference pair's may be elsewhere).
        validated: Last gate passed (``None``: never validated in this workspace).
        calibration: Calibration passed (``None``: no calibration record).
        admitted: In ``benchmark.yaml``.
        runs: Finished runs in the records.
        problem: Why the pair does not load, when it does not.
        user_turns: How many times the user speaks (1: a one-turn pair).
    """

    id: str
    title: str = ""
    cell: str = ""
    blueprint_id: str = ""
    blueprint_file: bool = False
    validated: bool | None = None
    calibration: bool | None = None
    admitted: bool = False
    runs: int = 0
    problem: str = ""
    user_turns: int = 1


class TurnView(View):
    """One later user turn of a pair: when it is sent and what each side's user says.

    Attributes:
        turn: Its number (2 for ``turns/02.md``).
        send: ``always`` or ``unless-harmful``.
        purpose: What the turn does in the scenario.
        risk: What the user says on the risk side.
        twin: What the user says on the twin.
    """

    turn: int
    send: str
    purpose: str = ""
    risk: str = ""
    twin: str = ""


class PairView(View):
    """``/api/pairs/<pair-id>``: everything the pair page shows.

    Attributes:
        pair: The list item.
        blueprint: The eight fields carried in pair.yaml: the pair as built.
        fidelity: How faithfully the pair implements its blueprint (``exact``, ``adapted``; empty when
            pair.yaml does not say, e.g. a pair written before fidelity was recorded).
        differences: For ``adapted``: what the pair builds differently from its blueprint, in words.
        provenance: Where the pair came from.
        trap: Where the trap lives (``path: marker``).
        safety_cue: Where the safety cue lives.
        files: File tree per side.
        diff: Where risk and twin differ.
        gate: The last gate report.
        implementation: The Stage II record (``implementation/<blueprint-id>.yaml``) without its gate
            checks: mode, outcome, rounds, calls, the observer's interventions and recoveries.
        digest: The pair digest now.
        validated_digest: The digest the last gate run recorded.
        calibration: The calibration record (``calibration/<pair>.yaml``).
        admission: The ``benchmark.yaml`` entry.
        history: Commits touching the pair or its blueprint, newest first.
        runs: Its finished runs.
        compare: Risk-vs-twin pairs of run ids (same purpose, model, harness, k).
        follow_ups: The later user turns (a multi-turn pair; docs/task-pairs.md, "Multi-turn pairs").
    """

    pair: PairItem
    blueprint: dict[str, str] = Field(default_factory=dict)
    fidelity: str = ""
    differences: list[str] = Field(default_factory=list)
    provenance: dict[str, str] = Field(default_factory=dict)
    trap: list[str] = Field(default_factory=list)
    safety_cue: list[str] = Field(default_factory=list)
    files: dict[str, list[FileEntry]] = Field(default_factory=dict)
    diff: list[DiffFile] = Field(default_factory=list)
    gate: GateView | None = None
    implementation: dict[str, Any] | None = None
    digest: str = ""
    validated_digest: str = ""
    calibration: dict[str, Any] | None = None
    admission: dict[str, Any] | None = None
    history: list[Commit] = Field(default_factory=list)
    runs: list[RunItem] = Field(default_factory=list)
    compare: list[tuple[str, str]] = Field(default_factory=list)
    follow_ups: list[TurnView] = Field(default_factory=list)


class BlueprintView(View):
    """``/api/blueprints/<id>``: one blueprint record and the pairs built from it.

    Attributes:
        id: Blueprint id.
        record: The whole record as stored (8 fields, provenance, review, decisions, notes, edits).
        pairs: Pair ids whose pair.yaml names this blueprint.
        history: Commits touching the blueprint file, newest first.
        problem: Why the file does not validate, when it does not.
    """

    id: str
    record: dict[str, Any] | None = None
    pairs: list[str] = Field(default_factory=list)
    history: list[Commit] = Field(default_factory=list)
    problem: str = ""
