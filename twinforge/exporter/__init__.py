"""Export task pairs to other evaluation engines (a stage: it imports the domain packages only).

``twinforge export --format harbor`` writes each side of each pair as a Harbor task, with a dataset
manifest carrying the blueprint, taxonomy cell and calibration evidence (see docs/design.md).

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.exporter.exceptions import ExportError, HarborToolsError
    from twinforge.exporter.harbor import Export, export_harbor, resolve_pairs

__all__ = ["Export", "ExportError", "HarborToolsError", "export_harbor", "resolve_pairs"]

lazy_exports(
    __name__,
    {
        "exceptions": ("ExportError", "HarborToolsError"),
        "harbor": ("Export", "export_harbor", "resolve_pairs"),
    },
)
