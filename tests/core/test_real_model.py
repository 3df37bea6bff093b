"""Real path: Stage I against a real llama.cpp server (gemma3-270m, the fast smoke-test model).

gemma3-270m is weak: it fills the schema with junk and can run out of tokens mid-batch (docs/stage1.md), so
these tests check structure and error handling, never content.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.samples import blueprint_dict
from twinforge.blueprints import Blueprint, BlueprintRecord, BlueprintStore, Provenance, Status, utcnow
from twinforge.core.localmodel import ServerInfo, healthy
from twinforge.core.workspace import Workspace
from twinforge.generator import generate
from twinforge.reviewer import review_pending

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_server_is_loopback_and_serves(gemma: ServerInfo) -> None:
    assert gemma.host == "127.0.0.1"
    assert healthy(gemma.base_url)
    assert Path(gemma.model_path).read_bytes()[:4] == b"GGUF"


def test_generate_and_review_store_only_valid_blueprints(gemma: ServerInfo, tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws", port=gemma.port, local_model="gemma3-270m")
    # One call per slot: ten calls of at most 160 tokens keep this test short on 2 cores (the small
    # model's replies are checked for structure and error handling only; a cut reply is a failed slot).
    ws.config.models.generator.max_tokens = 160
    ws.config.models.generator.validation_retries = 0
    ws.config.models.reviewer.max_tokens = 450
    ws.config.models.reviewer.validation_retries = 1
    report = generate(ws, cell="S2-R3")
    (batch,) = report.batches
    print(
        f"real-model batch: {len(batch.stored)} stored, {len(batch.refused)} refused, "
        f"{len(batch.failures)} failed, {batch.usage.calls} calls"
    )
    # Every slot ends one way: stored (perhaps with doubts), stored refused (a defect), or failed.
    assert len(batch.stored) + len(batch.refused) + len(batch.failures) == 10
    assert batch.usage.calls == 10  # one call per slot, no re-ask
    assert len(batch.replies) == batch.usage.calls  # every raw reply kept, stored or failed
    if batch.stored:
        assert batch.usage.completion_tokens > 0
    for failure in batch.failures:
        assert failure.errors, "every failed slot says why"
    if batch.failures:
        saved = json.loads((ws.root / str(batch.failures_file)).read_text())
        assert len(saved["failures"]) == len(batch.failures)
    store = BlueprintStore(ws)
    scanned = store.scan()
    assert [item.error for item in scanned if item.error] == []
    assert len(scanned) == len(batch.stored)
    assert sorted(record.id for record in store.refused()) == sorted(batch.refused)
    for item in scanned:
        assert item.record is not None
        assert item.record.blueprint.taxonomy_id == "S2-R3"
        assert item.record.provenance.model == "openai-compatible:local"
    assert not ws.repo.is_dirty(untracked_files=True)

    # Review one stored blueprint (if any) and one hand-written one, so the reviewer always runs on
    # the real server even when the weak model stored nothing.
    handwritten = BlueprintRecord(
        id=store.new_id("S1-R3"),
        blueprint=Blueprint.model_validate(blueprint_dict(cell="S1-R3")),
        provenance=Provenance(
            batch="manual", model="human", prompt_version="none", sources="test", created_at=utcnow()
        ),
    )
    store.save([handwritten], "add a hand-written blueprint")
    review = review_pending(ws, ids=[*batch.stored[:1], handwritten.id])
    assert len(review.outcomes) == len(batch.stored[:1]) + 1
    print("real-model outcomes:", [(o.blueprint_id, o.total, o.status.value, o.error) for o in review.outcomes])
    for outcome in review.outcomes:
        record = store.load(outcome.blueprint_id)
        if outcome.error:
            assert record.status is Status.PROPOSED
            assert list((ws.root / ".twinforge/failures").glob(f"review-{record.id}-*.json"))
        else:
            assert record.review is not None
            assert record.review.total == sum(s.score for s in record.review.scores.values())
            assert all(1 <= s.score <= 5 for s in record.review.scores.values())
            assert record.status in (Status.KEPT, Status.NEEDS_REVIEW, Status.DISCARDED)
    assert not ws.repo.is_dirty(untracked_files=True)
