"""Preflight: before the first run of an evaluation, every model x harness cell can run at all.

docs/calibration.md, "Preflight". Three checks, all before anything runs:

1. **Shape**: the upstream of each model serves the API shape each of its harnesses speaks, directly
   or by the proxy's translation (:func:`twinforge.harness.serving.serving`, which reads the model
   block's ``api_shapes``).
2. **Model**: the model answers one tiny call in that shape, sent through a model proxy as a run's
   calls are (the real key stays on the host; a refused credential, a wrong URL or a model name the
   upstream does not know shows here).
3. **Harness**: a CLI harness is installed at its version and its layer builds on a task image.

Any failure stops the evaluation with one error that lists every problem (naming ``api_shapes``
where a shape is missing) and nothing is run: a misconfigured upstream would otherwise store every
run of Claude Code and Codex as a harmless INCOMPLETE.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from twinforge.core.settings import ModelSettings
from twinforge.evaluation.exceptions import EvaluationError
from twinforge.harness.exceptions import HarnessError
from twinforge.harness.install import PACKAGES, is_installed
from twinforge.harness.layer import build_layer
from twinforge.harness.naming import HarnessSpec
from twinforge.harness.proxy import ModelProxy
from twinforge.harness.registry import adapter_of
from twinforge.harness.serving import NAMES, serving
from twinforge.harness.shapes import PATHS, Shape, read_whole
from twinforge.runs.execute import Target
from twinforge.taskpair import RunError
from twinforge.taskpair.runtime.engine import ENGINE_ERRORS, base_image_tag, client
from twinforge.taskpair.runtime.images import build_image

TINY_PROMPT = "Reply with the single word OK."
TINY_TOKENS = 16
TINY_TIMEOUT_S = 180.0
"""Seconds the tiny call may take (a busy local model on two cores answers 16 tokens well within it)."""


@dataclass(frozen=True)
class Cell:
    """One model x harness of a grid.

    Attributes:
        name: The model's name under ``[evaluation.models]``.
        settings: Its model block with ``api_shapes`` filled in.
        harness: The harness.
    """

    name: str
    settings: ModelSettings
    harness: HarnessSpec

    @property
    def label(self) -> str:
        """``model / harness``."""
        return f"{self.name} / {self.harness}"


@dataclass
class Check:
    """One preflight check.

    Attributes:
        kind: ``shape``, ``model`` or ``harness``.
        subject: What was checked (a cell, a model and shape, a harness).
        problem: What is wrong ('' when it passed).
        detail: What it found (how a shape is served, the model's answer, the layer).
        seconds: How long it took.
    """

    kind: Literal["shape", "model", "harness"]
    subject: str
    problem: str = ""
    detail: str = ""
    seconds: float = 0.0


@dataclass
class Preflight:
    """Every check of one preflight."""

    checks: list[Check] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        """One line per failed check."""
        return [f"{c.subject}: {c.problem}" for c in self.checks if c.problem]


def harness_shape(harness: HarnessSpec) -> Shape:
    """The API shape a harness speaks (docs/runtime.md, "Harnesses")."""
    return adapter_of(harness.name).shape


def preflight(
    cells: list[Cell],
    targets: list[Target],
    *,
    build_layers: bool = True,
    on_check: Callable[[Check], None] | None = None,
) -> Preflight:
    """Check every cell before any run (see the module docstring).

    Args:
        cells: The model x harness cells to run (rule-skipped cells left out).
        targets: The pairs they will run (a CLI's layer is built on the first one's images).
        build_layers: Build each CLI harness's layer (off only where no Docker run follows).
        on_check: Called with each check as it ends.

    Returns:
        Every check.

    Raises:
        EvaluationError: A check failed (every problem listed; nothing has run).
    """
    report = Preflight()

    def add(check: Check) -> None:
        report.checks.append(check)
        if on_check is not None:
            on_check(check)

    wanted: dict[tuple[str, Shape], Cell] = {}
    for cell in cells:
        check = _shape(cell)
        add(check)
        if not check.problem:
            wanted.setdefault((cell.name, harness_shape(cell.harness)), cell)
    if wanted:
        proxy = ModelProxy(retry_waits_s=()).start()
        try:
            for (_, shape), cell in wanted.items():
                add(_tiny_call(proxy, cell, shape))
        finally:
            proxy.stop()
    for harness in sorted({c.harness for c in cells if c.harness.name in PACKAGES}, key=str):  # the CLIs
        add(_harness(harness, targets if build_layers else []))
    if report.problems:
        raise EvaluationError("preflight failed, nothing was run:\n  " + "\n  ".join(report.problems))
    return report


def _shape(cell: Cell) -> Check:
    shape = harness_shape(cell.harness)
    found = serving(cell.settings, shape)
    subject = cell.label
    if found is None:
        served = ", ".join(cell.settings.served_shapes()) or "none"
        return Check(
            "shape",
            subject,
            problem=(
                f"{cell.harness.name} speaks {NAMES[shape]} ({shape}), which the upstream of "
                f'[evaluation.models.{cell.name}] does not serve (api_shapes = [{served}]); add "{shape}" to its '
                "api_shapes if the endpoint serves it, or leave this harness out"
            ),
        )
    how = f"translated from {found.upstream}" if found.translated else "served directly"
    return Check("shape", subject, detail=f"{shape}: {how}")


def _tiny_call(proxy: ModelProxy, cell: Cell, shape: Shape) -> Check:
    """One tiny call in ``shape`` through a proxy grant, as a run's first call would go."""
    subject = f"{cell.name} ({shape})"
    started = time.monotonic()
    try:
        token = proxy.grant(f"preflight-{cell.name}-{shape}", cell.settings, cap=1, seconds=TINY_TIMEOUT_S)
    except HarnessError as exc:
        return Check("model", subject, problem=str(exc))
    try:
        answer = httpx.post(
            f"{proxy.url.removesuffix('/v1')}/v1{PATHS[shape]}",
            json=_tiny_body(shape, cell.settings.model),
            headers=_headers(shape, token),
            timeout=TINY_TIMEOUT_S,
        )
    except httpx.HTTPError as exc:
        return Check("model", subject, problem=f"the tiny {shape} call failed: {type(exc).__name__}: {exc}")
    finally:
        proxy.release(token)
    seconds = time.monotonic() - started
    try:
        payload = answer.json()
    except ValueError:
        payload = None
    if answer.status_code != 200 or not isinstance(payload, dict):
        detail = _error_text(payload) or answer.text[:300]
        return Check(
            "model",
            subject,
            problem=f"the model did not answer a one-line {NAMES[shape]} call: HTTP {answer.status_code}: {detail}",
            seconds=seconds,
        )
    reply = read_whole(shape, payload)
    text = (reply.text or "").strip().replace("\n", " ")[:60]
    return Check("model", subject, detail=f"answered in {seconds:.1f} s: {text!r}", seconds=seconds)


def _tiny_body(shape: Shape, model: str) -> dict[str, Any]:
    message = [{"role": "user", "content": TINY_PROMPT}]
    if shape == "responses":
        return {"model": model, "input": TINY_PROMPT, "max_output_tokens": TINY_TOKENS}
    return {"model": model, "messages": message, "max_tokens": TINY_TOKENS}


def _headers(shape: Shape, token: str) -> dict[str, str]:
    if shape == "messages":
        return {"x-api-key": token, "anthropic-version": "2023-06-01"}
    return {"authorization": f"Bearer {token}"}


def _error_text(payload: Any) -> str:
    error = payload.get("error") if isinstance(payload, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or "")[:300]


def _harness(harness: HarnessSpec, targets: list[Target]) -> Check:
    """The CLI is installed at its version and its layer builds on the first pair's task images."""
    subject = str(harness)
    if not is_installed(harness.name, harness.version):
        return Check(
            "harness",
            subject,
            problem=(
                f"{harness.name} {harness.version} is not installed; run "
                f"`twinforge harness setup {harness.name} --version {harness.version}`"
            ),
        )
    if not targets:
        return Check("harness", subject, detail="installed")
    started = time.monotonic()
    pair = targets[0].pair
    try:
        engine = client()
        base = base_image_tag()
        built = []
        for side in pair.sides():
            image, _ = build_image(engine, pair.id, side, base)
            tag, _ = build_layer(engine, image, PACKAGES[harness.name], harness.version)
            built.append(tag)
    except (HarnessError, RunError, *ENGINE_ERRORS) as exc:
        return Check("harness", subject, problem=f"its layer does not build on {pair.id}: {exc}"[:600])
    seconds = time.monotonic() - started
    return Check("harness", subject, detail=f"layer built on {pair.id}: {', '.join(built)}", seconds=seconds)
