"""The usage value: sums, differences, and the flat file form old files were written in."""

from __future__ import annotations

import pydantic
import pytest

from twinforge.core.llm import Completion, FlatUsage, Usage


def test_of_counts_one_call_per_completion_and_sums_every_field() -> None:
    completions = [
        Completion(text="a", prompt_tokens=10, cached_tokens=4, completion_tokens=3, seconds=1.5),
        Completion(text="b", prompt_tokens=20, completion_tokens=7, seconds=0.25),
    ]
    usage = Usage.of(completions)
    assert usage == Usage(calls=2, prompt_tokens=30, cached_tokens=4, completion_tokens=10, seconds=1.75)
    assert usage.tokens == 40
    assert Usage.of([]) == Usage()
    assert usage + Usage(calls=1, seconds=0.25) == Usage(
        calls=3, prompt_tokens=30, cached_tokens=4, completion_tokens=10, seconds=2.0
    )


def test_a_server_reporting_negative_counts_does_not_break_the_sum() -> None:
    assert Completion(text="", prompt_tokens=-5, completion_tokens=2).usage == Usage(calls=1, completion_tokens=2)


def test_since_is_what_a_growing_counter_spent_and_refuses_another_counter() -> None:
    before = Usage(calls=2, prompt_tokens=100, completion_tokens=10)
    after = Usage(calls=5, prompt_tokens=400, completion_tokens=25)
    assert after.since(before) == Usage(calls=3, prompt_tokens=300, completion_tokens=15)
    with pytest.raises(ValueError, match="calls"):
        before.since(after)


def test_usage_is_a_frozen_value_refusing_unknown_fields() -> None:
    usage = Usage(calls=1)
    with pytest.raises(pydantic.ValidationError):
        usage.calls = 2  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="total_tokens"):
        Usage.model_validate({"calls": 1, "total_tokens": 3})


class _Old(FlatUsage):
    model_config = pydantic.ConfigDict(extra="forbid")
    flat_keys = ("calls", "prompt_tokens", "completion_tokens", "seconds")

    name: str


def test_flat_usage_reads_old_flat_keys_and_writes_them_back_flat() -> None:
    old = {"name": "x", "calls": 3, "prompt_tokens": 30, "completion_tokens": 9, "seconds": 2.5}
    record = _Old.model_validate(old)
    assert record.usage == Usage(calls=3, prompt_tokens=30, completion_tokens=9, seconds=2.5)
    assert record.model_dump() == old  # cached_tokens is not part of this format
    assert _Old(name="y", usage=Usage(calls=1)).model_dump(mode="json")["calls"] == 1
    nested = _Old.model_validate({"name": "z", "usage": {"calls": 2}})
    assert nested.usage.calls == 2
    assert _Old.model_validate({"name": "n"}).usage == Usage()
    with pytest.raises(pydantic.ValidationError, match="extra"):
        _Old.model_validate({**old, "tokens": 1})
