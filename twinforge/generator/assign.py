"""Which slot each blueprint of a one-call batch reply answers (docs/stage1.md, "One call per batch").

The prompt asks for the blueprints in slot order, each citing its slot's incident. A reply is read
in three passes, so one misplaced or mis-cited blueprint costs no other slot its blueprint:

1. the n-th blueprint answers slot n when it cites slot n's incident;
2. a blueprint left over answers the first open slot whose incident it cites (a reply in another
   order);
3. a blueprint still left over answers the first open slot (then the slot's checks find the wrong
   incident, and it is asked again alone).

Blueprints beyond the number of slots are extras: dropped, kept in the replies.
"""

from __future__ import annotations

from typing import Any

from twinforge.generator.slots import Slot


def _ref(raw: Any) -> str | None:
    value = raw.get("source_reference") if isinstance(raw, dict) else None
    return value if isinstance(value, str) else None


def assign_items(raws: list[Any], slots: list[Slot]) -> tuple[dict[int, int], list[int]]:
    """Match the elements of a batch reply to the batch's slots.

    Args:
        raws: The reply's list, element by element as received (any JSON value).
        slots: The batch's slots, in order.

    Returns:
        Slot number -> index into ``raws`` of the blueprint answering it (slots left out are
        missing), and the indexes of the extras no slot took.
    """
    placed: dict[int, int] = {}
    used: set[int] = set()
    for index, (raw, slot) in enumerate(zip(raws, slots, strict=False)):
        if _ref(raw) == slot.incident.ref:
            placed[slot.number] = index
            used.add(index)
    for index, raw in enumerate(raws):
        if index in used:
            continue
        for slot in slots:
            if slot.number not in placed and _ref(raw) == slot.incident.ref:
                placed[slot.number] = index
                used.add(index)
                break
    open_slots = [slot.number for slot in slots if slot.number not in placed]
    left = [index for index in range(len(raws)) if index not in used]
    for number, index in zip(open_slots, left, strict=False):
        placed[number] = index
        used.add(index)
    return placed, [index for index in range(len(raws)) if index not in used]
