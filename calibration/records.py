"""Run records in SQL through SQLAlchemy (a SQLite file by default; a Postgres URL also works).

One row per planned run, keyed by (pair, side, model, harness, k). A run is ``pending`` until a
worker claims it (``running``) and ``done`` once its outcome is stored. A calibration killed at any
point resumes: rows left ``running`` by a dead process go back to ``pending``; ``done`` rows are
never redone or lost. Every proxied model call is a row of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    Integer,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


def _now() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Declarative base of the records schema."""


class RunRow(Base):
    """One planned or finished run."""

    __tablename__ = "runs"
    __table_args__ = (UniqueConstraint("pair", "side", "model", "harness", "k", name="plan_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    pair: Mapped[str] = mapped_column(String(200), index=True)
    side: Mapped[str] = mapped_column(String(8))
    model: Mapped[str] = mapped_column(String(200), index=True)
    harness: Mapped[str] = mapped_column(String(100))
    k: Mapped[int] = mapped_column(Integer)
    risk: Mapped[str] = mapped_column(String(8))
    source: Mapped[str] = mapped_column(String(8))
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    run_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    outcome: Mapped[str | None] = mapped_column(String(16), nullable=True)
    harmful: Mapped[bool | None] = mapped_column(nullable=True)
    completed: Mapped[bool | None] = mapped_column(nullable=True)
    exit_status: Mapped[str | None] = mapped_column(String(64), nullable=True)
    calls: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    evidence_dir: Mapped[str | None] = mapped_column(Text, nullable=True)
    trajectory: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class CallRow(Base):
    """One model call that went through the proxy."""

    __tablename__ = "calls"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(200), index=True)
    n: Mapped[int] = mapped_column(Integer)
    status: Mapped[int] = mapped_column(Integer)
    seconds: Mapped[float] = mapped_column(Float)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    refused: Mapped[str | None] = mapped_column(String(64), nullable=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


@dataclass(frozen=True)
class PlannedRun:
    """A run calibration wants: which pair side, for which model and harness, which repetition."""

    pair: str
    side: str
    model: str
    harness: str
    k: int
    risk: str
    source: str


class RecordsDB:
    """The records database.

    Args:
        url: SQLAlchemy URL, e.g. ``sqlite:///.twinforge/records.db`` or ``postgresql://...``.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: Engine = create_engine(url, future=True)
        if url.startswith("sqlite"):
            event.listen(self.engine, "connect", _sqlite_pragmas)
        Base.metadata.create_all(self.engine)

    def plan(self, runs: Iterable[PlannedRun], *, rerun_overtime: int = 2) -> list[RunRow]:
        """Insert missing runs as pending and return every run that still needs work.

        Runs left ``running`` by a dead process are reset to pending (they never finished).
        OVERTIME runs are rerun while their attempts are below ``1 + rerun_overtime``.
        """
        wanted = list(runs)
        with Session(self.engine) as session, session.begin():
            for run in wanted:
                found = session.scalar(select(RunRow).where(*self._key(run)))
                if found is None:
                    session.add(RunRow(**run.__dict__))
                elif found.status == "running" or (
                    found.status == "done" and found.outcome == "OVERTIME" and found.attempts <= rerun_overtime
                ):
                    found.status = "pending"
        with Session(self.engine) as session:
            todo = []
            for run in wanted:
                row = session.scalar(select(RunRow).where(*self._key(run)))
                if row is not None and row.status == "pending":
                    todo.append(row)
            session.expunge_all()
            return todo

    @staticmethod
    def _key(run: PlannedRun) -> tuple[Any, ...]:
        return (
            RunRow.pair == run.pair,
            RunRow.side == run.side,
            RunRow.model == run.model,
            RunRow.harness == run.harness,
            RunRow.k == run.k,
        )

    def claim(self, row_id: int, run_id: str) -> None:
        """Mark a run as running under ``run_id``."""
        with Session(self.engine) as session, session.begin():
            row = session.get(RunRow, row_id)
            if row is None:
                raise KeyError(row_id)
            row.status, row.run_id, row.started_at = "running", run_id, _now()
            row.attempts += 1

    def finish(self, row_id: int, **values: Any) -> None:
        """Store a run's results and mark it done."""
        with Session(self.engine) as session, session.begin():
            session.execute(
                update(RunRow).where(RunRow.id == row_id).values(status="done", finished_at=_now(), **values)
            )

    def fail(self, row_id: int, error: str) -> None:
        """A run could not be executed (setup failed): back to pending with the error kept."""
        with Session(self.engine) as session, session.begin():
            session.execute(update(RunRow).where(RunRow.id == row_id).values(status="pending", error=error))

    def add_call(self, **values: Any) -> None:
        """Record one proxied model call."""
        with Session(self.engine) as session, session.begin():
            session.add(CallRow(**values))

    def runs(self, *, pairs: list[str] | None = None, status: str | None = "done") -> list[RunRow]:
        """Runs, optionally of some pairs and one status, ordered by pair, side, k."""
        query = select(RunRow).order_by(RunRow.pair, RunRow.side, RunRow.model, RunRow.harness, RunRow.k)
        if pairs is not None:
            query = query.where(RunRow.pair.in_(pairs))
        if status is not None:
            query = query.where(RunRow.status == status)
        with Session(self.engine) as session:
            rows = list(session.scalars(query))
            session.expunge_all()
            return rows

    def calls(self, run_id: str) -> list[CallRow]:
        """Proxied calls of one run, in order."""
        with Session(self.engine) as session:
            rows = list(session.scalars(select(CallRow).where(CallRow.run_id == run_id).order_by(CallRow.n)))
            session.expunge_all()
            return rows


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


__all__ = ["Base", "CallRow", "PlannedRun", "RecordsDB", "RunRow"]
