"""Stage I batch mode vs slot mode, side by side (docs/stage1.md, "One call per batch").

For each mode (``batch``: one call proposes the ten blueprints of a batch and one call scores up to
ten blueprints; ``slots``: one call per slot and one per blueprint), one batch of 10 for one cell
(S2-R3), then a review of what that batch stored. Per stored blueprint: model calls, prompt / cached /
completion tokens, wall seconds and cost; per reviewed blueprint the same; plus stored / refused /
failed slots and scored / failed reviews.

(a) A scripted capable model (the replies the batch-mode tests use, tests/support/stage1.py): instant
    and deterministic, every reply valid; a warm-up batch and review in slot mode first, not counted.
    Token counts are the scripted model's estimate (characters / 4 of the messages sent and the reply;
    no prompt cache), priced at an illustrative $2 / $0.50 / $8 per million input / cached input /
    output tokens: the figures show the call and token counts of each mode.
(b) The embedded llama.cpp server with gemma3-270m (the fast smoke-test model; weak): a small reply
    budget (``--max-tokens``, ``--review-max-tokens``) and no re-asks (``--retries 0``) keep each
    mode to a few minutes on 2 loaded cores; it reports what the model does, not what a capable one would.

Usage: python bench/stage1_modes.py [--skip-local] [--port 8097] [--max-tokens 500]
       [--review-max-tokens 700] [--retries 0] [--json]
Every run also prints the peak resident memory of this process and of the model server.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bench/ shares tests/support's fakes
sys.path.insert(0, str(Path(__file__).resolve().parent))

from model_servers import Running

from tests.support.net import free_port
from tests.support.samples import review_dict, scores_for
from tests.support.stage1 import scripted_slots
from twinforge.core.llm import ChatModel, Message, ScriptedChat, Usage
from twinforge.core.localmodel import get_spec, serve, stop
from twinforge.core.settings import ModelPrice
from twinforge.core.workspace import Workspace
from twinforge.generator import generate
from twinforge.reviewer import review_pending

CELL = "S2-R3"
MODES = ("batch", "slots")
PRICE = ModelPrice(input=2.0, cached_input=0.5, output=8.0)  # illustrative, as in the batch-mode tests


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scripted_reviewer() -> ScriptedChat:
    """A reviewer scoring each blueprint 26 of 30, a batch call with one review per id its schema allows."""

    def respond(messages: list[Message], schema: dict[str, Any] | None) -> Any:
        assert schema is not None
        if "reviews" in schema["properties"]:
            ids = schema["properties"]["reviews"]["items"]["properties"]["blueprint_id"]["enum"]
            return {"reviews": [{"blueprint_id": i, **review_dict(scores_for(26))} for i in ids]}
        return review_dict(scores_for(26))

    return ScriptedChat(respond)


def per_item(usage: Usage, items: int, wall: float, cost: float | None) -> dict[str, float | None]:
    """``usage`` (and wall time, cost) divided over ``items``; every value ``None`` for none."""
    if items < 1:
        return dict.fromkeys(("calls", "prompt", "cached", "completion", "wall_s", "cost_usd"))
    return {
        "calls": usage.calls / items,
        "prompt": usage.prompt_tokens / items,
        "cached": usage.cached_tokens / items,
        "completion": usage.completion_tokens / items,
        "wall_s": wall / items,
        "cost_usd": None if cost is None else cost / items,
    }


def run_mode(ws: Workspace, mode: str, generator: ChatModel | None, reviewer: ChatModel | None) -> dict[str, Any]:
    """One batch of 10 for :data:`CELL` in ``mode``, then a review (same mode) of what it stored."""
    calls: Literal["slots", "batch"] = "batch" if mode == "batch" else "slots"
    (batch,) = generate(ws, cell=CELL, chat=generator, mode=calls).batches
    out: dict[str, Any] = {
        "mode": mode,
        "stored": len(batch.stored),
        "refused": len(batch.refused),
        "failed": len(batch.failures),
        "gen_calls": batch.usage.calls,
        "gen_prompt": batch.usage.prompt_tokens,
        "gen_cached": batch.usage.cached_tokens,
        "gen_completion": batch.usage.completion_tokens,
        "gen_wall_s": round(batch.wall_seconds, 2),
        "gen_cost_usd": batch.cost_usd,
        "gen_per_stored": per_item(batch.usage, len(batch.stored), batch.wall_seconds, batch.cost_usd),
        "notes": batch.notes,
        "refused_by": dict(batch.refused_by),
    }
    print(
        f"  {mode}: generate {batch.usage.calls} call(s), {len(batch.stored)} stored, {len(batch.refused)} refused, "
        f"{len(batch.failures)} failed, {batch.wall_seconds:.1f} s; notes: {batch.notes}",
        flush=True,
    )
    started = time.perf_counter()
    reviews = review_pending(ws, chat=reviewer, ids=batch.stored, mode=calls) if batch.stored else None
    wall = time.perf_counter() - started
    outcomes = reviews.outcomes if reviews else []
    scored = sum(1 for o in outcomes if o.total is not None)
    usage = reviews.usage if reviews else Usage()
    cost = reviews.cost_usd if reviews else None
    out.update(
        reviewed=len(outcomes),
        scored=scored,
        review_failed=sum(1 for o in outcomes if o.error),
        rev_calls=usage.calls,
        rev_prompt=usage.prompt_tokens,
        rev_cached=usage.cached_tokens,
        rev_completion=usage.completion_tokens,
        rev_wall_s=round(wall, 2),
        rev_cost_usd=cost,
        rev_per_scored=per_item(usage, scored, wall, cost),
        review_errors=sorted({(o.error or "")[:120] for o in outcomes if o.error}),
    )
    print(
        f"  {mode}: review of {len(outcomes)}: {usage.calls} call(s), {scored} scored, "
        f"{out['review_failed']} failed, {wall:.1f} s",
        flush=True,
    )
    return out


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6f}" if 0 < abs(value) < 0.01 else f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def ratio(slots: Any, batch: Any) -> str:
    if not isinstance(slots, (int, float)) or not isinstance(batch, (int, float)) or not batch:
        return "-"
    return f"{slots / batch:.2f}x"


ROWS = [
    ("stored / refused / failed slots", None),
    ("generate: calls per stored", ("gen_per_stored", "calls")),
    ("generate: prompt tokens per stored", ("gen_per_stored", "prompt")),
    ("generate: cached tokens per stored", ("gen_per_stored", "cached")),
    ("generate: completion tokens per stored", ("gen_per_stored", "completion")),
    ("generate: wall s per stored", ("gen_per_stored", "wall_s")),
    ("generate: cost $ per stored", ("gen_per_stored", "cost_usd")),
    ("generate: calls / wall s (batch of 10)", None),
    ("review: scored / failed", None),
    ("review: calls per scored", ("rev_per_scored", "calls")),
    ("review: prompt tokens per scored", ("rev_per_scored", "prompt")),
    ("review: cached tokens per scored", ("rev_per_scored", "cached")),
    ("review: completion tokens per scored", ("rev_per_scored", "completion")),
    ("review: wall s per scored", ("rev_per_scored", "wall_s")),
    ("review: cost $ per scored", ("rev_per_scored", "cost_usd")),
]


def table(title: str, results: dict[str, dict[str, Any]]) -> None:
    """Rows: the figures; columns: batch, slots, slots / batch."""
    b, s = results["batch"], results["slots"]
    print(f"\n{title}")
    print(f"  {'':40} {'batch':>14} {'slots':>14} {'slots/batch':>11}")
    for label, key in ROWS:
        if key is None:
            if label.startswith("stored"):
                cells = [f"{r['stored']}/{r['refused']}/{r['failed']}" for r in (b, s)]
            elif label.startswith("review"):
                cells = [f"{r['scored']}/{r['review_failed']}" for r in (b, s)]
            else:
                cells = [f"{r['gen_calls']} / {r['gen_wall_s']:.1f}" for r in (b, s)]
            print(f"  {label:40} {cells[0]:>14} {cells[1]:>14} {'':>11}")
            continue
        group, field = key
        bv, sv = b[group][field], s[group][field]
        print(f"  {label:40} {fmt(bv):>14} {fmt(sv):>14} {ratio(sv, bv):>11}")


def bench_scripted() -> dict[str, dict[str, Any]]:
    """(a): the scripted capable model, priced."""
    print("(a) scripted capable model (valid replies, instant; tokens = characters / 4; illustrative price)")
    results = {}
    for mode in ("warm-up", *MODES):  # the first batch of a process pays for imports and caches: not counted
        with tempfile.TemporaryDirectory() as tmp:
            ws = Workspace.init(Path(tmp) / "ws")
            ws.config.models.generator.price = PRICE
            ws.config.models.reviewer.price = PRICE
            results[mode] = run_mode(ws, mode, scripted_slots(), scripted_reviewer())
    del results["warm-up"]
    return results


def bench_local(port: int, max_tokens: int, review_max_tokens: int, retries: int) -> dict[str, Any]:
    """(b): the embedded llama.cpp server with gemma3-270m, both modes on the same server."""
    print(
        f"(b) embedded llama.cpp server, gemma3-270m: generator max_tokens {max_tokens}, reviewer max_tokens "
        f"{review_max_tokens}, validation_retries {retries}",
        flush=True,
    )
    info = serve(get_spec("gemma3-270m"), port=port, n_ctx=4096, wait_s=300)
    server = Running("llama-server gemma3-270m", info.base_url, info.pid, info.slots)
    results: dict[str, Any] = {}
    try:
        for mode in MODES:
            with tempfile.TemporaryDirectory() as tmp:
                ws = Workspace.init(Path(tmp) / "ws", port=port, local_model="gemma3-270m")
                models = ws.config.models
                models.generator.max_tokens = max_tokens
                models.reviewer.max_tokens = review_max_tokens
                models.generator.validation_retries = models.reviewer.validation_retries = retries
                results[mode] = run_mode(ws, mode, None, None)
        results["server_rss_mb"] = round(server.peak_rss_mb())
        results["server_slots"] = info.slots
    finally:
        stop(port)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-local", action="store_true", help="only the scripted part (a)")
    parser.add_argument("--port", type=int, default=0, help="port of the embedded server (default: a free one)")
    parser.add_argument("--max-tokens", type=int, default=500, help="generator reply budget on the embedded model")
    parser.add_argument("--review-max-tokens", type=int, default=700, help="reviewer reply budget there")
    parser.add_argument("--retries", type=int, default=0, help="validation_retries on the embedded model")
    parser.add_argument("--json", action="store_true", help="also print every figure as one JSON line")
    args = parser.parse_args()
    out: dict[str, Any] = {"scripted": bench_scripted()}
    table("(a) scripted capable model, one batch of 10 (S2-R3) and its review", out["scripted"])
    if not args.skip_local:
        local = bench_local(args.port or free_port(), args.max_tokens, args.review_max_tokens, args.retries)
        out["gemma3-270m"] = local
        table("(b) gemma3-270m on the embedded server, one batch of 10 (S2-R3) and its review", local)
        print(f"  model server: {local['server_slots']} slot(s), peak resident memory {local['server_rss_mb']} MB")
        for mode in MODES:
            r = local[mode]
            print(f"  {mode}: refused by {r['refused_by']}; review errors {r['review_errors']}")
    out["peak_rss_mb"] = round(peak_rss_mb())
    print(f"peak resident memory of this process: {out['peak_rss_mb']} MB (model server not counted)")
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
