"""Naive prose summarizer: folds the oldest items, commitments included, into one summary.

Models the failure of the commitment-fidelity design document: a summarizer
that treats everything as text. It folds items, oldest first, into one prose
summary until the window fits, so a decision's rationale and a rejected option
become "Database: Postgres is used" — topical, fluent, and without identity.
It also certifies its own output: it claims every commitment it was given as
preserved, the rewriter acting as its own auditor.

Caught by: CF001 commitment-dropped (a commitment or a bound claim folded into
prose), CF004 rationale-dropped (a kept commitment whose reason was folded),
CF006 false-preservation-claim (it claims commitments it folded).

Spec: ``models/specs/naive_summarizer.toml`` gives the same window; a spec
never claims more than it kept unchanged, so only the claims differ.
"""

from __future__ import annotations

import math
from typing import Any

from verifier.policies import item_tokens


def naive_summarizer(
    window: list[dict[str, Any]], budget: int, *, pass_no: int = 1
) -> dict[str, Any]:
    total = sum(item_tokens(it) for it in window)
    kept: list[dict[str, Any]] = []
    folded: list[str] = []
    folded_tokens = 0
    for it in window:
        if total <= budget:
            kept.append(it)
            continue
        tokens = item_tokens(it)
        summary_before = math.ceil(folded_tokens / 4) if folded else 0
        folded_tokens += tokens
        total += math.ceil(folded_tokens / 4) - summary_before - tokens
        folded.append(it["id"])
    if folded:
        summary = {
            "id": f"summary@{pass_no}",
            "kind": "prose",
            "text": "summary of: " + ", ".join(folded),
            "tokens": math.ceil(folded_tokens / 4),
        }
        kept.insert(0, summary)  # the folded items are the oldest: the summary takes their place
    claimed = [it["id"] for it in window if it["kind"] == "commitment"]
    return {"window": kept, "claimed_preserved": claimed}
