"""Where the tests find the repository, its reference pairs and the test data."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository checkout."""
DATA = ROOT / "tests" / "data"
"""Test inputs (recorded samples, labelled sets, case pairs)."""
CASES = DATA / "cases"
"""Pairs and inputs that twinforge once got wrong, each with its right result."""
REFERENCE = ROOT / "twinforge" / "guidelines" / "reference-pairs"
"""The reference task pairs."""
GUIDELINES = ROOT / "twinforge" / "guidelines"
"""The packaged guidelines data."""
