"""What model calls cost: one value summed the same way everywhere (docs/design.md, "Glossary").

Every stage counts calls, tokens and model time: a Stage I batch, a review, an implementer round,
the observer's classifier, the model proxy's run tokens. They all carry a :class:`Usage` and add
them with ``+`` (or :meth:`Usage.of` over completions) instead of summing fields by hand.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

if TYPE_CHECKING:
    from pydantic import SerializerFunctionWrapHandler

    from twinforge.core.price import ModelPrice


class Usage(BaseModel):
    """Calls, tokens and model time of one or more model calls (a value: frozen, added with ``+``).

    Attributes:
        calls: Model calls made.
        prompt_tokens: Tokens in the requests, as the servers counted them (0 when unknown).
        cached_tokens: Of those, the tokens a server took from its prompt cache (0 when unknown;
            OpenAI ``usage.prompt_tokens_details.cached_tokens``, Anthropic
            ``usage.cache_read_input_tokens``).
        completion_tokens: Tokens generated (0 when unknown).
        seconds: Model time in seconds, summed over the calls (more than the wall time when calls
            run at once).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    calls: int = Field(0, ge=0)
    prompt_tokens: int = Field(0, ge=0)
    cached_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)
    seconds: float = Field(0.0, ge=0.0)

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens (cached prompt tokens are part of the prompt tokens)."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        """Field-wise sum."""
        return Usage(
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            seconds=self.seconds + other.seconds,
        )

    def since(self, earlier: Usage) -> Usage:
        """What was spent after ``earlier`` (a reading of the same growing counter).

        Raises:
            ValueError: ``earlier`` is larger than this reading in some field (not the same counter).
        """
        return Usage(
            calls=self.calls - earlier.calls,
            prompt_tokens=self.prompt_tokens - earlier.prompt_tokens,
            cached_tokens=self.cached_tokens - earlier.cached_tokens,
            completion_tokens=self.completion_tokens - earlier.completion_tokens,
            seconds=max(self.seconds - earlier.seconds, 0.0),
        )

    def cost(self, price: ModelPrice | None) -> float | None:
        """US dollars these calls cost at ``price`` (``[models.<role>.price]``); ``None`` without a price.

        Cost is linear in tokens, so the cost of a sum of calls is the sum of their costs.
        """
        if price is None:
            return None
        return price.cost(self.prompt_tokens, self.cached_tokens, self.completion_tokens)

    def shares(self, parts: int) -> list[Usage]:
        """This usage split over ``parts`` items that one call served (a Stage I batch call, docs/stage1.md).

        Tokens and seconds are split evenly, the remainders going to the first part; the calls,
        which cannot be split, all go to the first part. The parts add up to this usage.

        Raises:
            ValueError: ``parts`` is less than 1.
        """
        if parts < 1:
            raise ValueError(f"cannot split a usage into {parts} parts")

        def split(value: int) -> list[int]:
            each, rest = divmod(value, parts)
            return [each + rest, *[each] * (parts - 1)]

        fresh = split(max(self.prompt_tokens - self.cached_tokens, 0))
        cached = split(self.cached_tokens)
        completion = split(self.completion_tokens)
        return [
            Usage(
                calls=self.calls if i == 0 else 0,
                prompt_tokens=fresh[i] + cached[i],
                cached_tokens=cached[i],
                completion_tokens=completion[i],
                seconds=self.seconds / parts,
            )
            for i in range(parts)
        ]

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of ``usages`` (an empty ``Usage`` for none)."""
        result = cls()
        for usage in usages:
            result = result + usage
        return result

    @classmethod
    def of(cls, completions: Iterable[Metered]) -> Usage:
        """The usage of ``completions`` (``Completion`` replies): one call each, tokens and seconds summed."""
        return cls.total(c.usage for c in completions)


class Metered(Protocol):
    """Anything that reports one call's :class:`Usage` (``twinforge.core.llm.Completion``)."""

    @property
    def usage(self) -> Usage:
        """This call's usage."""
        ...


class PerItem(BaseModel):
    """What each item a command produced cost on average (``generate``: per stored blueprint).

    Attributes:
        items: How many items the usage is divided over (at least 1).
        calls: Model calls per item.
        tokens: Prompt plus completion tokens per item.
        prompt_tokens: Prompt tokens per item.
        completion_tokens: Completion tokens per item.
        wall_seconds: Wall time per item, when measured.
        cost_usd: US dollars per item, when the model has a price.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    items: int = Field(ge=1)
    calls: float
    tokens: float
    prompt_tokens: float
    completion_tokens: float
    wall_seconds: float | None = None
    cost_usd: float | None = None

    @classmethod
    def of(
        cls, usage: Usage, items: int, *, wall_seconds: float | None = None, cost_usd: float | None = None
    ) -> PerItem | None:
        """``usage`` (and the wall time and cost of the same calls) divided over ``items``; ``None`` for none."""
        if items < 1:
            return None
        return cls(
            items=items,
            calls=round(usage.calls / items, 2),
            tokens=round(usage.tokens / items, 1),
            prompt_tokens=round(usage.prompt_tokens / items, 1),
            completion_tokens=round(usage.completion_tokens / items, 1),
            wall_seconds=None if wall_seconds is None else round(wall_seconds / items, 2),
            cost_usd=None if cost_usd is None else round(cost_usd / items, 6),
        )


USAGE_KEYS = tuple(Usage.model_fields)
"""The flat keys a :class:`Usage` spreads into: ``calls``, ``prompt_tokens``, ``cached_tokens``,
``completion_tokens``, ``seconds``."""


class FlatUsage(BaseModel):
    """A model that holds a ``usage`` but reads and writes its fields flat, beside its own.

    Files and ``--json`` bodies written before the usage value existed keep their keys
    (``calls``, ``prompt_tokens``, ``completion_tokens``, ``seconds`` at the top level): a subclass
    reads them into ``usage`` and dumps ``usage`` back out as those keys, so old files still load
    and new files look the same. A nested ``usage`` mapping is accepted too. Only the keys in
    :attr:`flat_keys` are read and written flat: a format without ``cached_tokens`` keeps not having
    it, and a format whose ``seconds`` means something else (a round's wall time) leaves
    ``seconds`` out of ``flat_keys`` and declares it as its own field.
    """

    usage: Usage = Field(default_factory=Usage)

    flat_keys: ClassVar[tuple[str, ...]] = USAGE_KEYS
    """Usage fields this format writes at the top level (a class variable; override to drop some)."""

    @model_validator(mode="before")
    @classmethod
    def _gather_usage(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        flat = {k: data[k] for k in cls.flat_keys if k in data}
        if not flat:
            return data
        rest = {k: v for k, v in data.items() if k not in flat}
        nested = rest.get("usage")
        if isinstance(nested, Usage):
            nested = nested.model_dump()
        rest["usage"] = {**(nested if isinstance(nested, dict) else {}), **flat}
        return rest

    @model_serializer(mode="wrap")
    def _spread_usage(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        usage = data.pop("usage", None)
        if isinstance(usage, dict):
            data.update({k: usage[k] for k in type(self).flat_keys if k in usage})
        return data
