"""``ctxproof prove``: proofs, or minimal counterexamples, that a spec never loses a
commitment, a load-bearing witness, negative evidence or a tool pairing (docs/prove.md).

A spec (docs/spec-language.md) is data, so what it does to *every* window can
be stated as constraints and handed to z3. :func:`prove` checks eight
properties — the spec never causes CF001, CF004, WR001 (count mode), WR002,
WR004, WR008, TP001 or TP002 — either by bounded model checking (K passes
from the empty window, up to A items appended before each pass, no window
holding more than N) or, with ``induction=True``, over one pass from an
arbitrary state of up to N items, which covers any number of passes because
every one of these rules concerns a single rewrite.

Each property is asked of z3 negated ("some slot shows the finding after some
pass"); ``proved`` means every one was unsatisfiable. A satisfiable one is
shrunk to the fewest items, turned into a concrete trace by running the
spec's own interpreter on the model's window (:mod:`verifier.prove.replay`),
written to ``OUT/cex-CODE.jsonl`` and audited; a model that does not replay
with its finding is an :class:`~verifier.errors.InternalError`.

The z3 calls live in :mod:`verifier.prove.smt` (the one module here that
imports z3); the symbolic slots in :mod:`~verifier.prove.window`, one pass in
:mod:`~verifier.prove.passes`, the properties in
:mod:`~verifier.prove.properties`, one proof in :mod:`~verifier.prove.proof`.
:func:`suggest` (:mod:`~verifier.prove.search`) searches the fewest edits that
make a refuted spec provable, and measures what each costs in tokens.
"""

from __future__ import annotations

from verifier.prove.proof import (
    DEFAULT_APPENDS,
    DEFAULT_ITEMS,
    DEFAULT_OUT,
    DEFAULT_PASSES,
    DEFAULT_TIMEOUT,
    MAX_APPENDS,
    MAX_ITEMS,
    MAX_PASSES,
    PROPERTIES,
    Counterexample,
    Encoding,
    ProofResult,
    prove,
)
from verifier.prove.search import Edit, Suggestion, SuggestResult, suggest

__all__ = [
    "DEFAULT_APPENDS",
    "DEFAULT_ITEMS",
    "DEFAULT_OUT",
    "DEFAULT_PASSES",
    "DEFAULT_TIMEOUT",
    "MAX_APPENDS",
    "MAX_ITEMS",
    "MAX_PASSES",
    "PROPERTIES",
    "Counterexample",
    "Edit",
    "Encoding",
    "ProofResult",
    "SuggestResult",
    "Suggestion",
    "prove",
    "suggest",
]
