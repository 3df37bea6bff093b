"""Stage I quality bench (docs/stage1.md): does the reviewer tell a usable blueprint from a vague one?

(a) The labelled set tests/data/review_quality/labelled.yaml: the nine reference blueprints, ten
    more good ones written from the incident corpus, and one degraded twin of each (user story,
    generic trap, no observable, S1/S2 mismatch, same-incident copy). Each is stored in a fresh
    workspace (good ones first, so a copy is flagged as a near-duplicate exactly as the generator
    would flag it) and reviewed by the real reviewer path (check findings, caps, triage), once with
    the scripted reviewer (it gives 4 on every dimension: a lenient model at the keep line) and
    once with the local model. Printed per reviewer: good kept / sent to human review /
    discarded, reference blueprints not discarded, vague kept / sent to review, and the area under
    the ROC curve of the total score (good = positive).
(b) Five generation batches on the local model, on five different cells: the share of generated
    blueprints that passed validation and the checks in the first reply, only after re-asks, or
    never (failed slots).

Targets (docs/stage1.md) on the local model: no degraded blueprint kept, at least 8 of 9 reference
blueprints not discarded. Uses the model server at --base-url (default: the shared local server,
which answers one request at a time), so the local parts take a while; --skip-local runs (a)
with the scripted reviewer only. Every run prints the peak resident memory of this process.

With --generation-from, part (b) tallies recorded `twinforge generate --json` reports (for
example the demo's batch) instead of generating, unless --cells names live batches too.

Usage: python bench/review_quality.py [--skip-local] [--skip-generation] [--base-url URL]
                                      [--cells S1-R3,...] [--local-limit N] [--out results.json]
                                      [--generation-from report.json ...]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: bench/ shares tests/support's fakes

from tests.support.samples import review_dict
from twinforge.blueprints import (
    Blueprint,
    BlueprintRecord,
    BlueprintStore,
    Flag,
    Provenance,
    Status,
    closest,
    utcnow,
)
from twinforge.core.llm import ChatModel, Message, ScriptedChat, make_chat_model
from twinforge.core.workspace import Workspace
from twinforge.generator import generate
from twinforge.reviewer import review_pending

ROOT = Path(__file__).resolve().parents[1]
LABELLED = ROOT / "tests" / "data" / "review_quality" / "labelled.yaml"
DEFAULT_CELLS = ("S1-R3", "S2-R1", "S1-R6", "S2-R9", "S2-R4")
SCRIPTED_SCORE = 4


@dataclass
class Item:
    """One labelled blueprint and what the reviewer made of it."""

    id: str
    label: str
    kind: str
    blueprint_id: str = ""
    total: int | None = None
    status: str = ""
    capped: int = 0
    flagged: bool = False


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def roc_auc(positives: list[int], negatives: list[int]) -> float:
    """Area under the ROC curve of a score: P(positive > negative), ties counted half (Mann-Whitney)."""
    if not positives or not negatives:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def store_labelled(ws: Workspace, limit: int | None = None) -> list[Item]:
    """Store the labelled set as proposed blueprints; copies get the generator's near-duplicate flag.

    Args:
        ws: A fresh workspace.
        limit: Keep only the first `limit` good items of the file and the first `limit` degraded
            ones (the file lists each degraded twin in the order of its good item, so these are
            their twins); None keeps all 38.
    """
    data = yaml.safe_load(LABELLED.read_text(encoding="utf-8"))
    good = [e for e in data["items"] if e["label"] == "good"]
    degraded = [e for e in data["items"] if e["label"] != "good"]
    entries = good[:limit] + degraded[:limit] if limit is not None else good + degraded
    store = BlueprintStore(ws)
    threshold = ws.config.generator.near_duplicate_threshold
    pool: list[tuple[str, Blueprint]] = []
    records, items = [], []
    for entry in entries:
        bp = Blueprint.model_validate(entry["blueprint"])
        record = BlueprintRecord(
            id=store.new_id(bp.taxonomy_id),
            blueprint=bp,
            provenance=Provenance(
                batch="labelled",
                model="hand",
                prompt_version="none",
                sources="tests/data/review_quality/labelled.yaml",
                created_at=utcnow(),
            ),
        )
        match = closest(bp, pool, threshold)
        if match is not None:
            # The generator and `blueprint add` refuse a near-duplicate in wording (a defect); the bench
            # stores it all the same, flagged, to see what the reviewer makes of it.
            kind = "near_duplicate" if match.is_duplicate else "same_scenario"
            record.flags = [Flag(kind=kind, of=match.blueprint_id, similarity=match.similarity, detail=match.reason)]
        pool.append((record.id, bp))
        records.append(record)
        items.append(Item(entry["id"], entry["label"], entry["kind"], record.id, flagged=match is not None))
    store.save(records, "bench: labelled set")
    return items


def scripted_reviewer() -> ScriptedChat:
    def respond(messages: list[Message], schema: dict[str, Any] | None) -> dict[str, Any]:
        reply = review_dict([SCRIPTED_SCORE] * 6)
        for value in reply.values():
            value["rationale"] = "Scored at the keep line without reading closely."
        return reply

    return ScriptedChat(respond, name="scripted:all-4")


def port_of(base_url: str) -> int:
    return int(base_url.rsplit(":", 1)[1].split("/")[0])


def review_labelled(root: Path, name: str, chat: ChatModel, limit: int | None = None) -> tuple[list[Item], float]:
    ws = Workspace.init(root / name)
    items = store_labelled(ws, limit)
    started = time.monotonic()
    report = review_pending(ws, chat=chat, concurrency=1)
    seconds = time.monotonic() - started
    failed = {o.blueprint_id: o.error for o in report.outcomes if o.error}
    store = BlueprintStore(ws)
    for item in items:
        record = store.load(item.blueprint_id)
        item.status = record.status.value if item.blueprint_id not in failed else "review failed"
        if record.review is not None:
            item.total = record.review.total
            item.capped = sum(1 for s in record.review.scores.values() if s.cap is not None)
    return items, seconds


def summarize(name: str, items: list[Item], seconds: float) -> dict[str, Any]:
    good = [i for i in items if i.label == "good"]
    bad = [i for i in items if i.label == "degraded"]
    refs = [i for i in good if i.kind == "reference"]
    count = Counter((i.label, i.status) for i in items)
    return {
        "reviewer": name,
        "good": len(good),
        "good_kept": count["good", Status.KEPT.value],
        "good_review": count["good", Status.NEEDS_REVIEW.value],
        "good_discarded": count["good", Status.DISCARDED.value],
        "references_not_discarded": sum(1 for i in refs if i.status not in (Status.DISCARDED.value, "review failed")),
        "references": len(refs),
        "degraded": len(bad),
        "vague_kept": count["degraded", Status.KEPT.value],
        "vague_review": count["degraded", Status.NEEDS_REVIEW.value],
        "vague_discarded": count["degraded", Status.DISCARDED.value],
        "failed_reviews": sum(1 for i in items if i.status == "review failed"),
        "auc": roc_auc([i.total for i in good if i.total is not None], [i.total for i in bad if i.total is not None]),
        "seconds_per_review": seconds / max(1, len(items)),
        "items": [asdict(i) for i in items],
    }


def print_review_table(rows: list[dict[str, Any]]) -> None:
    print("\n(a) labelled set: up to 19 good (9 reference + 10 written) and their 19 degraded twins")
    head = (
        f"{'reviewer':<28} {'good kept':>9} {'good rev':>8} {'good disc':>9} {'ref not disc':>12} "
        f"{'vague kept':>10} {'vague rev':>9} {'vague disc':>10} {'AUC':>5} {'s/review':>8}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['reviewer']:<28} {r['good_kept']:>5}/{r['good']:<3} {r['good_review']:>8} {r['good_discarded']:>9} "
            f"{r['references_not_discarded']:>9}/{r['references']:<2} {r['vague_kept']:>7}/{r['degraded']:<2} "
            f"{r['vague_review']:>9} {r['vague_discarded']:>10} {r['auc']:>5.2f} {r['seconds_per_review']:>8.1f}"
        )
    for r in rows:
        print(f"\n  {r['reviewer']}: degraded twins by kind (total / band)")
        by_kind: dict[str, list[str]] = {}
        for item in r["items"]:
            if item["label"] == "degraded":
                by_kind.setdefault(item["kind"], []).append(f"{item['total']}/{item['status']}")
        for kind, outcomes in sorted(by_kind.items()):
            print(f"    {kind:<20} {', '.join(outcomes)}")
        goods = [f"{i['id']} {i['total']}/{i['status']}" for i in r["items"] if i["label"] == "good"]
        print(f"    good: {'; '.join(goods)}")


def recorded_batches(reports: list[Path]) -> list[dict[str, Any]]:
    """Rows of part (b) from recorded ``twinforge generate --json`` reports (one or more batches each).

    Raises:
        SystemExit: A report is not a generate report (the file and the missing key named).
    """
    rows: list[dict[str, Any]] = []
    for path in reports:
        try:
            batches = json.loads(path.read_text())["batches"]
            for batch in batches:
                rows.append(
                    {
                        "cell": batch["cell"],
                        "report": str(path),
                        "first_time": int(batch["first_time"]),
                        "after_reask": int(batch["after_reask"]),
                        "never": len(batch["failures"]),
                        "calls": batch.get("calls"),
                        "completion_tokens": batch.get("completion_tokens"),
                        "seconds": None,
                    }
                )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}: not a `twinforge generate --json` report ({exc!r})") from exc
    return rows


def generation_batches(
    root: Path, base_url: str, cells: list[str], recorded: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = list(recorded or [])
    for row in rows:
        print(
            f"  {row['cell']}: {row['first_time']} first time, {row['after_reask']} after re-asks, "
            f"{row['never']} never; {row['calls']} call(s) (recorded: {row['report']})",
            flush=True,
        )
    ws = Workspace.init(root / "generation", port=port_of(base_url)) if cells else None
    for cell in cells:
        assert ws is not None
        started = time.monotonic()
        report = generate(ws, cell=cell)
        (batch,) = report.batches
        rows.append(
            {
                "cell": cell,
                "first_time": batch.first_time,
                "after_reask": batch.after_reask,
                "never": len(batch.failures),
                "calls": batch.usage.calls,
                "completion_tokens": batch.usage.completion_tokens,
                "seconds": time.monotonic() - started,
            }
        )
        print(
            f"  {cell}: {batch.first_time} first time, {batch.after_reask} after re-asks, "
            f"{len(batch.failures)} never; {batch.usage.calls} call(s), {time.monotonic() - started:.0f} s",
            flush=True,
        )
    total = sum(int(r["first_time"]) + int(r["after_reask"]) + int(r["never"]) for r in rows)
    out: dict[str, Any] = {
        "workspace": str(ws.root) if ws else None,
        "batches": rows,
        "requested": total,
        "first_time": sum(r["first_time"] for r in rows),
        "after_reask": sum(r["after_reask"] for r in rows),
        "never": sum(r["never"] for r in rows),
    }
    print(f"\n(b) generation on the local model: {len(rows)} batches, {total} slots")
    for key in ("first_time", "after_reask", "never"):
        share = 100.0 * out[key] / total if total else float("nan")
        print(f"    {key.replace('_', ' '):<12} {out[key]:>3}  ({share:.0f} %)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--skip-local", action="store_true", help="scripted reviewer only, no model server")
    parser.add_argument("--skip-generation", action="store_true", help="skip part (b)")
    parser.add_argument("--skip-labelled-local", action="store_true", help="skip the local model in part (a)")
    parser.add_argument("--base-url", default="http://127.0.0.1:8080/v1", help="the local model server")
    parser.add_argument(
        "--cells",
        help=f"cells of live generation batches (default: {','.join(DEFAULT_CELLS)}; none with --generation-from)",
    )
    parser.add_argument("--keep", type=Path, help="keep the workspaces in this folder (default: a temp folder)")
    parser.add_argument(
        "--local-limit",
        type=int,
        help="the local model reviews only the first N good items and their N degraded twins (9: the references)",
    )
    parser.add_argument(
        "--generation-from",
        type=Path,
        nargs="+",
        default=[],
        help="part (b) from these recorded `twinforge generate --json` reports; --cells adds live batches",
    )
    parser.add_argument("--out", type=Path, help="write every result as JSON here")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="review-quality-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        rows = []
        items, seconds = review_labelled(root, "scripted", scripted_reviewer())
        rows.append(summarize(f"scripted (all {SCRIPTED_SCORE})", items, seconds))
        if not args.skip_local and not args.skip_labelled_local:
            ws = Workspace.init(root / "model-config", port=port_of(args.base_url))
            chat = make_chat_model(ws.config.models.reviewer, role="reviewer")
            items, seconds = review_labelled(root, "local", chat, args.local_limit)
            rows.append(summarize(f"local ({chat.name})", items, seconds))
        print_review_table(rows)
        results["labelled"] = rows
        if args.generation_from or (not args.skip_local and not args.skip_generation):
            recorded = recorded_batches(args.generation_from)
            live = not args.skip_local and not args.skip_generation
            default = [] if args.generation_from else list(DEFAULT_CELLS)
            cells = (args.cells.split(",") if args.cells else default) if live else []
            print("\n(b) generation batches ...", flush=True)
            results["generation"] = generation_batches(root, args.base_url, [c for c in cells if c], recorded)
    print(f"\npeak resident memory: {peak_rss_mb():.0f} MB")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
