"""Pressure-dependent pruner: careful when there is room, reckless when the window is full.

Models the load-correlated failure of the commitment-fidelity design
document: "when the window is near capacity, the pruning policy degrades — it
prunes more aggressively and with less discrimination precisely when
discrimination is most needed". Below twice the budget it spills the oldest
items to the store and leaves stubs (items no bigger than a stub stay); at
twice the budget or more it evicts the oldest items outright, whatever they
are.

Caught by: nothing below the threshold; above it CF001 commitment-dropped,
CF004 rationale-dropped, WR008 negative-evidence-evicted, TP001 orphaned
tool result — findings that show up only at high pressure (``ctxproof fuzz``
plots findings per rewrite against pressure).

Spec: ``models/specs/pressure_pruner.toml`` gives the same windows and spills.
"""

from __future__ import annotations

import math
from typing import Any

from verifier import stub_for
from verifier.policies import item_tokens

RECKLESS_AT = 2.0  # pressure (tokens / budget) from which it evicts instead of spilling
STUB_TOKENS = 8


def pressure_pruner(window: list[dict[str, Any]], budget: int) -> dict[str, Any]:
    total = sum(item_tokens(it) for it in window)
    pressure = total / budget if budget > 0 else (math.inf if total > 0 else 0.0)
    out: list[dict[str, Any] | None] = list(window)
    spill: list[str] = []
    for i, it in enumerate(window):
        if total <= budget:
            break
        tokens = item_tokens(it)
        if pressure >= RECKLESS_AT:
            out[i] = None
            total -= tokens
        elif it["kind"] != "stub" and tokens > STUB_TOKENS:
            out[i] = {**stub_for(it), "tokens": STUB_TOKENS}
            spill.append(it["id"])
            total += STUB_TOKENS - tokens
    return {
        "window": [it for it in out if it is not None],
        "spill": spill,
        "claimed_preserved": [it["id"] for it, new in zip(window, out, strict=True) if new is it],
    }
