"""The two policies of the README's walkthrough ("Validate your own policy in five
minutes"): one that drops what does not fit, one that spills it and leaves a stub."""

from __future__ import annotations

from typing import Any

from verifier import stub_for

Obj = dict[str, Any]


def newest_first(window: list[Obj], budget: int) -> list[Obj]:
    """Keep the newest items that fit in the budget; drop the rest."""
    kept, used = [], 0
    for item in reversed(window):
        size = item.get("tokens", 10)
        if used + size > budget:
            break
        kept.append(item)
        used += size
    return list(reversed(kept))


def newest_first_spilling(window: list[Obj], budget: int) -> Obj:
    """The same, but what does not fit goes to the store, and a stub stays in its place."""
    kept: list[Obj] = []
    spill: list[str] = []
    used = 0
    for item in reversed(window):
        size = item.get("tokens", 10)
        if used + size <= budget or item["kind"] == "stub":
            kept.append(item)
            used += size
        else:
            kept.append({**stub_for(item), "tokens": 1})
            spill.append(item["id"])
            used += 1
    return {"window": list(reversed(kept)), "spill": spill}
