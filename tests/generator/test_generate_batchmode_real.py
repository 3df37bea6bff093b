"""Real path: one call per batch (docs/stage1.md, "One call per batch") against the real llama.cpp server.

gemma3-270m (the fast smoke-test model) is weak and its replies are cut at a small token budget, so
this checks structure and accounting, never content: one call for the generator's batch, one for the
reviewer's, every slot accounted for, the batch reply journaled, nothing left uncommitted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.samples import blueprint_dict
from twinforge.blueprints import Blueprint, BlueprintRecord, BlueprintStore, Provenance, Status, utcnow
from twinforge.core.localmodel import ServerInfo
from twinforge.core.workspace import Workspace
from twinforge.generator import generate
from twinforge.generator.journal import read_journal
from twinforge.reviewer import review_pending

# One call per batch is the mode for capable hosted models; the embedded model runs in slot mode
# (tests/core/test_real_model.py), so this case of the mode matrix runs with --matrix.
pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.matrix]


def test_one_call_proposes_a_batch_and_one_call_scores_two_blueprints(gemma: ServerInfo, tmp_path: Path) -> None:
    ws = Workspace.init(tmp_path / "ws", port=gemma.port, local_model="gemma3-270m")
    # A short reply budget keeps this test near a minute on 2 loaded cores: the reply is cut after a
    # blueprint or two, and with no re-asks the rest of the slots are accounted for as refused or failed.
    ws.config.models.generator.max_tokens = 500
    ws.config.models.generator.validation_retries = 0
    report = generate(ws, cell="S2-R3", mode="batch")
    (batch,) = report.batches
    print(
        f"real-model batch call: {len(batch.stored)} stored, {len(batch.refused)} refused, {len(batch.failures)} "
        f"failed, {batch.usage.prompt_tokens} prompt + {batch.usage.completion_tokens} completion tokens, "
        f"{batch.wall_seconds:.0f} s; notes: {batch.notes}"
    )
    assert batch.mode == "batch" and batch.usage.calls == 1 and len(batch.replies) == 1
    assert batch.usage.prompt_tokens > 1000 and batch.usage.completion_tokens > 0  # the server's own counts
    assert len(batch.stored) + len(batch.refused) + len(batch.failures) == 10  # every slot accounted for
    header, replies, done = read_journal(ws.root / ".twinforge/replies" / f"{batch.batch_id}.jsonl")
    assert header["cell"] == "S2-R3" and done
    assert {line["slot"] for line in replies} <= set(range(1, 11))
    store = BlueprintStore(ws)
    for record in store.records():
        assert record.provenance.prompt_version.startswith("generate-batch@") and record.provenance.attempt == 1
    assert not ws.repo.is_dirty(untracked_files=True)

    hand = [
        BlueprintRecord(
            id=store.new_id("S1-R3"),
            blueprint=Blueprint.model_validate(blueprint_dict(cell="S1-R3")),
            provenance=Provenance(
                batch="manual", model="human", prompt_version="none", sources="t", created_at=utcnow()
            ),
        )
        for _ in range(2)
    ]
    store.save(hand, "add two hand-written blueprints")
    ws.config.models.reviewer.max_tokens = 900
    ws.config.models.reviewer.validation_retries = 0
    reviews = review_pending(ws, ids=[r.id for r in hand], mode="batch")
    print("real-model batch review:", [(o.blueprint_id, o.total, o.status.value, o.error) for o in reviews.outcomes])
    assert reviews.mode == "batch" and reviews.usage.calls == 1 and len(reviews.outcomes) == 2
    for outcome in reviews.outcomes:
        record = store.load(outcome.blueprint_id)
        if outcome.error:
            assert record.status is Status.PROPOSED  # left for the next run, its reply kept
            assert list((ws.root / ".twinforge/failures").glob(f"review-{record.id}-*.json"))
        else:
            assert record.review is not None and record.review.prompt_version.startswith("review-batch@")
            assert all(1 <= s.score <= 5 for s in record.review.scores.values())
            assert record.status in (Status.KEPT, Status.NEEDS_REVIEW, Status.DISCARDED)
    assert not ws.repo.is_dirty(untracked_files=True)
