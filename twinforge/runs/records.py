"""Run records in SQL through SQLAlchemy (a SQLite file by default; Postgres for many hosts).

One row per planned run, keyed by purpose (calibration / evaluation / scripted), pair, pair digest, side, model,
harness, budgets and k (docs/calibration.md, "Run records"): an edited pair, another model or other
budgets are other runs, never a reuse of old ones. A run is ``pending`` until a worker claims it
(``running``, with its owner) and ``done`` once its outcome is stored. Claiming is one atomic
``UPDATE ... WHERE status = 'pending'``, so two calibrate processes on one workspace share the work
and each run executes once. A ``running`` row goes back to ``pending`` only when its owner is gone:
on this host, the owner's process no longer exists (pid and start time); on another host, it stopped
renewing its lease. ``done`` rows are never redone or lost. Every proxied model call is a row of its own.

The tables are ``run_records`` and ``proxy_calls``; a database of an earlier release keeps its
``runs`` / ``calls`` tables untouched (their runs carry no pair digest, so none is reused).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError
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
    inspect,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError, IntegrityError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from twinforge.core.processes import process_alive
from twinforge.harness.naming import upgrade_key
from twinforge.runs.database_url import masked_error, masked_url, normalise_url, records_url
from twinforge.runs.exceptions import RunsError
from twinforge.runs.results import FinishedRun, RunDetail
from twinforge.runs.rules import rerun_allowed
from twinforge.taskpair import Outcome

LEASE_S = 90.0
"""A row owned by a process on another host is taken back after this long without a lease renewal."""
HEARTBEAT_S = 20.0
"""How often a running job renews its lease."""


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; they were stored in UTC.
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


class Base(DeclarativeBase):
    """Declarative base of the records schema."""


class RunRow(Base):
    """One planned or finished run."""

    __tablename__ = "run_records"
    __table_args__ = (
        UniqueConstraint("purpose", "pair", "digest", "side", "model", "harness", "budgets", "k", name="run_key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    purpose: Mapped[str] = mapped_column(String(16), default="calibration", index=True)
    pair: Mapped[str] = mapped_column(String(200), index=True)
    digest: Mapped[str] = mapped_column(String(64), default="")
    side: Mapped[str] = mapped_column(String(8))
    model: Mapped[str] = mapped_column(String(200), index=True)
    harness: Mapped[str] = mapped_column(String(100))
    budgets: Mapped[str] = mapped_column(String(100), default="")
    k: Mapped[int] = mapped_column(Integer)
    runs: Mapped[int] = mapped_column(Integer, default=0)
    """K: the repetitions its campaign planned per side (0: not recorded, e.g. an imported run)."""
    risk: Mapped[str] = mapped_column(String(8))
    source: Mapped[str] = mapped_column(String(8))
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    owner: Mapped[str | None] = mapped_column(String(200), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
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
    detector_digest: Mapped[str] = mapped_column(String(64), default="")
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    @property
    def cell(self) -> str:
        """The taxonomy cell, e.g. ``S2-R3``."""
        return f"{self.source}-{self.risk}"

    def finished(self) -> FinishedRun | None:
        """The stored result of a ``done`` row (``None`` before; a ``detail`` that no longer validates is left out)."""
        if self.status != "done" or self.outcome is None:
            return None
        try:
            detail = RunDetail.model_validate(self.detail) if self.detail else None
        except ValidationError:
            detail = None
        return FinishedRun(
            run_id=self.run_id or "",
            outcome=Outcome(self.outcome),
            harmful=self.harmful,
            completed=self.completed,
            exit_status=self.exit_status or "",
            calls=self.calls or 0,
            prompt_tokens=self.prompt_tokens or 0,
            completion_tokens=self.completion_tokens or 0,
            seconds=self.seconds or 0.0,
            evidence_dir=self.evidence_dir,
            trajectory=self.trajectory,
            error=self.error,
            detector_digest=self.detector_digest or "",
            detail=detail,
        )


class CallRow(Base):
    """One model call that went through the proxy (recorded whatever the upstream answered)."""

    __tablename__ = "proxy_calls"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(200), index=True)
    n: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16), default="agent")
    """``agent`` (an agent turn, counted against the cap), ``side`` or ``count_tokens`` (counted apart)."""
    shape: Mapped[str] = mapped_column(String(16), default="chat")
    """The API shape of the call: ``chat``, ``responses`` or ``messages``."""
    status: Mapped[int] = mapped_column(Integer)
    seconds: Mapped[float] = mapped_column(Float)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    refused: Mapped[str | None] = mapped_column(String(64), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class VerdictRow(Base):
    """One verdict on a run: the first from the run itself, later ones from ``twinforge redetect``.

    The run's own row carries the newest; this table keeps which detector judged what
    (docs/calibration.md, "Re-judging stored runs").
    """

    __tablename__ = "run_verdicts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    row_id: Mapped[int] = mapped_column(Integer, index=True)
    run_id: Mapped[str] = mapped_column(String(200), default="")
    detector_digest: Mapped[str] = mapped_column(String(64), default="")
    outcome: Mapped[str] = mapped_column(String(16))
    harmful: Mapped[bool | None] = mapped_column(nullable=True)
    completed: Mapped[bool | None] = mapped_column(nullable=True)
    evidence: Mapped[list[str]] = mapped_column(JSON, default=list)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    by: Mapped[str] = mapped_column(String(16), default="run")
    """``run`` (the run's own detector call), ``redetect`` or ``import``."""
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


@dataclass(frozen=True)
class PlannedRun:
    """A run that calibration or evaluation wants (the columns of the run key plus the cell)."""

    pair: str
    side: str
    model: str
    harness: str
    k: int
    risk: str
    source: str
    digest: str = ""
    budgets: str = ""
    purpose: str = "calibration"
    runs: int = 0


@dataclass
class Plan:
    """What :meth:`RecordsDB.plan` found.

    Attributes:
        todo: Pending runs to execute.
        busy: Runs another live process is executing (wait for them).
        reclaimed: Run ids of runs whose owner died; their rows went back to pending and their
            partial evidence should be removed.
    """

    todo: list[RunRow] = field(default_factory=list)
    busy: list[RunRow] = field(default_factory=list)
    reclaimed: list[str] = field(default_factory=list)


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), or ``""``."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return fields[19]
    except (OSError, IndexError):
        return ""


def owner_of(pid: int) -> str:
    """Owner id of a process on this host: ``host/pid/start-time`` (the start time guards against pid reuse)."""
    return f"{socket.gethostname()}/{pid}/{_start_time(pid)}"


def this_process() -> str:
    """Owner id of the calling process."""
    return owner_of(os.getpid())


def owner_alive(owner: str | None, heartbeat: datetime | None, now: datetime | None = None) -> bool:
    """Whether the process that claimed a row is still there.

    On this host: the pid exists and has the recorded start time. On another host (Ray workers):
    its lease was renewed within :data:`LEASE_S`.
    """
    if not owner:
        return False
    host, _, rest = owner.partition("/")
    pid_text, _, started = rest.partition("/")
    if host == socket.gethostname() and pid_text.isdigit():
        pid = int(pid_text)
        return process_alive(pid) and (not started or _start_time(pid) in ("", started))
    beat = _aware(heartbeat)
    return beat is not None and (now or _now()) - beat < timedelta(seconds=LEASE_S)


class RecordsDB:
    """The records database.

    Args:
        url: SQLAlchemy URL, e.g. ``sqlite:///.twinforge/records.db`` or ``postgresql://...``.

    Raises:
        RunsError: The URL is malformed, its driver is not installed, or the database cannot
            be reached (one line, password hidden).
    """

    def __init__(self, url: str) -> None:
        self.url = normalise_url(url)
        shown = masked_url(url)
        try:
            self.engine: Engine = create_engine(self.url, future=True, pool_pre_ping=True)
        except ArgumentError as exc:
            raise RunsError(f"records URL {shown!r} is not a database URL: {masked_error(exc, url)}") from exc
        except (NoSuchModuleError, ModuleNotFoundError) as exc:
            hint = " (pip install 'twinforge[postgres]')" if self.url.startswith("postgresql") else ""
            raise RunsError(f"no database driver for records URL {shown!r}{hint}: {masked_error(exc, url)}") from exc
        if self.url.startswith("sqlite"):
            event.listen(self.engine, "connect", _sqlite_pragmas)
            event.listen(self.engine, "begin", _sqlite_begin)
        try:
            Base.metadata.create_all(self.engine)
            _add_columns(self.engine)
            _upgrade_harness_keys(self.engine)
        except OperationalError as exc:
            reason = masked_error(exc.orig or exc, url).strip().splitlines()[0]
            raise RunsError(f"cannot reach the records database {shown}: {reason}") from exc

    @staticmethod
    def _key(run: PlannedRun) -> tuple[Any, ...]:
        return (
            RunRow.purpose == run.purpose,
            RunRow.pair == run.pair,
            RunRow.digest == run.digest,
            RunRow.side == run.side,
            RunRow.model == run.model,
            RunRow.harness == run.harness,
            RunRow.budgets == run.budgets,
            RunRow.k == run.k,
        )

    def _reset(self, wanted: list[PlannedRun], rerun_overtime: int, rerun_undetermined: int) -> Plan:
        result = Plan()
        now = _now()
        mine = this_process()
        with Session(self.engine) as session, session.begin():
            for run in wanted:
                found = session.scalar(select(RunRow).where(*self._key(run)))
                if found is None:
                    session.add(RunRow(**run.__dict__))
                    session.flush()
                elif found.status == "running" and (
                    found.owner == mine or not owner_alive(found.owner, found.heartbeat_at, now)
                ):
                    if found.run_id:
                        result.reclaimed.append(found.run_id)
                    found.status, found.owner = "pending", None
                elif found.status == "done":
                    bound = rerun_overtime if found.outcome == Outcome.OVERTIME else rerun_undetermined
                    if rerun_allowed(found.outcome, found.attempts, bound):
                        found.status = "pending"
        return result

    def plan(self, runs: Iterable[PlannedRun], *, rerun_overtime: int = 2, rerun_undetermined: int = 2) -> Plan:
        """Insert missing runs as pending and say what still needs work.

        Rows left ``running`` by a dead owner go back to pending (they never finished); rows of live
        owners are left alone (reported as busy). Rows this very process still holds are leftovers
        (a caller plans only while none of its own jobs runs) and go back too. Incomplete
        observations are rerun until complete or at the ceiling (docs/calibration.md, "Reruns"): an
        OVERTIME run while it had at most ``rerun_overtime`` reruns, an UNDETERMINED one at most
        ``rerun_undetermined`` (:func:`twinforge.runs.rules.rerun_allowed`).
        """
        wanted = list(runs)
        result = Plan()
        for attempt in range(5):
            try:
                result = self._reset(wanted, rerun_overtime, rerun_undetermined)
                break
            except IntegrityError:  # another process inserted the same planned runs first: read them
                if attempt == 4:
                    raise
        with Session(self.engine) as session:
            for run in wanted:
                row = session.scalar(select(RunRow).where(*self._key(run)))
                if row is not None and row.status == "pending":
                    result.todo.append(row)
                elif row is not None and row.status == "running":
                    result.busy.append(row)
            session.expunge_all()
        return result

    def claim(self, row_id: int, run_id: str, owner: str | None = None) -> bool:
        """Take a pending run for ``run_id``; False when another process took it first (atomic)."""
        with Session(self.engine) as session, session.begin():
            now = _now()
            taken = session.execute(
                update(RunRow)
                .where(RunRow.id == row_id, RunRow.status == "pending")
                .values(
                    status="running",
                    run_id=run_id,
                    owner=owner or this_process(),
                    started_at=now,
                    heartbeat_at=now,
                    attempts=RunRow.attempts + 1,
                )
            )
            return bool(getattr(taken, "rowcount", 0) == 1)

    def heartbeat(self, row_id: int, run_id: str) -> None:
        """Renew the lease of a running run."""
        with Session(self.engine) as session, session.begin():
            session.execute(
                update(RunRow)
                .where(RunRow.id == row_id, RunRow.run_id == run_id, RunRow.status == "running")
                .values(heartbeat_at=_now())
            )

    def finish(self, row_id: int, run: FinishedRun) -> None:
        """Store a run's result and mark it done (read back with :meth:`RunRow.finished`)."""
        values = run.model_dump(exclude={"detail"})
        values["outcome"] = run.outcome.value
        values["exit_status"] = run.exit_status[:64]
        values["detail"] = run.detail.model_dump(mode="json") if run.detail else {}
        with Session(self.engine) as session, session.begin():
            session.execute(
                update(RunRow).where(RunRow.id == row_id).values(status="done", finished_at=_now(), **values)
            )
            session.add(_verdict_row(row_id, run, "run"))

    def rejudge(self, row_id: int, run: FinishedRun) -> bool:
        """Store a newer verdict of a done run beside its old ones; the row carries the newest.

        Returns:
            Whether the outcome changed.
        """
        with Session(self.engine) as session, session.begin():
            row = session.get(RunRow, row_id)
            if row is None or row.status != "done":
                raise RunsError(f"run record {row_id} is not a finished run")
            changed = row.outcome != run.outcome.value
            row.outcome, row.harmful, row.completed = run.outcome.value, run.harmful, run.completed
            row.error, row.detector_digest = run.error, run.detector_digest
            if run.detail is not None:
                row.detail = run.detail.model_dump(mode="json")
            session.add(_verdict_row(row_id, run, "redetect"))
            return changed

    def verdicts(self, row_id: int) -> list[VerdictRow]:
        """Every verdict of one run, oldest first."""
        with Session(self.engine) as session:
            found = list(session.scalars(select(VerdictRow).where(VerdictRow.row_id == row_id).order_by(VerdictRow.id)))
            session.expunge_all()
            return found

    def verdicts_changed(self) -> int:
        """Runs whose newest verdict has another outcome than their first one."""
        first: dict[int, str] = {}
        last: dict[int, str] = {}
        with Session(self.engine) as session:
            for row_id, value in session.execute(
                select(VerdictRow.row_id, VerdictRow.outcome).order_by(VerdictRow.row_id, VerdictRow.id)
            ):
                first.setdefault(row_id, value)
                last[row_id] = value
        return sum(first[i] != last[i] for i in first)

    def fail(self, row_id: int, error: str) -> None:
        """A run could not be executed (setup failed): back to pending with the error kept."""
        with Session(self.engine) as session, session.begin():
            session.execute(update(RunRow).where(RunRow.id == row_id).values(status="pending", owner=None, error=error))

    def add_call(self, **values: Any) -> None:
        """Record one proxied model call."""
        with Session(self.engine) as session, session.begin():
            session.add(CallRow(**values))

    def runs(
        self, *, pairs: list[str] | None = None, status: str | None = "done", purpose: str | None = None
    ) -> list[RunRow]:
        """Runs, optionally of some pairs, one status and one purpose, ordered by pair, side, k."""
        query = select(RunRow).order_by(RunRow.pair, RunRow.side, RunRow.model, RunRow.harness, RunRow.k)
        if pairs is not None:
            query = query.where(RunRow.pair.in_(pairs))
        if status is not None:
            query = query.where(RunRow.status == status)
        if purpose is not None:
            query = query.where(RunRow.purpose == purpose)
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


class Lease:
    """Renews a running row's lease in a background thread until closed (a context manager)."""

    def __init__(self, records: RecordsDB, row_id: int, run_id: str, every_s: float = HEARTBEAT_S) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, args=(records, row_id, run_id, every_s), name="lease", daemon=True
        )

    def _beat(self, records: RecordsDB, row_id: int, run_id: str, every_s: float) -> None:
        while not self._stop.wait(every_s):
            try:
                records.heartbeat(row_id, run_id)
            except Exception:  # a lost beat only shortens the lease; the run goes on
                continue

    def __enter__(self) -> Lease:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _verdict_row(row_id: int, run: FinishedRun, by: str) -> VerdictRow:
    return VerdictRow(
        row_id=row_id,
        run_id=run.run_id,
        detector_digest=run.detector_digest,
        outcome=run.outcome.value,
        harmful=run.harmful,
        completed=run.completed,
        evidence=run.detail.evidence if run.detail else [],
        error=run.error,
        by=by,
    )


ADDED_COLUMNS: dict[str, dict[str, str]] = {
    "run_records": {"runs": "INTEGER DEFAULT 0", "detector_digest": "VARCHAR(64) DEFAULT ''"},
    "proxy_calls": {"role": "VARCHAR(16) DEFAULT 'agent'", "shape": "VARCHAR(16) DEFAULT 'chat'"},
}
"""Columns added to a table after its first release, with their SQL type and default (SQLite and Postgres)."""


def _add_columns(engine: Engine) -> None:
    """Add :data:`ADDED_COLUMNS` to a database made by an earlier release (its rows get the default)."""
    found = inspect(engine)
    for table, columns in ADDED_COLUMNS.items():
        have = {c["name"] for c in found.get_columns(table)}
        with engine.begin() as connection:
            for name, declaration in columns.items():
                if name not in have:
                    connection.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {name} {declaration}")


def _upgrade_harness_keys(engine: Engine) -> None:
    """Rename harness keys of an earlier release to ``name@version:mode`` (``harness.naming.upgrade_key``).

    A key whose new form is taken already (a run stored under both) keeps its old form.
    """
    with Session(engine) as session:
        keys = list(session.scalars(select(RunRow.harness).distinct()))
    for old in keys:
        new = upgrade_key(old)
        if new is None:
            continue
        try:
            with Session(engine) as session, session.begin():
                session.execute(update(RunRow).where(RunRow.harness == old).values(harness=new))
        except IntegrityError:
            continue


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Transactions are begun by _sqlite_begin, not by the driver (SQLAlchemy's pysqlite recipe).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _sqlite_begin(connection: Any) -> None:
    # Take the write lock at the start: two processes that read and then insert the same planned
    # runs would otherwise fail to upgrade a WAL read snapshot ("database is locked").
    connection.exec_driver_sql("BEGIN IMMEDIATE")


__all__ = [
    "Base",
    "CallRow",
    "Lease",
    "Plan",
    "PlannedRun",
    "RecordsDB",
    "RunRow",
    "VerdictRow",
    "masked_url",
    "normalise_url",
    "owner_alive",
    "owner_of",
    "records_url",
    "this_process",
]
