"""Hypothesis strategies for windows, rewrites and traces.

Researchers can property-test their own rewrite policies with the same
machinery ctxproof's tests use::

    from hypothesis import given
    from verifier.strategies import traces

    @given(traces())
    def test_my_policy_never_drops_commitments(trace_text): ...

Items are generated as JSON objects (dicts) in the formats of SPEC §5, with
every reference pointing at an item that exists, so generated traces are
always valid input.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from verifier.formula import atoms, evaluate, parse
from verifier.window import canonical_json, content_ref

__all__ = [
    "ATOMS",
    "background_texts",
    "formula_texts",
    "item_dicts",
    "rewrite_of",
    "traces",
    "windows",
]

ATOMS: tuple[str, ...] = ("p.a", "p.b", "p.c", "p.d", "p.e")
"""The atoms generated formulas use (ids are a separate namespace)."""

Obj = dict[str, Any]


def formula_texts(atoms: Sequence[str] = ATOMS, max_depth: int = 2) -> st.SearchStrategy[str]:
    """Formula text over the given atoms, with every operator of the grammar."""
    leaf = st.sampled_from(list(atoms))
    if max_depth <= 0:
        return leaf
    sub = formula_texts(atoms, max_depth - 1)
    return st.one_of(
        leaf,
        leaf,
        sub.map(lambda a: f"!({a})"),
        st.tuples(sub, sub, st.sampled_from(["&", "|", "->", "<->"])).map(
            lambda t: f"({t[0]}) {t[2]} ({t[1]})"
        ),
    )


def _satisfiable_text(text: str) -> bool:
    """Has the formula a model? (Truth tables: generated formulas have few atoms.)"""
    formula = parse(text)
    names = sorted(atoms(formula))
    return any(
        evaluate(formula, dict(zip(names, values, strict=True)))
        for values in itertools.product((False, True), repeat=len(names))
    )


def background_texts(
    atoms: Sequence[str] = ATOMS, max_depth: int = 2
) -> st.SearchStrategy[str]:
    """A satisfiable formula text: an unsatisfiable background is bad input."""
    return formula_texts(atoms, max_depth).filter(_satisfiable_text)


@st.composite
def item_dicts(draw: st.DrawFn, item_id: str, window: Sequence[Obj] = ()) -> Obj:
    """One item with a fresh id whose references point into window."""
    observations = [it["id"] for it in window if it["kind"] == "observation"]
    others = [it["id"] for it in window if it["kind"] in ("commitment", "claim", "observation")]
    kind = draw(st.sampled_from(["commitment", "claim", "observation", "prose", "commitment"]))
    obj: Obj = {"id": item_id, "kind": kind}
    if kind == "prose":
        obj["text"] = draw(st.text(min_size=0, max_size=12))
        return obj
    if kind == "observation":
        modality = draw(st.sampled_from(["verified", "failed", "unverified"]))
        obj["modality"] = modality
        obj["shows"] = draw(formula_texts(max_depth=1))
        obj["source"] = draw(st.sampled_from(["make test", "pip install x", "git status", "ls"]))
        obj["exit_code"] = 1 if modality == "failed" else 0
        if draw(st.booleans()):
            obj["content"] = draw(st.text(max_size=20))
        return obj
    if draw(st.booleans()):
        obj["formula"] = draw(formula_texts())
    if kind == "commitment":
        obj["type"] = draw(st.sampled_from(["decision", "rejection", "invariant", "obligation"]))
        if bool(others) and draw(st.booleans()):
            obj["rationale"] = draw(st.lists(st.sampled_from(others), max_size=2, unique=True))
    if bool(observations) and draw(st.booleans()):
        obj["witnesses"] = draw(
            st.lists(st.sampled_from(observations), min_size=1, max_size=2, unique=True)
        )
        obj["modality"] = draw(st.sampled_from(["verified", "unverified"]))
    if kind == "claim":
        if bool(others) and draw(st.booleans()):
            obj["derived_from"] = draw(st.lists(st.sampled_from(others), max_size=2, unique=True))
        if draw(st.booleans()):
            obj["load_bearing"] = draw(st.booleans())
    return obj


@st.composite
def windows(draw: st.DrawFn, min_size: int = 0, max_size: int = 8, prefix: str = "i") -> list[Obj]:
    """A window: items with unique ids whose references point at earlier items."""
    size = draw(st.integers(min_size, max_size))
    out: list[Obj] = []
    for n in range(size):
        out.append(draw(item_dicts(f"{prefix}{n}", out)))
    return out


def ref_of(obj: Obj) -> str:
    """The store key of an item object: sha256 of its canonical JSON."""
    return content_ref(canonical_json(obj))


@st.composite
def rewrite_of(
    draw: st.DrawFn, window: Sequence[Obj], fresh: str = "n"
) -> tuple[list[Obj], list[Obj]]:
    """A random rewrite of window: (items to spill first, the new window).

    Operations: keep, drop, spill-and-stub, weaken or strengthen a formula,
    demote or promote a modality, add prose or a new claim.
    """
    after: list[Obj] = []
    spill: list[Obj] = []
    for it in window:
        op = draw(
            st.sampled_from(
                [
                    "keep",
                    "keep",
                    "keep",
                    "drop",
                    "stub",
                    "weaken",
                    "strengthen",
                    "demote",
                    "promote",
                ]
            )
        )
        if op == "keep" or it["kind"] == "stub":
            after.append(it)
        elif op == "drop":
            continue
        elif op == "stub":
            spill.append(it)
            after.append({"id": it["id"], "kind": "stub", "ref": ref_of(it)})
        elif op in ("weaken", "strengthen") and it["kind"] in ("commitment", "claim"):
            base = it.get("formula", it["id"])
            base_text = base if "formula" in it else "p.e"
            other = draw(st.sampled_from(list(ATOMS)))
            joined = "|" if op == "weaken" else "&"
            new = dict(it, formula=f"({base_text}) {joined} {other}")
            if draw(st.booleans()):
                spill.append(it)
            after.append(new)
        elif op == "demote" and it.get("modality") == "verified":
            after.append(dict(it, modality="unwitnessed"))
        elif (
            op == "promote"
            and it["kind"] in ("commitment", "claim")
            and it.get("modality", "unverified") == "unverified"
        ):
            after.append(dict(it, modality="verified"))
        else:
            after.append(it)
    if draw(st.booleans()):
        after.append({"id": f"{fresh}.prose", "kind": "prose", "text": "summary"})
    return spill, after


@st.composite
def traces(draw: st.DrawFn, max_events: int = 6, background: bool = True) -> str:
    """A valid JSONL trace: appends, spills and rewrites of a random session."""
    bg = draw(st.lists(background_texts(max_depth=1), max_size=1)) if background else []
    lines: list[Obj] = [{"event": "header", "format": "ctxproof-trace/1", "background": bg}]
    window: list[Obj] = []
    counter = 0
    for k in range(draw(st.integers(1, max_events))):
        kind = draw(st.sampled_from(["append", "append", "rewrite"])) if window else "append"
        if kind == "append":
            new: list[Obj] = []
            for _ in range(draw(st.integers(1, 3))):
                new.append(draw(item_dicts(f"i{counter}", window + new)))
                counter += 1
            lines.append({"event": "append", "items": new})
            window = window + new
        else:
            spill, after = draw(rewrite_of(window, fresh=f"n{k}"))
            if spill:
                lines.append({"event": "spill", "items": spill})
            event: Obj = {"event": "rewrite", "policy": "random", "window": after}
            if draw(st.booleans()):
                event["claimed_preserved"] = [it["id"] for it in after if it in window]
            lines.append(event)
            window = after
    return "\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n"
