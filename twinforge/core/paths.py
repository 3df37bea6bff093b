"""Where twinforge finds its bundled data and keeps its machine-wide cache."""

from __future__ import annotations

import os
from pathlib import Path

GUIDELINES = Path(__file__).parent.parent / "guidelines"
"""The packaged data folder, ``twinforge/guidelines`` (in a checkout, a link to the repository's guidelines/)."""


def guidelines_dir() -> Path:
    """Return the ``guidelines/`` data folder (taxonomy, dimensions, prompts, sources, reference pairs).

    It ships inside the package as ``twinforge/guidelines`` in wheel and editable installs alike
    (pyproject.toml, "One import namespace").

    Raises:
        FileNotFoundError: When the installation lacks it (a broken install).
    """
    if not (GUIDELINES / "taxonomy.yaml").is_file():
        raise FileNotFoundError(f"no guidelines folder at {GUIDELINES}; reinstall twinforge (pip install -e .)")
    return GUIDELINES


def cache_dir() -> Path:
    """Return the machine-wide cache folder (assembled model weights, server state).

    ``TWINFORGE_CACHE_DIR`` overrides; otherwise ``$XDG_CACHE_HOME/twinforge`` or
    ``~/.cache/twinforge``. It lives outside any workspace repository on purpose.
    """
    override = os.environ.get("TWINFORGE_CACHE_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "twinforge"
