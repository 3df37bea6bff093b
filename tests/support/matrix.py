"""A per-harness or per-place matrix of which one case runs by default (the rest with ``--matrix``).

The whole suite keeps within its 30 minutes on 2 cores; the cases a matrix repeats for another
harness, place or tell run with ``pytest --matrix`` (tests/conftest.py), and docs/results.md gives
the figures of the whole matrix.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest


def matrix(values: Iterable[Any], keep: Iterable[Any], ids: Iterable[str] | None = None) -> list[Any]:
    """``values`` as pytest parameters: those in ``keep`` run by default, the others only with ``--matrix``."""
    kept = list(keep)
    names = list(ids) if ids is not None else None
    out = []
    for i, value in enumerate(values):
        marks = [] if value in kept else [pytest.mark.matrix]
        out.append(pytest.param(value, marks=marks, id=names[i] if names else None))
    return out
