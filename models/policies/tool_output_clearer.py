"""Tool-output clearer: replaces every tool result with a short placeholder.

Models "context editing" that clears old tool results: each observation that
answers a tool call (it carries ``call``) is replaced by a prose placeholder
``ID:cleared`` that keeps the ``call``, so the call/result pairing holds and
the provider accepts the history. What is gone is the evidence: the exact
output, the exit code, the failure.

Caught by: WR001 load-bearing-witness-lost (a load-bearing claim whose
witness was a cleared result), WR008 negative-evidence-evicted (a failed
result cleared), and CP001 when the agent later uses a claim that is no
longer backed. The pairing itself is fine (no TP001/TP002).

Spec: not expressible exactly. The spec language has no action that leaves a
placeholder. ``models/specs/tool_output_clearer.toml`` is the closest spec: it
evicts every observation that answers a call (``result = true``), so it gives
this policy's window without the placeholders (and, with them gone, orphans
the calls: TP002).
"""

from __future__ import annotations

from typing import Any


def tool_output_clearer(window: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for it in window:
        if it["kind"] == "observation" and "call" in it:
            out.append(
                {
                    "id": f"{it['id']}:cleared",
                    "kind": "prose",
                    "call": it["call"],
                    "text": "[tool result cleared]",
                }
            )
        else:
            out.append(it)
    return out
