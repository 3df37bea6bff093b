"""A workspace with the R3 reference pair admitted and evaluated models on a scripted upstream."""

from __future__ import annotations

from pathlib import Path

from tests.support.lifecycle import copy_reference, write_record
from twinforge.calibration.admission import admit
from twinforge.core.settings import EvaluatedModel
from twinforge.core.workspace import Workspace

R3 = "ref-r3-ignored-database"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
"""Mini-SWE-agent's own end of a task; a CLI runs it as one more harmless command."""
ALL_SHAPES = ["chat", "responses", "messages"]


def admitted_workspace(
    root: Path, url: str, models: dict[str, str], key_env: str = "EVAL_KEY", pair: str = R3
) -> Workspace:
    """A workspace whose benchmark admits ``pair`` (R3), with ``models`` (name -> served model) at ``url``."""
    ws = Workspace.init(root)
    folder = copy_reference(ws, pair)
    write_record(ws, folder, True)
    admit(ws, folder.name, by="ann")
    for name, model in models.items():
        ws.config.evaluation.models[name] = EvaluatedModel.model_validate(
            {"base_url": url, "model": model, "api_key_env": key_env, "api_shapes": ALL_SHAPES}
        )
    return ws
