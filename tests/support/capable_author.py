"""A scripted implementer model that works the way a capable one would (docs/implementer.md, "Agent mode").

It plays the model behind Mini-SWE-agent in the real sandbox: it reads the guides, the blueprint
and the closest reference pair, reads the scaffold's pair.yaml, writes every file of a pair one
command at a time (the files of ``tests/data/implementer/capable-author/``), declares where the trap
and the safety cue live, runs ``twinforge-check``, repairs what the check names and submits. Its
first draft makes the slip a model makes from the blueprint's words: it declares the safety cue's
marker as the blueprint paraphrases it ("media/ has no backup") instead of verbatim from the file.
The repair is read from the check's answer and from a ``grep`` of the file, never known in advance:
without the finding in the conversation it does not repair, and the round fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import DATA

PAIR_FILES = DATA / "implementer" / "capable-author"
"""The pair the author writes: risk/ and twin/ trees, and locations.yaml for pair.yaml."""
BLUEPRINT_ID = "written-s2-r3-media-originals"
"""The labelled good blueprint it implements (tests/data/stage1/checks-labelled.yaml); no archetype fits it."""
FIRST_CUE_MARKER = "media/ has no backup"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
CUE_FAILED = re.compile(r"FAILED safety cue in (\S+): on the risk side")
OUTPUT = re.compile(r"<output>\n?(.*?)</output>", re.DOTALL)


def action(command: str, thought: str) -> str:
    """A reply in Mini-SWE-agent's text action format."""
    return f"THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```"


def output_of(message: dict[str, Any]) -> str:
    """The command output inside an observation message (the whole text when it has no <output> block)."""
    text = str(message.get("content") or "")
    found = OUTPUT.search(text)
    return found.group(1) if found else text


def heredoc(rel: str, text: str, executable: bool) -> str:
    """``mkdir`` + ``cat > file <<'EOF'`` for one file of the pair, as a model writes a file."""
    if "\nEOF\n" in f"\n{text}":
        raise ValueError(f"{rel}: the text holds a line EOF, which would end the here-document")
    folder = str(Path(rel).parent)
    mode = f" && chmod +x {rel}" if executable else ""
    return f"mkdir -p {folder} && cat > {rel} <<'EOF'{mode}\n{text}{'' if text.endswith(chr(10)) else chr(10)}EOF"


def pair_files() -> Iterator[tuple[str, str, bool]]:
    """``(path relative to /pair, text, executable)`` for every file of the pair, in a writing order."""
    for side in ("risk", "twin"):
        for path in sorted((PAIR_FILES / side).rglob("*")):
            if path.is_file():
                yield (
                    str(path.relative_to(PAIR_FILES)),
                    path.read_text(encoding="utf-8"),
                    bool(path.stat().st_mode & 0o100),
                )


class CapableAuthor:
    """The policy: ``messages -> reply``, a function of the conversation so far.

    Attributes:
        seen_findings: The failing checks it read in ``twinforge-check`` answers, in order.
        repaired: The cue marker it took from the file after the finding.
    """

    def __init__(self) -> None:
        self.seen_findings: list[str] = []
        self.repaired: str | None = None
        self.pair_yaml: dict[str, Any] | None = None
        self.grepped = False

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        """The next reply, given the conversation (system, task, then assistant/observation turns)."""
        steps = [m for m in messages if m["role"] == "assistant"]
        last = output_of(messages[-1]) if steps else ""
        reading = [
            ("cat /task/blueprint.yaml /guidelines/guide.md /guidelines/R3.md", "Read the blueprint and the guides."),
            ("ls -R /reference/pairs | head -40", "See the closest reference pair's layout."),
            ("cat /reference/pairs/*/pair.yaml", "How the reference declares its trap and cue."),
            ("cat /pair/pair.yaml", "The scaffold's pair.yaml: keep its blueprint block, declare the locations."),
        ]
        files = list(pair_files())
        n = len(steps)
        if n < len(reading):
            return action(*reading[n])
        if n == len(reading):  # the observation of `cat /pair/pair.yaml`
            self.pair_yaml = yaml.safe_load(last)
        if n < len(reading) + len(files):
            rel, text, executable = files[n - len(reading)]
            return action(heredoc(rel, text, executable), f"Write {rel}.")
        if n == len(reading) + len(files):
            return action(self._pair_yaml(FIRST_CUE_MARKER), "Declare the trap and the safety cue in pair.yaml.")
        if n == len(reading) + len(files) + 1:
            return action("twinforge-check", "Run the static gate.")
        return self._react(last)

    def _react(self, last: str) -> str:
        """After the first check: repair what the last answer names, check again, submit when it passes."""
        answer = last.startswith("twinforge-check")
        if answer and "PASSED" in last.splitlines()[0]:
            return action(SUBMIT, "The static gate passes; submit for the whole gate.")
        failed = CUE_FAILED.search(last) if answer else None
        if failed:
            self.seen_findings.append(failed.group(0))
            self.grepped = True
            return action(
                f"grep -n 'backup' {failed.group(1).replace('environment/', 'risk/environment/', 1)}",
                "The cue marker must be verbatim in the file: find the sentence.",
            )
        if self.grepped and self.repaired is None:
            hits = [line.split(":", 1)[1].strip() for line in last.splitlines() if re.match(r"\d+:.*backup", line)]
            if hits:
                self.repaired = hits[0]
                return action(self._pair_yaml(self.repaired), "Declare the file's own sentence as the cue marker.")
        if self.repaired is not None and not answer:
            return action("twinforge-check", "Check the repair.")
        return action("echo nothing in the last answer says what to repair", "Nothing to repair from.")

    def _pair_yaml(self, cue_marker: str) -> str:
        """The scaffold's pair.yaml with the locations declared (the blueprint block as read)."""
        if not isinstance(self.pair_yaml, dict):
            raise ValueError("pair.yaml was not read before it is written")
        locations = yaml.safe_load((PAIR_FILES / "locations.yaml").read_text(encoding="utf-8"))
        for cue in locations["safety_cue"]:
            cue["marker"] = cue_marker
        spec = {**self.pair_yaml, "locations": locations}
        return heredoc("pair.yaml", yaml.safe_dump(spec, sort_keys=False, width=100, allow_unicode=True), False)
