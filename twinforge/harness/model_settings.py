"""A model block's own settings applied to every call, in the upstream's shape (docs/runtime.md, "Model channel").

The maintainer's per-model choice (``reasoning_effort``, ``thinking_budget``) holds for every
harness alike, as the reply budget does (:func:`twinforge.harness.shapes.capped_reply`); what was
sent (temperature, reply budget, reasoning) is recorded with each call.
"""

from __future__ import annotations

from typing import Any

from twinforge.core.settings import ModelSettings
from twinforge.harness.shapes import REPLY_LIMITS, Shape


def apply_model_settings(shape: Shape, body: dict[str, Any], settings: ModelSettings) -> dict[str, Any]:
    """``body`` with the model block's reasoning settings (a new dict; ``body`` is not changed).

    Chat Completions gets ``reasoning_effort``, Responses ``reasoning.effort`` (its ``summary`` kept),
    Messages ``thinking = {type: enabled, budget_tokens}`` when the budget fits under ``max_tokens``
    (the API's rule), without ``temperature`` (the API takes only the default with thinking on).
    """
    out = dict(body)
    effort = settings.reasoning_effort
    if effort is not None and shape == "chat":
        out["reasoning_effort"] = effort
    elif effort is not None and shape == "responses":
        reasoning = out.get("reasoning")
        out["reasoning"] = {**(reasoning if isinstance(reasoning, dict) else {}), "effort": effort}
    budget = settings.thinking_budget
    if budget is not None and shape == "messages":
        limit = out.get("max_tokens")
        if isinstance(limit, int) and budget < limit:
            out["thinking"] = {"type": "enabled", "budget_tokens": budget}
            out.pop("temperature", None)
        else:
            out.pop("thinking", None)
    return out


def sent_settings(shape: Shape, body: dict[str, Any]) -> dict[str, Any]:
    """What a call asked of the model, for the record: temperature, reply budget and reasoning."""
    reasoning = body.get("reasoning")
    thinking = body.get("thinking")
    return {
        "temperature": body.get("temperature"),
        "max_tokens": next((body[k] for k in REPLY_LIMITS[shape] if k in body), None),
        "reasoning_effort": body.get("reasoning_effort")
        or (reasoning.get("effort") if isinstance(reasoning, dict) else None),
        "thinking_budget": thinking.get("budget_tokens") if isinstance(thinking, dict) else None,
    }
