"""Stage II bench (docs/implementer.md): yield of `twinforge implement` per mode on two blueprint sets.

(a) Leave-one-out: each of the nine reference pairs' blueprints (its eight fields only) is implemented
    with that reference pair hidden from the implementer (agent mode cannot read it; archetype mode's
    archetype derived from it stays, beside the others of its category).
(b) Ten blueprints that Stage I generated on the local model from the bundled incident corpus
    (pooled in bench/data/stage1-blueprints.yaml, which `--stage1-from WS` adds a workspace's to).

Per mode and set it prints: yield (share of blueprints whose pair passes the whole gate), rounds,
model calls, tokens and wall time per pair, the checks that failed most, and the peak resident
memory of this process. Targets: archetype mode on the local model >= 8 of 9 in (a) and >= 7 of 10
in (b); agent mode measured and printed (the local 1.5B model's figure is expected to be low).
Peers that generate executable tasks keep about 40 % of candidates (docs/implementer.md).

Results are appended to bench/out/implement.jsonl as each blueprint finishes, so a killed bench
resumes; `--fresh` starts over.

Usage: python bench/implement.py [--modes archetype,agent] [--sets a,b] [--port 8080]
       [--agent-calls 12] [--agent-rounds 1] [--limit N] [--names A,B] [--stage1-from WS ...] [--fresh]

Several processes with disjoint --names may run at once (each appends its own lines; the model server
queues their calls while another process's gate runs).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twinforge.blueprints import Blueprint, BlueprintRecord, BlueprintStore, Provenance, Status, utcnow  # noqa: E402
from twinforge.blueprints.checks import check_blueprint  # noqa: E402
from twinforge.core.exceptions import ModelCallError  # noqa: E402
from twinforge.core.workspace import Workspace  # noqa: E402
from twinforge.generator import generate, load_examples  # noqa: E402
from twinforge.implementer import implement  # noqa: E402
from twinforge.taskpair.exceptions import DockerUnavailable  # noqa: E402

OUT = ROOT / "bench" / "out"
RESULTS = OUT / "implement.jsonl"
STAGE1 = ROOT / "bench" / "data" / "stage1-blueprints.yaml"
REFERENCE = ROOT / "twinforge" / "guidelines" / "reference-pairs"
LOCAL = "openai-compatible:local"  # provenance.model of the embedded model's blueprints
STAGE1_CELLS = ("S2-R3", "S1-R2", "S2-R5", "S1-R8", "S2-R9")


def workspace(path: Path, port: int) -> Workspace:
    if path.exists():
        shutil.rmtree(path)
    ws = Workspace.init(path, port=port, nesting="nested")
    ws.config.models.implementer.max_tokens = 700
    # The shared local server answers one request at a time; a request abandoned after a timeout is still
    # computed there, so wait for the queue instead of retrying into it.
    for role in (ws.config.models.implementer, ws.config.models.generator, ws.config.models.reviewer):
        role.timeout_s, role.http_retries = 3600, 0
    return ws


def leave_one_out() -> list[tuple[str, Blueprint, frozenset[str]]]:
    out = []
    for pair in sorted(p for p in REFERENCE.iterdir() if (p / "pair.yaml").is_file()):
        spec = yaml.safe_load((pair / "pair.yaml").read_text())
        out.append((pair.name, Blueprint.model_validate(spec["blueprint"]), frozenset({pair.name})))
    return out


def _refusals(bp: Blueprint) -> list[str]:
    """What today's Stage I finds in ``bp``: its defects and doubts (checks of blueprint-checks.yaml)."""
    return [f.rule for f in check_blueprint(bp)]


def _entry(r: BlueprintRecord) -> dict[str, Any]:
    """A pool entry: the record's id, where it came from, and its eight fields."""
    p = r.provenance
    return {
        "id": r.id,
        "provenance": f"{p.model} {p.batch} {p.prompt_version} {p.created_at:%Y-%m-%d}",
        **r.blueprint.model_dump(),
    }


def _blueprint(entry: dict[str, Any]) -> Blueprint:
    return Blueprint.model_validate({k: v for k, v in entry.items() if k not in ("id", "provenance")})


def stage1_blueprints(port: int, sources: list[Path] | None = None) -> list[tuple[str, Blueprint, frozenset[str]]]:
    """Ten Stage I blueprints from the local model, from the pool kept in the repository.

    The pool, ``bench/data/stage1-blueprints.yaml``, is a list of ``{id, provenance, <eight fields>}``
    entries that Stage I stored on the local model from the bundled incident corpus; it is kept in the
    repository because a batch costs 20-30 model calls on 2 cores, so sessions add to it rather than
    start over. Set (b) is ten of them: two per cell first, then the rest, each in pool order. An entry
    that today's Stage I would refuse (it fails a check of ``guidelines/blueprint-checks.yaml`` or pastes
    a hint or harm example: it was stored before that rule existed) is skipped, and the skip is printed.

    Args:
        port: The local model server's port (generation runs when the pool is empty and no source is given).
        sources: Workspaces whose Stage I blueprints to add to the pool first (``--stage1-from``), e.g. the
            demo's; records already pooled (by id) and any not from a local-model Stage I batch grounded in
            the bundled corpus are not added, whatever their review status. One process at a time.
    """
    pool: list[dict[str, Any]] = yaml.safe_load(STAGE1.read_text()) or [] if STAGE1.exists() else []
    known = {d["id"] for d in pool}
    added: list[dict[str, Any]] = []
    if sources:
        for source in sources:
            for r in sorted(BlueprintStore(Workspace.open(source)).records(), key=lambda r: r.id):
                p = r.provenance
                generated = p.batch.startswith("b-") and p.sources.startswith("bundled:") and p.model == LOCAL
                if r.id in known or not generated:  # only local-model Stage I batches on the bundled corpus
                    continue
                known.add(r.id)
                added.append(_entry(r))
    elif not pool:
        ws = workspace(OUT / "work" / "stage1", port)
        store = BlueprintStore(ws)
        for cell in STAGE1_CELLS:
            print(f"generating a batch for {cell} on the local model ...", flush=True)
            report = generate(ws, cell=cell)
            added += [_entry(store.load(i)) for batch in report.batches for i in batch.stored]
    if added:
        pool += added
        STAGE1.parent.mkdir(parents=True, exist_ok=True)
        STAGE1.write_text(yaml.safe_dump(pool, sort_keys=False, width=100))
        print(f"set (b): added {len(added)} to {STAGE1.relative_to(ROOT)} ({len(pool)} pooled)", flush=True)
    usable: list[dict[str, Any]] = []
    for d in pool:
        refused = _refusals(_blueprint(d))
        if refused:
            print(f"set (b): skipping {d['id']}, today's Stage I refuses it: {', '.join(refused)}", flush=True)
        else:
            usable.append(d)
    per_cell: Counter[str] = Counter()
    first: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for d in usable:  # two per cell first (as when generating), then the rest, up to ten
        per_cell[d["taxonomy_id"]] += 1
        (first if per_cell[d["taxonomy_id"]] <= 2 else rest).append(d)
    chosen = (first + rest)[:10]
    return [(d["id"], _blueprint(d), frozenset[str]()) for d in chosen]


def run_one(
    mode: str, name: str, blueprint: Blueprint, hidden: frozenset[str], args: argparse.Namespace
) -> dict[str, Any]:
    ws = workspace(OUT / "work" / f"{mode}-{name}", args.port)
    if mode == "agent":
        ws.config.implementer.model_calls = args.agent_calls
        ws.config.implementer.grammar = True
    store = BlueprintStore(ws)
    record = BlueprintRecord(
        id=f"{blueprint.taxonomy_id}-{abs(hash(name)) % 16**8:08x}",
        status=Status.KEPT,
        blueprint=blueprint,
        provenance=Provenance(
            batch="bench", model="bench", prompt_version="bench", sources="bench", created_at=utcnow()
        ),
    )
    store.save([record], "bench: add blueprint")
    started = time.monotonic()
    rounds = args.agent_rounds if mode == "agent" else None
    (outcome,) = implement(ws, [record.id], mode=mode, rounds=rounds, exclude_references=hidden).outcomes  # type: ignore[arg-type]
    impl = yaml.safe_load((ws.root / "implementation" / f"{record.id}.yaml").read_text())
    first: list[str] = []
    if impl["rounds"]:  # what broke first: the first twinforge-check (agent) or the first render (archetype)
        head = impl["rounds"][0]
        attempts = head.get("slot_attempts") or [{}]
        first = head["first_failed"] if mode == "agent" else attempts[0].get("failed_checks", [])
    return {
        "mode": mode,
        "name": name,
        "cell": blueprint.taxonomy_id,
        "passed": outcome.outcome == "implemented",
        "reason": outcome.reason,
        "provenance": outcome.provenance,
        "rounds": outcome.rounds,
        "calls": outcome.calls,
        "tokens": outcome.tokens,
        "seconds": round(time.monotonic() - started, 1),
        "failed": [c for r in impl["rounds"] for c in r["failed_checks"]],
        "first_failed": first,
        "slot_attempts": [len(r.get("slot_attempts", [])) for r in impl["rounds"]],
        "interventions": outcome.interventions,
        "fidelity": _fidelity(ws, record.id, outcome.reason),
    }


def _fidelity(ws: Workspace, blueprint_id: str, reason: str) -> str:
    """``exact`` / ``adapted`` from the implemented pair.yaml, ``needs agent mode``, or ``-`` (failed)."""
    if reason.startswith("needs agent mode"):
        return "needs agent mode"
    path = ws.root / "tasks" / blueprint_id.lower() / "pair.yaml"
    if not path.is_file():
        return "-"
    return str(yaml.safe_load(path.read_text()).get("fidelity") or "by hand")


def fit_table() -> None:
    """Fit precision and recall on the labelled fit set, and the fidelity archetype mode would reach.

    No model: each blueprint an archetype fits is rendered with the slots' examples and compared
    with the archetype's as-built fields (docs/implementer.md, "Fidelity").
    """
    from twinforge.implementer.archetypes.catalog import choose, load_archetypes
    from twinforge.implementer.archetypes.render import render_pair
    from twinforge.implementer.exceptions import NoArchetype

    expected = yaml.safe_load((ROOT / "tests" / "data" / "implementer" / "fit-labelled.yaml").read_text())["expected"]
    labelled = yaml.safe_load((ROOT / "tests" / "data" / "stage1" / "checks-labelled.yaml").read_text())["items"]
    blueprints = {i["id"]: Blueprint.model_validate(i["blueprint"]) for i in labelled if i["label"] == "good"}
    blueprints.update({e.pair: e.blueprint for e in load_examples()})
    archetypes = load_archetypes()
    counts: Counter[str] = Counter()
    fidelity: Counter[str] = Counter()
    per: dict[str, Counter[str]] = {a.spec.name: Counter() for a in archetypes}
    with tempfile.TemporaryDirectory() as tmp:
        for name, want in expected.items():
            try:
                archetype = choose(name, blueprints[name], archetypes)
                got = archetype.spec.name
            except NoArchetype:
                got = "none"
            if got != "none":
                root = render_pair(
                    archetype,
                    archetype.example_slots(),
                    pair_root=Path(tmp) / name.lower(),
                    blueprint_id=name,
                    blueprint=blueprints[name],
                    model="bench",
                )
                fidelity[str(yaml.safe_load((root / "pair.yaml").read_text())["fidelity"])] += 1
            else:
                fidelity["needs agent mode"] += 1
            key = ("true" if got == want else "false") + ("-none" if got == "none" else "-fit")
            counts[key] += 1
            if got != "none":
                per[got]["predicted"] += 1
                per[got]["correct"] += got == want
            if want != "none":
                per[want]["labelled"] += 1
    tp, fp = counts["true-fit"], counts["false-fit"]
    fn = sum(1 for n, w in expected.items() if w != "none") - tp
    fitting = sum(w != "none" for w in expected.values())
    print(f"\nfit by mechanism on {len(expected)} labelled blueprints ({fitting} fit one)")
    print(f"  precision {tp}/{tp + fp}   recall {tp}/{tp + fn}   true 'needs agent mode' {counts['true-none']}")
    print(f"  {'archetype':24} {'labelled':>8} {'predicted':>9} {'correct':>7}")
    for name, row in per.items():
        print(f"  {name:24} {row['labelled']:8} {row['predicted']:9} {row['correct']:7}")
    print(
        "  archetype-mode fidelity over the set (example slots): " + ", ".join(f"{k} {v}" for k, v in fidelity.items())
    )


def table(rows: list[dict[str, Any]]) -> None:
    print(
        f"\n{'mode':10} {'set':4} {'n':>3} {'yield':>12} {'rounds':>7} {'calls':>6} {'tokens':>8} {'s/pair':>7}  "
        "checks that failed most"
    )
    for mode in ("archetype", "agent"):
        for group in ("a", "b"):
            mine = [r for r in rows if r["mode"] == mode and r["set"] == group]
            if not mine:
                continue
            passed = sum(r["passed"] for r in mine)
            fidelity = Counter(r.get("fidelity", "-") for r in mine)
            failed = Counter(c for r in mine for c in set(r["failed"])).most_common(3)
            mean = {k: statistics.mean(r[k] for r in mine) for k in ("rounds", "calls", "tokens", "seconds")}
            print(
                f"{mode:10} {group:4} {len(mine):>3} {passed:>3}/{len(mine)} {100 * passed / len(mine):5.0f}% "
                f"{mean['rounds']:7.1f} {mean['calls']:6.1f} {mean['tokens']:8.0f} {mean['seconds']:7.0f}  "
                + "; ".join(f"{name} ({n})" for name, n in failed)
            )
            print(f"{'':15} fidelity: " + ", ".join(f"{k} {v}" for k, v in sorted(fidelity.items())))
    print("\nper blueprint:")
    for r in rows:
        verdict = "PASS" if r["passed"] else "fail"
        print(
            f"  {r['mode']:9} {r['set']} {r['name']:28} {r['cell']:6} {verdict} {r.get('fidelity', '-'):16} "
            f"{r['reason'][:100]}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--modes", default="archetype,agent")
    parser.add_argument("--sets", default="a,b")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--agent-calls", type=int, default=12)
    parser.add_argument("--agent-rounds", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="at most this many blueprints per set")
    parser.add_argument(
        "--stage1-from", type=Path, nargs="+", default=None, help="add these workspaces' blueprints to pool (b)"
    )
    parser.add_argument("--names", default="", help="comma-separated blueprint names to run (default: all)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="results file (JSON lines)")
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--fit", action="store_true", help="only the fit precision / recall table (no model)")
    args = parser.parse_args()
    if args.fit:
        fit_table()
        return
    OUT.mkdir(parents=True, exist_ok=True)
    results: Path = args.results
    if args.fresh:
        results.unlink(missing_ok=True)
    done = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    finished = {(r["mode"], r["set"], r["name"]) for r in done}
    sets: dict[str, Callable[[], list[tuple[str, Blueprint, frozenset[str]]]]] = {
        "a": leave_one_out,
        "b": lambda: stage1_blueprints(args.port, args.stage1_from),
    }
    current: set[tuple[str, str]] = set()  # (set, name) of this run's items: the table shows only these
    for group in args.sets.split(","):
        names = {n for n in args.names.split(",") if n}
        items = [item for item in sets[group]() if not names or item[0] in names][: args.limit]
        current |= {(group, name) for name, _, _ in items}
        for mode in args.modes.split(","):
            for name, blueprint, hidden in items:
                if (mode, group, name) in finished:
                    continue
                print(f"{mode} {group} {name} ({blueprint.taxonomy_id}) ...", flush=True)
                try:
                    row = {**run_one(mode, name, blueprint, hidden, args), "set": group}
                except ModelCallError as exc:  # the server, not the blueprint: not recorded, retried next run
                    print(f"  -> skipped (model server): {exc}", flush=True)
                    continue
                with results.open("a") as handle:
                    handle.write(json.dumps(row) + "\n")
                done.append(row)
                print(
                    f"  -> {'PASS' if row['passed'] else 'fail'} in {row['seconds']} s: {row['reason'][:100]}",
                    flush=True,
                )
    wanted = set(args.modes.split(","))
    table([r for r in done if r["mode"] in wanted and (r["set"], r["name"]) in current])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak resident memory of this process: {peak:.0f} MiB (containers and the model server not counted)")


if __name__ == "__main__":
    try:
        main()
    except DockerUnavailable as exc:  # said in one line, not as a traceback; the results file keeps what finished
        sys.exit(f"bench/implement.py: {exc}")
