"""Archetype mode for one blueprint: choose the archetype, then rounds of fill -> render -> gate."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from twinforge.core.atomic import atomic_write_text
from twinforge.core.llm import ChatModel, Usage
from twinforge.core.prompts import Prompt
from twinforge.implementer.archetypes.catalog import choose, load_archetypes
from twinforge.implementer.archetypes.fill import FillResult, fill_round, static_report
from twinforge.implementer.archetypes.render import render_pair
from twinforge.implementer.archetypes.spec import Archetype
from twinforge.implementer.exceptions import NoArchetype
from twinforge.implementer.guides import implementer_dir
from twinforge.implementer.hints import failing_text
from twinforge.implementer.job import Attempt, Job, failed_names, failure_reason
from twinforge.implementer.loop import gate_loop
from twinforge.implementer.record import RoundRecord


def _cached(job: Job, archetype: Archetype, model: str) -> dict[str, object] | None:
    """Slots of an earlier, interrupted run of the same model whose render passed the static gate (resumption).

    Slots another model filled are never taken as this model's work (docs/implementer.md).
    """
    path = job.run_dir / "slots.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("archetype") != archetype.ref or not isinstance(data.get("slots"), dict):
        return None
    if data.get("model") != model:
        return None
    slots: dict[str, object] = data["slots"]
    return slots


def _resume(job: Job, archetype: Archetype, chat: ChatModel) -> FillResult | None:
    slots = _cached(job, archetype, chat.name)
    if slots is None:
        return None
    try:
        value = archetype.slot_model.model_validate(slots)
    except ValueError:
        return None
    bp = job.record.blueprint
    render_pair(
        archetype,
        value,
        pair_root=job.staged,
        blueprint_id=job.blueprint_id,
        blueprint=bp,
        model=chat.name,
        turns=2 if job.record.follow_ups else 1,
    )
    result = FillResult(slots=value, checks=static_report(job.staged))
    return result if result.passed else None


def run_archetype(job: Job, chat: ChatModel, folder: Path | None = None) -> Attempt:
    """Implement ``job``'s blueprint in archetype mode.

    Each round: fill the slots (schema re-asks, then static-gate re-asks), and when the render
    passes the static gate, run the whole gate; a failure starts the next round with its report.

    Args:
        job: The blueprint and its budgets.
        chat: The implementer model.
        folder: Prompt folder (default ``guidelines/implementer``).

    Returns:
        The attempt; ``reason`` says "needs agent mode: ..." when no archetype fits.
    """
    bp = job.record.blueprint
    if job.checked.exists():  # an agent-mode snapshot of an earlier attempt is not this pair
        shutil.rmtree(job.checked)
    try:
        archetype = choose(job.blueprint_id, bp, load_archetypes(job.workspace_root))
    except NoArchetype as exc:
        return Attempt(False, f"needs agent mode: {exc.reason}", "archetype:none", chat.name)
    prompt = Prompt("slots", folder or implementer_dir())
    risk_name = next((r.name for r in job.taxonomy.risks if r.id == bp.risk), bp.risk)
    attempt = Attempt(False, "", archetype.ref, chat.name, prompt.version)
    feedback: str | None = None
    for n in range(1, job.rounds + 1):
        if job.time_left() <= 0:
            attempt.reason = f"wall-clock budget used up before round {n}; last: {attempt.reason}"
            break
        started = time.monotonic()
        job.say(f"round {n}: filling the slots of {archetype.spec.name}")
        filled = _resume(job, archetype, chat) if n == 1 else None
        if filled is None:
            filled = fill_round(
                chat,
                prompt,
                archetype,
                blueprint_id=job.blueprint_id,
                blueprint=bp,
                risk_name=risk_name,
                pair_root=job.staged,
                reasks=job.settings.slot_reasks,
                retries=job.model.validation_retries,
                feedback=feedback,
                turns=2 if job.record.follow_ups else 1,
            )
        round_ = RoundRecord(
            n=n,
            usage=Usage.of(filled.completions) + Usage(calls=filled.failed_calls),
            slot_attempts=filled.attempts,
        )
        checks = filled.checks
        if filled.passed and filled.slots is not None:
            atomic_write_text(
                job.run_dir / "slots.json",
                json.dumps({"archetype": archetype.ref, "model": chat.name, "slots": filled.slots.model_dump()}),
            )
            job.say(f"round {n}: whole gate")
            checks = job.gate(job.staged).checks
        elif not checks:
            errors = filled.attempts[-1].errors if filled.attempts else []
            attempt.reason = "the slot fill never validated: " + "; ".join(errors[:3])
        round_.failed_checks = failed_names(checks) if checks else ["slot fill"]
        round_.seconds = round(time.monotonic() - started, 2)
        attempt.rounds.append(round_)
        attempt.gate = checks
        atomic_write_text(job.run_dir / f"gate-round-{n}.txt", failing_text(checks, "agent") + "\n")
        if checks and all(c.passed for c in checks):
            attempt.passed, attempt.reason = True, failure_reason(checks)
            break
        if checks:
            attempt.reason = failure_reason(checks)
            feedback = (
                "The last repository built from your values failed the validation gate:\n"
                + failing_text(checks, "slots")
                + "\nChoose values that avoid these failures."
            )
    attempt.findings = [f.model_dump(mode="json") for f in gate_loop([r.failed_checks for r in attempt.rounds])]
    return attempt
