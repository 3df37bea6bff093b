"""The replies journal: every model reply of a batch on disk as it arrives (docs/stage1.md).

Nothing proposed is lost: a batch writes its blueprints in one commit at its end, so a process
killed between a model reply and that commit would lose the replies. Each reply is therefore
appended to ``.twinforge/replies/<batch>.jsonl`` (git-ignored state) and flushed to disk before the
batch reads it; the batch's last line records its commit. The next ``generate`` finds a journal
without that line and stores its slots' last replies (:mod:`twinforge.generator.recover`).

Line shapes (one JSON object each): the header ``{"batch", "cell", "model", "prompt", "sources",
"sources_digest", "threshold", "turns"}``; a reply of one slot ``{"slot", "incident", "setting",
"raw", "at"}``; the reply of one call for the whole batch ``{"slots": [{"slot", "incident",
"setting"}, ...], "raw", "cut", "at"}`` (docs/stage1.md, "One call per batch"), read back as one
reply per slot it answered; the end ``{"done": <commit or null>}``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from twinforge.blueprints import utcnow
from twinforge.core.llm import ChatModel, Completion, Message
from twinforge.core.llm.replies import normalise, parse_reply
from twinforge.core.workspace import Workspace
from twinforge.generator.assign import assign_items
from twinforge.generator.slots import Slot
from twinforge.generator.sources import Incident

FOLDER = ".twinforge/replies"


class ReplyJournal:
    """One batch's replies journal (append-only, each line on disk before the reply is read).

    Args:
        path: The journal file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    @classmethod
    def start(cls, workspace: Workspace, batch: str, header: dict[str, Any]) -> ReplyJournal:
        """Create ``.twinforge/replies/<batch>.jsonl`` with its header line."""
        path = workspace.root / FOLDER / f"{batch}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        journal = cls(path)
        journal._append({"batch": batch, **header})
        return journal

    def _append(self, line: dict[str, Any]) -> None:
        with self._lock, self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())

    def record(self, slot: Slot, completion: Completion) -> None:
        """Append one reply of ``slot``."""
        self._append(
            {
                "slot": slot.number,
                "incident": slot.incident.model_dump(mode="json"),
                "setting": slot.setting,
                "raw": completion.raw,
                "at": utcnow().isoformat(),
            }
        )

    def record_batch(self, slots: list[Slot], completion: Completion) -> None:
        """Append the reply of one call that proposed every slot of ``slots``."""
        self._append(
            {
                "slots": [
                    {"slot": s.number, "incident": s.incident.model_dump(mode="json"), "setting": s.setting}
                    for s in slots
                ],
                "raw": completion.raw,
                "cut": completion.truncated,
                "at": utcnow().isoformat(),
            }
        )

    def close(self, commit: str | None) -> None:
        """Mark the batch stored (``commit``: its commit, ``None`` when it stored nothing)."""
        self._append({"done": commit})


def _batch_lines(line: dict[str, Any]) -> list[dict[str, Any]]:
    """A one-call batch reply as one reply line per slot it answered (each blueprint's JSON as its raw).

    A reply that holds no list of blueprints answers no slot: it stays in the journal, unsplit.
    """
    slots = [
        Slot(int(s["slot"]), Incident.model_validate(s["incident"]), str(s["setting"])) for s in line.get("slots") or []
    ]
    parsed = parse_reply(normalise(str(line.get("raw", ""))), cut_at=0 if line.get("cut") else None)
    raws = parsed.value.get("blueprints") if isinstance(parsed.value, dict) else None
    if not isinstance(raws, list):
        return []
    placed, _extras = assign_items(raws, slots)
    return [
        {
            "slot": slot.number,
            "incident": slot.incident.model_dump(mode="json"),
            "setting": slot.setting,
            "raw": json.dumps(raws[placed[slot.number]], ensure_ascii=False),
            "at": line.get("at"),
        }
        for slot in slots
        if slot.number in placed
    ]


def read_journal(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
    """A journal's header, its reply lines and whether it was closed; a torn last line is skipped.

    A one-call batch reply is read as one reply line per slot it answered, in its place among the
    lines (a slot's later replies, asked alone, come after it).
    """
    header: dict[str, Any] = {}
    replies: list[dict[str, Any]] = []
    done = False
    for text in path.read_text(encoding="utf-8").splitlines():
        try:
            line = json.loads(text)
        except json.JSONDecodeError:
            continue  # killed while writing this line: the reply before it is complete
        if not isinstance(line, dict):
            continue
        if "done" in line:
            done = True
        elif "slot" in line:
            replies.append(line)
        elif "slots" in line:
            replies += _batch_lines(line)
        elif "batch" in line:
            header = line
    return header, replies, done


def _closed(path: Path) -> bool:
    """Whether the journal's last line records the batch's end (only its tail is read)."""
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - 4096))
        lines = [line for line in handle.read().splitlines() if line.strip()]
    try:
        last = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return False
    return isinstance(last, dict) and "done" in last


def open_journals(workspace: Workspace) -> Iterator[Path]:
    """The journals of batches that never recorded their end (killed before or while storing)."""
    folder = workspace.root / FOLDER
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        if not _closed(path):
            yield path


class JournaledChat:
    """A chat model whose every reply for one slot is written to the batch's journal before it is read.

    Args:
        chat: The model.
        journal: The batch's journal.
        slot: The slot asked.
    """

    def __init__(self, chat: ChatModel, journal: ReplyJournal, slot: Slot) -> None:
        self._chat = chat
        self._journal = journal
        self._slot = slot

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self._chat.name

    def complete(
        self, messages: list[Message], *, schema: dict[str, Any] | None = None, schema_name: str = "output"
    ) -> Completion:
        """Ask the model, then journal the reply.

        Raises:
            ModelCallError: The call failed after the transport's bounded retries.
        """
        completion = self._chat.complete(messages, schema=schema, schema_name=schema_name)
        self._journal.record(self._slot, completion)
        return completion
