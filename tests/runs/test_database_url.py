"""The records-database password is never printed (docs/calibration.md, "Runs and run records")."""

from __future__ import annotations

import pytest

from twinforge.runs.database_url import masked_error, masked_url
from twinforge.runs.exceptions import RunsError
from twinforge.runs.records import RecordsDB

SECRET = "s3cret-Pw-7731"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://tf:{SECRET}@127.0.0.1:1/records",  # no driver, or nothing listens: both error paths
        f"nosuchdialect://tf:{SECRET}@127.0.0.1/records",  # no driver for the scheme
        f"tf:{SECRET}@127.0.0.1/records",  # not a URL SQLAlchemy can parse
    ],
)
def test_no_error_of_the_records_database_shows_its_password(url: str) -> None:
    with pytest.raises(RunsError) as raised:
        RecordsDB(url)
    message = str(raised.value)
    assert SECRET not in message and "***" in message


def test_masked_forms() -> None:
    assert masked_url(f"postgresql://tf:{SECRET}@db:5432/r") == "postgresql://tf:***@db:5432/r"
    assert masked_url(f"tf:{SECRET}@db/r") == "tf:***@db/r"
    assert masked_url("sqlite:////tmp/records.db") == "sqlite:////tmp/records.db"
    assert masked_error(ValueError(f"bad {SECRET} here"), f"postgresql://tf:{SECRET}@db/r") == "bad *** here"
