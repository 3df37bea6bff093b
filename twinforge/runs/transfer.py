"""Records that travel: ``records export`` / ``records import`` as JSON Lines.

docs/calibration.md, "Records that travel".

One JSON object per finished run (:class:`RunExport`). This is how results of several hosts,
clusters or a Postgres database merge into one report, and how a user loads them into pandas
(``pandas.read_json("runs.jsonl", lines=True)``). Import is idempotent (a record already stored
with the same outcome is skipped) and all-or-nothing: a record that contradicts a stored one (same
key, another outcome), or another record of the same file, refuses the whole file with a message
naming the line, so nothing is half imported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from twinforge.core.llm import describe_validation_error
from twinforge.harness.naming import upgrade_key
from twinforge.runs.choices import Purpose
from twinforge.runs.exceptions import RunsError
from twinforge.runs.records import RecordsDB, RunRow, VerdictRow
from twinforge.runs.results import RunDetail, Side
from twinforge.taskpair import Outcome

CELL = r"^S\d+-R\d+$"
"""A taxonomy cell: attack source and risk category, e.g. ``S2-R3``."""
RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
"""A run id names one folder under ``runs/``: no path separators, no leading dot."""


class RunExport(BaseModel):
    """One finished run as a line of ``records export`` (and of ``records import``).

    Only ``pair``, ``cell``, ``side``, ``purpose``, ``model``, ``harness``, ``repetition`` and
    ``outcome`` are required: records from elsewhere may lack the rest.

    Attributes:
        schema_version: Format version of a line.
        pair: Pair id.
        cell: Taxonomy cell, e.g. ``S2-R3``.
        side: ``risk`` or ``twin``.
        purpose: ``calibration`` or ``evaluation``.
        model: ``provider:model``.
        harness: Harness key (name, options, version).
        repetition: Which of the k runs, 1-based.
        outcome: The outcome of the run's newest verdict.
        runs: K its campaign planned per side (0: unknown).
        digest: The pair's environment digest the run was made on (everything but the detectors).
        detector_digest: Digest of the detector that gave the verdict.
        budgets: The budgets key (call cap, turn and command timeouts).
        run_id: The run id (evidence under ``runs/<run-id>/`` on the host that ran it; a plain name).
        harmful: The verdict's ``harmful``.
        completed: The verdict's ``completed``.
        exit_status: The harness's exit status.
        attempts: How often the run was executed (reruns of OVERTIME / UNDETERMINED).
        calls: Model calls.
        prompt_tokens: Prompt tokens.
        completion_tokens: Completion tokens.
        seconds: Wall-clock seconds of the run.
        started_at: When it started.
        finished_at: When its outcome was stored.
        error: Why there is no verdict, or what failed after it.
        detail: Budgets, evidence lines, diagnosis, disagreement flags.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    pair: str = Field(min_length=1, max_length=200)
    cell: str = Field(pattern=CELL)
    side: Side
    purpose: Purpose
    model: str = Field(min_length=1, max_length=200)
    harness: str = Field(min_length=1, max_length=100)
    repetition: int = Field(ge=1)
    outcome: Outcome
    runs: int = Field(0, ge=0)
    digest: str = Field("", max_length=64)
    detector_digest: str = Field("", max_length=64)
    budgets: str = Field("", max_length=100)
    run_id: str | None = Field(None, max_length=200, pattern=RUN_ID)
    harmful: bool | None = None
    completed: bool | None = None
    exit_status: str = Field("", max_length=64)
    attempts: int = Field(1, ge=0)
    calls: int = Field(0, ge=0)
    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)
    seconds: float = Field(0.0, ge=0)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    detail: RunDetail | None = None

    @field_validator("harness")
    @classmethod
    def _current_harness_key(cls, value: str) -> str:
        """A harness key of an earlier release in today's ``name@version:mode`` form."""
        return upgrade_key(value) or value

    @property
    def key(self) -> tuple[str, str, str, str, str, str, str, int]:
        """The run record key: purpose, pair, digest, side, model, harness, budgets, repetition."""
        return (
            self.purpose,
            self.pair,
            self.digest,
            self.side,
            self.model,
            self.harness,
            self.budgets,
            self.repetition,
        )

    @property
    def where(self) -> str:
        """The run in words, for messages."""
        return f"{self.purpose} {self.model} / {self.harness}: {self.pair} {self.side} k={self.repetition}"

    @classmethod
    def of(cls, row: RunRow) -> RunExport:
        """The export of a finished run record."""
        finished = row.finished()
        return cls(
            pair=row.pair,
            cell=row.cell,
            side="twin" if row.side == "twin" else "risk",
            purpose="evaluation" if row.purpose == "evaluation" else "calibration",
            model=row.model,
            harness=row.harness,
            repetition=row.k,
            outcome=Outcome(row.outcome or Outcome.UNDETERMINED),
            runs=row.runs or 0,
            digest=row.digest or "",
            detector_digest=row.detector_digest or "",
            budgets=row.budgets or "",
            run_id=row.run_id,
            harmful=row.harmful,
            completed=row.completed,
            exit_status=row.exit_status or "",
            attempts=row.attempts or 0,
            calls=row.calls or 0,
            prompt_tokens=row.prompt_tokens or 0,
            completion_tokens=row.completion_tokens or 0,
            seconds=row.seconds or 0.0,
            started_at=row.started_at,
            finished_at=row.finished_at,
            error=row.error,
            detail=finished.detail if finished else None,
        )

    def columns(self) -> dict[str, Any]:
        """The column values of a new ``done`` run record holding this run."""
        source, risk = self.cell.split("-", 1)
        return {
            "purpose": self.purpose,
            "pair": self.pair,
            "digest": self.digest,
            "side": self.side,
            "model": self.model,
            "harness": self.harness,
            "budgets": self.budgets,
            "k": self.repetition,
            "runs": self.runs,
            "risk": risk,
            "source": source,
            "status": "done",
            "owner": None,
            "heartbeat_at": None,
            "attempts": self.attempts,
            "run_id": self.run_id,
            "outcome": self.outcome.value,
            "harmful": self.harmful,
            "completed": self.completed,
            "exit_status": self.exit_status,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": self.seconds,
            "evidence_dir": None,
            "trajectory": None,
            "error": self.error,
            "detector_digest": self.detector_digest,
            "detail": self.detail.model_dump(mode="json") if self.detail else {},
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }

    def verdict(self, row_id: int, by: str) -> dict[str, Any]:
        """The column values of this run's verdict in the verdict history."""
        return {
            "row_id": row_id,
            "run_id": self.run_id or "",
            "detector_digest": self.detector_digest,
            "outcome": self.outcome.value,
            "harmful": self.harmful,
            "completed": self.completed,
            "evidence": self.detail.evidence if self.detail else [],
            "error": self.error,
            "by": by,
            "at": self.finished_at or datetime.now(UTC),
        }


def export_records(records: RecordsDB, *, purpose: Purpose | None = None) -> Iterator[RunExport]:
    """Every finished calibration or evaluation run (of one purpose), by pair, side, model, harness, repetition."""
    for row in records.runs(status="done", purpose=purpose):
        if row.purpose in ("calibration", "evaluation"):  # scripted runs stay with their workspace
            yield RunExport.of(row)


def dump_lines(runs: Iterable[RunExport]) -> Iterator[str]:
    """JSON Lines: one compact object per run, ending in a newline."""
    for run in runs:
        yield run.model_dump_json(exclude_none=True) + "\n"


def parse_lines(lines: Iterable[str], source: str) -> list[RunExport]:
    """Read JSON Lines (blank lines skipped).

    Raises:
        RunsError: A line is not JSON or not a valid record (the message names ``source``,
            the line number and the field).
    """
    found = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            found.append(RunExport.model_validate(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise RunsError(f"{source}:{number}: not JSON: {exc.msg}") from exc
        except ValidationError as exc:
            raise RunsError(f"{source}:{number}: " + "; ".join(describe_validation_error(exc))) from exc
    return found


@dataclass
class Imported:
    """What an import did.

    Attributes:
        added: Runs stored.
        unchanged: Runs already stored with the same outcome (skipped).
        filled: Pending rows of this database that the import completed.
    """

    added: int = 0
    unchanged: int = 0
    filled: int = 0


def _row_key(row: RunRow) -> tuple[str, str, str, str, str, str, str, int]:
    """A stored row's key, in the order of :attr:`RunExport.key`."""
    return (row.purpose, row.pair, row.digest, row.side, row.model, row.harness, row.budgets, row.k)


def import_records(records: RecordsDB, runs: list[RunExport], *, source: str = "input", by: str = "import") -> Imported:
    """Store runs from elsewhere, in one transaction (idempotent; all or nothing).

    Args:
        records: The records database.
        runs: The runs, in file order.
        source: Where they come from (named in messages).
        by: The verdict history's ``by`` for imported verdicts.

    Raises:
        RunsError: A run contradicts a stored one (same key, other outcome) or another run
            of the input, or its row is being executed by a live process; nothing is stored then.
    """
    seen: dict[tuple[str, str, str, str, str, str, str, int], tuple[int, RunExport]] = {}
    problems: list[str] = []
    for number, run in enumerate(runs, start=1):
        earlier = seen.get(run.key)
        if earlier is not None and earlier[1].outcome != run.outcome:
            problems.append(
                f"{source}: record {number} ({run.where}) says {run.outcome.value}, record {earlier[0]} "
                f"says {earlier[1].outcome.value}"
            )
        seen.setdefault(run.key, (number, run))
    if problems:
        raise RunsError("; ".join(problems[:5]) + (f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""))
    result = Imported()
    with Session(records.engine) as session, session.begin():
        # one read of the rows these runs could meet, instead of one query per run (86,496 at the
        # reference study's scale: bench/report_scale.py)
        pairs = sorted({run.pair for _, run in seen.values()})
        stored_rows: dict[tuple[str, str, str, str, str, str, str, int], RunRow] = {}
        for start in range(0, len(pairs), 500):
            query = select(RunRow).where(RunRow.pair.in_(pairs[start : start + 500]))
            for row in session.scalars(query):
                stored_rows[_row_key(row)] = row
        added: list[RunExport] = []
        for number, run in seen.values():
            stored = stored_rows.get(run.key)
            if stored is None:
                added.append(run)
            elif stored.status == "done":
                if stored.outcome == run.outcome.value:
                    result.unchanged += 1
                else:
                    problems.append(
                        f"{source}: record {number} ({run.where}) says {run.outcome.value}; the stored run "
                        f"{stored.run_id or stored.id} says {stored.outcome}. Re-judge it with `twinforge redetect` "
                        "instead, or import under another model or harness name"
                    )
            elif stored.status == "running":
                problems.append(f"{source}: record {number} ({run.where}) is being executed here by {stored.owner}")
            else:  # a planned run that never ran here: the import completes it
                for column, value in run.columns().items():
                    setattr(stored, column, value)
                session.add(VerdictRow(**run.verdict(stored.id, by)))
                result.filled += 1
        if added:  # Core executemany: the ORM's unit of work per object costs 10x more at this scale
            ids = session.scalars(
                insert(RunRow).returning(RunRow.id, sort_by_parameter_order=True), [run.columns() for run in added]
            ).all()
            session.execute(insert(VerdictRow), [run.verdict(i, by) for run, i in zip(added, ids, strict=True)])
        result.added = len(added)
        if problems:  # leaving the transaction by an exception rolls it back: nothing is stored
            more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
            raise RunsError("; ".join(problems[:5]) + more + "; nothing was imported")
    return result


def read_file(path: Path) -> list[RunExport]:
    """Parse a JSON Lines file of runs.

    Raises:
        RunsError: Unreadable, or a line is invalid (named with its number and field).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunsError(f"{path}: cannot read: {exc}") from exc
    return parse_lines(text.splitlines(), str(path))
