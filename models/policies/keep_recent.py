"""Keep-recent sliding window: drops the oldest items until the window fits.

Models the plainest compaction: forget the beginning of the session. Age is
the only criterion, so commitments made early, the tool call that a kept
result answers, and failed attempts all fall out of the window with no record.

Caught by: CF001 commitment-dropped (an early decision or rejection evicted),
TP001 orphaned-tool-result (the call is older than its result, so the call
goes first and the result stays), WR008 negative-evidence-evicted (an old
failed observation evicted).

Spec: ``models/specs/keep_recent.toml`` gives the same windows.
"""

from __future__ import annotations

from typing import Any

from verifier.policies import item_tokens


def keep_recent(window: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    total = sum(item_tokens(it) for it in window)
    kept = list(window)
    while kept and total > budget:
        total -= item_tokens(kept.pop(0))
    return kept
