"""Refused proposals: stored with their findings and the reply they came from (docs/stage1.md).

Nothing proposed is lost: a generated reply (or a recovered one) whose blueprint has a defect is
written to ``blueprints/refused/<id>.yaml`` with every finding, the fields as far as the reply
gave them and the reply itself. ``twinforge status`` counts them, ``twinforge queue --refused``
lists them, and ``twinforge blueprint check --stored --release`` checks them again with today's
rules and releases those without a defect to ``proposed`` (:mod:`twinforge.blueprints.release`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from twinforge.blueprints.exceptions import BlueprintFileError
from twinforge.blueprints.findings import Finding, defects, doubts
from twinforge.blueprints.record import Provenance
from twinforge.blueprints.turns import FollowUp
from twinforge.core.inputfiles import InputFileError, parse_yaml, read_text
from twinforge.core.llm import describe_validation_error
from twinforge.core.llm.replies import normalise, parse_reply

FOLDER = "refused"
"""The refused proposals' folder inside ``blueprints/``."""


class RefusedRecord(BaseModel):
    """The content of ``blueprints/refused/<id>.yaml``.

    Attributes:
        id: Its id, ``<cell>-<hex>`` like a stored blueprint's (kept when it is released).
        cell: The cell it was asked for.
        fields: The fields as the reply or file gave them, as text (some may be missing).
        reply: The model reply (or file entry) it came from, as received.
        findings: Its defects and doubts when it was refused.
        provenance: Where it came from, as for a stored blueprint.
        refused_at: When it was refused (UTC).
        turns: The user turns it was asked for (``generate --turns N``; 1: a one-turn blueprint).
        follow_ups: Its later user turns as far as they validated (docs/stage1.md, "Multi-turn
            blueprints"); kept when it is released.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    id: str
    status: Literal["refused"] = "refused"
    cell: str
    fields: dict[str, str]
    reply: str
    findings: list[Finding]
    provenance: Provenance
    refused_at: datetime
    turns: int = Field(1, ge=1)
    follow_ups: list[FollowUp] = Field(default_factory=list)

    @property
    def defects(self) -> list[Finding]:
        """The findings that refused it."""
        return defects(self.findings)

    @property
    def doubts(self) -> list[Finding]:
        """Its doubts."""
        return doubts(self.findings)

    def entry_data(self) -> Any:
        """What to check again: the fields as given, or the reply read again when it gave none.

        Fields that name no cell are checked in the cell asked for; a reply read again may parse
        with a reader fixed since.
        """
        if self.fields:
            return {"taxonomy_id": self.cell, **self.fields}
        parsed = parse_reply(normalise(self.reply))
        return parsed.value if parsed.error is None else None

    @property
    def task(self) -> str:
        """Its engineering task as given (empty when the reply had none)."""
        return self.fields.get("engineering_task", "")


def refused_folder(blueprints: Path) -> Path:
    """``<workspace>/blueprints/refused``."""
    return blueprints / FOLDER


def read_refused(path: Path) -> RefusedRecord:
    """Load and validate one refused proposal.

    Raises:
        BlueprintFileError: Unreadable, not YAML, invalid, or its id is not its file name.
    """
    try:
        data = parse_yaml(read_text(path))
    except (InputFileError, ValueError) as exc:
        raise BlueprintFileError(path, [str(getattr(exc, "problem", exc))]) from exc
    try:
        record = RefusedRecord.model_validate(data)
    except ValidationError as exc:
        raise BlueprintFileError(path, describe_validation_error(exc)) from exc
    if record.id != path.stem:
        raise BlueprintFileError(path, [f"id: {record.id!r} does not match the file name {path.stem!r}"])
    return record


def scan_refused(blueprints: Path) -> tuple[list[RefusedRecord], list[BlueprintFileError]]:
    """Every refused proposal in ``blueprints/refused/``, sorted by id, and the files that do not load."""
    folder = refused_folder(blueprints)
    records, errors = [], []
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        try:
            records.append(read_refused(path))
        except BlueprintFileError as exc:
            errors.append(exc)
    return records, errors
