"""Observer latency bench: agent step latency with and without an LLM-backed observer, side by side.

Mini-SWE-agent 2.4 (its own ``LitellmModel`` with tool calls and its ``mini.yaml`` prompts) runs
in a ``LocalEnvironment`` in a temporary folder against the scripted upstream
(``twinforge.harness.scripted_upstream``), which answers every call with the same failing shell
command after ``--think`` seconds (a model's time per call). Every check of the observer therefore
finds a loop and tool-call failures, and an observer with a model asks it for DO / DON'T lines each
time. The observer runs in shadow mode, so all conditions produce the same trajectory (it still
writes every note it would have delivered).

Conditions, each (condition, think time, repetition) in its own child process (its peak RSS):
- ``off``: ``DefaultAgent``, no observer;
- ``rules``: ``ObservedAgent``, rules and template guidance;
- ``llm-remote``: guidance written by an observer model on another machine, played by a second
  scripted server that answers valid DO / DON'T JSON after ``--remote-s`` seconds and uses no CPU
  here: does the agent wait for its observer?
- ``llm-local``: guidance written by the embedded model (llama-server, ``--observer-model``) on
  the same two cores as the agent: the model's CPU is taken from everything else on the machine.
With ``--classifier`` the LLM classifier also decides every class (``either``) in the LLM conditions.

Printed per think time and condition: agent step latency (median, p90; the whole ``step()`` on
the agent's thread: model call, command, the hand-over to the observer, the delivery check; the
first step, which warms LiteLLM up, and the step the call cap ends are left out), the
ratio of medians to ``off``, the observer model's calls and the share of the run it was busy,
and the child's peak resident memory. Rows are appended to bench/out/observer_latency.jsonl.

Usage:
    python bench/observer_latency.py [--steps 30] [--reps 3] [--think 0 0.5] [--observer-model gemma3-270m]
        [--observer-url http://127.0.0.1:8080/v1] [--classifier] [--interval 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out" / "observer_latency.jsonl"
CONDITIONS = ("off", "rules", "llm-remote", "llm-local")
ADVICE = '{"do": ["Read the error output before the next command."], "dont": ["Do not run the same command again."]}'
"""The remote observer model's answer (valid guidance JSON)."""
COMMAND = "cat config/missing-settings.yaml"


class CountingChat:
    """A chat model that counts its calls and the seconds they took, a call still running included."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0
        self.seconds = 0.0
        self.running: float | None = None
        self.lock = threading.Lock()

    def busy(self) -> float:
        """Seconds spent in calls so far."""
        with self.lock:
            return self.seconds + (time.perf_counter() - self.running if self.running is not None else 0.0)

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def complete(self, messages: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        with self.lock:
            self.running = started
        try:
            return self.inner.complete(messages, **kwargs)
        finally:
            with self.lock:
                self.calls += 1
                self.seconds += time.perf_counter() - started
                self.running = None


def child(args: argparse.Namespace) -> None:
    """One run of one condition; prints one JSON line."""
    think = args.think[0]
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment

    from twinforge.core.llm import make_chat_model
    from twinforge.core.settings import ModelSettings
    from twinforge.harness import MiniSweAgent, ModelEndpoint
    from twinforge.harness.agent import ObservedAgent
    from twinforge.harness.scripted_upstream import Script, scripted_upstream
    from twinforge.observer import Observer
    from twinforge.observer.classifier import MisbehaviourClassifier
    from twinforge.observer.guidance import GuidanceWriter
    from twinforge.observer.plan import DetectorPlan

    durations: list[float] = []

    class Timed:
        n_calls: int

        def step(self) -> list[dict[str, Any]]:
            started, calls = time.perf_counter(), self.n_calls
            try:
                return super().step()  # type: ignore[misc,no-any-return]
            finally:
                if calls >= 1 and self.n_calls > calls:  # the first call warms up LiteLLM; the last asks no model
                    durations.append(time.perf_counter() - started)

    class TimedDefault(Timed, DefaultAgent):
        pass

    class TimedObserved(Timed, ObservedAgent):
        pass

    counting: CountingChat | None = None
    observer: Observer | None = None
    remote = scripted_upstream(Script(side_text=ADVICE, think_s=args.remote_s))
    remote_url, _ = remote.__enter__()
    if args.child != "off":
        writer = GuidanceWriter()
        plan = None
        if args.child.startswith("llm"):
            settings = ModelSettings(
                base_url=remote_url if args.child == "llm-remote" else args.observer_url,
                model="local",
                structured_output="json_object",
                temperature=0.0,
                max_tokens=160,
                timeout_s=600,
                http_retries=1,
                validation_retries=1,
            )
            counting = CountingChat(make_chat_model(settings, role="observer"))
            writer = GuidanceWriter(model=counting)  # type: ignore[arg-type]
            if args.classifier:
                classifier = MisbehaviourClassifier(counting, max_steps=8)  # type: ignore[arg-type]
                plan = DetectorPlan(
                    choices={"reasoning": "either", "tool_failure": "either", "drift": "either"}, classifier=classifier
                )
        observer = Observer(interval=args.interval, writer=writer, plan=plan, shadow=True)
    with (
        tempfile.TemporaryDirectory() as tmp,
        scripted_upstream(Script(commands=[COMMAND] * (args.steps + 5), think_s=think)) as (url, _),
    ):
        harness = MiniSweAgent(action_mode="toolcall")
        config, model = harness._agent_config_and_model(ModelEndpoint(url, "bench-key", "scripted", 0.0, 200))
        config.update(step_limit=args.steps, cost_limit=0.0)
        environment = LocalEnvironment(cwd=tmp)
        agent = (
            TimedObserved(model, environment, observer=observer, **config)
            if observer is not None
            else TimedDefault(model, environment, **config)
        )
        started = time.perf_counter()
        info = agent.run(task="Fix the failing configuration loader.")
        wall = time.perf_counter() - started
        summary = observer.summary() if observer is not None else {}
        busy = counting.busy() if counting is not None else 0.0
        if observer is not None:
            observer.close()
    remote.__exit__(None, None, None)
    print(
        json.dumps(
            {
                "condition": args.child,
                "think_s": think,
                "classifier": bool(args.classifier and args.child.startswith("llm")),
                "exit": info.get("exit_status"),
                "steps": durations,
                "wall_s": wall,
                "llm_calls": counting.calls if counting else 0,
                "llm_seconds": busy,
                "checks": summary.get("checks", 0),
                "notes": len(summary.get("shadowed", [])),
                "errors": len(summary.get("errors", [])),
                "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30, help="agent steps per run")
    parser.add_argument("--reps", type=int, default=3, help="runs per condition and think time")
    parser.add_argument("--think", type=float, nargs="+", default=[0.0, 0.5], help="model seconds per agent call")
    parser.add_argument("--interval", type=int, default=3, help="observer check interval in steps")
    parser.add_argument("--observer-model", default="gemma3-270m", help="embedded model of the observer")
    parser.add_argument("--observer-url", default="", help="an OpenAI-compatible observer model instead")
    parser.add_argument("--port", type=int, default=8093, help="port of the embedded observer model")
    parser.add_argument("--remote-s", type=float, default=3.0, help="seconds per answer of the remote observer model")
    parser.add_argument("--classifier", action="store_true", help="the LLM classifier decides too (either)")
    parser.add_argument("--child", choices=CONDITIONS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    url = args.observer_url
    if not url:
        from twinforge.core.localmodel import get_spec, serve

        url = serve(get_spec(args.observer_model), port=args.port, n_ctx=8192).base_url
    rows: list[dict[str, Any]] = []
    OUT.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for rep in range(args.reps):
        for think in args.think:
            for condition in CONDITIONS:  # interleaved: machine load drifts alike over every condition
                command = [sys.executable, __file__, "--child", condition, "--steps", str(args.steps)]
                command += ["--think", str(think), "--interval", str(args.interval), "--observer-url", url]
                command += ["--remote-s", str(args.remote_s)]
                command += ["--classifier"] if args.classifier else []
                done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
                if done.returncode != 0:
                    sys.exit(f"{condition} (think {think} s) failed:\n{done.stderr[-3000:]}")
                row = json.loads(done.stdout.strip().splitlines()[-1]) | {"rep": rep, "observer_url": url}
                rows.append(row)
                with OUT.open("a") as sink:
                    sink.write(json.dumps(row) + "\n")
                print(
                    f"  rep {rep} think {think} s {condition}: {len(row['steps'])} steps, exit {row['exit']}",
                    flush=True,
                )
    print(
        f"agent step latency, Mini-SWE-agent tool calls on the scripted upstream, {args.steps} steps x {args.reps} "
        f"runs; observer every {args.interval} steps in shadow mode; observer model "
        f"{args.observer_url or args.observer_model}"
        f"{' (guidance + classifier)' if args.classifier else ' (guidance)'}"
    )
    print(f"  {'think':>5} {'condition':10} {'steps':>5} {'median ms':>9} {'p90 ms':>7} {'ratio':>6} "
          f"{'LLM calls':>9} {'LLM busy':>8} {'notes':>5} {'peak RSS MB':>11}")  # fmt: skip
    for think in args.think:
        base = 0.0
        for condition in CONDITIONS:
            mine = [r for r in rows if r["think_s"] == think and r["condition"] == condition]
            steps = [s for r in mine for s in r["steps"]]
            median = statistics.median(steps)
            base = base or median
            busy = sum(r["llm_seconds"] for r in mine) / sum(r["wall_s"] for r in mine)
            p90 = percentile(steps, 0.9)
            print(
                f"  {think:5.1f} {condition:10} {len(steps):5} {median * 1000:9.1f} {p90 * 1000:7.1f} "
                f"{median / base:6.3f} {sum(r['llm_calls'] for r in mine):9} {busy:8.0%} "
                f"{sum(r['notes'] for r in mine):5} {max(r['rss_mb'] for r in mine):11.0f}"
            )


if __name__ == "__main__":
    main()
