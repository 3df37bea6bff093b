"""Structured output: ask for JSON of a pydantic model's schema, validate, re-ask with the errors.

Replies are normalised first (:mod:`twinforge.core.llm.replies`: byte-order mark, a code fence around
the whole reply) and parsed with raw control characters inside strings accepted; everything else is
validated by pydantic. How the reply ended is read too: a reply cut at ``max_tokens`` is reported
as cut (and its complete items kept), a refusal is reported as a refusal with its text and is not
re-asked (docs/workspace.md, "Model replies").

Invalid output (bad JSON, missing or extra fields, wrong types, scores outside
1-5, a batch of the wrong size) is re-asked with the validation error fed back, at most
``retries`` times (default 2); then the item fails with a clear message and valid items are kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from twinforge.core.exceptions import ModelCallError, ModelRefusal, StructuredOutputError
from twinforge.core.llm.protocol import ChatModel, Completion, Message
from twinforge.core.llm.replies import Parsed, ends_mid_number, normalise, parse_reply
from twinforge.core.llm.usage import Usage

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
    """Outcome of :func:`request_items`: the valid items, the failed slots and the accounting.

    Attributes:
        items: Valid items, at most the number asked for.
        failures: One entry per slot still missing.
        completions: Every reply, in order.
        notes: Remarks for the user: replies cut at max_tokens, a refusal, extras dropped.
        refusal: The refusal text when the model declined (then nothing more was asked).
    """

    items: list[T]
    failures: list[ItemFailure]
    completions: list[Completion] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    refusal: str | None = None

    @property
    def attempts(self) -> int:
        """Model calls that returned."""
        return len(self.completions)

    @property
    def replies(self) -> list[str]:
        """Every raw reply (a refusal's text for a refusal), in order; kept with failures so no output is lost."""
        return [c.raw for c in self.completions]


@dataclass
class ObjectResult(Generic[T]):
    """Outcome of :func:`request_object`: the valid object and the calls it took."""

    value: T
    completions: list[Completion]


def refusal_message(refusal: str | None) -> str:
    """``model refused: <text>`` (the text as the model gave it, or a note that it gave none)."""
    text = (refusal or "").strip()
    return f"model refused: {text}" if text else "model refused (no text given)"


def refusal_line(completion: Completion) -> str:
    """:func:`refusal_message` of a completion."""
    return refusal_message(completion.refusal)


def _cut_at(completion: Completion) -> int | None:
    if not completion.truncated:
        return None
    return completion.max_tokens or 0


def _cap(completion: Completion) -> str:
    return f"max_tokens={completion.max_tokens}" if completion.max_tokens else "the token limit"


def _read(completion: Completion) -> Parsed:
    return parse_reply(normalise(completion.text), cut_at=_cut_at(completion))


def _feedback(errors: list[str], ask: list[str]) -> str:
    lines = ["Your previous reply did not validate:"]
    lines += [f"- {e}" for e in errors[:30]]
    lines += ask
    return "\n".join(lines)


def _retry_messages(base: list[Message], completion: Completion, feedback: str) -> list[Message]:
    return [
        *base,
        Message(role="assistant", content=completion.text[:_RAW_ECHO_CHARS]),
        Message(role="user", content=feedback),
    ]


def _format_ask(parsed: Parsed, completion: Completion) -> list[str]:
    ask = []
    if completion.truncated:
        ask.append(f"Your reply was cut off at {_cap(completion)}: write shorter values.")
    elif parsed.value is None:
        ask.append("Reply with the JSON document only: no code fence, no text before or after it.")
    return ask


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
        ModelRefusal: The model declined (not re-asked); carries the refusal text.
        StructuredOutputError: Still invalid after ``retries`` re-asks; carries the errors and the
            last raw reply (the errors say when a reply was cut at max_tokens).
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
        if completion.refused:
            raise ModelRefusal(
                f"{chat.name}: {refusal_line(completion)}",
                refusal=completion.refusal or "",
                attempts=len(completions),
                raws=[c.raw for c in completions],
                usage=Usage.of(completions),
            )
        parsed = _read(completion)
        if parsed.error is not None:
            errors = [f"(document): {parsed.error}"]
        else:
            try:
                value = model_cls.model_validate(parsed.value, context=context)
            except ValidationError as exc:
                errors = describe_validation_error(exc)
                if completion.truncated:
                    errors.append(f"(document): the reply was cut off at {_cap(completion)}")
            else:
                try:
                    if check is not None:
                        check(value)
                except ValueError as exc:
                    errors = [line for line in str(exc).splitlines() if line.strip()]
                else:
                    return ObjectResult(value, completions)
        ask = [*_format_ask(parsed, completion), "Reply again with only the corrected JSON document."]
        current = _retry_messages(messages, completion, _feedback(errors, ask))
    raise StructuredOutputError(
        f"{chat.name}: output still invalid after {len(completions)} attempts",
        errors=errors,
        raw=completions[-1].raw,
        attempts=len(completions),
        raws=[c.raw for c in completions],
        usage=Usage.of(completions),
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


def _items_ask(list_key: str, missing: int, kept: int, parsed: Parsed, completion: Completion) -> list[str]:
    """The re-ask instruction; it says items were kept only when some were."""
    ask = _format_ask(parsed, completion)
    if kept:
        ask.append(f"The {kept} valid item(s) already received are kept.")
    else:
        ask.append("No item could be kept yet.")
    ask.append(
        f"Reply with a JSON object whose {list_key!r} list holds exactly {missing} new, complete items "
        "that fix these problems."
    )
    return ask


def feedback_messages(
    base: list[Message], reply: str, errors: list[str], ask: list[str] | None = None
) -> list[Message]:
    """``base`` followed by a reply that did not validate and the problems found in it, to ask again.

    Used to re-ask one item of a list reply on its own (Stage I's one call per batch,
    docs/stage1.md): ``reply`` is that item's JSON, ``errors`` its problems.

    Args:
        base: The prompt that asks for one item.
        reply: The reply (or the item of a list reply) that did not validate; echoed up to 6,000
            characters (small context windows).
        errors: One problem per line.
        ask: What to reply with (default: the corrected JSON document only).
    """
    ask = ask or ["Reply again with only the corrected JSON document."]
    return _retry_messages(base, Completion(text=reply), _feedback(errors, ask))


@dataclass
class ReadItem(Generic[T]):
    """One element of a list reply, validated on its own.

    Attributes:
        position: 1-based place in the reply's list.
        raw: The element as received (a JSON value).
        value: The valid item, ``None`` when it did not validate.
        errors: Why it did not (``<list_key>[<position>].field: message``); empty when valid.
        cut: It is the element the reply was cut off in (incomplete).
    """

    position: int
    raw: Any
    value: T | None
    errors: list[str]
    cut: bool = False


@dataclass
class ReadList(Generic[T]):
    """A list reply read element by element (:func:`read_items`).

    Attributes:
        items: Every element of the list, in reply order.
        errors: Problems of the document as a whole: not JSON, no list under the key.
        parsed: The document as read (``partial`` when the reply was cut).
        listed: The reply held a list under the key.
    """

    items: list[ReadItem[T]]
    errors: list[str]
    parsed: Parsed
    listed: bool

    @property
    def valid(self) -> list[T]:
        """The valid items, in reply order."""
        return [item.value for item in self.items if item.value is not None]


def read_items(
    completion: Completion,
    item_cls: type[T],
    *,
    list_key: str,
    context: dict[str, Any] | None = None,
    check: Callable[[T], None] | None = None,
) -> ReadList[T]:
    """Read a ``{list_key: [...]}`` reply and validate each element on its own; nothing is re-asked.

    A reply cut at ``max_tokens`` is read up to the cut: the elements completed before it are
    validated as usual, the one it was cut in is marked ``cut`` and reported incomplete.

    Args:
        completion: The reply.
        item_cls: pydantic model of one element.
        list_key: Top-level key of the list.
        context: pydantic validation context.
        check: Extra rule per element; raises ``ValueError`` (one problem per line) when it breaks it.

    Returns:
        Every element with its value or its errors, and the document's own problems.
    """
    parsed = _read(completion)
    errors = [f"(document): {parsed.error}"] if parsed.error is not None else []
    document = parsed.value
    raw_items = document.get(list_key) if isinstance(document, dict) else None
    if not isinstance(raw_items, list):
        if document is not None:
            errors.append(f"(document): expected an object with a list under {list_key!r}")
        return ReadList([], errors, parsed, listed=False)
    items: list[ReadItem[T]] = []
    for i, raw in enumerate(raw_items, start=1):
        last_of_cut = parsed.partial and i == len(raw_items)
        try:
            if last_of_cut and ends_mid_number(normalise(completion.text)):
                raise ValueError("cut off in the middle of a number")
            item = item_cls.model_validate(raw, context=context)
            if check is not None:
                check(item)
        except (ValidationError, ValueError) as exc:
            if last_of_cut:
                problems = [f"{list_key}[{i}]: incomplete, the reply was cut off at {_cap(completion)}"]
            elif isinstance(exc, ValidationError):
                problems = describe_validation_error(exc, prefix=f"{list_key}[{i}].")
            else:
                problems = [f"{list_key}[{i}]: {line}" for line in str(exc).splitlines() if line.strip()]
            items.append(ReadItem(i, raw, None, problems, cut=last_of_cut))
        else:
            items.append(ReadItem(i, raw, item, []))
    return ReadList(items, errors, parsed, listed=True)


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
    reask_note: Callable[[], str] | None = None,
) -> ItemsResult[T]:
    """Ask for exactly ``count`` items as ``{list_key: [...]}``; keep the valid, re-ask for the rest.

    Each item is validated on its own, so one bad item never costs the others. When fewer than
    ``count`` valid items arrived, the model is re-asked for just the missing number with every
    error fed back, at most ``retries`` times. Items beyond ``count`` are dropped with a note
    (re-asking cannot improve a batch that already has enough valid items). A reply cut at
    ``max_tokens`` keeps the items completed before the cut (a note says where it was cut); a
    refusal ends the request (not re-asked) and every missing slot fails with the refusal text.

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
        reask_note: Called before each re-ask; its text is appended to the re-ask (e.g. which
            slots are still open).

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
    for attempt in range(1, retries + 2):
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
        if completion.refused:
            result.refusal = completion.refusal or ""
            errors, bad_raw = [refusal_line(completion)], [completion.raw]
            result.notes.append(f"reply {attempt}: {refusal_line(completion)} (not re-asked)")
            break
        read = read_items(completion, item_cls, list_key=list_key, context=context, check=check)
        errors = list(read.errors)
        unread = read.parsed.error is not None and not read.parsed.partial
        bad_raw = [completion.text] if unread or (not read.listed and read.parsed.value is not None) else []
        before = len(result.items)
        for item in read.items:
            if len(result.items) == count:
                result.notes.append(f"the model returned {len(read.items)} items for {needed}; extras dropped")
                break
            if item.value is not None:
                result.items.append(item.value)
            else:
                errors += item.errors
                bad_raw.append(json.dumps(item.raw))
        missing = count - len(result.items)
        if completion.truncated:
            result.notes.append(
                f"reply {attempt} was cut off at {_cap(completion)}: {len(result.items) - before} complete "
                f"item(s) kept from it" + (f", {missing} re-asked" if missing and attempt <= retries else "")
            )
        elif read.listed and len(read.items) < needed:
            errors.append(f"(document): {len(read.items)} items given, {needed} required")
        if missing == 0:
            return result
        ask = _items_ask(list_key, missing, len(result.items), read.parsed, completion)
        if reask_note is not None:
            ask.append(reask_note())
        current = _retry_messages(messages, completion, _feedback(errors, ask))
    missing = count - len(result.items)
    for n in range(missing):
        raw = bad_raw[n] if n < len(bad_raw) else (bad_raw[-1] if bad_raw else "")
        result.failures.append(ItemFailure(slot=len(result.items) + n + 1, errors=errors, raw=raw))
    return result
