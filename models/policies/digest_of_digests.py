"""Digest-of-digests compactor: merges every claim into one digest and drops the evidence.

Models the witness-retention design document's first observation. Once over
budget, all claims (earlier digests among them) are merged into one new claim
``digest@N`` that ``covers`` them; the observations they cite are dropped, as
raw tool output is what a digest is meant to replace. The digest is
sloppy the way prose digests are: it keeps the headline — the formulas of the
``verified`` claims — and loses the rest while still saying it covers it; it
says ``verified`` and cites the witnesses it just dropped.

Caught by: WR005 witness-not-refutation-capable (a ``verified`` digest whose
cited witnesses are retained nowhere), WR001 load-bearing-witness-lost (a kept
commitment or claim whose witness was dropped), WR008 when a dropped
observation had failed, CF007 invalid-merge (the digest does not entail a
covered claim whose formula it lost), and CF001 for a covered load-bearing
claim when the merge is invalid.

Spec: not expressible. The spec language has no merge action (nothing that
writes ``covers`` or a formula) and no condition on what other items cite.
"""

from __future__ import annotations

import re
from typing import Any

from verifier.policies import item_tokens

_ATOM = re.compile(r"[A-Za-z_][A-Za-z0-9_.:@/]*")


def _formula(claim: dict[str, Any]) -> str | None:
    if "formula" in claim:
        return str(claim["formula"])
    return claim["id"] if _ATOM.fullmatch(claim["id"]) else None  # the default: its id


def _next_digest_id(window: list[dict[str, Any]]) -> str:
    used = [int(m.group(1)) for it in window if (m := re.fullmatch(r"digest@(\d+)", it["id"]))]
    return f"digest@{max(used, default=0) + 1}"


def digest_of_digests(window: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    claims = [it for it in window if it["kind"] == "claim"]
    if sum(item_tokens(it) for it in window) <= budget or len(claims) < 2:
        return list(window)
    headline = [f for c in claims if c.get("modality") == "verified" and (f := _formula(c))]
    evidence = list(dict.fromkeys(w for c in claims for w in c.get("witnesses", [])))
    digest = {
        "id": _next_digest_id(window),
        "kind": "claim",
        "formula": " & ".join(f"({f})" for f in headline) if headline else "true",
        "modality": "verified" if headline else "unverified",
        "witnesses": evidence,
        "covers": [c["id"] for c in claims],
        "load_bearing": any(c.get("load_bearing", False) for c in claims),
        "text": "digest of " + ", ".join(c["id"] for c in claims),
    }
    if not evidence:
        del digest["witnesses"]
    out: list[dict[str, Any]] = []
    for it in window:
        if it is claims[0]:
            out.append(digest)
        elif it["kind"] == "claim" or (it["kind"] == "observation" and it["id"] in evidence):
            continue
        else:
            out.append(it)
    return out
