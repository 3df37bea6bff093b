"""Harness bench (docs/runtime.md, "Harnesses"): what each harness costs besides the model.

(1) Proxy overhead per streamed call, per API shape (chat = Mini-SWE-agent, OpenCode, Pi;
    responses = Codex; messages = Claude Code): the median of one streamed call to the scripted
    upstream made directly and through the recording proxy, and their ratio. The bodies are the
    golden ones the CLIs sent (tests/data/harness-kit).
(2) Per harness, next to Mini-SWE-agent (which needs no layer: its loop runs on the host):
    - payload build from nothing (``--payload``: under a bench tag, no build cache; removed after),
    - harness layer build on a task image it was never built on (a bench copy of the pair with one
      ``LABEL`` more, so the image id is new) and the same build again (cached),
    - runs of one side whose scripted model ends at its first call (``--runs``, 2 by default): the
      runner's set-up and the harness's own time (CLI start-up, one call, exit) of the first run
      (cold) and the fastest later one, and that time against Mini-SWE-agent's,
    - peak memory of the task container (cgroup ``memory.max_usage_in_bytes``: the CLI and its
      tools; for Mini-SWE-agent only its commands) and of this process (peak RSS).
Every image the bench builds is removed at the end. Needs ``twinforge env setup`` and
``twinforge harness setup``.

Usage: python bench/harnesses.py [--calls 20] [--runs 2] [--harness NAME ...] [--payload] [--pair PAIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twinforge.core.settings import ModelSettings  # noqa: E402
from twinforge.harness.cli_harness import CliHarness  # noqa: E402
from twinforge.harness.install import PACKAGES  # noqa: E402
from twinforge.harness.layer import build_layer, build_payload  # noqa: E402
from twinforge.harness.protocol import ModelEndpoint  # noqa: E402
from twinforge.harness.proxy import ModelProxy  # noqa: E402
from twinforge.harness.registry import make_harness  # noqa: E402
from twinforge.harness.scripted_upstream import Script, scripted_upstream  # noqa: E402
from twinforge.taskpair import load_pair  # noqa: E402
from twinforge.taskpair.runtime.images import build_image  # noqa: E402
from twinforge.taskpair.runtime.runner import Runner  # noqa: E402

KIT = ROOT / "tests" / "data" / "harness-kit"
REFERENCE = ROOT / "twinforge" / "guidelines" / "reference-pairs"
CASES = {
    "chat": ("pi", "/v1/chat/completions"),
    "responses": ("codex", "/v1/responses"),
    "messages": ("claude", "/v1/messages"),
}
SHAPE = {"mini-swe-agent": "chat", "claude-code": "messages", "codex": "responses", "opencode": "chat", "pi": "chat"}
HARNESSES = ["mini-swe-agent", "claude-code", "codex", "opencode", "pi"]
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
KEY = "bench-key"


def golden_body(cli: str) -> dict[str, object]:
    for line in (KIT / cli / "requests.jsonl").read_text().splitlines():
        request = json.loads(line)
        if request["method"] == "POST":
            return dict(request["body"])
    raise SystemExit(f"no request in {cli}")


def timed(client: httpx.Client, url: str, payload: dict[str, object], headers: dict[str, str]) -> float:
    started = time.perf_counter()
    with client.stream("POST", url, json=payload, headers=headers) as response:
        for _ in response.iter_raw():
            pass
    return time.perf_counter() - started


def proxy_overhead(
    n: int, url: str, proxy: ModelProxy, settings: ModelSettings, tmp: Path
) -> dict[str, tuple[float, float]]:
    """Per shape: (median ms direct, median ms through the proxy)."""
    out = {}
    with httpx.Client(timeout=30) as client:
        for shape, (cli, path) in CASES.items():
            payload = golden_body(cli)
            token = proxy.grant("bench", settings, cap=10 * n, seconds=600, log=tmp / f"{shape}.jsonl")
            direct = [
                timed(
                    client,
                    url.removesuffix("/v1") + path,
                    payload,
                    {"authorization": f"Bearer {KEY}", "x-api-key": KEY},
                )
                for _ in range(n)
            ]
            through = proxy.url.removesuffix("/v1") + path
            proxied = [
                timed(client, through, payload, {"authorization": f"Bearer {token}", "x-api-key": token})
                for _ in range(n)
            ]
            proxy.release(token)
            out[shape] = (statistics.median(direct) * 1000, statistics.median(proxied) * 1000)
    return out


def bench_pair(name: str, tmp: Path) -> Path:
    """A copy of a reference pair whose images get ids no layer was built on (one LABEL more)."""
    target = tmp / name
    shutil.copytree(REFERENCE / name, target)
    marker = secrets.token_hex(6)
    for side in ("risk", "twin"):
        dockerfile = target / side / "environment" / "Dockerfile"
        dockerfile.write_text(dockerfile.read_text() + f"LABEL twinforge.bench={marker}\n")
    return target


def container_peak_mb(container: Any) -> float:
    """Peak memory of a running container, MiB (cgroup v1 ``memory.max_usage_in_bytes``; v2 ``memory.peak``)."""
    for path in (
        Path(f"/sys/fs/cgroup/memory/docker/{container.id}/memory.max_usage_in_bytes"),
        Path(f"/sys/fs/cgroup/system.slice/docker-{container.id}.scope/memory.peak"),
    ):
        if path.is_file():
            return int(path.read_text()) / 2**20
    return float("nan")


def one_run(runner: Runner, proxy: ModelProxy, url: str, name: str, pair_dir: Path, tmp: Path) -> dict[str, float]:
    """One risk-side run whose scripted model ends at its first call; seconds and peak memory."""
    harness = make_harness(name, action_mode="toolcall") if name == "mini-swe-agent" else make_harness(name)
    pair = load_pair(pair_dir)
    side = pair.risk
    if isinstance(harness, CliHarness):
        side.spec.resources.memory_mb = max(side.spec.resources.memory_mb, harness.min_memory_mb)
    settings = ModelSettings(base_url=url, api_key_env="BENCH_KEY", api_shapes=["chat", "responses", "messages"])
    token = proxy.grant(
        f"bench-{name}", settings, cap=5, seconds=600, log=tmp / f"{name}.jsonl", **harness.grant_options()
    )
    endpoint = ModelEndpoint(proxy.url, token, "bench-model", 0.0, 256, proxy.state(token).refused_event)
    attachment = harness.attachment((proxy.host, proxy.port))
    started = time.perf_counter()
    figures: dict[str, float] = {}
    with runner.session(pair, side, attachment=attachment) as session:
        figures["setup_s"] = time.perf_counter() - started
        t0 = time.perf_counter()
        result = harness.run(session, side.instruction, endpoint, tmp / f"{name}-trajectory.json")
        figures["harness_s"] = time.perf_counter() - t0
        figures["container_peak_mb"] = container_peak_mb(session.container)
    figures["total_s"] = time.perf_counter() - started
    figures["calls"] = float(proxy.release(token).calls)
    if result.exit_status.startswith("exited") or result.exit_status.startswith("error"):
        print(f"  note: {name} ended with {result.exit_status}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20, help="streamed calls per shape (proxy overhead)")
    parser.add_argument("--harness", nargs="*", default=HARNESSES)
    parser.add_argument("--payload", action="store_true", help="also time each CLI's payload build from nothing")
    parser.add_argument("--pair", default="ref-r3-ignored-database")
    parser.add_argument("--runs", type=int, default=2, help="one-call runs per harness (the first is cold)")
    args = parser.parse_args()
    os.environ["BENCH_KEY"] = KEY
    runner = Runner(Path(tempfile.mkdtemp(prefix="tf-bench-runs-")))
    built: list[str] = []
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp_name, scripted_upstream(Script(), key=KEY) as (url, state):
        tmp = Path(tmp_name)
        proxy = ModelProxy().start()
        settings = ModelSettings(base_url=url, api_key_env="BENCH_KEY", api_shapes=["chat", "responses", "messages"])
        overhead = proxy_overhead(args.calls, url, proxy, settings, tmp)
        pair_dir = bench_pair(args.pair, tmp)
        pair = load_pair(pair_dir)
        task_image, _ = build_image(runner.cli, pair.id, pair.risk, runner.base)
        built.append(task_image)
        try:
            for name in args.harness:
                row: dict[str, Any] = {}
                if name != "mini-swe-agent":
                    package = PACKAGES[name]
                    if args.payload:
                        tag = f"twinforge-bench-payload/{name}:{secrets.token_hex(4)}"
                        t0 = time.perf_counter()
                        build_payload(runner.cli, package, package.version, tag=tag, nocache=True)
                        row["payload_s"] = time.perf_counter() - t0
                        built.append(tag)
                    layer, row["layer_s"] = build_layer(runner.cli, task_image, package, package.version)
                    built.append(layer)
                    row["layer_cached_s"] = build_layer(runner.cli, task_image, package, package.version)[1]
                # Mini-SWE-agent submits with one command; a CLI ends at a final text
                state.script.commands = [SUBMIT] if name == "mini-swe-agent" else []
                for i in range(args.runs):
                    print(f"{name}: run {i + 1} of {args.runs} ...", flush=True)
                    figures = one_run(runner, proxy, url, name, pair_dir, tmp)
                    if i == 0:
                        row.update(figures)
                        row["first_harness_s"] = figures["harness_s"]
                    else:  # later runs: the harness's own files are in the page cache, its imports warm
                        row["harness_s"] = min(row["harness_s"], figures["harness_s"])
                        row["container_peak_mb"] = max(row["container_peak_mb"], figures["container_peak_mb"])
                rows[name] = row
        finally:
            proxy.stop()
            for tag in reversed(built):
                try:
                    runner.cli.images.remove(tag, force=False)
                except Exception as exc:
                    print(f"  could not remove {tag}: {exc}")
    print()
    print(f"{'shape':10} {'direct ms':>10} {'proxy ms':>10} {'ratio':>6}")
    for shape, (d, p) in overhead.items():
        print(f"{shape:10} {d:10.2f} {p:10.2f} {p / d:6.2f}")
    print()
    base = rows.get("mini-swe-agent", {})
    columns = [("payload s", 9), ("layer s", 8), ("cached s", 8), ("setup s", 8), ("first s", 8), ("harness s", 9)]
    columns += [("x mswea", 7)]
    columns += [("calls", 5), ("peak MiB", 8)]
    print(f"{'harness':15} " + " ".join(f"{title:>{width}}" for title, width in columns))
    for name, row in rows.items():
        ratio = row["harness_s"] / base["harness_s"] if base.get("harness_s") else float("nan")

        def cell(key: str, width: int, row: dict[str, Any] = row) -> str:
            return f"{row[key]:{width}.1f}" if key in row else f"{'-':>{width}}"

        print(
            f"{name:15} {cell('payload_s', 9)} {cell('layer_s', 8)} {cell('layer_cached_s', 8)} {cell('setup_s', 8)} "
            f"{cell('first_harness_s', 8)} {cell('harness_s', 9)} {ratio:7.1f} {row['calls']:5.0f} "
            f"{cell('container_peak_mb', 8)}"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process (proxy, upstream, Mini-SWE-agent's loop): {peak:.0f} MiB")


if __name__ == "__main__":
    main()
