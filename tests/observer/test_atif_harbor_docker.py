"""The ATIF trajectories twinforge writes validate with Harbor's own models (harbor 0.26, in its tools container).

Every recorded run of the five harnesses (tests/data/harness-runs) is written as ATIF and read by
``harbor.models.trajectories.Trajectory``, which forbids unknown fields and checks step ids and
call links, as ours do.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.paths import DATA
from twinforge.exporter.harbor_tools import ensure_image, python
from twinforge.observer.trajectory.run import load_run

pytestmark = [pytest.mark.docker, pytest.mark.slow]

VALIDATE = """
import json
from pathlib import Path
from harbor.models.trajectories import Trajectory
for path in sorted(Path(".").glob("*.json")):
    trajectory = Trajectory.model_validate_json(path.read_text())
    calls = sum(len(s.tool_calls or []) for s in trajectory.steps)
    print(json.dumps({"file": path.name, "steps": len(trajectory.steps), "calls": calls}))
"""


def test_harbor_reads_every_recorded_run(tmp_path: Path) -> None:
    expected = {}
    for folder in sorted((DATA / "harness-runs").glob("*/*")):
        document = load_run(folder)
        name = f"{folder.parent.name}--{folder.name}.json"
        (tmp_path / name).write_text(document.model_dump_json(exclude_none=True))
        expected[name] = (len(document.steps), sum(len(s.tool_calls or []) for s in document.steps))
    done = python(ensure_image(print), tmp_path, VALIDATE)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = {row["file"]: (row["steps"], row["calls"]) for row in map(json.loads, done.stdout.splitlines())}
    assert seen == expected and len(seen) == 45
