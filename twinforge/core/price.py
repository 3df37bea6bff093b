"""What a model's tokens cost (``[models.<role>.price]``, ``[evaluation.models.<name>.price]``).

Its own module so that usage accounting (:mod:`twinforge.core.llm.usage`) and the settings can
both use it without importing each other.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ModelPrice(BaseModel):
    """What a model's tokens cost, in US dollars per million tokens (``[models.<role>.price]``).

    The provider's list price; ``report`` and the spend ceiling use it (docs/runtime.md, "Model
    channel"). Cached input is the price of prompt tokens read from the provider's prompt cache.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    input: float = Field(ge=0)
    """Prompt tokens not read from the cache, USD per million."""
    cached_input: float | None = Field(None, ge=0)
    """Prompt tokens read from the cache, USD per million; ``None``: the ``input`` price."""
    output: float = Field(ge=0)
    """Generated tokens (reasoning included), USD per million."""

    def cost(self, prompt_tokens: int, cached_tokens: int, completion_tokens: int) -> float:
        """US dollars for one call's tokens (``cached_tokens`` are part of ``prompt_tokens``)."""
        cached = min(max(cached_tokens, 0), max(prompt_tokens, 0))
        cached_price = self.input if self.cached_input is None else self.cached_input
        fresh = max(prompt_tokens, 0) - cached
        return (fresh * self.input + cached * cached_price + max(completion_tokens, 0) * self.output) / 1e6
