"""Findings, rule names and verdicts: the values every check returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "CAUSE_ORDER",
    "POLICY_RULES",
    "REFUSING",
    "RULES",
    "SUMMARIES",
    "VERDICTS",
    "WITNESS_MODES",
    "Finding",
    "Refutes",
    "cause_item",
    "group_by_cause",
]

RULES: dict[str, str] = {
    "CF001": "commitment-dropped",
    "CF002": "commitment-strengthened",
    "CF003": "commitment-weakened-unrecorded",
    "CF004": "rationale-dropped",
    "CF005": "fabrication",
    "CF006": "false-preservation-claim",
    "CF007": "invalid-merge",
    "WR001": "load-bearing-witness-lost",
    "WR002": "unflagged-demotion",
    "WR003": "modality-promoted",
    "WR004": "negative-laundered",
    "WR005": "witness-not-refutation-capable",
    "WR006": "stub-unresolvable",
    "WR007": "forged-primitive",
    "WR008": "negative-evidence-evicted",
    "CP001": "unwitnessed-at-use",
    "CP002": "circular-justification",
    "CP003": "re-adoption",
    "CP004": "inconsistent-append",
    "TP001": "orphaned-tool-result",
    "TP002": "orphaned-tool-call",
    "PL001": "policy-error",
    "PL002": "policy-nondeterministic",
    "PL003": "policy-timeout",
    "PL004": "over-budget",
}
"""Every rule code and its stable name (docs/rules.md)."""

SUMMARIES: dict[str, str] = {
    "CF001": "a commitment (or a load-bearing or negative-result claim) is gone with no record",
    "CF002": "the rewrite asserts more than the item did",
    "CF003": "the item was weakened and its exact original is not in the store",
    "CF004": "a kept commitment's rationale is neither in the window nor in the store",
    "CF005": "a new or changed item is not entailed by what was there (window, store, background)",
    "CF006": "the rewriter claims to have preserved an item it dropped or altered",
    "CF007": "a merge (covers) is not equivalent to what it covers, or covers another kind",
    "WR001": "a load-bearing or negative-result item can no longer be checked by its witnesses",
    "WR002": "an item lost its support and still says verified/failed",
    "WR003": "modality rose without a new witness that supports it",
    "WR004": "a failed result was laundered: its modality changed or its formula softened",
    "WR005": "the retained witnesses do not entail the item, or could never refute it",
    "WR006": "a stub's ref is not in the store, or the stored bytes do not hash to it",
    "WR007": "a rewrite put in an observation that no append created",
    "WR008": "a failed observation left the window with no store record",
    "CP001": "an append uses a verified/failed item with no path to a retained primitive",
    "CP002": "items justify each other in a cycle with no observation under it",
    "CP003": "an append contradicts a kept commitment, or re-runs an evicted failure",
    "CP004": "an append makes the window's content unsatisfiable",
    "TP001": "a tool result is kept while the call that requested it is not",
    "TP002": "a tool call is kept while none of its results is",
    "PL001": "the policy raised, returned something else, or returned invalid items",
    "PL002": "the policy's output differs on the same input twice",
    "PL003": "a call of the policy ran past its time limit (fuzz --policy-timeout)",
    "PL004": "(fuzz --require-fit) the policy left the window over its budget",
}
"""What each rule catches, in one line (the report's legend; docs/rules.md has the detail)."""

CAUSE_ORDER: tuple[str, ...] = (
    "WR007",
    "WR004",
    "CF007",
    "CF002",
    "CF003",
    "WR003",
    "WR006",
    "CF001",
    "WR008",
    "CF004",
    "TP001",
    "TP002",
    "CF005",
    "WR001",
    "WR002",
    "WR005",
    "CF006",
    "CP003",
    "CP004",
    "CP001",
    "CP002",
    "PL001",
    "PL002",
    "PL003",
    "PL004",
)
"""Rules from the most to the least causal: of several findings on one item at one event,
the first in this order is the primary, and the others follow from the same change (a
laundered failed claim is WR004; that it now asserts more, is not entailed, lost its
support and was claimed preserved follow from it)."""

REFUSING = ("CF", "WR", "TP")
"""Rule families whose findings refuse a rewrite; CP findings are reported, never repaired."""

POLICY_RULES = frozenset({"PL001", "PL002", "PL003", "PL004"})
"""Findings about a policy's code (it raised, returned nonsense, or is not a function of
its input), reported when a policy is run; an audit of a trace never reports them."""

VERDICTS = ("accept", "accept-demoted", "refuse", "undecided")

WITNESS_MODES = ("support", "count")
"""``--witness-mode`` (``mode=`` in the API): surviving witnesses must still support an
item, or (count) none of them may leave (docs/rules.md, WR001)."""


@dataclass(frozen=True, slots=True)
class Refutes:
    """The entailment a counterexample refutes: background ∧ premises ⊨ goal.

    ``background`` holds only the background formulas that share an atom with the
    question; every formula is written as ctxproof renders it.
    """

    background: tuple[str, ...]
    premises: tuple[str, ...]
    goal: str

    def to_json(self) -> dict[str, Any]:
        return {
            "background": list(self.background),
            "premises": list(self.premises),
            "goal": self.goal,
        }


@dataclass(frozen=True, slots=True)
class Finding:
    """One defect: its rule, where it was introduced, the items, and what to do.

    ``counterexample`` is a total assignment of the atoms of the question (see
    ``refutes``) under which what was known holds and what is asserted does not.
    ``related_to`` names the primary finding on the same item at the same event
    (its code) when this one follows from the same cause; reports list it under
    that primary.
    """

    code: str
    pass_: int
    items: tuple[str, ...]
    message: str
    line: int | None = None
    counterexample: tuple[tuple[str, bool], ...] | None = None
    refutes: Refutes | None = field(default=None, compare=False)
    related_to: str | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return RULES[self.code]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            "pass": self.pass_,
            "line": self.line,
            "items": list(self.items),
            "message": self.message,
        }
        if self.counterexample is not None:
            out["counterexample"] = dict(self.counterexample)
        if self.refutes is not None:
            out["refutes"] = self.refutes.to_json()
        if self.related_to is not None:
            out["related_to"] = self.related_to
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Finding:
        """The finding :meth:`to_json` wrote (its counterexample's atoms in sorted order)."""
        cex = obj.get("counterexample")
        refutes = obj.get("refutes")
        return cls(
            obj["code"],
            obj["pass"],
            tuple(obj["items"]),
            obj["message"],
            obj["line"],
            tuple(sorted(cex.items())) if cex is not None else None,
            None
            if refutes is None
            else Refutes(tuple(refutes["background"]), tuple(refutes["premises"]), refutes["goal"]),
            obj.get("related_to"),
        )

def cause_item(code: str, items: tuple[str, ...] | list[str]) -> str | None:
    """The item whose change a finding follows from: its first item, except for CF004,
    which follows from its rationale (the second item) being dropped."""
    if code == "CF004" and len(items) > 1:
        return items[1]
    return items[0] if items else None


def group_by_cause(findings: list[Finding]) -> list[Finding]:
    """Mark, among the findings of one event, those that follow from the same item's
    change as a more causal one (``related_to``: the primary's code). Every finding is
    kept, in order.

    >>> fs = [Finding("CF005", 1, ("k1",), "m"), Finding("WR004", 1, ("k1",), "m")]
    >>> [(f.code, f.related_to) for f in group_by_cause(fs)]
    [('CF005', 'WR004'), ('WR004', None)]
    """
    rank = {code: i for i, code in enumerate(CAUSE_ORDER)}
    primary: dict[str, int] = {}
    for i, f in enumerate(findings):
        key = cause_item(f.code, f.items)
        if key is None:
            continue
        cur = primary.get(key)
        if cur is None or rank[f.code] < rank[findings[cur].code]:
            primary[key] = i
    out = []
    for i, f in enumerate(findings):
        key = cause_item(f.code, f.items)
        p = primary.get(key) if key is not None else None
        if p is not None and p != i:
            f = replace(f, related_to=findings[p].code)
        out.append(f)
    return out
