"""One pass of a spec as constraints: what each rule reads, the visiting order, the stop, and
what each action does (docs/spec-language.md is the semantics encoded here).

For every slot the encoding states, as the interpreter computes them at the
start of the pass, the facts a ``when`` reads (kind as the spec sees it — a
stub is a stub —, type, modality, ``load_bearing``, ``negative``, ``cited``,
``result``, age, score, tokens, and the pressure), the action of the first
rule that matches (``keep`` when none does), and whether the item is visited.
``cited`` and ``result`` read a stub as the item it stands for (every stub of
a proof resolves: the spec spilled it, or the induction state put the item in
the store), so a stub cites what its item cites and answers a call when its
item does; every other fact reads a stub as itself, and ``negative`` counts a
witness that stands in the window as a stub as no failed observation.

* the visiting order is a strict order given pairwise: item j comes before
  item i when the ``order`` keys say so, ties broken by position;
* with ``stop = "fits"`` item i is visited when no item up to and including
  it (in visiting order) found the running total at most the budget, the
  running total before an item being the total as the pass starts plus the
  change of every item visited before it: an eviction takes its tokens away,
  a spill leaves ``stub_tokens``, a softened item counts ⌈t/2⌉, and the items
  summarized so far count ⌈sum/4⌉ together;
* pressure (tokens / budget as the pass starts) is compared exactly as
  Python compares the float quotient with the number written in the spec,
  without division: ``fl(T/B) >= v`` holds exactly when ``T/B`` is above the
  midpoint between v and the float below it (or on it, when v is even).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from verifier.policies.spec import Comparison, Spec, When
from verifier.prove.smt import Term
from verifier.prove.window import MODALITIES, SCORE_MAX, State, World

__all__ = ["Facts", "PassEncoding", "bmc_before", "encode_pass", "read_facts"]

_MODAL = ("commitment", "claim", "observation")


@dataclass
class Facts:
    """What the conditions read of one slot as the pass starts (spec's view)."""

    kind: dict[str, Term]
    """commitment, claim, observation, prose, stub -- as the spec sees it."""
    ctype: dict[str, Term]
    mod: dict[str, Term]
    load_bearing: Term
    negative: Term
    cited: Term
    result: Term | None
    """None when it was not asked for (:func:`read_facts`)."""
    age: Term
    score: Term
    tokens: Term


@dataclass
class PassEncoding:
    """One pass: the states before and after, and what happened to each slot."""

    pass_no: int
    before: list[State]
    after: list[State]
    inb: list[Term]
    """In the window as the pass starts (as itself or as a stub)."""
    present: list[Term]
    """In the window after the pass (as itself or as a stub)."""
    visited: list[Term]
    action: list[dict[str, Term]]
    removed: list[Term]
    spilled: list[Term]
    softened: list[Term]
    demoted: list[Term]
    orphaned: list[Term]
    total: Term
    summarized: Term
    """Some item was summarized (the pass leaves a summary)."""


# -- number conditions ----------------------------------------------------------------------


def _ge_const(world: World, x: Term, v: int, hi: int) -> Term:
    smt, ar = world.smt, world.ar
    if v <= 0:
        return smt.true
    if v > hi:
        return smt.false
    return ar.le(ar.val(v), x)


def _le_const(world: World, x: Term, v: int, hi: int) -> Term:
    smt, ar = world.smt, world.ar
    if v < 0:
        return smt.false
    if v >= hi:
        return smt.true
    return ar.le(x, ar.val(v))


def int_condition(world: World, x: Term, cmps: Sequence[Comparison], hi: int) -> Term:
    """The comparisons on an integer in [0, hi], exact as Python compares int and float."""
    smt, ar = world.smt, world.ar
    parts: list[Term] = []
    for c in cmps:
        q = Fraction(c.value)
        if c.op == "ge":
            parts.append(_ge_const(world, x, math.ceil(q), hi))
        elif c.op == "gt":
            parts.append(_ge_const(world, x, math.floor(q) + 1, hi))
        elif c.op == "le":
            parts.append(_le_const(world, x, math.floor(q), hi))
        elif c.op == "lt":
            parts.append(_le_const(world, x, math.ceil(q) - 1, hi))
        elif q.denominator == 1 and 0 <= q <= hi:
            parts.append(ar.eq(x, ar.val(int(q))))
        else:
            parts.append(smt.false)
    return smt.and_(parts)


def _even(v: float) -> bool:
    bits: int = struct.unpack("<q", struct.pack("<d", v))[0]
    return bits & 1 == 0


class _Ratio:
    """Comparisons of the exact quotient T/B (B > 0) with rationals, without division."""

    def __init__(self, world: World, total: Term, budget: Term) -> None:
        self.world = world
        self.t = total
        self.b = budget

    def gt(self, q: Fraction) -> Term:
        if q < 0:
            return self.world.smt.true
        return self.world.ar.scaled_lt(self.b, q.numerator, self.t, q.denominator)

    def lt(self, q: Fraction) -> Term:
        if q <= 0:
            return self.world.smt.false
        return self.world.ar.scaled_lt(self.t, q.denominator, self.b, q.numerator)

    def eq(self, q: Fraction) -> Term:
        smt = self.world.smt
        if q < 0:
            return smt.false
        return smt.not_(smt.or_([self.gt(q), self.lt(q)]))


def _float_ge(r: _Ratio, v: float) -> Term:
    """fl(T/B) >= v, for B > 0."""
    smt = r.world.smt
    below = math.nextafter(v, -math.inf)
    if math.isinf(below):
        return smt.true
    mid = (Fraction(below) + Fraction(v)) / 2
    on_mid = r.eq(mid) if _even(v) else smt.false
    return smt.or_([r.gt(mid), on_mid])


def _float_le(r: _Ratio, v: float) -> Term:
    """fl(T/B) <= v, for B > 0."""
    smt = r.world.smt
    above = math.nextafter(v, math.inf)
    if math.isinf(above):
        return smt.true
    mid = (Fraction(v) + Fraction(above)) / 2
    on_mid = r.eq(mid) if _even(v) else smt.false
    return smt.or_([r.lt(mid), on_mid])


def pressure_condition(
    world: World, total: Term, cmps: Sequence[Comparison]
) -> Term:
    """The comparisons on the pressure, as the interpreter computes and compares it.

    With a budget of 0 the pressure is infinite when there are tokens, else 0.
    """
    smt, ar = world.smt, world.ar
    budget = world.budget
    zero = ar.val(0)
    ratio = _Ratio(world, total, budget)
    parts: list[Term] = []
    for c in cmps:
        v = float(c.value)
        if c.op == "ge":
            pos = _float_ge(ratio, v)
        elif c.op == "lt":
            pos = smt.not_(_float_ge(ratio, v))
        elif c.op == "le":
            pos = _float_le(ratio, v)
        elif c.op == "gt":
            pos = smt.not_(_float_le(ratio, v))
        else:
            pos = smt.and_([_float_ge(ratio, v), _float_le(ratio, v)])
        at_zero = smt.ite(
            ar.lt(zero, total), smt.const(c.holds(math.inf)), smt.const(c.holds(0.0))
        )
        parts.append(smt.ite(ar.eq(budget, zero), at_zero, pos))
    return smt.and_(parts)


# -- the facts a rule reads ------------------------------------------------------------------


def read_facts(
    world: World, before: list[State], *, result: bool = True
) -> list[Facts | None]:
    """What the conditions read of each slot as the pass starts (None for a slot that
    cannot be in the window then); ``result`` is built only when asked for.

    The terms are the ones :func:`encode_pass` builds for the same states (z3 shares
    equal terms), so a model's value of them is what the pass read.
    """
    smt = world.smt
    inb = [smt.or_([st.win, st.stub]) for st in before]
    return [
        None if smt.is_false(inb[i]) else _facts(world, before, inb, i, result)
        for i in range(len(before))
    ]


def _facts(world: World, before: list[State], inb: list[Term], i: int, result: bool) -> Facts:
    """The facts of slot i. ``inb``: each slot is in the window as itself or as a stub of
    its item (which the store resolves). ``result`` is built only when asked for: a term
    that nothing asserts changes no answer, but it does change which model z3 picks."""
    smt = world.smt
    slot = world.slots[i]
    st = before[i]
    win = st.win
    kind = {k: smt.and_([win, slot.kind[k]]) for k in slot.kind}
    kind["stub"] = st.stub
    modal = smt.and_([win, smt.or_(slot.kind[k] for k in _MODAL)])
    mod = {m: smt.and_([modal, st.mod[m]]) for m in MODALITIES}
    ctype = {t: smt.and_([kind["commitment"], slot.ctype[t]]) for t in slot.ctype}
    # a witness standing in the window as a stub is no failed observation
    failed_witness = smt.or_(
        smt.and_([link, before[j].win, world.slots[j].kind["observation"], before[j].mod["failed"]])
        for j, link in world.targets("witnesses", i)
    )
    negative = smt.and_(
        [
            win,
            smt.or_(
                [
                    smt.and_([modal, st.mod["failed"]]),
                    ctype["rejection"],
                    failed_witness,
                ]
            ),
        ]
    )
    # some other item cites it: an item of the window, or the item behind a stub
    citers: list[Term] = []
    for j in range(len(world.slots)):
        if j == i:
            continue
        cites = world.cites(j, i)
        if smt.is_false(cites):
            continue
        citers.append(smt.and_([inb[j], cites]))
    cited = smt.or_(citers)
    answers = None
    if result:
        # it answers a call: an observation or prose with `call`, itself or behind a stub
        calls = smt.or_(link for _, link in world.targets("call", i))
        answers = smt.and_(
            [inb[i], smt.or_([slot.kind["observation"], slot.kind["prose"]]), calls]
        )
    return Facts(
        kind,
        ctype,
        mod,
        smt.and_([win, slot.load_bearing]),
        negative,
        cited,
        answers,
        st.age,
        st.score,
        st.tokens,
    )


def _flag(world: World, term: Term, wanted: bool) -> Term:
    return term if wanted else world.smt.not_(term)


def _matches(
    world: World, when: When, f: Facts, pressure: dict[int, Term], age_hi: int
) -> Term:
    smt = world.smt
    parts: list[Term] = []
    if when.kind is not None:
        parts.append(smt.or_(f.kind[k] for k in when.kind))
    if when.type is not None:
        parts.append(smt.or_(f.ctype[t] for t in when.type))
    if when.modality is not None:
        parts.append(smt.or_(f.mod[m] for m in when.modality))
    if when.load_bearing is not None:
        parts.append(_flag(world, f.load_bearing, when.load_bearing))
    if when.negative is not None:
        parts.append(_flag(world, f.negative, when.negative))
    if when.cited is not None:
        parts.append(_flag(world, f.cited, when.cited))
    if when.result is not None:
        assert f.result is not None
        parts.append(_flag(world, f.result, when.result))
    if when.stub is not None:
        parts.append(_flag(world, f.kind["stub"], when.stub))
    if when.age is not None:
        parts.append(int_condition(world, f.age, when.age, age_hi))
    if when.score is not None:
        parts.append(int_condition(world, f.score, when.score, SCORE_MAX))
    if when.tokens is not None:
        parts.append(int_condition(world, f.tokens, when.tokens, world.ar.max))
    if when.pressure is not None:
        parts.append(pressure[id(when)])
    return smt.and_(parts)


# -- the order -------------------------------------------------------------------------------


def _key_lt(world: World, a: Term | int, b: Term | int) -> Term:
    if isinstance(a, int) and isinstance(b, int):
        return world.smt.const(a < b)
    ar = world.ar
    ta = ar.val(a) if isinstance(a, int) else a
    tb = ar.val(b) if isinstance(b, int) else b
    return ar.lt(ta, tb)


def _precedes(world: World, spec: Spec, a: State, b: State) -> Term:
    """a is visited before b: the order keys, ties broken by position."""
    smt, ar = world.smt, world.ar
    res = _key_lt(world, a.key, b.key)
    for name in reversed(spec.order):
        desc = name.startswith("-")
        key = name.lstrip("-")
        if key == "position":
            res = _key_lt(world, b.key, a.key) if desc else _key_lt(world, a.key, b.key)
            continue
        va = {"age": a.age, "score": a.score, "tokens": a.tokens}[key]
        vb = {"age": b.age, "score": b.score, "tokens": b.tokens}[key]
        if desc:
            va, vb = vb, va
        res = smt.or_([ar.lt(va, vb), smt.and_([ar.eq(va, vb), res])])
    return res


# -- one pass ----------------------------------------------------------------------------------


def encode_pass(
    world: World,
    spec: Spec,
    pass_no: int,
    before: list[State],
    summary: int | None = None,
) -> PassEncoding:
    """Constraints for one pass of spec over the window described by ``before``.

    ``summary`` is the index of the slot that stands for this pass's summary
    (BMC, when a later pass can read it), or None.
    """
    smt, ar = world.smt, world.ar
    n = len(before)
    tag = f"p{pass_no}"
    age_hi = world.age_max if world.induction else world.passes
    zero = ar.val(0)
    inb = [smt.or_([st.win, st.stub]) for st in before]
    live = [i for i in range(n) if not smt.is_false(inb[i])]
    total = ar.sum([ar.ite(inb[i], before[i].tokens, zero) for i in live])
    total_var = ar.var(f"{tag}.total", ar.max)
    smt.add(ar.eq(total_var, total))
    pressure: dict[int, Term] = {}
    for rule in spec.rules:
        if rule.when.pressure is not None:
            pressure[id(rule.when)] = smt.define(
                f"{tag}.pressure{len(pressure)}",
                pressure_condition(world, total_var, rule.when.pressure),
            )

    # actions: the first rule whose condition holds; keep when none does
    actions = ("keep", "evict", "spill", "summarize", "soften", "demote")
    reads_result = any(rule.when.result is not None for rule in spec.rules)
    act: list[dict[str, Term]] = []
    for i in range(n):
        if i not in live:
            act.append({a: smt.const(a == "keep") for a in actions})
            continue
        f = _facts(world, before, inb, i, reads_result)
        taken = smt.false
        chosen: dict[str, list[Term]] = {a: [] for a in actions}
        for r, rule in enumerate(spec.rules):
            m = smt.define(f"{tag}.s{i}.r{r}", _matches(world, rule.when, f, pressure, age_hi))
            chosen[rule.do].append(smt.and_([m, smt.not_(taken)]))
            taken = smt.or_([taken, m])
        chosen["keep"].append(smt.not_(taken))
        act.append({a: smt.define(f"{tag}.s{i}.{a}", smt.or_(chosen[a])) for a in actions})

    slots = world.slots
    modal = [smt.or_(slots[i].kind[k] for k in _MODAL) for i in range(n)]
    st_tok = ar.val(spec.stub_tokens)
    rm = [smt.or_([act[i]["evict"], act[i]["summarize"]]) for i in range(n)]
    sp = [smt.and_([act[i]["spill"], before[i].win]) for i in range(n)]
    sf = [smt.and_([act[i]["soften"], before[i].win, modal[i]]) for i in range(n)]
    dm = [
        smt.and_(
            [act[i]["demote"], before[i].win, modal[i], smt.not_(before[i].mod["unwitnessed"])]
        )
        for i in range(n)
    ]
    half = [ar.ceil_div(before[i].tokens, 2) for i in range(n)]

    if spec.stop == "all":
        visited = list(inb)
    else:
        visited = _visits(world, spec, tag, before, inb, live, act, sp, sf, half, total_var)

    removed = [smt.define(f"{tag}.s{i}.removed", smt.and_([visited[i], rm[i]])) for i in range(n)]
    spilled = [smt.define(f"{tag}.s{i}.spilled", smt.and_([visited[i], sp[i]])) for i in range(n)]
    softened = [smt.and_([visited[i], sf[i]]) for i in range(n)]
    demoted = [smt.and_([visited[i], dm[i]]) for i in range(n)]
    summ = [smt.and_([visited[i], act[i]["summarize"]]) for i in range(n)]
    summarized = smt.define(f"{tag}.summarized", smt.or_(summ))

    # the window after the pass
    win_a: list[Term] = []
    stub_a: list[Term] = []
    for i in range(n):
        st = before[i]
        win_a.append(
            smt.define(
                f"{tag}.s{i}.win'", smt.and_([st.win, smt.not_(removed[i]), smt.not_(spilled[i])])
            )
        )
        stub_a.append(
            smt.define(
                f"{tag}.s{i}.stub'",
                smt.or_([smt.and_([st.stub, smt.not_(removed[i])]), spilled[i]]),
            )
        )
    # in the window after: as the pass starts, and not removed (a spill leaves a stub)
    present = [
        inb[i]  # nothing removes it: the same term, which the solver sees at once
        if smt.is_false(removed[i])
        else smt.define(f"{tag}.s{i}.present", smt.and_([inb[i], smt.not_(removed[i])]))
        for i in range(n)
    ]
    if summary is not None:
        smt.add(smt.iff(slots[summary].used, summarized))
        win_a[summary] = summarized
        present[summary] = summarized

    mod1: list[dict[str, Term]] = []
    for i in range(n):
        m = before[i].mod
        d, s = demoted[i], softened[i]
        mod1.append(
            {
                "unwitnessed": smt.or_([d, m["unwitnessed"]]),
                "verified": smt.and_([smt.not_(d), m["verified"]]),
                "failed": smt.and_([smt.not_(d), smt.not_(s), m["failed"]]),
                "unverified": smt.and_(
                    [smt.not_(d), smt.or_([m["unverified"], smt.and_([s, m["failed"]])])]
                ),
            }
        )
    orphaned = [smt.false] * n
    if spec.demote_orphans:
        for i in range(n):
            if i not in live:
                continue
            cited = world.targets("witnesses", i)
            if not cited:
                continue
            all_gone = smt.and_(smt.implies(link, smt.not_(present[j])) for j, link in cited)
            orphaned[i] = smt.define(
                f"{tag}.s{i}.orphan",
                smt.and_(
                    [
                        win_a[i],
                        slots[i].kind["claim"],
                        smt.not_(mod1[i]["unwitnessed"]),
                        smt.or_(link for _, link in cited),
                        all_gone,
                    ]
                ),
            )
    after: list[State] = []
    for i in range(n):
        st = before[i]
        o = orphaned[i]
        mod = {
            "unwitnessed": smt.or_([mod1[i]["unwitnessed"], o]),
            "verified": smt.and_([mod1[i]["verified"], smt.not_(o)]),
            "unverified": smt.and_([mod1[i]["unverified"], smt.not_(o)]),
            "failed": smt.and_([mod1[i]["failed"], smt.not_(o)]),
        }
        if i in live:
            mod = {k: smt.define(f"{tag}.s{i}.mod'.{k}", v) for k, v in mod.items()}
        tokens = ar.ite(spilled[i], st_tok, ar.ite(softened[i], half[i], st.tokens))
        score = ar.ite(spilled[i], zero, st.score)
        store = smt.or_([st.store, smt.and_([st.stub, removed[i]])])
        gone = smt.or_([st.gone, smt.and_([st.win, removed[i]])])
        after.append(State(win_a[i], stub_a[i], store, gone, mod, tokens, score, st.age, st.key))
    if summary is not None:
        after[summary] = _summary_state(world, tag, summary, before, summ, summarized)
    return PassEncoding(
        pass_no,
        before,
        after,
        inb,
        present,
        visited,
        act,
        removed,
        spilled,
        softened,
        demoted,
        orphaned,
        total_var,
        summarized,
    )


def _visits(
    world: World,
    spec: Spec,
    tag: str,
    before: list[State],
    inb: list[Term],
    live: list[int],
    act: list[dict[str, Term]],
    sp: list[Term],
    sf: list[Term],
    half: list[Term],
    total: Term,
) -> list[Term]:
    """Which items a ``stop = "fits"`` pass visits: the prefix of the visiting order before
    the first item that finds the running total at most the budget."""
    smt, ar = world.smt, world.ar
    n = len(before)
    zero = ar.val(0)
    st_tok = ar.val(spec.stub_tokens)
    prec: dict[tuple[int, int], Term] = {}
    for x in live:
        for y in live:
            if x < y:
                p = smt.guarded(f"{tag}.prec.{x}.{y}", _precedes(world, spec, before[x], before[y]))
                prec[(x, y)] = p
                prec[(y, x)] = smt.not_(p)
    summarizes = any(r.do == "summarize" for r in spec.rules)
    delta: dict[int, Term] = {}
    for j in live:
        t = before[j].tokens
        delta[j] = ar.ite(
            act[j]["evict"],
            ar.sub(zero, t),
            ar.ite(sp[j], ar.sub(st_tok, t), ar.ite(sf[j], ar.sub(half[j], t), zero)),
        )
    over: dict[int, Term] = {}
    for i in live:
        earlier = [j for j in live if j != i]
        running = ar.sum(
            [total]
            + [ar.ite(smt.and_([inb[j], prec[(j, i)]]), delta[j], zero) for j in earlier]
        )
        if summarizes:
            folded = ar.var(f"{tag}.s{i}.folded", ar.max)
            so_far = ar.sum(
                [
                    ar.ite(
                        smt.and_([inb[j], prec[(j, i)], act[j]["summarize"]]),
                        before[j].tokens,
                        zero,
                    )
                    for j in earlier
                ]
            )
            smt.guarded_add(ar.eq(folded, so_far))
            running = ar.sum([ar.sub(running, folded), ar.ceil_div(folded, 4)])
        over[i] = smt.guarded(f"{tag}.s{i}.over", ar.lt(world.budget, running))
    visited: list[Term] = []
    for i in range(n):
        if i not in live:
            visited.append(smt.false)
            continue
        stopped_earlier = [
            smt.and_([inb[j], prec[(j, i)], smt.not_(over[j])]) for j in live if j != i
        ]
        vis = smt.guarded(
            f"{tag}.s{i}.visited",
            smt.and_([inb[i], over[i], smt.not_(smt.or_(stopped_earlier))]),
        )
        smt.add(smt.implies(vis, inb[i]))
        visited.append(vis)
    return visited


def _summary_state(
    world: World,
    tag: str,
    index: int,
    before: list[State],
    summ: list[Term],
    summarized: Term,
) -> State:
    """The prose item summary@PASS: at the place of the first summarized item, ⌈sum/4⌉ tokens."""
    smt, ar = world.smt, world.ar
    zero = ar.val(0)
    slot = world.slots[index]
    folded = ar.sum([ar.ite(summ[i], before[i].tokens, zero) for i in range(len(before))])
    smt.add(smt.implies(summarized, ar.eq(slot.tokens, ar.ceil_div(folded, 4))))
    key = ar.var(f"{tag}.summary.key", len(world.slots))
    world.summary_keys[index] = key
    keys = [
        (i, ar.val(st.key) if isinstance(st.key, int) else st.key) for i, st in enumerate(before)
    ]
    smt.add(
        smt.implies(
            summarized,
            smt.and_(
                [
                    smt.and_(smt.implies(summ[i], ar.le(key, k)) for i, k in keys),
                    smt.or_(smt.and_([summ[i], ar.eq(key, k)]) for i, k in keys),
                ]
            ),
        )
    )
    unverified = {m: smt.const(m == "unverified") for m in MODALITIES}
    return State(
        summarized, smt.false, smt.false, smt.false, unverified, slot.tokens, zero, zero, key
    )


def bmc_before(world: World, pass_no: int, prev: list[State] | None) -> list[State]:
    """The window as pass ``pass_no`` starts: the last pass's window plus this pass's appends."""
    smt, ar = world.smt, world.ar
    zero = ar.val(0)
    out: list[State] = []
    for i, slot in enumerate(world.slots):
        if slot.is_summary:
            assert slot.summary_pass is not None
            if prev is None or slot.summary_pass >= pass_no:
                out.append(_absent(world, slot.tokens, i))
            else:
                out.append(prev[i])
            continue
        new = slot.appended[pass_no]
        age = ar.sum(
            [
                ar.ite(slot.appended[q], ar.val(pass_no - q), zero)
                for q in range(1, pass_no + 1)
            ]
        )
        if prev is None:
            mod = {m: smt.boolean(f"s{i}.mod0.{m}") for m in MODALITIES}
            smt.add(smt.exactly_one(list(mod.values())))
            smt.add(smt.implies(slot.kind["prose"], mod["unverified"]))
            out.append(
                State(new, smt.false, smt.false, smt.false, mod, slot.tokens, slot.score, age, i)
            )
            continue
        p = prev[i]
        out.append(
            State(
                smt.or_([p.win, new]), p.stub, p.store, p.gone, p.mod, p.tokens, p.score, age, i
            )
        )
    return out


def _absent(world: World, tokens: Term, index: int) -> State:
    smt, ar = world.smt, world.ar
    unverified = {m: smt.const(m == "unverified") for m in MODALITIES}
    f = smt.false
    return State(f, f, f, f, unverified, tokens, ar.val(0), ar.val(0), index)

