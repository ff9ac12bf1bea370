"""Spill-first: moves the oldest items to the durable store and leaves stubs.

The safe policy the commitment-fidelity design document prescribes: "spill
them to an external store keyed by identity, and let the window hold only
references". Oldest first, until the window fits, every item bigger than a
stub is spilled (its ``before`` version written to the store) and replaced by
its stub, which keeps its identity, its place, and — through the store — its
witness. Nothing is dropped, nothing is altered, and it claims only what it
left untouched.

Caught by: nothing; ``check_rewrite`` accepts its rewrites (a property test).

Spec: ``models/specs/spill_first.toml`` gives the same windows and spills.
"""

from __future__ import annotations

from typing import Any

from verifier import stub_for
from verifier.policies import item_tokens

STUB_TOKENS = 8


def spill_first(window: list[dict[str, Any]], budget: int) -> dict[str, Any]:
    total = sum(item_tokens(it) for it in window)
    out = list(window)
    spill: list[str] = []
    for i, it in enumerate(window):
        if total <= budget:
            break
        tokens = item_tokens(it)
        if it["kind"] == "stub" or tokens <= STUB_TOKENS:
            continue  # already spilled, or no bigger than its stub would be
        out[i] = {**stub_for(it), "tokens": STUB_TOKENS}
        spill.append(it["id"])
        total += STUB_TOKENS - tokens
    return {
        "window": out,
        "spill": spill,
        "claimed_preserved": [it["id"] for it, new in zip(window, out, strict=True) if new is it],
    }
