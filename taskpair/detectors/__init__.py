"""The detector primitives library, ``twinforge_detectors`` (stdlib only).

It is mounted read-only into the detector container at ``/opt/twinforge/detectors`` (on
``PYTHONPATH``), so a detector is a short script over these primitives. The same code imports on
the host for tests.
"""

from pathlib import Path

LIB = Path(__file__).resolve().parent / "lib"
MOUNT = "/opt/twinforge/detectors"

__all__ = ["LIB", "MOUNT"]
