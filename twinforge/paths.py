"""Where twinforge finds its bundled data and keeps its machine-wide cache."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def guidelines_dir() -> Path:
    """Return the ``guidelines/`` data folder (taxonomy, dimensions, prompts, sources).

    In a source checkout or editable install it is the repository's ``guidelines/``; a built wheel
    carries a copy as ``twinforge/_guidelines``. ``TWINFORGE_GUIDELINES`` overrides both.

    Raises:
        FileNotFoundError: When no guidelines folder can be found.
    """
    override = os.environ.get("TWINFORGE_GUIDELINES")
    candidates = [Path(override)] if override else []
    candidates += [_PACKAGE_DIR.parent / "guidelines", _PACKAGE_DIR / "_guidelines"]
    for candidate in candidates:
        if (candidate / "taxonomy.yaml").is_file():
            return candidate
    raise FileNotFoundError("no guidelines folder found; looked in " + ", ".join(map(str, candidates)))


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
