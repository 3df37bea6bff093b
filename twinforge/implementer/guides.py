"""Where the implementer's guidelines live: a workspace's own ``guidelines/`` first, then the packaged one.

Contributors extend the implementer with data (docs/implementer.md): a category guide
``guidelines/implementer/<R>.md``, an archetype folder, or a reference pair, either in the
twinforge checkout or in a workspace's ``guidelines/`` folder.
"""

from __future__ import annotations

from pathlib import Path

from twinforge.core.paths import guidelines_dir


def guideline_roots(workspace_root: Path | None = None) -> list[Path]:
    """``[<workspace>/guidelines, <packaged guidelines>]``, the workspace's only when it exists."""
    roots = []
    if workspace_root is not None and (workspace_root / "guidelines").is_dir():
        roots.append(workspace_root / "guidelines")
    roots.append(guidelines_dir())
    return roots


def implementer_dir() -> Path:
    """The packaged ``guidelines/implementer/`` (prompts, guides, repair hints, archetypes)."""
    return guidelines_dir() / "implementer"


def category_guide(risk: str, workspace_root: Path | None = None) -> str:
    """The implementation guide of a risk category (``guidelines/implementer/<R>.md``), or a note that none exists."""
    for root in guideline_roots(workspace_root):
        path = root / "implementer" / f"{risk}.md"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return f"(no implementation guide for {risk} yet: follow the closest reference pair.)\n"


def reference_pairs(workspace_root: Path | None = None, exclude: frozenset[str] = frozenset()) -> list[Path]:
    """Reference pair folders (workspace first; a workspace pair shadows a packaged one of the same name).

    Args:
        workspace_root: The workspace, if any.
        exclude: Pair folder names to leave out (the bench's leave-one-out).
    """
    found: dict[str, Path] = {}
    for root in guideline_roots(workspace_root):
        folder = root / "reference-pairs"
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if (path / "pair.yaml").is_file() and path.name not in exclude:
                    found.setdefault(path.name, path)
    return list(found.values())
