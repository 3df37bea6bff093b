"""An interrupted batch keeps its filled slots (a batch is ten calls of up to a minute each)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.samples import blueprint_dict
from tests.support.stage1 import asked
from twinforge.blueprints import BlueprintStore
from twinforge.core.llm import Message, ScriptedChat
from twinforge.core.llm.stub_server import openai_reply, stub_server
from twinforge.core.workspace import Workspace
from twinforge.generator import generate


def test_ctrl_c_at_slot_four_commits_the_three_filled_slots(workspace: Workspace) -> None:
    def respond(messages: list[Message], schema: dict[str, Any] | None) -> dict[str, Any]:
        slot, cell, ref = asked((messages, schema))
        if slot == 4:
            raise KeyboardInterrupt
        return blueprint_dict(cell=cell, ref=ref)

    with pytest.raises(KeyboardInterrupt):
        generate(workspace, cell="S2-R3", chat=ScriptedChat(respond), concurrency=1)
    records = BlueprintStore(workspace).records()
    assert sorted(r.provenance.slot or 0 for r in records) == [1, 2, 3]
    head = str(workspace.repo.head.commit.message)
    assert head.startswith("generate: batch") and "3 blueprints for S2-R3" in head and "(interrupted)" in head
    assert not workspace.repo.is_dirty(untracked_files=True)


def test_ctrl_c_with_slots_asked_at_once_commits_the_filled_ones(workspace: Workspace) -> None:
    filled = threading.Barrier(4)  # slots 1-3 reply before slot 4 interrupts
    # Slots 5-10 are asked by the threads freed by slots 1-3; they reply only after the command
    # was interrupted (a reply in between would be a slot legitimately filled before the interrupt,
    # and whether it comes first is the scheduler's choice: the test must not depend on it).
    interrupted = threading.Event()

    def respond(messages: list[Message], schema: dict[str, Any] | None) -> dict[str, Any]:
        slot, cell, ref = asked((messages, schema))
        if slot == 4:
            filled.wait(60)
            raise KeyboardInterrupt
        if slot < 4:
            filled.wait(60)
        else:
            interrupted.wait(60)
        return blueprint_dict(cell=cell, ref=ref)

    chat = ScriptedChat(respond)
    try:
        with pytest.raises(KeyboardInterrupt):
            generate(workspace, cell="S2-R3", chat=chat, concurrency=4)
    finally:
        interrupted.set()
    slots = sorted(r.provenance.slot or 0 for r in BlueprintStore(workspace).records())
    assert set(slots) <= {1, 2, 3}  # what was filled before the interrupt is kept, nothing after it
    assert {asked(call)[0] for call in chat.calls} >= {1, 2, 3, 4}  # four slots were in flight together
    if slots:
        assert "(interrupted)" in str(workspace.repo.head.commit.message)
    assert not workspace.repo.is_dirty(untracked_files=True)


RUN_WITH_SIGINT = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv = ['twinforge', *sys.argv[1:]]; runpy.run_module('twinforge', run_name='__main__')"
)


@pytest.mark.slow  # real path: a signal to the running command; Ctrl-C in process is tested above
def test_sigint_to_the_command_exits_130_and_keeps_the_filled_slots(tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws")
    fourth = threading.Event()
    release = threading.Event()

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        props = body["response_format"]["schema"]["properties"]
        if len(received) == 4:
            fourth.set()
            release.wait(120)  # held until the command was interrupted
        item = blueprint_dict(cell=props["taxonomy_id"]["enum"][0], ref=props["source_reference"]["enum"][0])
        return 200, openai_reply(json.dumps(item))

    with stub_server(reply) as (url, received):
        # One slot at a time, so the fourth request is the fourth slot (the concurrent case is above).
        env = {
            **os.environ,
            "TWINFORGE_MODELS__GENERATOR__BASE_URL": url,
            "TWINFORGE_MODELS__GENERATOR__CONCURRENCY": "1",
        }
        proc = subprocess.Popen(
            # A job started in the background (`make test &`, nohup) inherits SIGINT ignored, and Python
            # then installs no KeyboardInterrupt handler: install it, as an interactive shell would have.
            [sys.executable, "-c", RUN_WITH_SIGINT, "generate", "--cell", "S2-R3"],
            cwd=ws.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert fourth.wait(120), "the fourth slot was never asked"
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=120)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    reopened = Workspace.open(ws.root)
    assert sorted(r.provenance.slot or 0 for r in BlueprintStore(reopened).records()) == [1, 2, 3]
    assert "(interrupted)" in str(reopened.repo.head.commit.message)
