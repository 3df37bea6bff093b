"""Storing the replies of batches a killed process never stored (docs/stage1.md, "Nothing proposed is lost").

A batch commits its blueprints at its end; its replies are journaled as they arrive
(:mod:`twinforge.generator.journal`). At the start of the next ``generate``, each journal that
never recorded its end is read: if the batch's blueprints are already in the workspace (killed
after the commit) the journal is closed; otherwise each slot's last reply is judged as the batch
would have judged it and stored, as a blueprint with its doubts or refused with its findings, in
one commit per batch.
"""

from __future__ import annotations

from collections import Counter

from twinforge.blueprints import BlueprintStore, doubts
from twinforge.generator.journal import ReplyJournal, open_journals, read_journal
from twinforge.generator.outcome import BatchState, Filled, Refused, refused_line, to_records
from twinforge.generator.request import BatchRequest, SourcesInfo
from twinforge.generator.slotchecks import SlotJudge
from twinforge.generator.slots import Slot, SlotPlan
from twinforge.generator.sources import Incident


def recover_replies(store: BlueprintStore) -> list[str]:
    """Store the last reply of every slot of every batch whose journal never recorded its end.

    Returns:
        One line per journal handled, saying what was stored.

    Raises:
        WorkspaceError: The repository cannot take the commit (the journal stays open for the next run).
    """
    lines = []
    for path in open_journals(store.workspace):
        header, replies, _done = read_journal(path)
        journal = ReplyJournal(path)
        batch = str(header.get("batch") or path.stem)
        stored = {r.provenance.batch for r in store.records()} | {r.provenance.batch for r in store.refused()}
        if not header or not replies or batch in stored:
            journal.close(None)
            continue
        request = BatchRequest(
            cell=str(header["cell"]),
            plan=SlotPlan([]),
            examples=[],
            sources=SourcesInfo(str(header.get("sources", "")), str(header.get("sources_digest", ""))),
            threshold=float(header.get("threshold", 80.0)),
            batch_id=batch,
            turns=int(header.get("turns", 1)),
        )
        state = BatchState(request, store)
        calls = Counter(int(line["slot"]) for line in replies)
        last = {int(line["slot"]): line for line in replies}
        for number, line in sorted(last.items()):
            slot = Slot(number, Incident.model_validate(line["incident"]), str(line["setting"]))
            judge = SlotJudge(
                request.cell,
                slot,
                state.accepted,
                [],
                request.threshold,
                None,
                store.taxonomy,
                reask_doubts=False,
                lock=state.lock,
                turns=request.turns,
            )
            checked = judge.judge_reply(str(line["raw"]))
            if checked.blueprint is not None and not checked.defects:
                state.accepted.append((f"slot {number}", checked.blueprint))
                state.filled.append(
                    Filled(slot, checked.blueprint, calls[number], doubts(checked.findings), line["raw"])
                )
            else:
                state.refused.append(Refused(slot, checked, calls[number], str(line["raw"])))
        records, refused = to_records(
            str(header.get("model", "unknown")), str(header.get("prompt", "unknown")), store, request, state
        )
        report = state.report
        message = (
            f"generate: batch {batch} recovered from its replies journal, {len(records)} blueprints for "
            f"{request.cell} ({len(report.with_doubts)} with doubts), {refused_line(len(refused), report.refused_by)}"
        )
        commit = store.save(records, message, refused)
        journal.close(commit)
        lines.append(message.removeprefix("generate: "))
    return lines
