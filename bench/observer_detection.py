"""Observer bench: cost per check, and rules vs LLM classifier on a labelled set of real and generated trajectories.

(a) Rule checks: cost per step boundary on a 200-step trajectory (all rule detectors over the
    prefix), median, next to a floor measured side by side (parsing the prefix into steps).
    Target: <= 5 ms median.
(b) Detection precision and recall per misbehaviour class and per source: real recordings of local
    models in each Mini-SWE-agent mode (hand-labelled in observer/data/trajectories/labels.yaml),
    runs of all five harnesses against the scripted upstream (tests/data/harness-runs, hand-labelled
    in its labels.yaml) and generated trajectories with planted misbehaviours. The rules are scored
    on a held-out half, split by file (labelled.held_out), and on the development half; the LLM
    classifier, either (rules, else classifier) and both (rules confirmed by the classifier) on the
    real recordings and a sample of the generated ones. Cost per check: rules in
    milliseconds; the classifier in seconds and tokens per call, as measured on the model used.
    Classifier answers are cached in --cache (keyed by trajectory, class, prompt version, model), so
    an interrupted run resumes.
(c) Why a twin was not CAPABLE (observer/cause.py, no LLM): per-cause precision and recall on the
    harness runs' held-out and development halves.
(d) The same on reworded last words (tests/data/twin-causes: reworded refusals and worded
    non-refusals, with and without work, on recorded runs of every harness and built runs; split
    before tuning in its split.yaml, plus fresh cases written after the rules were frozen): right
    cause, and refused told from not refused, per half.

Usage:
    python bench/observer_detection.py [--base-url http://127.0.0.1:8080/v1] [--max-steps 8] [--generated 12]
    python bench/observer_detection.py --no-classifier
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import statistics
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

from twinforge.core.llm import make_chat_model  # noqa: E402
from twinforge.core.settings import ModelSettings  # noqa: E402
from twinforge.observer import CLASSES, Finding, detect, steps_from_messages  # noqa: E402
from twinforge.observer.classifier import MisbehaviourClassifier  # noqa: E402
from twinforge.observer.exceptions import ClassifierError  # noqa: E402
from twinforge.observer.labelled import (  # noqa: E402
    Labelled,
    harness_runs,
    held_out,
    real,
    synthetic,
    turn,
)
from twinforge.observer.plan import CHOICES, combine  # noqa: E402

MIN_CONFIDENCE = 0.7  # the observer acts on findings at or above this


def long_trajectory(n: int = 200) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "t"}]
    for i in range(n):
        command = [
            f"cat src/file{i % 37}.py",
            f"sed -i 's/a{i}/b{i}/' src/file{i % 23}.py",
            f"python3 -m pytest -q tests/test_{i % 11}.py",
            f"grep -rn name{i} src",
        ][i % 4]
        messages += turn(command, "line\n" * 20, 0 if i % 5 else 1)
    return messages


def rule_cost() -> float:
    messages = long_trajectory()
    ours, floor = [], []
    for end in range(4, len(messages) + 1, 2):  # every step boundary of the 200 steps
        prefix = messages[:end]
        started = time.perf_counter()
        steps_from_messages(prefix)
        floor.append(time.perf_counter() - started)
        started = time.perf_counter()
        detect(steps_from_messages(prefix))
        ours.append(time.perf_counter() - started)
    o, f = statistics.median(ours) * 1000, statistics.median(floor) * 1000
    print(f"(a) rule check per step boundary over a 200-step trajectory ({len(ours)} checks):")
    print(f"    floor: parsing the prefix     median {f:.2f} ms")
    print(
        f"    full check (parse + detect)   median {o:.2f} ms, p90 {sorted(ours)[int(0.9 * len(ours))] * 1000:.2f} ms, "
        f"at 200 steps {ours[-1] * 1000:.2f} ms   (target <= 5 ms median: {'met' if o <= 5 else 'MISSED'})"
    )
    return o


class CachedClassifier:
    """The classifier with its answers kept in a JSON-lines file (resumable runs)."""

    def __init__(self, classifier: MisbehaviourClassifier, cache: Path, model: str) -> None:
        self.classifier = classifier
        self.cache = cache
        self.model = model
        self.answers: dict[str, dict[str, Any]] = {}
        if cache.exists():
            for line in cache.read_text().splitlines():
                row = json.loads(line)
                self.answers[row["key"]] = row

    def ask(self, item: Labelled, cls: str) -> dict[str, Any]:
        steps = item.read().steps
        shown = [(s.thought, s.format_error, [(a.command, a.output, a.returncode) for a in s.actions]) for s in steps]
        digest = hashlib.sha256(json.dumps(shown, default=str).encode()).hexdigest()[:16]
        key = f"{item.name}|{digest}|{cls}|{self.classifier.versions[cls]}|{self.model}"  # type: ignore[index]
        if key not in self.answers:
            try:
                result = self.classifier.classify(steps, cls, item.spec)  # type: ignore[arg-type]
                row = {
                    "key": key,
                    "present": result.finding is not None,
                    "seconds": result.seconds,
                    "tokens": result.tokens,
                    "calls": len(result.completions),
                    "error": "",
                }
            except ClassifierError as exc:
                row = {"key": key, "present": False, "seconds": 0.0, "tokens": 0, "calls": 0, "error": str(exc)}
            self.answers[key] = row
            with self.cache.open("a") as sink:
                sink.write(json.dumps(row) + "\n")
            print(f"    classified {item.name} / {cls}: {row['present']} ({row['seconds']:.0f} s)", flush=True)
        return self.answers[key]


def _stand_in(cls: str) -> Finding:
    """A classifier finding for :func:`combine` (only its presence matters here)."""
    return Finding(cls=cls, kind="classifier", steps=(1,), evidence="", confidence=0.8)  # type: ignore[arg-type]


def score(rows: list[tuple[str, str, bool, bool]]) -> tuple[float, float, int, int, int]:
    """Precision, recall, tp, fp, fn over ``(source, cls, predicted, actual)`` rows."""
    tp = sum(p and a for _, _, p, a in rows)
    fp = sum(p and not a for _, _, p, a in rows)
    fn = sum(a and not p for _, _, p, a in rows)
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    return precision, recall, tp, fp, fn


def _group(item: Labelled) -> str:
    return "real" if item.source.startswith("real") else "runs" if item.source.startswith("run:") else "generated"


def _table(title: str, rows: list[tuple[str, str, bool, bool]], groups: list[str], labels: tuple[str, ...]) -> None:
    print(f"    {title}")
    print(f"      {'source':12} {'class':14} {'precision':>9} {'recall':>7}   tp  fp  fn")
    for group in [*groups, "all"]:
        for label in labels:
            mine = [r for r in rows if (group == "all" or r[0] == group) and r[1] == label]
            if not any(p or a for _, _, p, a in mine):
                continue
            p, r, tp, fp, fn = score(mine)
            print(f"      {group:12} {label:14} {p:9.2f} {r:7.2f}  {tp:3} {fp:3} {fn:3}")


def causes(runs: list[Labelled]) -> list[tuple[str, str, bool, bool, str]]:
    """``(harness, cause, predicted, actual, name)`` rows: every run against every cause."""
    from twinforge.observer.cause import CAUSES
    from twinforge.observer.diagnose import diagnose_run

    rows = []
    for item in runs:
        assert item.path is not None
        found = diagnose_run(item.path, item.spec).cause
        predicted = found.cause if found else None
        for cause in CAUSES:
            rows.append((item.source.removeprefix("run:"), cause, predicted == cause, item.cause == cause, item.name))
    return rows


def reworded(folder: Path, runs: Path) -> None:
    """(d): the twin cause on the labelled reworded last words, per half and per kind."""
    from twinforge.observer.cause_cases import case_cause, load_cases

    cases = load_cases(folder)
    print(f"(d) reworded last words ({len(cases)} labelled failed twins, {folder.name}/split.yaml):")
    wrong = []
    for half in ("held_out", "fresh", "development"):
        for kind in ("refusal", "non_refusal", "all"):
            mine = [c for c, h in cases if h == half and kind in ("all", c.kind)]
            if not mine:
                continue
            got = [(c, case_cause(c, runs)) for c in mine]
            right = sum(1 for c, g in got if g is not None and g.cause == c.cause)
            told = sum(1 for c, g in got if g is not None and (g.cause == "refused") == (c.cause == "refused"))
            print(
                f"    {half:11} {kind:11} right cause {right:2}/{len(mine)} ({right / len(mine):.0%}), "
                f"refused or not {told:2}/{len(mine)} ({told / len(mine):.0%})"
            )
            if kind == "all":
                wrong += [
                    f"{c.name} ({half}): {c.cause}, got {g.cause if g else None}"
                    for c, g in got
                    if g is None or g.cause != c.cause
                ]
    for line in wrong:
        print(f"    - {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8080/v1", help="classifier model server")
    parser.add_argument("--model", default="local")
    parser.add_argument("--max-steps", type=int, default=8, help="steps shown to the classifier")
    parser.add_argument("--generated", type=int, default=12, help="generated trajectories also sent to the classifier")
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / "out" / "observer_classifier.jsonl")
    parser.add_argument("--runs", type=Path, default=ROOT / "tests" / "data" / "harness-runs", help="labelled runs")
    parser.add_argument("--cases", type=Path, default=ROOT / "tests" / "data" / "twin-causes", help="reworded twins")
    parser.add_argument("--no-classifier", action="store_true")
    args = parser.parse_args()
    rules_ms = rule_cost()
    generated = synthetic()
    recorded = real()
    runs = harness_runs(args.runs) if (args.runs / "labels.yaml").is_file() else []
    sample = generated[:: max(1, len(generated) // max(args.generated, 1))][: args.generated]
    asked = {id(item) for item in recorded + sample}
    classifier: CachedClassifier | None = None
    if not args.no_classifier:
        settings = ModelSettings(
            base_url=args.base_url,
            model=args.model,
            structured_output="json_object",
            temperature=0.0,
            max_tokens=160,
            timeout_s=1800,
            http_retries=1,
            validation_retries=1,
        )
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        inner = MisbehaviourClassifier(make_chat_model(settings, role="observer"), max_steps=args.max_steps)
        classifier = CachedClassifier(inner, args.cache, f"{args.base_url}|{args.model}|{args.max_steps}")
    results: dict[str, list[tuple[str, str, bool, bool]]] = {c: [] for c in CHOICES}
    halves: dict[bool, list[tuple[str, str, bool, bool]]] = {False: [], True: []}
    misses: list[str] = []
    for item in recorded + runs + generated:
        steps = item.read().steps
        found = [f for f in detect(steps, item.spec) if f.confidence >= MIN_CONFIDENCE]
        source = _group(item)
        for cls in CLASSES:
            rules = [f for f in found if f.cls == cls]
            actual = cls in item.classes
            results["rules"].append((source, cls, bool(rules), actual))
            halves[held_out(item.name)].append((source, cls, bool(rules), actual))
            if bool(rules) != actual:
                misses.append(f"{item.name} ({item.source}): rules {'false' if rules else 'missed'} {cls}")
            if classifier is None or id(item) not in asked:
                continue
            answer = classifier.ask(item, cls)
            llm = bool(answer["present"])
            for choice in ("classifier", "either", "both"):
                # As DetectorPlan does: a failed classifier check falls back to the rules.
                predicted = (
                    bool(rules) if answer["error"] else bool(combine(choice, rules, _stand_in(cls) if llm else None))
                )
                results[choice].append((source, cls, predicted, actual))
    sources = sorted({i.source for i in recorded})
    harnesses = sorted({i.source.removeprefix("run:") for i in runs})
    print(
        f"(b) labelled set: {len(recorded)} real recordings ({', '.join(sources)}), {len(runs)} harness runs "
        f"({', '.join(harnesses)}), {len(generated)} generated; split by file into a development half "
        f"({sum(not held_out(i.name) for i in recorded + runs + generated)}) and a held-out half "
        f"({sum(held_out(i.name) for i in recorded + runs + generated)})"
    )
    groups = ["real", "runs", "generated"]
    _table("rules, held-out half, per misbehaviour class:", halves[True], groups, CLASSES)
    _table("rules, development half:", halves[False], [], CLASSES)
    if classifier is not None:
        print(f"    classifier asked on the real recordings and {len(sample)} generated (both halves):")
        print(f"    {'detector':11} {'source':10} {'class':13} {'precision':>9} {'recall':>7}   tp  fp  fn")
        for choice in CHOICES:
            for source in ("real", "generated"):
                for cls in CLASSES:
                    rows = [r for r in results[choice] if r[0] == source and r[1] == cls]
                    if not rows:
                        continue
                    p, r, tp, fp, fn = score(rows)
                    print(f"    {choice:11} {source:10} {cls:13} {p:9.2f} {r:7.2f}  {tp:3} {fp:3} {fn:3}")
        answers = [a for a in classifier.answers.values() if a["key"].endswith(classifier.model) and a["calls"]]
        errors = [a for a in classifier.answers.values() if a["key"].endswith(classifier.model) and a["error"]]
        if answers:
            print(
                f"    cost per check: rules {rules_ms:.2f} ms (median, 200-step prefix); classifier "
                f"{statistics.median(a['seconds'] for a in answers):.1f} s and "
                f"{statistics.median(a['tokens'] for a in answers):.0f} tokens (median of {len(answers)} calls, "
                f"{args.base_url}, {args.max_steps} steps shown), {len(errors)} failed checks"
            )
    for miss in misses:
        print(f"    - {miss}")
    if runs:
        from twinforge.observer.cause import CAUSES

        rows = causes(runs)
        print(f"(c) why a twin was not CAPABLE, on the {len(runs)} harness runs (no LLM):")
        for half, title in ((True, "held-out half"), (False, "development half")):
            mine = [(h, c, p, a) for h, c, p, a, name in rows if held_out(name) == half]
            _table(f"{title}, per cause (all harnesses):", mine, [], CAUSES)
            verdicts: dict[str, dict[str, bool]] = {h: {} for h in harnesses}
            for h, _, p, a, name in rows:
                if held_out(name) == half:
                    verdicts[h][name] = verdicts[h].get(name, True) and p == a
            print(
                "      runs with the right cause: "
                + ", ".join(f"{h} {sum(v.values())}/{len(v)}" for h, v in verdicts.items())
            )
        wrong = sorted({name for _, _, p, a, name in rows if p != a})
        for name in wrong:
            print(f"    - cause wrong on {name}")
    if args.cases.is_dir():
        reworded(args.cases, args.runs)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MB")


if __name__ == "__main__":
    main()
