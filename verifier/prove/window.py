"""Symbolic windows: item slots whose every attribute is a solver variable.

A :class:`World` holds the slots of one proof and the links between them. A
slot is one item id over the whole session: its kind (commitment, claim,
observation, prose), commitment type, ``load_bearing``, its citations of
other slots (``rationale``, ``witnesses``, ``derived_from``, ``call``: a
boolean per ordered pair), the tokens and score it is appended with, and,
pass by pass, a :class:`State`: where it is (in the window as itself, in the
window as a stub with the item in the store, in the store only, gone: seen
and removed with no record; or nowhere yet), its modality, tokens, score, age
and place in window order.

Two worlds are built here (docs/prove.md):

* :func:`induction_world`: one pass from an arbitrary state of up to N
  slots (window items, stubs, and store entries they may cite);
* :func:`bmc_world`: K passes from the empty window, at most A items appended
  before each pass (the proof bounds each window by N: K * min(A, N) slots);
  each pass that summarizes creates a prose slot ``summary@PASS`` that later
  appends may cite.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from verifier.prove.smt import Arith, Smt, Term

__all__ = [
    "AGE_MAX",
    "BUDGET_MAX",
    "KINDS",
    "MODALITIES",
    "RELATIONS",
    "SCORE_MAX",
    "TOKENS_MAX",
    "TYPES",
    "Bounds",
    "Slot",
    "State",
    "World",
    "bmc_world",
    "induction_world",
]

KINDS: tuple[str, ...] = ("commitment", "claim", "observation", "prose")
MODALITIES: tuple[str, ...] = ("verified", "failed", "unverified", "unwitnessed")
TYPES: tuple[str, ...] = ("decision", "rejection", "invariant", "obligation")
RELATIONS: tuple[str, ...] = ("rationale", "witnesses", "derived_from", "call")
CITING_KINDS: dict[str, tuple[str, ...]] = {
    "rationale": ("commitment",),
    "witnesses": ("commitment", "claim"),
    "derived_from": ("claim",),
    "call": ("observation", "prose"),
}
"""The kinds whose items take each citation field (docs/prove.md)."""

TOKENS_MAX = (1 << 20) - 1
"""The largest token count of one item in a proof, at least (:class:`Bounds`)."""
BUDGET_MAX = (1 << 26) - 1
"""The largest budget in a proof, at least."""
AGE_MAX = (1 << 16) - 1
"""The largest age of an item in a proof by induction, at least."""
SCORE_MAX = 100


@dataclass(frozen=True, slots=True)
class Bounds:
    """The ranges of a proof's numbers: the defaults above, widened for a spec whose
    thresholds reach them, so that every value the spec tells apart is in range
    (a spec that evicts items of more than 10**7 tokens is tried on such items)."""

    tokens: int = TOKENS_MAX
    budget: int = BUDGET_MAX
    age: int = AGE_MAX

    @classmethod
    def beyond(cls, tokens: float = 0, age: float = 0, budget: float = 0) -> Bounds:
        """Ranges that go past the largest token count, age and budget a spec compares
        with, or needs to tell a pressure apart (four times over, rounded up to a power
        of two less one)."""
        top = max(TOKENS_MAX, _past(tokens))
        widest = max(BUDGET_MAX, (top + 1) * 64 - 1, _past(budget))
        return cls(top, widest, max(AGE_MAX, _past(age)))


def _past(value: float) -> int:
    """All ones, and over four times the value: 2**k - 1 >= 4 * value + 3."""
    return (1 << (4 * math.ceil(abs(value)) + 3).bit_length()) - 1


@dataclass(frozen=True, slots=True)
class Slot:
    """One item id of a proof, with the attributes that never change."""

    index: int
    used: Term
    kind: Mapping[str, Term]
    ctype: Mapping[str, Term]
    load_bearing: Term
    tokens: Term
    """Tokens as appended (induction: as the pass starts)."""
    score: Term
    summary_pass: int | None = None
    """For a summary slot, the pass whose summary it is."""
    appended: Mapping[int, Term] = field(default_factory=dict)
    """BMC: pass -> is this item appended just before that pass."""

    @property
    def is_summary(self) -> bool:
        return self.summary_pass is not None


@dataclass(frozen=True, slots=True)
class State:
    """Where a slot is, and what it holds, as a pass starts (or ends)."""

    win: Term
    """In the window as itself."""
    stub: Term
    """In the window as a stub; the item is in the store."""
    store: Term
    """Not in the window; the item is in the store."""
    gone: Term
    """Not in the window, not in the store: seen earlier and removed."""
    mod: Mapping[str, Term]
    """Modality of the slot's current version (in the store: the stored one), one-hot."""
    tokens: Term
    score: Term
    age: Term
    key: Term | int
    """Position key: window order is the order of keys."""


@dataclass
class World:
    """The slots, links and budget of one proof."""

    smt: Smt
    ar: Arith
    slots: list[Slot]
    budget: Term
    links: dict[tuple[str, int, int], Term] = field(default_factory=dict)
    passes: int = 1
    induction: bool = False
    initial: list[State] = field(default_factory=list)
    """Induction: the state as the pass starts."""
    summary_keys: dict[int, Term] = field(default_factory=dict)
    item_count: int = 0
    """How many slots are item slots (the rest are summary slots)."""
    age_max: int = AGE_MAX
    """Induction: the largest age of an item as the pass starts."""
    _out: dict[tuple[str, int], list[tuple[int, Term]]] | None = None
    _in: dict[tuple[str, int], list[tuple[int, Term]]] | None = None

    def link(self, rel: str, i: int, j: int) -> Term:
        return self.links.get((rel, i, j), self.smt.false)

    def cites(self, i: int, j: int) -> Term:
        """Slot i cites slot j in any field."""
        return self.smt.or_(self.link(rel, i, j) for rel in RELATIONS)

    def targets(self, rel: str, i: int) -> list[tuple[int, Term]]:
        """(j, link) for every slot j that slot i may cite in field rel."""
        if self._out is None:
            self._index()
        assert self._out is not None
        return self._out.get((rel, i), [])

    def sources(self, rel: str, j: int) -> list[tuple[int, Term]]:
        """(i, link) for every slot i that may cite slot j in field rel."""
        if self._in is None:
            self._index()
        assert self._in is not None
        return self._in.get((rel, j), [])

    def _index(self) -> None:
        self._out, self._in = {}, {}
        for (rel, i, j), t in self.links.items():
            self._out.setdefault((rel, i), []).append((j, t))
            self._in.setdefault((rel, j), []).append((i, t))

    def used_flags(self) -> list[Term]:
        """Which item slots are in use (a minimal counterexample uses the fewest)."""
        return [s.used for s in self.slots[: self.item_count]]


def _one_hot(smt: Smt, prefix: str, names: Sequence[str]) -> dict[str, Term]:
    bits = {n: smt.boolean(f"{prefix}.{n}") for n in names}
    smt.add(smt.exactly_one(list(bits.values())))
    return bits


def _item_slot(
    smt: Smt,
    ar: Arith,
    i: int,
    used: Term,
    appended: Mapping[int, Term] | None = None,
    tokens_max: int = TOKENS_MAX,
) -> Slot:
    p = f"s{i}"
    kind = _one_hot(smt, f"{p}.kind", KINDS)
    ctype = _one_hot(smt, f"{p}.type", TYPES)
    lb = smt.boolean(f"{p}.lb")
    # canonical values for what a kind does not have: fewer equivalent models
    smt.add(smt.implies(smt.not_(kind["commitment"]), ctype["decision"]))
    smt.add(smt.implies(smt.or_([kind["observation"], kind["prose"]]), smt.not_(lb)))
    tokens = ar.var(f"{p}.tokens", tokens_max)
    score = ar.var(f"{p}.score", SCORE_MAX)
    return Slot(i, used, kind, ctype, lb, tokens, score, None, dict(appended or {}))


def _modality(smt: Smt, prefix: str, slot: Slot) -> dict[str, Term]:
    mod = _one_hot(smt, prefix, MODALITIES)
    # prose has no modality: it reads as the default, unverified
    smt.add(smt.implies(slot.kind["prose"], mod["unverified"]))
    return mod


def _links(
    world: World,
    allowed: dict[tuple[int, int], Term],
    call_allowed: Mapping[tuple[int, int], Term] | None = None,
) -> None:
    """Citation variables for every ordered pair allowed (condition: allowed[(i, j)];
    for ``call``, call_allowed[(i, j)] where given)."""
    smt = world.smt
    for (i, j), cond in allowed.items():
        src = world.slots[i]
        for rel in RELATIONS:
            if src.is_summary:
                continue  # a summary cites nothing
            var = smt.boolean(f"link.{rel}.{i}.{j}")
            kinds = smt.or_(src.kind[k] for k in CITING_KINDS[rel])
            if rel == "call" and call_allowed is not None:
                cond = call_allowed.get((i, j), cond)
            smt.add(smt.implies(var, smt.and_([kinds, src.used, world.slots[j].used, cond])))
            world.links[(rel, i, j)] = var
    world._out = world._in = None
    for i in range(len(world.slots)):
        calls = [t for _, t in world.targets("call", i)]
        if len(calls) > 1:
            smt.add(smt.at_most_one(calls))


def induction_world(smt: Smt, ar: Arith, n: int, bounds: Bounds = Bounds()) -> World:
    """Up to n slots in an arbitrary state as one pass starts.

    Each slot is unused, in the window (as itself or as a stub whose item the
    store holds) or in the store only. Used slots come first.
    """
    slots: list[Slot] = []
    initial: list[State] = []
    for i in range(n):
        place = _one_hot(smt, f"s{i}.place", ("none", "win", "stub", "store"))
        slot = _item_slot(smt, ar, i, smt.not_(place["none"]), tokens_max=bounds.tokens)
        slots.append(slot)
        if i:
            smt.add(smt.implies(slot.used, slots[i - 1].used))
        mod = _modality(smt, f"s{i}.mod", slot)
        age = ar.var(f"s{i}.age", bounds.age)
        initial.append(
            State(
                place["win"],
                place["stub"],
                place["store"],
                smt.false,
                mod,
                slot.tokens,
                slot.score,
                age,
                i,
            )
        )
    budget = ar.var("budget", bounds.budget)
    world = World(
        smt, ar, slots, budget, passes=1, induction=True, initial=initial, item_count=n,
        age_max=bounds.age,
    )
    _links(world, {(i, j): smt.true for i in range(n) for j in range(n) if i != j})
    return world


def bmc_world(
    smt: Smt, ar: Arith, n: int, passes: int, appends: int, bounds: Bounds = Bounds()
) -> World:
    """n item slots appended over `passes` passes (at most `appends` before each).

    Slot i is appended before pass p when ``appended[p]`` holds; used slots
    come first and are appended in slot order. Summary slots (one for each
    pass but the last) are made by the pass encoding.
    """
    slots: list[Slot] = []
    for i in range(n):
        used = smt.boolean(f"s{i}.used")
        at = {p: smt.boolean(f"s{i}.at{p}") for p in range(1, passes + 1)}
        smt.add(smt.iff(used, smt.or_(at.values())))
        smt.add(smt.at_most_one(list(at.values())))
        slot = _item_slot(smt, ar, i, used, at, tokens_max=bounds.tokens)
        slots.append(slot)
        if i:
            prev = slots[i - 1]
            smt.add(smt.implies(used, prev.used))
            for p in range(1, passes + 1):
                # appended in slot order: the previous slot no later than this one
                smt.add(
                    smt.implies(at[p], smt.or_(prev.appended[q] for q in range(1, p + 1)))
                )
    for p in range(1, passes + 1):
        smt.add(smt.at_most([s.appended[p] for s in slots], appends))
    zero = ar.val(0)
    for k in range(1, passes):
        used = smt.boolean(f"sum{k}.used")
        kind = {name: smt.const(name == "prose") for name in KINDS}
        ctype = {name: smt.const(name == "decision") for name in TYPES}
        tokens = ar.var(f"sum{k}.tokens", ar.max)
        slots.append(Slot(n + k - 1, used, kind, ctype, smt.false, tokens, zero, k))
    budget = ar.var("budget", bounds.budget)
    world = World(smt, ar, slots, budget, passes=passes, item_count=n)
    allowed: dict[tuple[int, int], Term] = {}
    calls: dict[tuple[int, int], Term] = {}
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            if j < i:
                allowed[(i, j)] = smt.true
            else:  # a later slot: only one of the same append
                same = [
                    smt.and_([slots[i].appended[p], slots[j].appended[p]])
                    for p in range(1, passes + 1)
                ]
                allowed[(i, j)] = smt.or_(same)
                # a result may come before its call, a later append's (a trace may name
                # an id it gives later): the pairing holds once both are in
                calls[(i, j)] = smt.true
        for k in range(1, passes):
            # summary@k exists from the end of pass k: appends before later passes may cite it
            later = smt.or_(slots[i].appended[p] for p in range(k + 1, passes + 1))
            allowed[(i, n + k - 1)] = later
    _links(world, allowed, calls)
    return world
