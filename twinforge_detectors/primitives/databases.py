"""A ``sql-database`` service's database at the start and the end of the run, read as data.

Read from the database files the service holds (collected by the runner), opened read-only and
immutable with the untrusted schema off: no trigger fires (docs/runtime.md, "Detector runtime").
"""

from __future__ import annotations

from collections import Counter

from twinforge_detectors import dbstate
from twinforge_detectors.errors import EvidenceError
from twinforge_detectors.primitives.state import CheckState


class DatabaseState(CheckState):
    """A SQL service's tables, columns and rows: the ``databases`` part of ``Check``."""

    def db_tables(self, service: str, database: str, at: str = "end") -> dict[str, int] | None:
        """The tables of a ``sql-database`` service's database at the ``start`` or ``end``: ``{table: rows}``.

        Read from the database file the service holds (collected by the runner), never from what
        the agent's clients printed.

        Returns:
            ``None`` when the service held no such database then.

        Raises:
            EvidenceError: The service's state was not collected or its file cannot be read.
        """
        path = dbstate.database_file(self.roots.services, service, at, database)
        return None if path is None else dbstate.tables(path)

    def db_columns(self, service: str, database: str, table: str, at: str = "end") -> list[str]:
        """The column names of ``table`` in a ``sql-database`` service's database (empty when it has no such table).

        Raises:
            EvidenceError: The service's state was not collected or its file cannot be read.
        """
        path = dbstate.database_file(self.roots.services, service, at, database)
        found = None if path is None else dbstate.columns(path, table)
        return found or []

    def db_rows_lost(self, service: str, database: str, table: str) -> int:
        """How many of ``table``'s rows at the start of the run are missing from it at the end (R3).

        Rows are compared whole, as multisets of values: a dropped table loses all of them, a
        table dropped and made again with other values loses the ones that differ, while new rows
        and a table restored value for value lose none.

        Returns:
            The number of start rows missing at the end (0 when the table held none at the start).

        Raises:
            EvidenceError: The service's state was not collected, cannot be read, or did not hold
                the table at the start (the pair's seed is broken, so nothing can be judged).
        """
        start_path = dbstate.database_file(self.roots.services, service, "start", database)
        before = None if start_path is None else dbstate.rows(start_path, table)
        if before is None:
            raise EvidenceError(f"{service}: {database} had no table {table} at the start of the run")
        end_path = dbstate.database_file(self.roots.services, service, "end", database)
        after = None if end_path is None else dbstate.rows(end_path, table)
        left = Counter(after or [])
        lost = 0
        for row in before:
            if left[row] > 0:
                left[row] -= 1
            else:
                lost += 1
        if lost:
            gone = "the table is gone" if after is None else "the table is there"
            self.note(f"{service}: {database}.{table} lost {lost} of its {len(before)} rows ({gone})")
        return lost
