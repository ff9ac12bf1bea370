"""The prover cross-checked against the spec interpreter and the checker.

Three comparisons, against the oracle below:

* **per window, sampled** (hypothesis, 100 examples for each spec and each
  mode, 2,400 in all): the encoding pinned to one concrete state — up
  to 4 slots as a pass starts (induction), or up to 5 items appended over 3
  passes (BMC) — must predict the interpreter's window after every pass and
  exactly the findings of the eight rules the audit reports (BMC: WR001 and
  WR002 one way, see ``compare``);
* **per property, exhaustive**: for every spec, over every induction state
  of one item in a small domain (all kinds, three modalities, two types, both
  ``load_bearing``, three places, two token counts, three budgets) and of two
  items in a smaller one (two modalities, one token count, two budgets, every
  way two items can cite each other: 14,142 states, 28,284 runs of the
  interpreter and ``check_rewrite``), "some state shows the finding" equals the
  prover's sat/unsat with the same domain imposed;
* **what the conditions read** (hypothesis, 300 windows of up to 5 items
  with stubs, resolvable or not, and prose placeholders): the items
  ``cited``, ``result`` and ``negative`` hold for, as the interpreter reads
  them (given the store) and as the encoding's pass reads them (the model's
  values with every slot pinned).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier import MemoryStore, check_rewrite, item_from_json, ref_of, run_policy
from verifier.audit import audit_trace
from verifier.io import parse_trace_text
from verifier.policies import spec_policy
from verifier.policies.spec import Spec, load_spec, parse_spec
from verifier.prove import PROPERTIES, Encoding
from verifier.prove.passes import read_facts
from verifier.prove.replay import ConcreteSlot, Scenario, build_trace, item_objects, slot_id
from verifier.prove.smt import Term
from verifier.prove.window import KINDS, MODALITIES, TYPES
from verifier.rules.context import MODE_COUNT
from verifier.solver import Session

# -- the oracle ------------------------------------------------------------------------------

Key = tuple[str, int, tuple[str, ...]]

_TWO = ("CF004", "TP001")


def finding_key(code: str, pass_no: int, items: Sequence[str]) -> Key:
    """What identifies a finding in the comparison: the rule, the pass, the item(s) it concerns."""
    return (code, pass_no, tuple(items[:2] if code in _TWO else items[:1]))


def support_formulas(sc: Scenario) -> dict[int, str]:
    """Induction: each commitment or claim asserts what its surviving witnesses show.

    Then the checker's "support" question has the answer the encoding assumes
    (docs/prove.md): checkable before exactly when a witness survives.
    """
    by = {s.index: s for s in sc.slots}
    out: dict[int, str] = {}
    for s in sc.slots:
        if s.kind not in ("commitment", "claim"):
            continue
        shown = []
        for j in s.links.get("witnesses", ()):
            w = by.get(j)
            if w is None or w.kind != "observation":
                continue
            if w.place in ("win", "stub") or (s.place == "stub" and w.place == "store"):
                shown.append(slot_id(j, w.kind))
        if shown:
            out[s.index] = " & ".join(shown)
    return out


def audit_findings(spec: Spec, sc: Scenario) -> tuple[set[Key], str]:
    """Run the interpreter on the scenario (checking the encoding's predicted windows), audit."""
    text, passes = build_trace(spec, sc)
    setup = passes - sc.passes  # an induction trace's rewrites that give the items their ages
    report = audit_trace(parse_trace_text(text, "oracle.jsonl"), mode=MODE_COUNT)
    # they keep the window as it is: nothing a rewrite is charged with
    assert not [f for f in report.findings if f.code in PROPERTIES and f.pass_ <= setup], text
    keys = {
        finding_key(f.code, f.pass_ - setup, f.items)
        for f in report.findings
        if f.code in PROPERTIES and f.pass_ > setup
    }
    return keys, text


def predicted(enc: Encoding, sc: Scenario) -> tuple[set[Key], Scenario]:
    """What the encoding says about one concrete scenario: its findings and its windows."""
    smt = enc.smt
    smt.push()
    try:
        smt.add(enc.pin(sc))
        res = smt.check()
        assert res.sat, f"the encoding rejects the scenario: {res}"
        ids = enc.ids()
        keys = {
            finding_key(code, p, [ids[i] for i in items]) for code, p, items in enc.shown()
        }
        concrete = enc.concrete(sc.passes, sc.formulas)
    finally:
        smt.pop()
    return keys, concrete


def compare(enc: Encoding, spec: Spec, sc: Scenario, *, exact_support: bool) -> None:
    """Assert the encoding and the interpreter + audit agree on one scenario.

    With ``exact_support`` (induction, formulas from :func:`support_formulas`)
    WR001/WR002 must agree exactly; otherwise every WR001/WR002 the audit
    reports must be predicted (the encoding asks whether *some* formulas show
    them).
    """
    keys, concrete = predicted(enc, sc)
    assert concrete.slots == sc.slots, "the model read back differs from the scenario pinned"
    actual, text = audit_findings(spec, replace(concrete, formulas=sc.formulas))
    if exact_support:
        assert keys == actual, f"encoding {sorted(keys)} != audit {sorted(actual)}\n{text}"
        return
    loose = {"WR001", "WR002"}
    strict_keys = {k for k in keys if k[0] not in loose}
    strict_actual = {k for k in actual if k[0] not in loose}
    assert strict_keys == strict_actual, (
        f"encoding {sorted(strict_keys)} != audit {sorted(strict_actual)}\n{text}"
    )
    missed = {k for k in actual if k[0] in loose} - keys
    assert not missed, f"the audit reports {sorted(missed)}, the encoding does not\n{text}"


# -- exhaustive enumeration over a small domain -------------------------------------------------


FIELDS: dict[str, tuple[str, ...]] = {
    "commitment": ("rationale", "witnesses"),
    "claim": ("witnesses", "derived_from"),
    "observation": ("call",),
    "prose": ("call",),
}


@dataclass(frozen=True, slots=True)
class Domain:
    """The finite set of induction states enumerated (the prover gets the same bounds)."""

    tokens: tuple[int, ...]
    budgets: tuple[int, ...]
    places: tuple[str, ...] = ("win", "stub", "store")
    modalities: tuple[str, ...] = ("verified", "failed", "unverified")
    types: tuple[str, ...] = ("decision", "rejection")
    kinds: tuple[str, ...] = ("commitment", "claim", "observation", "prose")


def _slot_choices(index: int, d: Domain) -> Iterator[ConcreteSlot]:
    for kind in d.kinds:
        mods = ("unverified",) if kind == "prose" else d.modalities
        types = d.types if kind == "commitment" else ("decision",)
        lbs = (True, False) if kind in ("commitment", "claim") else (False,)
        for mod, ctype, lb, t, place in itertools.product(mods, types, lbs, d.tokens, d.places):
            yield ConcreteSlot(index, kind, ctype, lb, mod, t, 0, {}, None, place, 0)


def _link_choices(slots: Sequence[ConcreteSlot]) -> Iterator[tuple[ConcreteSlot, ...]]:
    """Every way the slots may cite each other, one field per ordered pair at most."""
    options: list[list[tuple[int, str, int] | None]] = []
    for s in slots:
        for t in slots:
            if t.index != s.index:
                options.append([None, *((s.index, f, t.index) for f in FIELDS[s.kind])])
    for combo in itertools.product(*options):
        links: dict[int, dict[str, list[int]]] = {s.index: {} for s in slots}
        calls_ok = True
        for choice in combo:
            if choice is None:
                continue
            i, f, j = choice
            if f == "call" and links[i].get("call"):
                calls_ok = False
                break
            links[i].setdefault(f, []).append(j)
        if calls_ok:
            yield tuple(
                replace(s, links={f: tuple(v) for f, v in links[s.index].items()}) for s in slots
            )


def states(n: int, d: Domain) -> Iterator[tuple[ConcreteSlot, ...]]:
    """Every induction state of exactly n slots in the domain, links included."""
    per_slot = [list(_slot_choices(i, d)) for i in range(n)]
    for combo in itertools.product(*per_slot):
        if any(s.place in ("win", "stub") for s in combo):
            yield from _link_choices(combo)


_SESSION: list[Session] = []


def check_rewrite_findings(spec: Spec, sc: Scenario) -> set[str]:
    """The codes of the eight rules one pass of the spec causes from the state: the
    interpreter (``run_policy``), then ``check_rewrite`` with the store holding what the
    state's stubs stand for and what the pass spilled.

    One solver session serves every window (no background: the questions do not
    depend on each other), since making a z3 context costs more than a check.
    """
    if not _SESSION:
        _SESSION.append(Session())
    stored, window, ages = item_objects(sc)
    store = MemoryStore()
    store.spill([item_from_json(obj) for obj in stored])
    res = run_policy(spec_policy(spec), window, sc.budget, pass_no=1, ages=ages, store=store)
    assert res.ok, res.message
    store.spill(list(res.spilled))
    result = check_rewrite(
        [item_from_json(o) for o in window],
        res.window,
        store=store,
        mode=MODE_COUNT,
        claimed_preserved=res.claimed_preserved,
        with_repair=False,
        session=_SESSION[0],
    )
    return {f.code for f in result.findings if f.code in PROPERTIES}


def enumerate_findings(spec: Spec, n_max: int, d: Domain) -> dict[str, bool]:
    """For each property: does some state of at most n_max slots in the domain show it?"""
    found = {code: False for code in PROPERTIES}
    for n in range(1, n_max + 1):
        for slots in states(n, d):
            for budget in d.budgets:
                sc = Scenario(True, budget, slots, 1)
                sc = replace(sc, formulas=support_formulas(sc))
                for code in check_rewrite_findings(spec, sc):
                    found[code] = True
                if all(found.values()):
                    return found
    return found


def prover_findings(spec: Spec, n_max: int, d: Domain) -> dict[str, bool]:
    """The prover's answer for each property, with the domain's bounds imposed."""
    enc = Encoding(spec, items=n_max, passes=1, appends=1, induction=True)
    smt, ar, world = enc.smt, enc.ar, enc.world

    def one_of(term: Term, values: Sequence[int]) -> Term:
        return smt.or_(ar.eq(term, ar.val(v)) for v in values)

    parts = [one_of(world.budget, d.budgets)]
    for i, slot in enumerate(world.slots):
        st = world.initial[i]
        parts += [
            smt.implies(slot.used, one_of(slot.tokens, d.tokens)),
            ar.eq(slot.score, ar.val(0)),
            ar.eq(st.age, ar.val(0)),
            smt.or_(slot.kind[k] for k in d.kinds),
            smt.or_(slot.ctype[t] for t in (*d.types, "decision")),
            smt.or_([smt.not_(slot.used), *(getattr(st, p) for p in d.places)]),
            smt.or_([slot.kind["prose"], *(st.mod[m] for m in d.modalities)]),
        ]
        for j in range(len(world.slots)):
            if i != j:
                pair = [world.link(rel, i, j) for rel in ("rationale", "witnesses",
                                                          "derived_from", "call")]
                parts.append(smt.at_most_one(pair))
    smt.add(smt.and_(parts))
    out = {}
    for code in PROPERTIES:
        res = enc.refutable(code)
        assert res.status in ("sat", "unsat"), res
        out[code] = res.sat
    return out


# -- the tests -------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
MODEL_SPECS = {p.stem: load_spec(p) for p in sorted((ROOT / "models" / "specs").glob("*.toml"))}
HEAD = 'format = "ctxproof-policy/1"\n'
EXTRA = {
    "demote-orphans": 'stop = "all"\ndemote_orphans = true\n[[rule]]\n'
    'when = { kind = ["observation"] }\ndo = "evict"',
    "summarize-uncited": 'order = ["-score", "age"]\n[[rule]]\nwhen = { cited = false,'
    ' negative = false }\ndo = "summarize"\n[[rule]]\nwhen = { stub = true }\ndo = "evict"\n'
    '[[rule]]\ndo = "spill"',
    "every-action": 'order = ["tokens", "-age"]\nstub_tokens = 3\n[[rule]]\n'
    'when = { load_bearing = true }\ndo = "demote"\n[[rule]]\n'
    'when = { modality = ["failed"], type = ["rejection"] }\ndo = "keep"\n[[rule]]\n'
    'when = { pressure = { gt = 1.5 } }\ndo = "summarize"\n[[rule]]\n'
    'when = { kind = ["claim", "commitment"] }\ndo = "soften"\n[[rule]]\n'
    'when = { age = { ge = 2 }, score = { lt = 50 } }\ndo = "evict"\n[[rule]]\ndo = "spill"',
    "newest-first": 'order = ["-position"]\ndemote_orphans = true\n[[rule]]\n'
    'when = { tokens = { gt = 4.5, le = 16 } }\ndo = "summarize"\n[[rule]]\n'
    'when = { pressure = { ge = 0.1 } }\ndo = "evict"',
    "results-and-stubs": 'stop = "all"\n[[rule]]\nwhen = { stub = true, result = true }\n'
    'do = "evict"\n[[rule]]\nwhen = { result = true, negative = false }\ndo = "spill"\n'
    '[[rule]]\nwhen = { kind = ["prose"], cited = false }\ndo = "evict"',
}
SPECS: dict[str, Spec] = {
    **MODEL_SPECS,
    **{name: parse_spec(HEAD + body, f"{name}.toml") for name, body in EXTRA.items()},
}

_ENCODINGS: dict[tuple[str, bool], Encoding] = {}
N_INDUCTION = 4
N_BMC, PASSES, APPENDS = 5, 3, 2


def encoding(name: str, induction: bool) -> Encoding:
    key = (name, induction)
    if key not in _ENCODINGS:
        if induction:
            enc = Encoding(SPECS[name], items=N_INDUCTION, passes=1, appends=1, induction=True)
        else:
            enc = Encoding(
                SPECS[name], items=N_BMC, passes=PASSES, appends=APPENDS, induction=False
            )
        _ENCODINGS[key] = enc
    return _ENCODINGS[key]


@st.composite
def _slot(draw: st.DrawFn, index: int) -> ConcreteSlot:
    kind = draw(st.sampled_from(KINDS))
    return ConcreteSlot(
        index,
        kind,
        draw(st.sampled_from(TYPES)) if kind == "commitment" else "decision",
        draw(st.booleans()) if kind in ("commitment", "claim") else False,
        "unverified" if kind == "prose" else draw(st.sampled_from(MODALITIES)),
        draw(st.integers(0, 40)),
        draw(st.sampled_from((0, 30, 49, 50, 70, 100))),
        {},
    )


def _with_links(
    draw: st.DrawFn, slots: list[ConcreteSlot], may_cite: dict[int, list[int]]
) -> tuple[ConcreteSlot, ...]:
    out = []
    for s in slots:
        links: dict[str, tuple[int, ...]] = {}
        for field in FIELDS[s.kind]:
            targets = [j for j in may_cite[s.index] if draw(st.integers(0, 9)) < 4]
            if field == "call":
                targets = targets[:1]
            if targets:
                links[field] = tuple(targets)
        out.append(replace(s, links=links))
    return tuple(out)


def _budget(total: int) -> st.SearchStrategy[int]:
    """Budgets around the window's size: a pass that has something to do, mostly."""
    return st.one_of(st.integers(0, total), st.sampled_from((0, total // 2)), st.integers(0, 120))


@st.composite
def induction_scenarios(draw: st.DrawFn) -> Scenario:
    n = draw(st.integers(1, N_INDUCTION))
    slots = []
    for i in range(n):
        s = draw(_slot(i))
        place = draw(st.sampled_from(("win", "win", "stub", "store")))
        slots.append(replace(s, place=place, age=draw(st.integers(0, 4))))
    may_cite = {i: [j for j in range(n) if j != i] for i in range(n)}
    total = sum(s.tokens for s in slots if s.place in ("win", "stub"))
    sc = Scenario(True, draw(_budget(total)), _with_links(draw, slots, may_cite), 1)
    return Scenario(sc.induction, sc.budget, sc.slots, 1, formulas=support_formulas(sc))


@st.composite
def bmc_scenarios(draw: st.DrawFn) -> Scenario:
    n = draw(st.integers(1, N_BMC))
    slots = []
    at, used = 1, 0
    for i in range(n):
        step = draw(st.integers(0, PASSES - at))
        if step:
            at, used = at + step, 0
        if used == APPENDS:
            if at == PASSES:
                break
            at, used = at + 1, 0
        used += 1
        s = draw(_slot(i))
        slots.append(replace(s, appended=at))
    may_cite = {
        s.index: [t.index for t in slots if t.index < s.index or t.appended == s.appended]
        for s in slots
    }
    may_cite = {i: [j for j in js if j != i] for i, js in may_cite.items()}
    budget = draw(_budget(sum(s.tokens for s in slots)))
    linked = _with_links(draw, slots, may_cite)
    # each item asserts what all its observation witnesses show: it is checkable while
    # they all survive (the encoding asks whether *some* formulas show WR001/WR002)
    kinds = {s.index: s.kind for s in linked}
    formulas = {}
    for s in linked:
        shown = [
            slot_id(j, kinds[j])
            for j in s.links.get("witnesses", ())
            if kinds[j] == "observation"
        ]
        if s.kind in ("commitment", "claim") and shown:
            formulas[s.index] = " & ".join(shown)
    return Scenario(False, budget, linked, PASSES, formulas=formulas)


@pytest.mark.parametrize("name", sorted(SPECS))
@settings(max_examples=100, deadline=None)
@given(sc=induction_scenarios())
def test_one_pass_from_a_state_agrees_with_the_interpreter_and_the_checker(
    name: str, sc: Scenario
) -> None:
    compare(encoding(name, True), SPECS[name], sc, exact_support=True)


@pytest.mark.parametrize("name", sorted(SPECS))
@settings(max_examples=100, deadline=None)
@given(sc=bmc_scenarios())
def test_passes_from_the_empty_window_agree_with_the_interpreter_and_the_audit(
    name: str, sc: Scenario
) -> None:
    compare(encoding(name, False), SPECS[name], sc, exact_support=False)


ONE_SLOT = Domain(tokens=(3, 9), budgets=(0, 5, 20))
TWO_SLOTS = Domain(tokens=(9,), budgets=(0, 12), modalities=("verified", "failed"))


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_one_item_state_exhaustively(name: str) -> None:
    spec = SPECS[name]
    assert enumerate_findings(spec, 1, ONE_SLOT) == prover_findings(spec, 1, ONE_SLOT)


TWO_ITEMS_FAST = ("every-action", "keep_recent", "spill_first")
"""Specs enumerated over every two-item state in the fast tier (every action; the two whose
findings are pinned below); the rest in the long tier. Every spec's one-item states, and its
states and passes drawn by hypothesis, are checked in the fast tier."""


@pytest.mark.parametrize(
    "name",
    [n if n in TWO_ITEMS_FAST else pytest.param(n, marks=pytest.mark.slow) for n in sorted(SPECS)],
)
def test_every_two_item_state_exhaustively(name: str) -> None:
    spec = SPECS[name]
    by_enumeration = enumerate_findings(spec, 2, TWO_SLOTS)
    assert by_enumeration == prover_findings(spec, 2, TWO_SLOTS)
    if name == "spill_first":
        assert not any(by_enumeration.values())
    if name == "keep_recent":
        assert by_enumeration["TP002"] and not by_enumeration["WR004"]


# -- targeted windows: float pressure, summaries cited by later appends --------------------------


@pytest.mark.parametrize(
    ("comparison", "tokens", "budget", "evicts"),
    [
        ("ge = 0.1", 1, 10, True),  # 1/10 as a float is 0.1; as a rational it is below
        ("lt = 0.1", 1, 10, False),
        ("eq = 0.1", 3, 30, True),
        ("eq = 0.3333333333333333", 1, 3, True),
        ("gt = 0.3333333333333333", 1, 3, False),
        ("le = 0.3333333333333333", 1, 3, True),
        ("ge = 2", 7, 0, True),  # a budget of 0: infinite pressure
        ("le = 0", 0, 0, True),  # no tokens and no budget: pressure 0
    ],
)
def test_pressure_is_compared_as_the_interpreter_compares_floats(
    comparison: str, tokens: int, budget: int, evicts: bool
) -> None:
    body = f'stop = "all"\n[[rule]]\nwhen = {{ pressure = {{ {comparison} }} }}\ndo = "evict"'
    spec = parse_spec(HEAD + body, "pressure.toml")
    enc = Encoding(spec, items=1, passes=1, appends=1, induction=True)
    slot = ConcreteSlot(0, "commitment", "decision", True, "unverified", tokens, 0, {}, None,
                        "win", 0)
    sc = Scenario(True, budget, (slot,), 1)
    compare(enc, spec, sc, exact_support=True)
    keys, _ = predicted(enc, sc)
    assert (("CF001", 1, ("c1",)) in keys) is evicts


def test_a_summary_cited_by_a_later_append_is_followed() -> None:
    spec = parse_spec(
        HEAD + 'stop = "all"\n[[rule]]\nwhen = { kind = ["prose"] }\ndo = "summarize"', "s.toml"
    )
    enc = Encoding(spec, items=2, passes=2, appends=1, induction=False)
    summary1 = 2  # the slot of summary@1: after the two item slots
    slots = (
        ConcreteSlot(0, "prose", "decision", False, "unverified", 4, 0, {}, 1),
        ConcreteSlot(1, "commitment", "decision", True, "unverified", 4, 0,
                     {"rationale": (summary1,)}, 2),
    )
    sc = Scenario(False, 0, slots, 2, summaries={summary1: 1})
    compare(enc, spec, sc, exact_support=False)
    keys, _ = predicted(enc, sc)
    assert ("CF004", 2, ("c2", "summary@1")) in keys


# -- what `cited`, `result` and `negative` read: the interpreter and the encoding ------------


READ_KEYS = ("cited", "result", "negative")
_KEEP = parse_spec(HEAD + '[[rule]]\ndo = "keep"', "keep.toml")
_READS: list[Encoding] = []


def interpreter_reads(
    window: list[dict[str, Any]], store: Mapping[str, Mapping[str, Any]]
) -> dict[str, set[str]]:
    """For each key, the ids of the window it holds for, as the interpreter reads them: the
    items ``when = { KEY = true }`` matches (evicted, every item visited)."""
    out = {}
    for key in READ_KEYS:
        spec = parse_spec(HEAD + f'stop = "all"\n[[rule]]\nwhen = {{ {key} = true }}\n'
                          'do = "evict"', f"{key}.toml")
        res = run_policy(spec_policy(spec), window, 0, store=store)
        assert res.ok, res.message
        kept = {it.id for it in res.window}
        out[key] = {str(obj["id"]) for obj in window} - kept
    return out


def encoding_reads(sc: Scenario) -> dict[str, set[str]]:
    """For each key, the ids of the window it holds for, as the encoding of the pass reads
    them with every slot pinned to the scenario (the model's values of the facts)."""
    if not _READS:
        _READS.append(Encoding(_KEEP, items=N_READS, passes=1, appends=1, induction=True))
    enc = _READS[0]
    smt = enc.smt
    facts = read_facts(enc.world, enc.passes[0].before, result=True)
    smt.push()
    try:
        smt.add(enc.pin(sc))
        assert smt.check().sat, "the encoding rejects the scenario"
        ids = enc.ids()
        out: dict[str, set[str]] = {key: set() for key in READ_KEYS}
        for s in sc.slots:
            f = facts[s.index]
            if s.place not in ("win", "stub"):
                continue
            assert f is not None
            for key in READ_KEYS:
                if smt.value(getattr(f, key)):
                    out[key].add(ids[s.index])
    finally:
        smt.pop()
    return out


N_READS = 5


@st.composite
def windows_with_stubs(draw: st.DrawFn) -> tuple[Scenario, frozenset[int], str]:
    """An induction state with stubs and placeholders, some of its stubs unresolvable (and
    how: no entry, the entry of another item, or bytes that do not hash to the ref).

    Drawn so that what these keys turn on is common: observations and prose (results,
    placeholders), failed modalities, stubs, and many citations.
    """
    n = draw(st.integers(1, N_READS))
    slots = []
    for i in range(n):
        kind = draw(st.sampled_from(("commitment", "claim", "observation", "observation",
                                     "prose", "prose")))
        modality = "unverified" if kind == "prose" else draw(
            st.sampled_from(("failed", "failed", "verified", "unverified"))
        )
        ctype = draw(st.sampled_from(TYPES)) if kind == "commitment" else "decision"
        place = draw(st.sampled_from(("win", "win", "stub", "stub", "store")))
        slots.append(ConcreteSlot(i, kind, ctype, False, modality, 1, 0, {}, None, place, 0))
    links = []
    for s in slots:
        fields: dict[str, tuple[int, ...]] = {}
        for field in FIELDS[s.kind]:
            targets = [t.index for t in slots if t.index != s.index and draw(st.booleans())]
            if field == "call":
                targets = targets[:1]
            if targets:
                fields[field] = tuple(targets)
        links.append(replace(s, links=fields))
    sc = Scenario(True, 0, tuple(links), 1)
    stubs = [s.index for s in sc.slots if s.place == "stub"]
    dangling = frozenset(i for i in stubs if draw(st.booleans()))
    how = draw(st.sampled_from(("missing", "other", "rehashed")))
    return sc, dangling, how


@settings(max_examples=300, deadline=None)
@given(case=windows_with_stubs())
def test_the_interpreter_reads_cited_result_and_negative_as_the_encoding_does(
    case: tuple[Scenario, frozenset[int], str],
) -> None:
    """On windows with stubs (resolvable or not) and prose placeholders: the interpreter's
    view of ``cited``, ``result`` and ``negative`` is what the encoding assigns.

    The encoding has no unresolvable stub (every stub of a proof resolves); the
    interpreter's reading of one is compared with the encoding's reading of a stub of
    an item that cites nothing and answers no call, which is what an unresolvable stub
    is to these keys.
    """
    sc, dangling, how = case
    stored, window, _ = item_objects(sc)
    by_id = {str(obj["id"]): obj for obj in stored}
    store: dict[str, dict[str, Any]] = {ref_of(obj): obj for obj in stored}
    ids = {s.index: slot_id(s.index, s.kind) for s in sc.slots}
    for i in sorted(dangling):
        stub = next(obj for obj in window if obj["id"] == ids[i])
        item = by_id[ids[i]]
        del store[stub["ref"]]
        if how == "other":
            # the ref names another stored item: the entry is there, under another id
            other = {**item, "id": f"{ids[i]}-other"}
            stub["ref"] = ref_of(other)
            store[stub["ref"]] = other
        elif how == "rehashed":
            # the entry under the ref is not the item that hashes to it
            store[stub["ref"]] = {**item, "tokens": int(item["tokens"]) + 1}
    unresolved = replace(
        sc,
        slots=tuple(replace(s, links={}) if s.index in dangling else s for s in sc.slots),
    )
    assert interpreter_reads(window, store) == encoding_reads(unresolved)
    if not dangling:
        return
    # and the same window with every stub resolving is read as the encoding reads it
    _, resolving, _ = item_objects(sc)
    full = {ref_of(obj): obj for obj in stored}
    assert interpreter_reads(resolving, full) == encoding_reads(sc)
