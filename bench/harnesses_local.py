"""Each harness against the embedded model server (docs/runtime.md, "Harnesses"): outcome recorded, not judged.

One calibration run per side of a reference pair for each harness, with the workspace's calibration
role on the embedded server (llama.cpp's ``llama-server``, started here on a free port): the proxy
takes its API shapes as all three, so Claude Code speaks Messages, Codex Responses, OpenCode, Pi and
Mini-SWE-agent Chat. A small model rarely does the task; the point is the path: each side's stored
outcome, the calls the server answered in the harness's shape, the reply tokens (bounded by the
model block's ``max_tokens``) and the wall time, beside Mini-SWE-agent's. The CLIs' own prompts run
to 10,000-20,000 tokens, so the server has two slots of a 32k context (``--ctx``).

Usage: python bench/harnesses_local.py [--model gemma3-270m] [--harness NAME ...] [--calls 3]
       [--reply-tokens 256] [--pair ref-r3-ignored-database]
Needs ``twinforge env setup``, ``twinforge harness setup`` and the model's package installed.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.lifecycle import copy_reference, mark_validated  # noqa: E402
from tests.support.net import free_port  # noqa: E402
from twinforge.calibration.calibrate import calibrate  # noqa: E402
from twinforge.core.localmodel import get_spec, serve, stop  # noqa: E402
from twinforge.core.workspace import Workspace  # noqa: E402
from twinforge.runs.records import RecordsDB, records_url  # noqa: E402

SHAPE = {"mini-swe-agent": "chat", "claude-code": "messages", "codex": "responses", "opencode": "chat", "pi": "chat"}


def main() -> None:
    """Run each harness once per side and print one row per run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m", help="catalog name of the local model")
    parser.add_argument("--harness", nargs="*", default=list(SHAPE), choices=list(SHAPE))
    parser.add_argument("--calls", type=int, default=3, help="model calls per run (the call cap)")
    parser.add_argument("--reply-tokens", type=int, default=256, help="max_tokens of the calibration role")
    parser.add_argument("--ctx", type=int, default=32768, help="context of each of the server's two slots")
    parser.add_argument("--pair", default="ref-r3-ignored-database")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-harnesses-local-"))
    os.environ["TWINFORGE_CACHE_DIR"] = str(tmp / "cache")
    info = serve(get_spec(args.model), port=free_port(), n_ctx=args.ctx, slots=2, wait_s=600)
    rows = []
    try:
        for harness in args.harness:
            ws = Workspace.init(tmp / harness, port=info.port, local_model=args.model)
            ws.config.calibration.harness = harness
            ws.config.calibration.rerun_undetermined = 0
            ws.config.calibration.rerun_overtime = 0
            ws.config.models.calibration.max_tokens = args.reply_tokens
            folder = copy_reference(ws, args.pair)
            mark_validated(ws, folder)
            started = time.monotonic()
            report = calibrate(ws, [folder], runs=1, max_calls=args.calls)
            seconds = time.monotonic() - started
            records = RecordsDB(records_url(ws))
            for run in records.runs():
                calls = records.calls(str(run.run_id))
                answered = [c for c in calls if c.shape == SHAPE[harness] and c.status == 200]
                rows.append(
                    (
                        harness,
                        run.side,
                        str(run.outcome),
                        f"{len(answered)}/{len(calls)}",
                        max((c.completion_tokens for c in calls), default=0),
                        f"{seconds:.0f}",
                        (run.error or "")[:60],
                    )
                )
            if report.errors:
                rows.append((harness, "-", "error", "-", 0, f"{seconds:.0f}", "; ".join(report.errors)[:60]))
    finally:
        stop(info.port)
    header = ("harness", "side", "outcome", "answered/calls", "longest reply (tokens)", "wall s (both sides)", "cause")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
