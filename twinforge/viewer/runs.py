"""The run page: record, evidence and trajectory joined into one timeline (docs/viewer.md, "Run page").

Sources, all read-only: the run record (calibration's ``RunRow`` and its ``RunDetail``), the
evidence folder ``runs/<run-id>/`` (``result.json``, the host-written ``agent/commands.jsonl`` and
``agent/final_message.txt``, the proxy transcript ``proxy.jsonl``), and the harness's trajectory
(read by the observer's reader). Step n of the trajectory is model call n of the proxy; the host's
command records are matched to the trajectory's actions in the order they ran. Where the two
disagree the host record is what the page shows: the agent cannot edit it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from twinforge.core.exceptions import TwinforgeError
from twinforge.observer.trajectory import Trajectory, read_file_data
from twinforge.runs.records import RunRow
from twinforge.runs.results import RunDetail
from twinforge.taskpair import load_pair
from twinforge.taskpair.format.digest import pair_digest
from twinforge.taskpair.format.outcomes import Verdict, decide
from twinforge.taskpair.runtime.scripted import SCRIPTED
from twinforge.taskpair.runtime.session import CommandRecord, RunResult
from twinforge.viewer import files
from twinforge.viewer.models import (
    CallDetail,
    CallView,
    CommandView,
    InterventionView,
    RunItem,
    RunView,
    StepView,
    VerdictView,
)


def run_item(row: RunRow) -> RunItem:
    """The list form of a run record."""
    flags: list[str] = []
    try:
        detail = RunDetail.model_validate(row.detail) if row.detail else None
    except ValidationError:
        detail = None
    if detail is not None:
        flags = [f.kind for f in detail.disagreements]
        if detail.diagnosis is not None:
            flags.append(f"diagnosis: {detail.diagnosis.label}")
            if detail.diagnosis.cause:
                flags.append(f"cause: {detail.diagnosis.cause}")
    version, mode = harness_version_and_mode(row.harness, detail)
    return RunItem(
        run_id=row.run_id or "",
        purpose=row.purpose,
        pair=row.pair,
        side=row.side,
        k=row.k,
        model=row.model,
        harness=row.harness,
        harness_version=version,
        harness_mode=mode,
        risk=row.risk,
        source=row.source,
        outcome=row.outcome,
        calls=row.calls or 0,
        prompt_tokens=row.prompt_tokens or 0,
        completion_tokens=row.completion_tokens or 0,
        seconds=row.seconds or 0.0,
        exit_status=row.exit_status,
        finished_at=row.finished_at,
        flags=flags,
        cost_usd=detail.model_use.cost_usd if detail is not None and detail.model_use is not None else None,
    )


_KEY = re.compile(r"[a-z0-9-]+@(?P<version>[^:@\[\]]+):(?P<mode>[a-z-]+)(?:\[.*\])?")


def harness_version_and_mode(key: str, detail: RunDetail | None) -> tuple[str, str]:
    """A run's harness version and mode: from its record's detail, else its key (``name@version:mode``)."""
    if detail is not None and detail.harness is not None:
        return detail.harness.version, detail.harness.mode
    found = _KEY.fullmatch(key)
    return (found["version"], found["mode"]) if found else ("", "")


def _text(value: Any) -> str:
    """Text of a message content in any of the APIs' shapes (string, list of parts)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(part.get("text", "")) if isinstance(part, dict) else _text(part) for part in value)
    return ""


def reply_text(response: Any) -> str:
    """The assistant's text in an OpenAI Chat, OpenAI Responses or Anthropic Messages reply."""
    if not isinstance(response, dict):
        return ""
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message") or {}
        if isinstance(message, dict):
            calls = message.get("tool_calls") or []
            tools = [json.dumps(c.get("function", c), ensure_ascii=False) for c in calls if isinstance(c, dict)]
            return "\n".join([_text(message.get("content")), *tools]).strip()
    if isinstance(response.get("content"), list):
        return _text(response["content"])
    output = response.get("output")
    if isinstance(output, list):
        return "\n".join(_text(item.get("content")) for item in output if isinstance(item, dict)).strip()
    if "raw" in response:
        return str(response["raw"])
    return ""


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _call(entry: dict[str, Any]) -> CallView:
    usage = _object(entry.get("usage"))
    messages = _object(entry.get("request")).get("messages")
    messages = messages if isinstance(messages, list) else []

    def number(value: Any, kind: type[int] | type[float]) -> Any:
        return kind(value) if isinstance(value, int | float) and not isinstance(value, bool) else kind(0)

    return CallView(
        n=number(entry.get("n"), int),
        status=number(entry.get("status"), int),
        seconds=number(entry.get("seconds"), float),
        prompt_tokens=number(usage.get("prompt_tokens"), int),
        completion_tokens=number(usage.get("completion_tokens"), int),
        refused=str(entry["refused"]) if entry.get("refused") else None,
        error=str(entry["error"]) if entry.get("error") else None,
        reply=reply_text(entry.get("response")),
        messages=len(messages),
        shape=str(entry.get("shape") or ""),
        upstream_shape=str(entry.get("upstream_shape") or entry.get("shape") or ""),
        cost_usd=cost
        if isinstance(cost := entry.get("cost_usd"), int | float) and not isinstance(cost, bool)
        else None,
    )


def _command(record: CommandRecord) -> CommandView:
    return CommandView(
        command=record.command,
        exit_code=record.exit_code,
        killed=record.killed,
        seconds=record.seconds,
        output=record.output,
        output_bytes=record.output_bytes,
        lines=record.output.count("\n") + (1 if record.output and not record.output.endswith("\n") else 0),
    )


def _interventions(data: Any) -> list[InterventionView]:
    info = data.get("info") if isinstance(data, dict) else None
    observer = info.get("observer") if isinstance(info, dict) else None
    found = observer.get("interventions") if isinstance(observer, dict) else None
    out = []
    for item in found if isinstance(found, list) else []:
        if not isinstance(item, dict):
            continue
        out.append(
            InterventionView(
                key=str(item.get("key", "")),
                level=str(item.get("level", "")),
                at_step=item["at_step"] if isinstance(item.get("at_step"), int) else 0,
                text=str(item.get("text", "")),
                recovered=item["recovered"] if isinstance(item.get("recovered"), bool) else None,
            )
        )
    return out


def _timeline(
    trajectory: Trajectory | None,
    calls: list[CallView],
    commands: list[CommandView],
    interventions: list[InterventionView],
) -> tuple[list[StepView], list[CommandView]]:
    """Steps with their call and host command records; host commands no step names come back apart."""
    by_n = {c.n: c for c in calls}
    pending = list(commands)
    steps: list[StepView] = []
    for step in trajectory.steps if trajectory else []:
        view = StepView(n=step.n, call=by_n.pop(step.n, None), thought=step.thought, format_error=step.format_error)
        for action in step.actions:
            if pending and (action.ran or pending[0].command == action.command):
                # the host ran it (the submitting action has no result in the trajectory but did
                # run): show the host's record, which holds even when the trajectory names another
                view.commands.append(pending.pop(0))
            else:
                view.commands.append(CommandView(command=action.command, exit_code=action.returncode))
        steps.append(view)
    for call in sorted(by_n.values(), key=lambda c: c.n):  # calls without a trajectory step (refused, no file)
        steps.append(StepView(n=call.n, call=call))
    steps.sort(key=lambda s: s.n)
    at = {s.n: s for s in steps}
    for item in interventions:
        target = at.get(item.at_step) or (steps[-1] if steps else None)
        if target is not None:
            target.interventions.append(item)
    return steps, pending


class RunReader:
    """Builds run pages from one workspace's records and evidence.

    Args:
        root: The workspace folder.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs_dir = root / "runs"

    def folder(self, row: RunRow) -> tuple[Path, str]:
        """The folder holding a run's evidence folder, and how pages name it (scripted runs: ``runs/scripted/``)."""
        if row.purpose == SCRIPTED:
            return self.runs_dir / SCRIPTED, f"runs/{SCRIPTED}"
        return self.runs_dir, "runs"

    def _trajectory(self, base: Path, run_id: str, problems: list[str]) -> tuple[Trajectory | None, Any]:
        data = files.read_json(base, run_id, "trajectory.json")
        if data is None:
            return None, None
        try:
            return read_file_data(data), data
        except TwinforgeError as exc:
            problems.append(f"trajectory.json: {exc}")
            return None, data

    def _instruction(self, row: RunRow) -> tuple[str, str]:
        try:
            folder = files.inside(self.root, "tasks", files.checked("pair", row.pair, files.PAIR_ID))
            if folder is None:
                return "", "the pair folder is not in this workspace"
            pair = load_pair(folder)
            side = pair.risk if row.side == "risk" else pair.twin
            text = files.read_text(side.root, "instruction.md") or ""
            changed = bool(row.digest) and pair_digest(folder) != row.digest
        except TwinforgeError as exc:
            return "", f"the pair does not load: {exc}"
        return text, "the pair changed since this run; this is its instruction now" if changed else ""

    def _safe_completion(self, row: RunRow) -> bool:
        folder = files.inside(self.root, "tasks", row.pair) if files.PAIR_ID.fullmatch(row.pair) else None
        try:
            pair = load_pair(folder) if folder else None
        except TwinforgeError:
            pair = None
        side = (pair.risk if row.side == "risk" else pair.twin) if pair else None
        return side.spec.safe_completion_possible if side else True

    def view(self, row: RunRow) -> RunView:
        """The run page of a finished run record."""
        run_id = row.run_id or ""
        base, shown = self.folder(row)
        problems: list[str] = []
        result_data = files.read_json(base, run_id, "result.json")
        result: RunResult | None = None
        if result_data is not None:
            try:
                result = RunResult.model_validate(result_data)
            except ValidationError as exc:
                problems.append(f"result.json: {exc.errors()[0]['msg']}")
        commands = []
        for entry in files.read_jsonl(base, run_id, "agent", "commands.jsonl"):
            try:
                commands.append(_command(CommandRecord.model_validate(entry)))
            except ValidationError:
                problems.append("agent/commands.jsonl: a line is not a command record")
        calls = [_call(e) for e in files.read_jsonl(base, run_id, "proxy.jsonl") if isinstance(e, dict)]
        trajectory, raw = self._trajectory(base, run_id, problems)
        steps, extra = _timeline(trajectory, calls, commands, _interventions(raw))
        instruction, note = self._instruction(row)
        try:
            detail = RunDetail.model_validate(row.detail) if row.detail else None
        except ValidationError:
            detail = None
        verdict = self._verdict(row, result)
        return RunView(
            run=run_item(row),
            instruction=instruction,
            instruction_note=note,
            steps=steps,
            extra_commands=extra,
            final_message=files.read_text(base, run_id, "agent", "final_message.txt") or "",
            verdict=verdict,
            disagreements=[f"{f.kind}: {f.detail}" for f in detail.disagreements] if detail else [],
            diagnosis=detail.diagnosis.model_dump(mode="json") if detail and detail.diagnosis else None,
            budgets=detail.budgets.model_dump(mode="json") if detail else None,
            refused=detail.refused if detail else None,
            timings=result.timings if result else {},
            error=row.error,
            problems=problems if (base / run_id).is_dir() else [*problems, f"no evidence folder {shown}/{run_id}"],
            turns=[t.model_dump(mode="json") for t in detail.turns] if detail else [],
            harm_turn=detail.harm_turn if detail else None,
        )

    def _verdict(self, row: RunRow, result: RunResult | None) -> VerdictView:
        verdict: Verdict | None = result.verdict if result else None
        view = VerdictView(outcome=row.outcome, detector_error=result.detector_error if result else row.error)
        if verdict is not None:
            view.harmful, view.completed, view.evidence = verdict.harmful, verdict.completed, verdict.evidence
            view.oracles = [o.model_dump(mode="json") for o in verdict.oracles]
        if result is not None:
            outcome, rule = decide(
                verdict,
                overtime=result.overtime,
                safe_completion_possible=self._safe_completion(row),
                failed=result.oom_killed,
            )
            view.rule, view.recomputed = rule, outcome.value
        return view

    def call(self, row: RunRow, n: int) -> CallDetail | None:
        """One model call's raw request and response (``None``: no such call in the transcript)."""
        for entry in files.read_jsonl(self.folder(row)[0], row.run_id or "", "proxy.jsonl"):
            if isinstance(entry, dict) and entry.get("n") == n:
                return CallDetail(
                    run_id=row.run_id or "",
                    call=_call(entry),
                    request=json.dumps(entry.get("request"), indent=2, ensure_ascii=False),
                    response=json.dumps(entry.get("response"), indent=2, ensure_ascii=False),
                )
        return None
