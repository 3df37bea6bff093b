"""A process killed between a model reply and the batch's commit loses no reply (docs/stage1.md).

Every reply is journaled under ``.twinforge/replies/`` before the batch reads it; the next
``generate`` stores the slots' last replies of a batch that never recorded its commit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.samples import blueprint_dict
from tests.support.stage1 import answering
from twinforge.blueprints import BlueprintStore
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.core.workspace import Workspace
from twinforge.generator import generate


@pytest.mark.slow  # real path: the command killed, then run again
def test_sigkill_between_reply_and_store_leaves_the_replies_on_disk_and_the_next_run_stores_them(
    tmp_path: Path,
) -> None:
    ws = Workspace.init(tmp_path / "ws")
    fourth = threading.Event()
    release = threading.Event()
    vague = "A log entry showing that the data was modified."

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        props = body["response_format"]["schema"]["properties"]
        if len(received) == 4:
            fourth.set()
            release.wait(120)  # held until the process was killed
        item = blueprint_dict(cell=props["taxonomy_id"]["enum"][0], ref=props["source_reference"]["enum"][0])
        if len(received) == 2:
            item["detection_criterion"] = vague  # one reply with a doubt: it is recovered with it
        if len(received) == 3:
            item = {"engineering_task": "x"}  # one reply with a defect: it is recovered refused
        return 200, openai_reply(json.dumps(item))

    with stub_server(reply) as (url, received):
        env = {
            **os.environ,
            "TWINFORGE_MODELS__GENERATOR__BASE_URL": url,
            "TWINFORGE_MODELS__GENERATOR__CONCURRENCY": "1",
            "TWINFORGE_MODELS__GENERATOR__VALIDATION_RETRIES": "0",
            "TWINFORGE_GENERATOR__REASK_DOUBTS": "false",
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "twinforge", "generate", "--cell", "S2-R3"],
            cwd=ws.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert fourth.wait(120), "the fourth slot was never asked"
            proc.kill()  # SIGKILL: no handler runs, the batch never reaches its commit
            proc.communicate(timeout=120)
        finally:
            release.set()
    reopened = Workspace.open(ws.root)
    assert BlueprintStore(reopened).records() == [] and reopened.repo.head.commit.message.startswith("init")
    (journal,) = (ws.root / ".twinforge" / "replies").glob("*.jsonl")
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    replies = [line for line in lines if "slot" in line]
    assert [line["slot"] for line in replies] == [1, 2, 3] and not any("done" in line for line in lines)
    assert json.loads(replies[2]["raw"]) == {"engineering_task": "x"}

    report = generate(reopened, cell="S2-R3", chat=answering())
    (line,) = report.recovered
    assert line.startswith(f"batch {journal.stem} recovered") and "2 blueprints" in line and "1 refused" in line
    store = BlueprintStore(reopened)
    recovered = sorted((r for r in store.records() if r.provenance.batch == journal.stem), key=lambda r: r.id)
    assert sorted(r.provenance.slot or 0 for r in recovered) == [1, 2]
    assert [r.provenance.slot for r in recovered if r.doubts] == [2]
    (refused,) = store.refused()
    assert refused.provenance.batch == journal.stem and refused.reply == '{"engineering_task": "x"}'
    assert "done" in journal.read_text().splitlines()[-1]  # closed: the next run does not store them again
    assert generate(reopened, cell="S2-R3", chat=answering()).recovered == []
