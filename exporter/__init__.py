"""Export task pairs to other evaluation engines (a stage: it imports the domain packages only).

``twinforge export --format harbor`` writes each side of each pair as a Harbor task, with a dataset
manifest carrying the blueprint, taxonomy cell and calibration evidence (see docs/design.md).
"""

from twinforge.exporter.exceptions import ExportError, HarborToolsError
from twinforge.exporter.harbor import Export, export_harbor, resolve_pairs

__all__ = ["Export", "ExportError", "HarborToolsError", "export_harbor", "resolve_pairs"]
