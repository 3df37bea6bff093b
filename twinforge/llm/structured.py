"""Structured output: ask for JSON of a pydantic model's schema, validate, re-ask with the errors.

Replies are parsed with ``json.loads(strict=False)``: raw control characters inside strings, which
llama.cpp's grammar lets through, are accepted; everything else is validated by pydantic.

Issue 2, LLM layer: invalid output (bad JSON, missing or extra fields, wrong types, scores outside
1-5, a batch of the wrong size) is re-asked with the validation error fed back, at most
``retries`` times (default 2); then the item fails with a clear message and valid items are kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from twinforge.exceptions import ModelCallError, StructuredOutputError
from twinforge.llm.protocol import ChatModel, Completion, Message

T = TypeVar("T", bound=BaseModel)
_RAW_ECHO_CHARS = 6000  # how much of a failed reply is echoed back (small context windows)


def describe_validation_error(exc: ValidationError, prefix: str = "") -> list[str]:
    """Turn a pydantic error into one readable line per problem: ``field.path: message (got ...)``."""
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(document)"
        got = repr(err.get("input"))
        got = got if len(got) <= 60 else got[:57] + "..."
        lines.append(f"{prefix}{loc}: {err['msg']} (got {got})")
    return lines


@dataclass
class ItemFailure:
    """One requested item that never validated.

    Attributes:
        slot: 1-based position among the requested items.
        errors: The problems found in the last attempt.
        raw: The last raw text or JSON the model gave for it (kept, never dropped).
    """

    slot: int
    errors: list[str]
    raw: str


@dataclass
class ItemsResult(Generic[T]):
    """Outcome of :func:`request_items`: the valid items, the failed slots and the accounting."""

    items: list[T]
    failures: list[ItemFailure]
    completions: list[Completion] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def attempts(self) -> int:
        """Model calls that returned."""
        return len(self.completions)

    @property
    def replies(self) -> list[str]:
        """Every raw reply, in order (kept with failures so no model output is lost)."""
        return [c.text for c in self.completions]


@dataclass
class ObjectResult(Generic[T]):
    """Outcome of :func:`request_object`: the valid object and the calls it took."""

    value: T
    completions: list[Completion]


def _feedback(errors: list[str], truncated: bool, ask: str) -> str:
    lines = ["Your previous reply did not validate:"]
    lines += [f"- {e}" for e in errors[:30]]
    if truncated:
        lines.append("- the reply was cut off at the token limit: write shorter values.")
    lines.append(ask)
    return "\n".join(lines)


def _retry_messages(base: list[Message], completion: Completion, feedback: str) -> list[Message]:
    return [
        *base,
        Message(role="assistant", content=completion.text[:_RAW_ECHO_CHARS]),
        Message(role="user", content=feedback),
    ]


def request_object(
    chat: ChatModel,
    messages: list[Message],
    model_cls: type[T],
    *,
    schema: dict[str, Any] | None = None,
    schema_name: str = "output",
    retries: int = 2,
    context: dict[str, Any] | None = None,
    check: Callable[[T], None] | None = None,
) -> ObjectResult[T]:
    """Ask for one JSON object and validate it as ``model_cls``.

    Args:
        chat: The model.
        messages: The prompt.
        model_cls: The pydantic model the reply must validate as.
        schema: JSON schema sent to the model (default: ``model_cls``'s own).
        schema_name: Name of the schema in the request.
        retries: Re-asks with the errors fed back after the first attempt.
        context: pydantic validation context (e.g. the taxonomy).
        check: Extra rule on the validated object; raises ``ValueError`` (one problem per line)
            when the object breaks it, which is re-asked like a validation error.

    Returns:
        The valid object and every completion made.

    Raises:
        StructuredOutputError: Still invalid after ``retries`` re-asks; carries the errors and the
            last raw reply.
        ModelCallError: A transport failure after the SDK's retries.
    """
    schema = schema or model_cls.model_json_schema()
    current = messages
    completions: list[Completion] = []
    errors: list[str] = []
    for _ in range(retries + 1):
        try:
            completion = chat.complete(current, schema=schema, schema_name=schema_name)
        except ModelCallError as exc:
            if not completions:
                raise
            errors = [*errors, f"(re-ask): the model call failed: {exc}"]
            break
        completions.append(completion)
        try:
            value = model_cls.model_validate(json.loads(completion.text, strict=False), context=context)
        except json.JSONDecodeError as exc:
            errors = [f"(document): not valid JSON: {exc}"]
        except ValidationError as exc:
            errors = describe_validation_error(exc)
        else:
            try:
                if check is not None:
                    check(value)
            except ValueError as exc:
                errors = [line for line in str(exc).splitlines() if line.strip()]
            else:
                return ObjectResult(value, completions)
        ask = "Reply again with only the corrected JSON document."
        current = _retry_messages(messages, completion, _feedback(errors, completion.truncated, ask))
    raise StructuredOutputError(
        f"{chat.name}: output still invalid after {len(completions)} attempts",
        errors=errors,
        raw=completions[-1].text,
        attempts=len(completions),
        raws=[c.text for c in completions],
    )


def list_schema(list_key: str, item_schema: dict[str, Any], count: int) -> dict[str, Any]:
    """JSON schema of ``{list_key: [item x count]}`` with the item's ``$defs`` hoisted to the top."""
    item = dict(item_schema)
    defs = item.pop("$defs", {})
    out: dict[str, Any] = {
        "type": "object",
        "properties": {list_key: {"type": "array", "items": item, "minItems": count, "maxItems": count}},
        "required": [list_key],
        "additionalProperties": False,
    }
    if defs:
        out["$defs"] = defs
    return out


def request_items(
    chat: ChatModel,
    messages: list[Message],
    item_cls: type[T],
    *,
    count: int,
    list_key: str,
    item_schema: dict[str, Any] | None = None,
    schema_name: str = "batch",
    retries: int = 2,
    context: dict[str, Any] | None = None,
    check: Callable[[T], None] | None = None,
) -> ItemsResult[T]:
    """Ask for exactly ``count`` items as ``{list_key: [...]}``; keep the valid, re-ask for the rest.

    Each item is validated on its own, so one bad item never costs the others. When fewer than
    ``count`` valid items arrived, the model is re-asked for just the missing number with every
    error fed back, at most ``retries`` times. Items beyond ``count`` are dropped with a note
    (re-asking cannot improve a batch that already has enough valid items).

    Args:
        chat: The model.
        messages: The prompt asking for the items.
        item_cls: pydantic model of one item.
        count: Items wanted (Stage I batch: 10).
        list_key: Top-level key of the list.
        item_schema: JSON schema of one item (default: ``item_cls``'s own).
        schema_name: Name of the schema in the request.
        retries: Re-asks after the first attempt.
        context: pydantic validation context.
        check: Extra rule per item; raises ``ValueError`` with a message when the item breaks it.

    Returns:
        Valid items (at most ``count``), one :class:`ItemFailure` per slot still missing, and the
        completions made.

    Raises:
        ModelCallError: A transport failure after the SDK's retries.
    """
    item_schema = item_schema or item_cls.model_json_schema()
    result: ItemsResult[T] = ItemsResult(items=[], failures=[])
    current = messages
    errors: list[str] = []
    bad_raw: list[str] = []
    for _ in range(retries + 1):
        needed = count - len(result.items)
        try:
            completion = chat.complete(
                current, schema=list_schema(list_key, item_schema, needed), schema_name=schema_name
            )
        except ModelCallError as exc:
            if not result.completions:
                raise
            # A failed re-ask must not cost the valid items already received.
            errors = [*errors, f"(re-ask): the model call failed: {exc}"]
            result.notes.append(f"re-ask failed: {exc}")
            break
        result.completions.append(completion)
        errors, bad_raw = [], []
        try:
            document = json.loads(completion.text, strict=False)
        except json.JSONDecodeError as exc:
            errors.append(f"(document): not valid JSON: {exc}")
            bad_raw.append(completion.text)
            document = None
        raw_items = document.get(list_key) if isinstance(document, dict) else None
        if not isinstance(raw_items, list):
            if document is not None:
                errors.append(f"(document): expected an object with a list under {list_key!r}")
                bad_raw.append(completion.text)
            raw_items = None
        for i, raw in enumerate(raw_items or [], start=1):
            if len(result.items) == count:
                result.notes.append(f"the model returned {len(raw_items or [])} items for {needed}; extras dropped")
                break
            try:
                item = item_cls.model_validate(raw, context=context)
                if check is not None:
                    check(item)
            except ValidationError as exc:
                errors += describe_validation_error(exc, prefix=f"{list_key}[{i}].")
                bad_raw.append(json.dumps(raw))
            except ValueError as exc:
                errors.append(f"{list_key}[{i}]: {exc}")
                bad_raw.append(json.dumps(raw))
            else:
                result.items.append(item)
        if raw_items is not None and len(raw_items) < needed:
            errors.append(f"(document): {len(raw_items)} items given, {needed} required")
        missing = count - len(result.items)
        if missing == 0:
            return result
        ask = (
            f"Reply with a JSON object whose {list_key!r} list holds exactly {missing} new, complete "
            f"items that fix these problems (the valid ones are already kept)."
        )
        current = _retry_messages(messages, completion, _feedback(errors, completion.truncated, ask))
    missing = count - len(result.items)
    for n in range(missing):
        raw = bad_raw[n] if n < len(bad_raw) else (bad_raw[-1] if bad_raw else "")
        result.failures.append(ItemFailure(slot=len(result.items) + n + 1, errors=errors, raw=raw))
    return result
