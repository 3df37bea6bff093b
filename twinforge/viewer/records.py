"""Read-only access to the run records for the viewer (docs/viewer.md, "Reading the workspace").

The records are calibration's (``twinforge.runs.records``: ``RunRow``, ``CallRow``); the viewer
reads them through those models on a connection that cannot write: SQLite is opened with
``mode=ro`` (SQLite may still create the ``-wal`` / ``-shm`` index files a reader needs, never a
row), PostgreSQL with ``default_transaction_read_only``. Lists are paged in SQL, so a page of
100,000 records costs one indexed query and one count (bench/viewer.py measures it).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from sqlalchemy import String, cast, func, or_, select
from sqlalchemy.engine import Engine, create_engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from twinforge.runs.database_url import masked_error
from twinforge.runs.records import CallRow, RunRow, masked_url, normalise_url
from twinforge.viewer.exceptions import ViewerError

PAGE_SIZE = 50
"""Runs per page of a run list."""

_FILTERS = ("purpose", "pair", "side", "model", "harness", "outcome", "risk", "source")


@dataclass(frozen=True)
class RunFilter:
    """Which runs a run list shows; every field is an exact match, ``""`` matches all.

    The fields are the ``/runs`` and ``/api/runs`` query parameters of the same names.
    """

    purpose: str = ""
    pair: str = ""
    side: str = ""
    model: str = ""
    harness: str = ""
    outcome: str = ""
    risk: str = ""
    source: str = ""

    @classmethod
    def of(cls, params: dict[str, str]) -> RunFilter:
        """From query parameters (unknown ones are ignored; values are capped at 200 characters)."""
        return cls(**{name: str(params.get(name, ""))[:200] for name in _FILTERS})

    def params(self) -> dict[str, str]:
        """The non-empty fields as query parameters."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}

    def key(self) -> str:
        """A stable, file-name-safe key of this filter (for the static export's list pages)."""
        text = "&".join(f"{k}={v}" for k, v in sorted(self.params().items()))
        return hashlib.sha256(text.encode()).hexdigest()[:16] if text else "all"


@dataclass(frozen=True)
class RunPage:
    """One page of a run list.

    Attributes:
        rows: The runs of the page, newest first.
        total: Runs matching the filter.
        page: 1-based page number.
        pages: Number of pages (at least 1).
    """

    rows: list[RunRow]
    total: int
    page: int
    pages: int


def read_only_url(url: str) -> tuple[str, dict[str, Any]]:
    """A SQLAlchemy URL and connect arguments that open the records database without write access.

    Args:
        url: The workspace's records URL (``calibration.calibrate.records_url``).

    Returns:
        ``(url, connect_args)``.
    """
    url = normalise_url(url)
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        return f"sqlite:///file:{path}?mode=ro&uri=true", {}
    if url.startswith("postgresql"):
        return url, {"options": "-c default_transaction_read_only=on"}
    return url, {}


class RunRecords:
    """The run records, read-only.

    Args:
        url: The records URL; a SQLite file that does not exist yet means "no runs".

    Raises:
        ViewerError: The database cannot be opened (one line, naming it).
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: Engine | None = None
        self._watch: sqlite3.Connection | None = None
        self._watch_lock = threading.Lock()
        if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
            return
        ro_url, connect_args = read_only_url(url)
        if url.startswith("sqlite:///"):
            path = url.removeprefix("sqlite:///")
            try:
                self._watch = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            except sqlite3.Error as exc:
                raise ViewerError(f"cannot open the records database {path}: {exc}") from exc
        try:
            self.engine = create_engine(ro_url, connect_args=connect_args)
        except SQLAlchemyError as exc:
            raise ViewerError(f"cannot open the records database {masked_url(url)}: {masked_error(exc, url)}") from exc

    def _query(self, statement: Any) -> list[Any]:
        if self.engine is None:
            return []
        try:
            with Session(self.engine) as session:
                rows = list(session.execute(statement))
                session.expunge_all()
                return rows
        except SQLAlchemyError as exc:
            if "no such table" in str(exc):
                return []
            raise self._unreadable(exc) from exc

    def version(self) -> tuple[object, ...]:
        """A value that changes whenever a run is planned or finished.

        SQLite: ``PRAGMA data_version`` on a connection kept open for it, which changes with every
        commit of another connection (microseconds, whatever the size). Other databases:
        ``(rows, largest id, latest finish)``.
        """
        if self.engine is None:
            return ("absent",)
        if self._watch is not None:
            with self._watch_lock:
                return ("sqlite", self._watch.execute("PRAGMA data_version").fetchone()[0])
        found = self._query(select(func.count(RunRow.id), func.max(RunRow.id), func.max(RunRow.finished_at)))
        if not found:
            return (0, 0, "")
        count, largest, finished = found[0]
        return int(count or 0), int(largest or 0), str(finished or "")

    def page(self, run_filter: RunFilter, page: int = 1, size: int = PAGE_SIZE) -> RunPage:
        """One page of the finished runs matching ``run_filter``, newest first."""
        conditions = [RunRow.status == "done"]
        conditions += [getattr(RunRow, name) == value for name, value in run_filter.params().items()]
        counted = self._query(select(func.count(RunRow.id)).where(*conditions))
        total = int(counted[0][0]) if counted else 0
        pages = max(1, -(-total // size))
        page = min(max(page, 1), pages)
        statement = select(RunRow).where(*conditions).order_by(RunRow.id.desc()).limit(size).offset((page - 1) * size)
        return RunPage([row[0] for row in self._query(statement)], total, page, pages)

    def run(self, run_id: str) -> RunRow | None:
        """The finished run with this id, if any."""
        found = self._query(select(RunRow).where(RunRow.run_id == run_id, RunRow.status == "done"))
        return found[0][0] if found else None

    def of_pair(self, pair: str) -> list[RunRow]:
        """Every finished run of a pair, by purpose, model, harness, side and k."""
        statement = (
            select(RunRow)
            .where(RunRow.pair == pair, RunRow.status == "done")
            .order_by(RunRow.purpose, RunRow.model, RunRow.harness, RunRow.k, RunRow.side, RunRow.id)
        )
        return [row[0] for row in self._query(statement)]

    def counts(self, pairs: list[str]) -> dict[str, int]:
        """Finished runs per pair, for the pairs named (one grouped count)."""
        statement = (
            select(RunRow.pair, func.count(RunRow.id))
            .where(RunRow.status == "done", RunRow.pair.in_(pairs))
            .group_by(RunRow.pair)
        )
        return {str(pair): int(n) for pair, n in self._query(statement)}

    def calls(self, run_id: str) -> list[CallRow]:
        """The proxied model calls of a run, in order."""
        return [row[0] for row in self._query(select(CallRow).where(CallRow.run_id == run_id).order_by(CallRow.n))]

    def _unreadable(self, exc: Exception) -> ViewerError:
        """The error for a query that failed, the URL's password masked."""
        reason = masked_error(exc, self.url).splitlines()[0]
        return ViewerError(f"cannot read the records database {masked_url(self.url)}: {reason}")

    def outcomes(self) -> list[Any]:
        """Every finished run with only the columns the report's tables read (the overview's input).

        Plain result rows (attribute access by column name, as on ``RunRow``) rather than ORM objects:
        building 100,000 ORM objects costs several times the query itself (bench/viewer.py).
        """
        columns = (
            RunRow.purpose,
            RunRow.pair,
            RunRow.digest,
            RunRow.side,
            RunRow.model,
            RunRow.harness,
            RunRow.budgets,
            RunRow.k,
            RunRow.risk,
            RunRow.source,
            RunRow.outcome,
            RunRow.error,
            RunRow.runs,
            RunRow.attempts,
            RunRow.calls,
            RunRow.prompt_tokens,
            RunRow.completion_tokens,
            RunRow.seconds,
            RunRow.finished_at,
        )
        if self.engine is None:
            return []
        try:
            with self.engine.connect() as connection:
                return list(connection.execute(select(*columns).where(RunRow.status == "done")))
        except SQLAlchemyError as exc:
            if "no such table" in str(exc):
                return []
            raise self._unreadable(exc) from exc

    def flagged(self) -> list[RunRow]:
        """Finished runs that are UNDETERMINED or carry disagreement flags (the overview's "needs a look").

        Disagreements are found with a text match on the stored detail and confirmed by its model
        (``RunDetail``) by the caller.
        """
        text = cast(RunRow.detail, String)
        statement = select(RunRow).where(
            RunRow.status == "done",
            or_(
                RunRow.outcome == "UNDETERMINED", text.like('%"disagreements": [{%'), text.like('%"disagreements":[{%')
            ),
        )
        return [row[0] for row in self._query(statement)]
