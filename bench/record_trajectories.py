"""Record real Mini-SWE-agent trajectories of a local model for the observer's labelled set.

Runs ``calibrate`` (real task containers, the model behind twinforge's proxy) on reference pairs
with a quick call cap, then copies each run's trajectory to ``--out`` as
``<tag>-<pair>-<side>.json``. Label the copies by hand in ``observer/data/trajectories/labels.yaml``.

Text mode uses the shared Qwen server. The tool-calling mode against a llama-cpp-python server
needs two things the server lacks on its own: a ``tool_choice`` naming the harness's ``bash`` tool
(the server's chat templates return tool calls only when a function is forced; OpenAI-style APIs
need nothing), added through the proxy's per-harness request fields, and assistant messages whose
``content`` is ``""`` rather than ``null`` (the server's request model refuses ``null``), done by
this script for its own runs only.

Usage:
    python bench/record_trajectories.py --workspace /tmp/rec --out /tmp/rec-out --tag qwen-text \\
        --base-url http://127.0.0.1:8080/v1 --mode text --max-calls 8 ref-r2-env-example ref-r3-ignored-database
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")

from twinforge.calibration.calibrate import calibrate  # noqa: E402
from twinforge.core.workspace import Workspace  # noqa: E402
from twinforge.harness import HARNESSES, MiniSweAgent  # noqa: E402
from twinforge.runs.records import RecordsDB, records_url  # noqa: E402
from twinforge.taskpair import load_pair  # noqa: E402
from twinforge.taskpair.format.digest import pair_digest  # noqa: E402
from twinforge.taskpair.gate.recording import record_validation  # noqa: E402
from twinforge.taskpair.gate.report import CheckResult, PairReport  # noqa: E402

REFERENCE = ROOT / "twinforge" / "guidelines" / "reference-pairs"


class ForcedBashTool(MiniSweAgent):
    """The reference adapter, asking llama.cpp servers for a call of the ``bash`` tool on every reply."""

    def extra_body(self) -> dict[str, Any]:
        return {**super().extra_body(), "tool_choice": {"type": "function", "function": {"name": "bash"}}}


def _content_never_null() -> None:
    from minisweagent.models.litellm_model import LitellmModel

    prepare = LitellmModel._prepare_messages_for_api

    def prepared(self: Any, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = prepare(self, messages)
        return [{**m, "content": ""} if m.get("content") is None else m for m in out]

    LitellmModel._prepare_messages_for_api = prepared  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pairs", nargs="+", help="reference pair names")
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    parser.add_argument("--mode", choices=("text", "toolcall"), default="text")
    parser.add_argument("--grammar", action="store_true")
    parser.add_argument("--force-bash-tool", action="store_true", help="for llama-cpp-python servers")
    parser.add_argument("--max-calls", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--pairs-from", type=Path, default=REFERENCE, help="folder of the pairs (use a copy)")
    args = parser.parse_args()
    if not (args.workspace / "twinforge.toml").exists():
        Workspace.init(args.workspace)
    workspace = Workspace.open(args.workspace)
    config = workspace.config
    config.models.calibration.base_url = args.base_url
    config.calibration.action_mode = args.mode
    config.calibration.grammar = args.grammar
    config.calibration.workers = 1
    if args.force_bash_tool:
        HARNESSES["mini-swe-agent"] = ForcedBashTool
        _content_never_null()
    pairs = []
    for name in args.pairs:  # calibrate takes validated pairs of the workspace (docs/calibration.md)
        target = workspace.tasks_dir / name
        if not target.exists():
            shutil.copytree(args.pairs_from / name, target)
        pair = load_pair(target)
        if pair.spec.validation is None or pair.spec.validation.digest != pair_digest(target):
            gate = PairReport(pair.id, str(target), [CheckResult("recorded for the trajectory bench", True)])
            record_validation(workspace, pair, gate, by="bench")
        pairs.append(target)
    report = calibrate(
        workspace,
        pairs,
        runs=args.runs,
        max_calls=args.max_calls,
        on_done=lambda summary, error: print(summary or error, flush=True),
    )
    print(f"ran {report.ran}, errors {report.errors}")
    args.out.mkdir(parents=True, exist_ok=True)
    for run in RecordsDB(records_url(workspace)).runs():
        if run.trajectory and Path(run.trajectory).exists() and run.run_id:
            pair, side = run.run_id.rsplit("-k", 1)[0].rsplit("-", 1)
            target = args.out / f"{args.tag}-{pair.removeprefix('ref-')}-{side}-k{run.k}.json"
            shutil.copyfile(run.trajectory, target)
            print(f"{target.name}: {run.outcome} ({run.calls} calls, {run.exit_status})")


if __name__ == "__main__":
    main()
