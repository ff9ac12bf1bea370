"""What an imported trace gives the checks: items by kind, and what is left unchecked.

Commitments and claims are never guessed from prose, so a history with no
annotations and no extractor gives none: the audit of its rewrites then checks
only the evidence (observations, placeholders, pairing). :func:`coverage` counts
what a trace holds and says so in a plain sentence (``docs/importers.md``,
"Coverage").

>>> c = coverage('{"event":"header","format":"ctxproof-trace/1"}\\n'
...              '{"event":"append","items":[{"id":"m","kind":"prose","text":"hi"}]}\\n')
>>> print(c.line("t.jsonl").replace(": ", ":\\n").replace("; ", ";\\n"))
t.jsonl:
1 append(s), 0 rewrite(s), 1 item(s):
0 commitment(s) and claim(s), 0 observation(s), 1 prose;
nothing here is checked as a commitment:
annotate or extract
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KINDS", "NO_COMMITMENTS", "Coverage", "coverage"]

KINDS = ("commitment", "claim", "observation", "prose", "stub")
NO_COMMITMENTS = "nothing here is checked as a commitment: annotate or extract"
"""The sentence for a history that gives no commitment and no claim."""


@dataclass(frozen=True, slots=True)
class Coverage:
    """What an imported trace holds.

    ``items`` counts the distinct item ids over the whole trace (appends and
    rewrites: a compaction's summary, which only a rewrite holds, is one);
    ``kinds`` splits them by kind; ``messages`` the distinct messages read, when
    known.
    """

    appends: int
    rewrites: int
    items: int
    kinds: Mapping[str, int] = field(default_factory=dict)
    messages: int | None = None

    @property
    def commitments_and_claims(self) -> int:
        """How many commitments and claims the checks have to hold the rewrites to."""
        return self.kinds.get("commitment", 0) + self.kinds.get("claim", 0)

    @property
    def note(self) -> str | None:
        """The plain sentence when the history gives no commitment or claim, else None."""
        return NO_COMMITMENTS if self.commitments_and_claims == 0 else None

    def line(self, out: str) -> str:
        """The summary line ``ctxproof import -o OUT`` prints."""
        read = f" from {self.messages} message(s)" if self.messages is not None else ""
        parts = [f"{self.commitments_and_claims} commitment(s) and claim(s)"]
        parts.append(f"{self.kinds.get('observation', 0)} observation(s)")
        parts.append(f"{self.kinds.get('prose', 0)} prose")
        if self.kinds.get("stub"):
            parts.append(f"{self.kinds['stub']} stub(s)")
        text = (
            f"{out}: {self.appends} append(s), {self.rewrites} rewrite(s),"
            f" {self.items} item(s){read}: {', '.join(parts)}"
        )
        return text + (f"; {self.note}" if self.note else "")

    def to_json(self) -> dict[str, Any]:
        """The JSON form: counts, kinds, and the sentence (null when there are commitments)."""
        return {
            "appends": self.appends,
            "rewrites": self.rewrites,
            "items": self.items,
            "messages": self.messages,
            "kinds": {k: self.kinds.get(k, 0) for k in KINDS},
            "commitments_and_claims": self.commitments_and_claims,
            "note": self.note,
        }


def coverage(trace: str, *, messages: int | None = None) -> Coverage:
    """Count what a trace (JSONL text, as an import writes it) holds."""
    appends = rewrites = 0
    kinds: dict[str, str] = {}
    for line in trace.splitlines():
        if not line.strip():
            continue
        event = json.loads(line)
        given: list[Any] = []
        if event.get("event") == "append":
            appends += 1
            given = event["items"]
        elif event.get("event") == "rewrite":
            rewrites += 1
            given = event.get("window") or (event.get("diff") or {}).get("put") or []
        for it in given:
            kinds.setdefault(it["id"], it["kind"])
    counts = {k: 0 for k in KINDS}
    for kind in kinds.values():
        counts[kind] = counts.get(kind, 0) + 1
    return Coverage(appends, rewrites, len(kinds), counts, messages)
