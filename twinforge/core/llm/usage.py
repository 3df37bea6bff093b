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
