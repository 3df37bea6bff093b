"""What a model's tokens cost (``[models.<role>.price]``, ``[evaluation.models.<name>.price]``).

Its own module so that usage accounting (:mod:`twinforge.core.llm.usage`) and the settings can
both use it without importing each other.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

CACHE_WRITE_FACTOR = 1.25
"""A cache write's price as a multiple of ``input`` when ``cache_write`` is not set: Anthropic's list
price of a five-minute prompt-cache write (docs/runtime.md, "Model channel", Model settings)."""


class ModelPrice(BaseModel):
    """What a model's tokens cost, in US dollars per million tokens (``[models.<role>.price]``).

    The provider's list price; ``report`` and the spend ceiling use it (docs/runtime.md, "Model
    channel"). Cached input is the price of prompt tokens read from the provider's prompt cache; a
    cache write the price of prompt tokens written to it (Anthropic's ``cache_creation_input_tokens``).
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    input: float = Field(ge=0)
    """Prompt tokens neither read from nor written to the cache, USD per million."""
    cached_input: float | None = Field(None, ge=0)
    """Prompt tokens read from the cache, USD per million; ``None``: the ``input`` price."""
    cache_write: float | None = Field(None, ge=0)
    """Prompt tokens written to the cache, USD per million; ``None``: ``input`` x :data:`CACHE_WRITE_FACTOR`."""
    output: float = Field(ge=0)
    """Generated tokens (reasoning included), USD per million."""

    def cost(
        self, prompt_tokens: int, cached_tokens: int, completion_tokens: int, cache_write_tokens: int = 0
    ) -> float:
        """US dollars for one call's tokens.

        Args:
            prompt_tokens: Every prompt token, cache reads and writes included.
            cached_tokens: Of those, read from the cache (priced at ``cached_input``).
            completion_tokens: Generated tokens (priced at ``output``).
            cache_write_tokens: Of the prompt tokens, written to the cache (priced at ``cache_write``).

        Returns:
            The cost in US dollars; counts are clipped so the parts never exceed the prompt.
        """
        prompt = max(prompt_tokens, 0)
        cached = min(max(cached_tokens, 0), prompt)
        written = min(max(cache_write_tokens, 0), prompt - cached)
        cached_price = self.input if self.cached_input is None else self.cached_input
        write_price = self.input * CACHE_WRITE_FACTOR if self.cache_write is None else self.cache_write
        fresh = prompt - cached - written
        return (
            fresh * self.input + cached * cached_price + written * write_price + max(completion_tokens, 0) * self.output
        ) / 1e6
