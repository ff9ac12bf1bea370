"""Relevance-scored eviction: evicts the items the retriever rates least relevant first.

Models the third failure of the witness-retention design document. A
retriever rates each item's relevance to the current task (``score``, 0-100;
an item without a score counts as 0), and the policy evicts from the bottom of
the ranking until the window fits. Failed attempts and error messages are "not
relevant" to the goal, so they go first — and with them the only witness that
an approach was already tried, so the agent tries it again.

Caught by: WR008 negative-evidence-evicted (a failed observation evicted with
no record) at the rewrite, and CP003 re-adoption when the agent later re-runs
the command whose failure it can no longer see; CF001 when an unscored
commitment ranks low.

Spec: ``models/specs/relevance_eviction.toml`` gives the same windows.
"""

from __future__ import annotations

from typing import Any

from verifier.policies import item_tokens


def relevance_eviction(window: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    total = sum(item_tokens(it) for it in window)
    ranked = sorted(range(len(window)), key=lambda i: (window[i].get("score", 0), i))
    evicted: set[int] = set()
    for i in ranked:
        if total <= budget:
            break
        evicted.add(i)
        total -= item_tokens(window[i])
    return [it for i, it in enumerate(window) if i not in evicted]
