"""Hypothesis strategies for items, windows, sessions and traces.

Researchers can property-test their own rewrite policies with the same
machinery ctxproof's tests use (docs/fuzz.md, "Your own property tests")::

    from hypothesis import given
    from verifier import check_rewrite, run_policy
    from verifier.strategies import windows_under_pressure

    @given(windows_under_pressure(pressure=(1.5, 3.0)))
    def test_my_policy_keeps_commitments(case):
        window, stored, budget = case
        result = run_policy(my_policy, window, budget)
        ...

    from verifier.strategies import sessions_of

    @given(sessions_of(my_policy, passes=8, pressure=(1.05, 1.5)))
    def test_no_finding_under_light_load(session):
        assert not session.findings

Items are generated as JSON objects (dicts) in the formats of docs/formats.md, with
every reference pointing at an item that exists, so generated traces are
always valid input.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from verifier.formula import atoms, evaluate
from verifier.parser import parse_formula
from verifier.window import canonical_json, content_ref

__all__ = [
    "ATOMS",
    "SOURCES",
    "background_texts",
    "formula_texts",
    "item_dicts",
    "policy_windows",
    "rewrite_of",
    "session_plans",
    "sessions_of",
    "spec_texts",
    "traces",
    "windows",
    "windows_under_pressure",
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
    formula = parse_formula(text)
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


# -- windows for policies --------------------------------------------------------------------

SOURCES: tuple[str, ...] = ("make test", "pip install x", "git status", "user", "alembic upgrade")
"""The ``source`` values generated observations use."""


def _true_under(draw: st.DrawFn, truth: dict[str, bool]) -> str:
    """A formula text over ATOMS that holds under truth (negated when it would not)."""
    text = draw(formula_texts(max_depth=1))
    return text if evaluate(parse_formula(text), truth) else f"!({text})"


def _conj(texts: Sequence[str]) -> str:
    return " & ".join(f"({t})" for t in texts)


@st.composite
def _rich_item(
    draw: st.DrawFn,
    item_id: str,
    known: dict[str, Obj],
    truth: dict[str, bool],
    *,
    kind: str | None = None,
    all_results: bool = False,
) -> Obj:
    """One item of any non-stub kind whose references point at ids in known."""
    by_kind: dict[str, list[str]] = {}
    for iid, it in known.items():
        by_kind.setdefault(it["kind"], []).append(iid)
    observations = by_kind.get("observation", [])
    prose = by_kind.get("prose", [])
    kinds = ["commitment", "commitment", "claim", "claim", "observation", "observation", "prose"]
    if kind is None:
        kind = draw(st.sampled_from(kinds))
        if kind == "observation" and all_results and not prose:
            kind = "prose"  # a tool result needs an earlier tool call
    obj: Obj = {"id": item_id, "kind": kind}
    if kind == "prose":
        if bool(prose) and draw(st.booleans()):
            obj["call"] = draw(st.sampled_from(prose))  # a placeholder left for a result
    elif kind == "observation":
        modality = draw(st.sampled_from(["verified", "failed", "unverified", "unwitnessed"]))
        obj["modality"] = modality
        if draw(st.integers(0, 4)):
            obj["shows"] = _true_under(draw, truth)
        obj["source"] = draw(st.sampled_from(SOURCES))
        if obj["source"] != "user":
            obj["exit_code"] = 1 if modality == "failed" else 0
        if draw(st.booleans()):
            obj["content"] = draw(st.text(max_size=16))
            if draw(st.booleans()):
                obj["digest"] = content_ref(obj["content"])
        if draw(st.booleans()):
            obj["at"] = draw(st.one_of(st.integers(0, 99), st.sampled_from(["3f2a9c1", "t12"])))
        if bool(prose) and (all_results or draw(st.booleans())):
            obj["call"] = draw(st.sampled_from(prose))
    else:
        same = by_kind.get(kind, [])
        if kind == "commitment":
            obj["type"] = draw(
                st.sampled_from(["decision", "rejection", "invariant", "obligation"])
            )
            if bool(known) and draw(st.booleans()):
                obj["rationale"] = draw(
                    st.lists(st.sampled_from(sorted(known)), min_size=1, max_size=2, unique=True)
                )
        elif bool(known) and draw(st.booleans()):
            obj["derived_from"] = draw(
                st.lists(st.sampled_from(sorted(known)), min_size=1, max_size=2, unique=True)
            )
        shown = [w for w in observations if "shows" in known[w]]
        if bool(same) and draw(st.integers(0, 3)) == 0:
            # a merge: equivalent to the conjunction of what it covers
            covers = draw(st.lists(st.sampled_from(same), min_size=1, max_size=2, unique=True))
            obj["covers"] = covers
            obj["formula"] = _conj([known[c].get("formula", c) for c in covers])
        elif bool(shown) and draw(st.booleans()):
            witnesses = draw(st.lists(st.sampled_from(shown), min_size=1, max_size=2, unique=True))
            obj["witnesses"] = witnesses
            failed = any(known[w]["modality"] == "failed" for w in witnesses)
            obj["modality"] = (
                "failed" if failed else draw(st.sampled_from(["verified", "unverified"]))
            )
            obj["formula"] = _conj([known[w]["shows"] for w in witnesses])
        elif draw(st.booleans()):
            obj["formula"] = _true_under(draw, truth)
        if draw(st.booleans()):
            obj["load_bearing"] = draw(st.booleans())
    if draw(st.booleans()):
        obj["text"] = draw(st.text(max_size=12))
    if draw(st.booleans()):
        obj["tokens"] = draw(st.integers(0, 60))
    if draw(st.booleans()):
        obj["score"] = draw(st.integers(0, 100))
    return obj


@st.composite
def policy_windows(
    draw: st.DrawFn,
    min_size: int = 0,
    max_size: int = 10,
    *,
    prefix: str = "i",
    stubs: bool = True,
    all_results: bool = False,
) -> tuple[list[Obj], list[Obj]]:
    """A window that uses every kind, link and field, and the store its stubs resolve in.

    Returns ``(window, stored)``: item dicts with unique ids, and the items the
    window's stubs stand for. Commitments of the four types with rationale and
    merges (``covers``), claims with ``derived_from`` and merges, items that
    cite witnesses (verified, or failed when a witness failed, their formula
    what the witnesses show), observations verified, failed, unverified and
    unwitnessed with ``source``, ``exit_code``, ``content``, ``digest``,
    ``at`` and ``call``, prose with and without ``call``, stubs, and ``text``,
    ``tokens`` and ``score`` on any of them. Every reference points at an
    earlier item, and all formulas hold under one hidden assignment, so the
    window's content is consistent. With ``all_results``, every observation
    is a tool result (it carries ``call``).
    """
    truth = {a: draw(st.booleans()) for a in ATOMS}
    size = draw(st.integers(min_size, max_size))
    window: list[Obj] = []
    stored: list[Obj] = []
    known: dict[str, Obj] = {}  # id -> the item (a stub's: the stored item)
    for n in range(size):
        item_id = f"{prefix}{n}"
        truth[item_id] = True  # an item's default formula is the atom named by its id
        obj = draw(_rich_item(item_id, known, truth, all_results=all_results))
        known[item_id] = obj
        if stubs and draw(st.integers(0, 5)) == 0:
            stored.append(obj)
            stub: Obj = {"id": item_id, "kind": "stub", "ref": ref_of(obj)}
            if draw(st.booleans()):
                stub["tokens"] = draw(st.integers(0, 10))
            window.append(stub)
        else:
            window.append(obj)
    return window, stored


def _toml_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


@st.composite
def _when_text(draw: st.DrawFn) -> str:
    kinds = ["commitment", "claim", "observation", "prose", "stub"]
    types = ["decision", "rejection", "invariant", "obligation"]
    modalities = ["verified", "failed", "unverified", "unwitnessed"]
    parts: list[str] = []
    for key, choices in (("kind", kinds), ("type", types), ("modality", modalities)):
        if draw(st.integers(0, 3)) == 0:
            chosen = draw(st.lists(st.sampled_from(choices), min_size=1, max_size=3, unique=True))
            parts.append(f"{key} = {_toml_list(chosen)}")
    for key in ("load_bearing", "negative", "cited", "result", "stub"):
        if draw(st.integers(0, 5)) == 0:
            parts.append(f"{key} = {'true' if draw(st.booleans()) else 'false'}")
    for key, top in (("age", 4), ("score", 100), ("tokens", 40)):
        if draw(st.integers(0, 4)) == 0:
            op = draw(st.sampled_from(["lt", "le", "gt", "ge", "eq"]))
            parts.append(f"{key} = {{ {op} = {draw(st.integers(0, top))} }}")
    if draw(st.integers(0, 6)) == 0:
        op = draw(st.sampled_from(["lt", "le", "gt", "ge"]))
        parts.append(f"pressure = {{ {op} = {draw(st.sampled_from([1.0, 1.5, 2.0, 2.5]))} }}")
    return "{ " + ", ".join(parts) + " }" if parts else ""


@st.composite
def spec_texts(draw: st.DrawFn, max_rules: int = 4) -> str:
    """The text of a valid ``ctxproof-policy/1`` spec using every key, condition and action."""
    lines = ['format = "ctxproof-policy/1"', 'name = "generated"']
    if draw(st.booleans()):
        keys = draw(st.permutations(["position", "age", "score", "tokens"]))
        keys = keys[: draw(st.integers(1, 4))]
        signed = [("-" if draw(st.booleans()) else "") + k for k in keys]
        lines.append(f"order = {_toml_list(signed)}")
    if draw(st.booleans()):
        lines.append(f'stop = "{draw(st.sampled_from(["fits", "all"]))}"')
    if draw(st.booleans()):
        lines.append(f"stub_tokens = {draw(st.integers(0, 12))}")
    if draw(st.booleans()):
        lines.append(f"demote_orphans = {'true' if draw(st.booleans()) else 'false'}")
    actions = ["keep", "evict", "spill", "summarize", "soften", "demote"]
    for _ in range(draw(st.integers(0, max_rules))):
        lines.append("[[rule]]")
        when = draw(_when_text())
        if when:
            lines.append(f"when = {when}")
        lines.append(f'do = "{draw(st.sampled_from(actions))}"')
    return "\n".join(lines) + "\n"


@st.composite
def windows_under_pressure(
    draw: st.DrawFn,
    pressure: tuple[float, float] = (1.05, 3.0),
    min_size: int = 1,
    max_size: int = 12,
) -> tuple[list[Obj], list[Obj], int]:
    """``(window, stored, budget)``: a rich window (:func:`policy_windows`) and a budget
    that puts it under the given pressure (tokens / budget, from ``pressure[0]`` to
    ``pressure[1]``), as a policy sees it when it must compact."""
    from verifier.policies import window_tokens

    window, stored = draw(policy_windows(max(1, min_size), max_size))
    tokens = window_tokens(window)
    lo, hi = pressure
    p = draw(st.integers(round(lo * 100), max(round(lo * 100), round(hi * 100)))) / 100
    budget = max(1, math.floor(tokens / p))
    return window, stored, budget


def session_plans(
    passes: int = 10, pressure: tuple[float, float] = (1.05, 3.0)
) -> st.SearchStrategy[Any]:
    """Plans of the fuzzer's simulated agent (``verifier.fuzz.Plan``): a budget, a hidden
    world and the agent's turns; ``pressure`` bounds how far a turn overfills the window."""
    from verifier.fuzz import session_plans as plans

    return plans(passes, pressure)


def sessions_of(
    policy: Any,
    passes: int = 10,
    pressure: tuple[float, float] = (1.05, 3.0),
    mode: str = "support",
) -> st.SearchStrategy[Any]:
    """Sessions the simulated agent plays against ``policy`` (a callable or a POLICY
    string), audited as they go: ``verifier.fuzz.SessionResult`` with ``findings``,
    ``trace`` and the pressure of each rewrite. Hypothesis shrinks a failing session."""
    from verifier.fuzz import run_session
    from verifier.policies import load_policy
    from verifier.policies.loading import as_policy

    loaded = load_policy(policy) if isinstance(policy, str) else as_policy(policy)
    return session_plans(passes, pressure).map(
        lambda plan: run_session(loaded, plan, passes=passes, mode=mode)
    )
