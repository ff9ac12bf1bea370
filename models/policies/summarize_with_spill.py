"""Summarize-with-spill: summarizes free prose, spills everything else it removes.

The safe summarizer: "summarize freely, but never let a summary replace a
commitment record". Oldest first, until the window fits: prose that nothing
cites and that is no tool result is folded into one summary ``summary@PASS``
(and spilled, so the original text stays retrievable); every other item
bigger than a stub — commitments, claims, witnesses, tool calls and results,
cited prose — is spilled and left as a stub, which keeps its identity, its
citations and its pairing. A tool result goes to the store together with the
call it answers: a stub shows no ``call``, so a later pass could not tell the
lone call from free prose and would fold it away (TP001). It claims only what
it left untouched.

Caught by: nothing; ``check_rewrite`` accepts its rewrites (a property test).

Spec: not expressible. A spec's ``summarize`` removes items without spilling
them, and no ``when`` condition tells a tool-result placeholder (prose with
``call``) from free prose.
"""

from __future__ import annotations

import math
from typing import Any

from verifier import stub_for
from verifier.policies import item_tokens

STUB_TOKENS = 8


def _cited(window: list[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for it in window:
        refs = [*it.get("rationale", []), *it.get("witnesses", []), *it.get("derived_from", [])]
        refs += [*it.get("covers", []), *([it["call"]] if "call" in it else [])]
        out.update(r for r in refs if r != it["id"])
    return out


def summarize_with_spill(
    window: list[dict[str, Any]], budget: int, *, pass_no: int = 1
) -> dict[str, Any]:
    cited = _cited(window)
    position = {it["id"]: i for i, it in enumerate(window)}
    total = sum(item_tokens(it) for it in window)
    out: list[dict[str, Any] | None] = list(window)
    spill: list[str] = []
    folded: list[str] = []
    folded_tokens = 0
    place = 0
    for i, it in enumerate(window):
        if total <= budget:
            break
        tokens = item_tokens(it)
        if it["kind"] == "stub":
            continue
        if it["kind"] == "prose" and "call" not in it and it["id"] not in cited:
            summary_before = math.ceil(folded_tokens / 4) if folded else 0
            folded_tokens += tokens
            total += math.ceil(folded_tokens / 4) - summary_before - tokens
            place = place if folded else i
            folded.append(it["id"])
            out[i] = None
        elif tokens > STUB_TOKENS:
            out[i] = {**stub_for(it), "tokens": STUB_TOKENS}
            total += STUB_TOKENS - tokens
            partner = position.get(it.get("call", ""))
            if partner is not None and out[partner] is window[partner]:
                # the call goes with its result, behind a stub of its own
                call = window[partner]
                out[partner] = {**stub_for(call), "tokens": STUB_TOKENS}
                total += STUB_TOKENS - item_tokens(call)
                spill.append(call["id"])
        else:
            continue
        spill.append(it["id"])
    claimed = [it["id"] for it, new in zip(window, out, strict=True) if new is it]
    kept = [it for it in out[:place] if it is not None]
    if folded:
        kept.append(
            {
                "id": f"summary@{pass_no}",
                "kind": "prose",
                "text": "summary of: " + ", ".join(folded),
                "tokens": math.ceil(folded_tokens / 4),
            }
        )
    kept += [it for it in out[place:] if it is not None]
    return {"window": kept, "spill": spill, "claimed_preserved": claimed}
