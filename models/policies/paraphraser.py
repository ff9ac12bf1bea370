"""Paraphraser: rewrites the longest items shorter, softening failures on the way.

Models witness laundering by paraphrase: "exit code 1 for `make test`"
becomes "the test run encountered issues". The topic survives, the epistemic
status does not: a ``failed`` result is restated as a plain, unverified
assertion. Each paraphrase halves an item's tokens; the longest items are
paraphrased first, until the window fits. Prose and stubs are left alone.

Caught by: WR004 negative-laundered (a ``failed`` item became ``unverified``);
a paraphrased observation is also WR007 forged-primitive (only appends create
observations).

Spec: ``models/specs/paraphraser.toml`` gives the same windows (the spec
language's ``soften`` action is this paraphrase).
"""

from __future__ import annotations

import math
from typing import Any

from verifier.policies import item_tokens

PARAPHRASED = ("commitment", "claim", "observation")


def paraphraser(window: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    out = [dict(it) for it in window]
    total = sum(item_tokens(it) for it in window)
    longest_first = sorted(range(len(window)), key=lambda i: (-item_tokens(window[i]), i))
    for i in longest_first:
        if total <= budget:
            break
        if out[i]["kind"] not in PARAPHRASED:
            continue
        tokens = item_tokens(window[i])
        if out[i].get("modality") == "failed":
            out[i]["modality"] = "unverified"
        out[i]["tokens"] = math.ceil(tokens / 2)
        total += out[i]["tokens"] - tokens
    return out
