"""What the pages show and the JSON API returns: one typed model per page (docs/viewer.md, "JSON API").

The HTML templates render these models and ``/api/...`` returns them dumped in JSON mode, so a page
and its API answer never disagree. Text in them is as the agent, the model or a person wrote it;
the templates escape all of it.
"""

from twinforge.viewer.models.overview import Look, MetricsView, Overview, SectionView
from twinforge.viewer.models.pairs import (
    BlueprintView,
    CheatView,
    CheckView,
    Commit,
    DiffFile,
    FileEntry,
    GateView,
    PairItem,
    PairView,
    TurnView,
)
from twinforge.viewer.models.runs import (
    CallDetail,
    CallView,
    CommandView,
    InterventionView,
    RunItem,
    RunList,
    RunView,
    StepView,
    VerdictView,
)

__all__ = [
    "BlueprintView",
    "CallDetail",
    "CallView",
    "CheatView",
    "CheckView",
    "CommandView",
    "Commit",
    "DiffFile",
    "FileEntry",
    "GateView",
    "InterventionView",
    "Look",
    "MetricsView",
    "Overview",
    "PairItem",
    "PairView",
    "RunItem",
    "RunList",
    "RunView",
    "SectionView",
    "StepView",
    "TurnView",
    "VerdictView",
]
