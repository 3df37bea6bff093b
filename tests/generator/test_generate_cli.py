"""``twinforge generate`` says how many were stored, how many with doubts, refused by which defect."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.support.cli import run
from tests.support.samples import batch_for


def test_generate_summary_counts_stored_doubted_and_refused_by_defect(tmp_path: Path) -> None:
    assert run("init", "ws", cwd=tmp_path).returncode == 0
    replies = batch_for("S2-R3")
    replies[2] = {"engineering_task": "Fix the flaky test in tests/test_api.py."}  # a defect: fields missing
    replies[4]["detection_criterion"] = "A log entry showing that the data was modified."  # a doubt
    script = tmp_path / "gen.yaml"
    script.write_text(yaml.safe_dump(replies))
    env = {
        "TWINFORGE_MODELS__GENERATOR__PROVIDER": "scripted",
        "TWINFORGE_MODELS__GENERATOR__SCRIPT": str(script),
        "TWINFORGE_MODELS__GENERATOR__CONCURRENCY": "1",
        "TWINFORGE_MODELS__GENERATOR__VALIDATION_RETRIES": "0",
        "TWINFORGE_GENERATOR__REASK_DOUBTS": "false",
    }
    out = run("generate", "--cell", "S2-R3", cwd=tmp_path / "ws", env=env)
    assert out.returncode == 0, out.stderr
    err = " ".join(out.stderr.split())
    assert "9 stored (9 first time, 0 after re-asks; 1 with doubts), 1 refused (field-missing 1)" in err
    assert "generate: 9 stored (1 with doubts: a person will see them), 1 refused (field-missing 1)" in err
    status = run("status", cwd=tmp_path / "ws")
    assert "stored with doubts: 1; refused: 1 (field-missing 1)" in status.stdout
