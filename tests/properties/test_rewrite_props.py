"""Properties of checking one rewrite (SPEC §2, §4).

Windows are generated as lists of JSON item objects (commitments of the four
types, claims, observations with ``shows`` and modality, prose; ids unique) and
read with :func:`verifier.io.item_from_json`, as a trace would be. Rewrites
drop, alter, stub and add a few items; the store holds a random part of the
window before.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import assume, given, note, settings
from hypothesis import strategies as st
from test_formula_props import name_atoms

from verifier.audit import audit_trace
from verifier.check import RewriteResult, check_rewrite
from verifier.formula import FALSE, TRUE, And, Atom, Formula, Iff, Implies, Not, Or, render
from verifier.io import check_references, item_from_json, parse_trace_text
from verifier.parser import parse_formula
from verifier.solver import Session
from verifier.store import MemoryStore, Store
from verifier.strategies import background_texts, traces
from verifier.window import Item, canonical_json, content_ref

Obj = dict[str, Any]

# ids are drawn from here; every one is also a valid atom, so formulas can name items
ID_POOL = (
    "c1",
    "c2",
    "c3",
    "c4",
    "o1",
    "o2",
    "o3",
    "k.a",
    "x:y",
    "u@v",
    "p/q",
    "db.pg",
    "nota",
    "or_x",
    "and.b",
    "_t",
    "truex",
    "m:5",
    "r@6",
    "s/7",
)
# ids that are not atom syntax: their default formula is still the atom named by the id
ODD_IDS = ("c 1", "true", "and", "ñ-1")
# atoms that are never ids
FACT_ATOMS = ("f.x", "g:y", "h@z")
# every name an id or atom may be renamed to
RENAME_TARGETS = (*ID_POOL, *FACT_ATOMS, *(f"z{i}" for i in range(30)))

TYPES = ("decision", "rejection", "invariant", "obligation")
MODALITIES = ("verified", "failed", "unverified", "unwitnessed")
OBS_MODALITIES = ("verified", "failed", "unverified")
REF_FIELDS = ("rationale", "witnesses", "derived_from", "covers")
FORMULA_FIELDS = ("formula", "shows")
KEYWORDS = frozenset({"true", "false", "and", "or", "not"})
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:@/]*")
ACCEPTED = ("accept", "accept-demoted")
MODES = ("support", "count")


def is_atom_name(name: str) -> bool:
    return NAME_RE.fullmatch(name) is not None and name not in KEYWORDS


# -- formulas as text ---------------------------------------------------------------------

MAX_ATOMS = 16


def _shapes(depth: int) -> st.SearchStrategy[Formula]:
    """Small formulas over placeholder atoms 0..MAX_ATOMS-1 (built once, reused)."""
    leaf: st.SearchStrategy[Formula] = st.one_of(
        st.integers(0, MAX_ATOMS - 1).map(lambda i: Atom(str(i))),
        st.sampled_from([TRUE, FALSE]),
    )
    if depth <= 1:
        return leaf
    sub = _shapes(depth - 1)
    return st.one_of(
        leaf,
        sub.map(Not),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: And(tuple(xs))),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: Or(tuple(xs))),
        st.builds(Implies, sub, sub),
        st.builds(Iff, sub, sub),
    )


SHAPES = _shapes(3)


_name = name_atoms


def formula_texts(vocab: Sequence[str]) -> st.SearchStrategy[str]:
    """Formula text over the atoms in vocab."""
    return SHAPES.map(lambda f: render(_name(f, vocab)))


def default_text(obj: Obj) -> str | None:
    """The formula of a commitment or claim as text (None: its id is no atom syntax)."""
    if "formula" in obj:
        return str(obj["formula"])
    return str(obj["id"]) if is_atom_name(str(obj["id"])) else None


# -- windows --------------------------------------------------------------------------------


def _subset(draw: st.DrawFn, pool: Sequence[str], most: int) -> list[str]:
    if not pool:
        return []
    return draw(st.lists(st.sampled_from(list(pool)), max_size=most, unique=True))


def _maybe(draw: st.DrawFn, obj: Obj, key: str, value: st.SearchStrategy[Any]) -> None:
    if draw(st.booleans()):
        obj[key] = draw(value)


def draw_item(
    draw: st.DrawFn,
    iid: str,
    kind: str,
    vocab: Sequence[str],
    others: Sequence[str],
    observations: Mapping[str, Obj],
) -> Obj:
    """One item object of the given kind; references point at others / observations."""
    obj: Obj = {"id": iid, "kind": kind}
    if draw(st.integers(0, 3)) == 0:
        obj["text"] = draw(st.sampled_from(["ok", "see log", "résumé", ""]))
    if kind == "prose":
        obj["text"] = draw(st.text(max_size=12))
        return obj
    if kind == "observation":
        if draw(st.integers(0, 4)) > 0:
            obj["shows"] = draw(formula_texts(vocab))
        _maybe(draw, obj, "modality", st.sampled_from(OBS_MODALITIES))
        _maybe(draw, obj, "source", st.sampled_from(["make test", "pytest -x", "curl /health"]))
        _maybe(draw, obj, "content", st.text(max_size=8))
        _maybe(draw, obj, "exit_code", st.integers(0, 2))
        return obj
    witnesses = _subset(draw, list(observations), 2)
    if witnesses:
        obj["witnesses"] = witnesses
    choice = draw(st.integers(0, 3))
    if choice == 1:
        obj["formula"] = draw(formula_texts(vocab))
    elif choice in (2, 3) and witnesses:
        # a formula its witnesses show, or a weakening of it: often supported
        shown = [str(observations[w]["shows"]) for w in witnesses if "shows" in observations[w]]
        if shown:
            text = " & ".join(f"({s})" for s in shown)
            if choice == 3:
                text = f"({text}) | {draw(st.sampled_from(list(vocab)))}"
            obj["formula"] = text
    if witnesses:  # mostly a checked item
        obj["modality"] = draw(st.sampled_from(("verified", "verified", "failed", "unverified")))
    else:
        _maybe(draw, obj, "modality", st.sampled_from(MODALITIES))
    _maybe(draw, obj, "load_bearing", st.booleans())
    if kind == "commitment":
        obj["type"] = draw(st.sampled_from(TYPES))
        rationale = _subset(draw, others, 2)
        if rationale:
            obj["rationale"] = rationale
    else:
        derived = _subset(draw, others, 2)
        if derived:
            obj["derived_from"] = derived
    return obj


def _add_calls(draw: st.DrawFn, items: list[Obj]) -> None:
    """Tool pairing: some observations and prose items answer a call (another item)."""
    for obj in items:
        if obj["kind"] in ("observation", "prose") and draw(st.integers(0, 2)) == 0:
            calls = [o["id"] for o in items if o is not obj and o["kind"] != "stub"]
            if calls:
                obj["call"] = draw(st.sampled_from(calls))
        if draw(st.integers(0, 4)) == 0:
            obj["score"] = draw(st.integers(0, 100))


def _add_merge(draw: st.DrawFn, items: list[Obj]) -> None:
    """Now and then make one commitment (or claim) a merge that covers others of its kind."""
    kind = draw(st.sampled_from(["commitment", "commitment", "claim"]))
    commitments = [o for o in items if o["kind"] == kind]
    if len(commitments) < 3 or draw(st.integers(0, 3)) != 0:
        return
    merged = draw(st.sampled_from(commitments))
    covered = [o for o in commitments if o is not merged and default_text(o) is not None]
    chosen = draw(st.lists(st.sampled_from(covered), min_size=1, max_size=2, unique_by=id))
    merged["covers"] = [o["id"] for o in chosen]
    if draw(st.integers(0, 3)) > 0:  # mostly a valid merge: the conjunction of the covered
        merged["formula"] = " & ".join(f"({default_text(o)})" for o in chosen)


KIND_CHOICES = ("commitment", "commitment", "claim", "observation", "observation", "prose")


@st.composite
def windows(draw: st.DrawFn, min_size: int = 1, max_size: int = 8) -> list[Obj]:
    """A window as JSON objects: unique ids; references only to ids of the window."""
    n = draw(st.integers(min_size, max_size))
    odd = draw(st.integers(0, 5)) == 0
    pool = st.sampled_from((*ID_POOL, *ODD_IDS)) if odd else st.sampled_from(ID_POOL)
    ids = draw(st.lists(pool, min_size=n, max_size=n, unique=True))
    kinds = draw(st.lists(st.sampled_from(KIND_CHOICES), min_size=n, max_size=n))
    vocab = [*(i for i in ids if is_atom_name(i)), *FACT_ATOMS]
    observations: dict[str, Obj] = {}
    by_id: dict[str, Obj] = {}
    for iid, kind in zip(ids, kinds, strict=True):
        if kind == "observation":
            observations[iid] = by_id[iid] = draw_item(draw, iid, kind, vocab, [], {})
    for iid, kind in zip(ids, kinds, strict=True):
        if kind != "observation":
            others = [j for j in ids if j != iid]
            by_id[iid] = draw_item(draw, iid, kind, vocab, others, observations)
    items = [by_id[i] for i in ids]
    _add_merge(draw, items)
    _add_calls(draw, items)
    return items


# -- rewrites -------------------------------------------------------------------------------


@dataclass(frozen=True)
class StubOf:
    """A stub standing for this item object, which the store may or may not hold."""

    target: Obj


@dataclass
class Scenario:
    before: list[Obj | StubOf]
    after: list[Obj | StubOf]
    spilled: list[Obj]
    claimed: list[str] | None
    background: list[str]
    mode: str = "support"


def _alter(draw: st.DrawFn, obj: Obj, vocab: Sequence[str], observations: Sequence[str]) -> Obj:
    """A changed version of obj (same id and kind)."""
    new = dict(obj)
    kind = obj["kind"]
    if kind == "prose":
        new["text"] = str(obj.get("text", "")) + " (edited)"
        return new
    if kind == "observation":
        what = draw(st.sampled_from(["shows", "modality", "text"]))
        if what == "shows":
            new["shows"] = draw(formula_texts(vocab))
        elif what == "modality":
            new["modality"] = draw(st.sampled_from(OBS_MODALITIES))
        else:
            new["text"] = "summarised"
        return new
    what = draw(st.sampled_from(["formula", "modality", "load_bearing", "witnesses", "text"]))
    if what == "formula":
        old = default_text(obj) or draw(st.sampled_from(list(vocab)))
        atom = draw(st.sampled_from(list(vocab)))
        new["formula"] = draw(
            st.sampled_from(
                [
                    f"({old}) | {atom}",  # weaker
                    f"({old}) & {atom}",  # stronger
                    f"!({old})",  # flipped
                    f"{atom} -> ({old})",  # weaker
                ]
            )
            | formula_texts(vocab)
        )
    elif what == "modality":
        new["modality"] = draw(st.sampled_from(MODALITIES))
    elif what == "load_bearing":
        new["load_bearing"] = not obj.get("load_bearing", kind == "commitment")
    elif what == "witnesses":
        ws = _subset(draw, observations, 2)
        if ws:
            new["witnesses"] = ws
        else:
            new.pop("witnesses", None)
    else:
        new["text"] = "compacted"
    return new


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """A window before, a random rewrite of it, and a store holding part of before.

    Some items of the window before may already stand as stubs (spilled earlier).
    """
    window = draw(windows())
    prestubbed: set[str] = set()
    if draw(st.integers(0, 2)) == 0:
        prestubbed = set(_subset(draw, [o["id"] for o in window], 3))
    before: list[Obj | StubOf] = [StubOf(o) if o["id"] in prestubbed else o for o in window]
    ids = [o["id"] for o in window]
    observations = [o["id"] for o in window if o["kind"] == "observation"]
    fresh_pool = [i for i in ID_POOL if i not in ids]
    new_ids = draw(st.lists(st.sampled_from(fresh_pool), max_size=2, unique=True))
    vocab = [*(i for i in ids if is_atom_name(i)), *new_ids, *FACT_ATOMS]
    after: list[Obj | StubOf] = []
    for obj, entry in zip(window, before, strict=True):
        actions = ["keep"] * 4 + ["drop", "alter", "alter", "stub"]
        if isinstance(entry, StubOf):
            actions.append("unstub")
        action = draw(st.sampled_from(actions))
        if action == "keep":
            after.append(entry)
        elif action == "alter":
            after.append(_alter(draw, obj, vocab, observations))
        elif action == "stub":
            after.append(StubOf(obj))
        elif action == "unstub":
            after.append(obj)
    new_spilled: list[Obj] = []
    for iid in new_ids:
        kind = draw(st.sampled_from(("commitment", "claim", "observation", "prose", "stub")))
        by_id = {o["id"]: o for o in window if o["kind"] == "observation"}
        if kind == "stub":  # a stub for an item the window never had, stored or not
            kind = draw(st.sampled_from(("commitment", "claim", "observation")))
            target = draw_item(draw, iid, kind, vocab, ids, by_id)
            after.append(StubOf(target))
            if draw(st.booleans()):
                new_spilled.append(target)
        else:
            after.append(draw_item(draw, iid, kind, vocab, ids, by_id))
    if observations and draw(st.integers(0, 2)) == 0:
        # evict one observation; the items it witnessed are demoted, or say nothing
        cited = [w for o in window for w in o.get("witnesses", ())]
        evicted = draw(st.sampled_from(sorted(set(cited)) or observations))
        demote = draw(st.booleans())
        kept: list[Obj | StubOf] = []
        for e in after:
            if as_obj(e)["id"] == evicted:
                continue
            if demote and not isinstance(e, StubOf) and evicted in e.get("witnesses", ()):
                e = {**e, "modality": "unwitnessed"}
            kept.append(e)
        after = kept
    commitments = [o for o in window if o["kind"] == "commitment" and default_text(o)]
    unused = [i for i in fresh_pool if i not in new_ids]
    if unused and commitments and draw(st.integers(0, 2)) == 0:
        # merge some commitments into a new one that covers them, and mostly drop them
        mid = draw(st.sampled_from(unused))
        chosen = draw(st.lists(st.sampled_from(commitments), min_size=1, max_size=3, unique_by=id))
        formula = " & ".join(f"({default_text(o)})" for o in chosen)
        if draw(st.integers(0, 3)) == 0:  # an invalid merge: weaker or stronger
            formula = draw(st.sampled_from([f"({formula}) | f.x", f"({formula}) & f.x"]))
        merged: Obj = {
            "id": mid,
            "kind": "commitment",
            "type": draw(st.sampled_from(TYPES)),
            "formula": formula,
            "covers": [o["id"] for o in chosen],
        }
        if draw(st.booleans()):
            drop = {o["id"] for o in chosen}
            after = [e for e in after if as_obj(e)["id"] not in drop]
        after.append(merged)
    spilled = [o for o in window if o["id"] in prestubbed or draw(st.integers(0, 3)) == 0]
    spilled += new_spilled
    claimed: list[str] | None = None
    if draw(st.booleans()):
        claimed = _subset(draw, [*ids, *new_ids], 4)
    background: list[str] = []
    if draw(st.integers(0, 3)) == 0:
        background = [draw(background_texts(vocab))]
    mode = draw(st.sampled_from(MODES))
    return Scenario(before, after, spilled, claimed, background, mode)


# -- building the inputs of check_rewrite ---------------------------------------------------


def items(objs: Iterable[Obj]) -> list[Item]:
    return [item_from_json(o) for o in objs]


def stub_obj(target: Obj) -> Obj:
    return {"id": target["id"], "kind": "stub", "ref": content_ref(canonical_json(target))}


def as_obj(entry: Obj | StubOf) -> Obj:
    return stub_obj(entry.target) if isinstance(entry, StubOf) else entry


def before_objs(sc: Scenario) -> list[Obj]:
    return [as_obj(e) for e in sc.before]


def after_objs(sc: Scenario) -> list[Obj]:
    return [as_obj(e) for e in sc.after]


def store_of(objs: Iterable[Obj]) -> MemoryStore:
    store = MemoryStore()
    store.spill(items(objs))
    return store


def run(sc: Scenario, *, with_repair: bool = False) -> RewriteResult:
    return check_rewrite(
        items(before_objs(sc)),
        items(after_objs(sc)),
        store=store_of(sc.spilled),
        background=sc.background,
        claimed_preserved=sc.claimed,
        mode=sc.mode,
        with_repair=with_repair,
    )


def describe(sc: Scenario) -> None:
    note(f"before:  {json.dumps(before_objs(sc), ensure_ascii=False)}")
    note(f"after:   {json.dumps(after_objs(sc), ensure_ascii=False)}")
    note(f"spilled: {[o['id'] for o in sc.spilled]}")
    note(f"claimed: {sc.claimed}  background: {sc.background}  mode: {sc.mode}")


# -- renaming -------------------------------------------------------------------------------


def names_of(sc: Scenario) -> set[str]:
    """Every id, reference and atom the scenario mentions."""
    out: set[str] = set(sc.claimed or ())
    targets = [e.target for e in (*sc.before, *sc.after) if isinstance(e, StubOf)]
    objs = [*before_objs(sc), *after_objs(sc), *sc.spilled, *targets]
    for obj in objs:
        out.add(obj["id"])
        for key in REF_FIELDS:
            out.update(obj.get(key, ()))
        if "call" in obj:
            out.add(obj["call"])
        for key in FORMULA_FIELDS:
            if key in obj:
                out.update(t for t in NAME_RE.findall(obj[key]) if t not in KEYWORDS)
    for text in sc.background:
        out.update(t for t in NAME_RE.findall(text) if t not in KEYWORDS)
    return out


def rename_text(text: str, m: Mapping[str, str]) -> str:
    return NAME_RE.sub(lambda mo: mo.group() if mo.group() in KEYWORDS else m[mo.group()], text)


def rename_obj(obj: Obj, m: Mapping[str, str]) -> Obj:
    out: Obj = {}
    for key, value in obj.items():
        if key in ("id", "call"):
            out[key] = m[value]
        elif key in REF_FIELDS:
            out[key] = [m[v] for v in value]
        elif key in FORMULA_FIELDS:
            out[key] = rename_text(value, m)
        else:
            out[key] = value
    return out


def rename_entry(entry: Obj | StubOf, m: Mapping[str, str]) -> Obj | StubOf:
    if isinstance(entry, StubOf):
        return StubOf(rename_obj(entry.target, m))
    return rename_obj(entry, m)


def rename(sc: Scenario, m: Mapping[str, str]) -> Scenario:
    return replace(
        sc,
        before=[rename_entry(e, m) for e in sc.before],
        after=[rename_entry(e, m) for e in sc.after],
        spilled=[rename_obj(o, m) for o in sc.spilled],
        claimed=None if sc.claimed is None else [m[c] for c in sc.claimed],
        background=[rename_text(t, m) for t in sc.background],
    )


def signature(res: RewriteResult, m: Mapping[str, str] | None = None) -> Counter[tuple[str, ...]]:
    """The findings as a multiset of (code, items...), items renamed by m and sorted."""
    out: Counter[tuple[str, ...]] = Counter()
    for f in res.findings:
        names = sorted(m[i] for i in f.items) if m is not None else sorted(f.items)
        out[(f.code, *names)] += 1
    return out


# -- reference notions, written from the spec -----------------------------------------------


def negative_result(obj: Obj, window: Sequence[Obj]) -> bool:
    """Modality failed, a rejection, or a witness that is a failed observation."""
    if obj.get("modality") == "failed" or obj.get("type") == "rejection":
        return True
    by_id = {o["id"]: o for o in window}
    return any(
        by_id.get(w, {}).get("kind") == "observation" and by_id[w].get("modality") == "failed"
        for w in obj.get("witnesses", ())
    )


def is_bound(obj: Obj, window: Sequence[Obj]) -> bool:
    """A commitment, or a claim that is load-bearing or negative-result."""
    if obj["kind"] == "commitment":
        return True
    return obj["kind"] == "claim" and (
        obj.get("load_bearing", False) is True or negative_result(obj, window)
    )


def store_snapshot(store: Store) -> dict[str, str]:
    return {it.ref: it.raw for it in store.items()}


# -- (a) the identity rewrite -------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(windows(), st.data())
def test_unchanged_window_is_accepted(before: list[Obj], data: st.DataObject) -> None:
    spilled = data.draw(st.lists(st.sampled_from(before), unique_by=lambda o: o["id"]))
    stubbed: list[Obj] = []
    if spilled:
        stubbed = data.draw(st.lists(st.sampled_from(spilled), unique_by=lambda o: o["id"]))
    if stubbed:  # items spilled earlier stand as stubs in both windows
        ids = {o["id"] for o in stubbed}
        before = [stub_obj(o) if o["id"] in ids else o for o in before]
    claimed = data.draw(st.sampled_from([None, [o["id"] for o in before]]))
    mode = data.draw(st.sampled_from(MODES))
    note(f"window: {json.dumps(before, ensure_ascii=False)}")
    window = items(before)
    res = check_rewrite(
        window,
        list(window),
        store=store_of(spilled),
        claimed_preserved=claimed,
        mode=mode,
    )
    assert res.verdict == "accept", res.findings
    assert res.findings == ()
    assert res.repair is None


# -- (b) and (c): dropping a bound item ---------------------------------------------------


def _droppable(before: list[Obj]) -> list[Obj]:
    """Bound items that no other item merges with ``covers``."""
    covered = {c for o in before for c in o.get("covers", ())}
    return [o for o in before if is_bound(o, before) and o["id"] not in covered]


@pytest.mark.parametrize("kind", ["commitment", "claim"])
@settings(max_examples=150, deadline=None)
@given(windows(), st.data())
def test_dropping_an_unrecorded_bound_item_is_refused_with_cf001(
    kind: str, before: list[Obj], data: st.DataObject
) -> None:
    candidates = [o for o in _droppable(before) if o["kind"] == kind]
    assume(candidates)
    gone = data.draw(st.sampled_from(candidates), label="dropped")
    after = [o for o in before if o is not gone]
    note(f"before: {json.dumps(before, ensure_ascii=False)}")
    res = check_rewrite(items(before), items(after), store=MemoryStore())
    assert res.verdict == "refuse"
    cf001 = [f for f in res.findings if f.code == "CF001"]
    assert [f.items for f in cf001] == [(gone["id"],)], res.findings


@settings(max_examples=150, deadline=None)
@given(windows(), st.data())
def test_dropping_a_spilled_commitment_or_claim_is_not_cf001(
    before: list[Obj], data: st.DataObject
) -> None:
    candidates = [o for o in before if o["kind"] in ("commitment", "claim")]
    assume(candidates)
    gone = data.draw(st.sampled_from(candidates), label="dropped")
    after = [o for o in before if o is not gone]
    note(f"before: {json.dumps(before, ensure_ascii=False)}")
    res = check_rewrite(items(before), items(after), store=store_of([gone]))
    assert not [f for f in res.findings if f.code == "CF001"], res.findings
    # nothing else depends on an item that is in the store: the rewrite is clean, unless
    # the item was a tool call whose result stays (a spilled call leaves no stub: TP001)
    answered = any(o.get("call") == gone["id"] for o in after)
    if answered:
        assert {f.code for f in res.findings} == {"TP001"}, res.findings
    else:
        assert res.verdict == "accept", res.findings


# -- (d) renaming ---------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(scenarios(), st.permutations(RENAME_TARGETS))
def test_consistent_renaming_changes_nothing(sc: Scenario, targets: list[str]) -> None:
    names = sorted(names_of(sc))
    m = dict(zip(names, targets, strict=False))
    renamed = rename(sc, m)
    describe(sc)
    note(f"renaming: {m}")
    res, res2 = run(sc), run(renamed)
    assert res2.verdict == res.verdict
    assert Counter(f.code for f in res2.findings) == Counter(f.code for f in res.findings)
    assert signature(res2) == signature(res, m)
    assert sorted(res2.demoted) == sorted(m[i] for i in res.demoted)


def written_otherwise(obj: Obj) -> Obj:
    """The same item written otherwise: its formula in parentheses and spaced out, and the
    defaults it leaves out written (``modality``, ``load_bearing``)."""
    out = dict(obj)
    for key in FORMULA_FIELDS:
        if key in out:
            out[key] = f"( {out[key]} )"
    if out["kind"] in ("commitment", "claim", "observation"):
        out.setdefault("modality", "unverified")
    if out["kind"] in ("commitment", "claim"):
        out.setdefault("load_bearing", out["kind"] == "commitment")
    return out


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_writing_the_window_after_otherwise_changes_nothing(sc: Scenario) -> None:
    """Items are compared as parsed: a policy that writes the items it keeps with other
    spaces or parentheses, or with their defaults written out, changes no finding."""
    describe(sc)
    other = replace(
        sc, after=[e if isinstance(e, StubOf) else written_otherwise(e) for e in sc.after]
    )
    res, res2 = run(sc), run(other)
    assert res2.verdict == res.verdict
    assert signature(res2) == signature(res)
    assert sorted(res2.demoted) == sorted(res.demoted)


@settings(max_examples=100, deadline=None)
@given(traces(max_events=8))
def test_putting_the_window_back_written_otherwise_restores_it(text: str) -> None:
    """A version a window held is restored when it is put back written otherwise: a trace
    that empties its window, then puts the last window back, finds the same whether the
    items come back as they were written or written otherwise."""
    events = [json.loads(line) for line in text.split("\n") if line]  # "\x85" is no line end
    last: list[Obj] = []
    for ev in events:
        if ev["event"] == "append":
            last = last + ev["items"]
        elif ev["event"] == "rewrite":
            last = ev["window"]
    emptied = {"event": "rewrite", "policy": "p", "window": []}

    def found(window: list[Obj]) -> list[tuple[str, int, tuple[str, ...]]]:
        put = {"event": "rewrite", "policy": "p", "window": window}
        lines = "\n".join(json.dumps(e) for e in (*events, emptied, put))
        report = audit_trace(parse_trace_text(lines, "t.jsonl"))
        return sorted((f.code, f.pass_, f.items) for f in report.findings)

    note(text)
    other = [o if o["kind"] == "stub" else written_otherwise(o) for o in last]
    assert found(other) == found(last)


# -- (e) repairs ----------------------------------------------------------------------------


def premises_satisfiable(before: Sequence[Item], store: Store, background: Sequence[str]) -> bool:
    """Is the content of the window before, with the store and the background, satisfiable?"""
    formulas = [s.formula for s in store.items()]
    for it in before:
        real = store.get(it.stub_ref) if it.kind == "stub" and it.stub_ref else it
        if real is not None:
            formulas.append(real.formula)
    return Session([parse_formula(b) for b in background]).satisfiable(formulas).holds


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_repair_of_a_refused_rewrite_is_accepted(sc: Scenario) -> None:
    describe(sc)
    before = items(before_objs(sc))
    store = store_of(sc.spilled)
    had = store_snapshot(store)
    res = check_rewrite(
        before,
        items(after_objs(sc)),
        store=store,
        background=sc.background,
        claimed_preserved=sc.claimed,
        mode=sc.mode,
    )
    assume(res.verdict == "refuse")
    repair = res.repair
    assert repair is not None
    note(f"findings: {[(f.code, f.items) for f in res.findings]}")
    note(f"repair: {repair.actions}")
    assert store_snapshot(store) == had, "checking a rewrite wrote to the store"
    if repair.verdict == "undecided":
        # only when what the rewrite is checked against is unsatisfiable: every question
        # from it is vacuous, and no repair can make it decidable
        assert not premises_satisfiable(before, store, sc.background)
        return
    assert repair.verdict in ACCEPTED

    repaired_store = MemoryStore()
    repaired_store.spill(list(store.items()))
    repaired_store.spill(list(repair.spill))
    # the repaired window is valid input: every reference names an item of either window
    # or of the store (raises InputError otherwise)
    defined = {it.id for it in before} | {it.id for it in repair.window}
    check_references(repair.window, defined, repaired_store.has_id, "repaired.json")
    for claimed in (None, list(repair.claimed_preserved)):
        again = check_rewrite(
            before,
            repair.window,
            store=repaired_store,
            background=sc.background,
            claimed_preserved=claimed,
            mode=sc.mode,
        )
        note(f"again (claimed={claimed}): {[(f.code, f.items) for f in again.findings]}")
        assert again.verdict in ACCEPTED
        assert again.verdict == repair.verdict
    now = store_snapshot(repaired_store)
    assert all(now.get(ref) == raw for ref, raw in had.items())
    assert all(now.get(it.ref) == it.raw for it in repair.spill)
