"""Fixtures of the task-pair tests: the detector primitives' bench (tests/support/detector_check.py)."""

from tests.support.detector_check import check

__all__ = ["check"]
