"""Findings, rule names and verdicts: the values every check returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["POLICY_RULES", "RULES", "VERDICTS", "Finding"]

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
    "PL001": "policy-error",
    "PL002": "policy-nondeterministic",
}
"""Every rule code and its stable name (SPEC §4)."""

POLICY_RULES = frozenset({"PL001", "PL002"})
"""Findings about a policy's code (it raised, returned nonsense, or is not a function of
its input), reported when a policy is run; an audit of a trace never reports them."""

VERDICTS = ("accept", "accept-demoted", "refuse", "undecided")


@dataclass(frozen=True, slots=True)
class Finding:
    """One defect: its rule, where it was introduced, the items, and what to do."""

    code: str
    pass_: int
    items: tuple[str, ...]
    message: str
    line: int | None = None
    counterexample: tuple[tuple[str, bool], ...] | None = None

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
        return out
