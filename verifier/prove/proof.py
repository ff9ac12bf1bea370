"""One proof: the constraints of a spec's passes (:class:`Encoding`) and :func:`prove`, which
settles each property, shrinks and replays its counterexample (docs/prove.md)."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from verifier.errors import InputError
from verifier.findings import Finding
from verifier.fsutil import write_set
from verifier.policies.spec import Spec, load_spec
from verifier.prove.passes import bmc_before, encode_pass
from verifier.prove.properties import PROPERTIES, Violation, violations
from verifier.prove.replay import ConcreteSlot, Scenario, replay_scenario, slot_id
from verifier.prove.smt import Arith, BitVecArith, CheckResult, IntArith, OutOfTime, Smt, Term
from verifier.prove.window import (
    KINDS,
    MODALITIES,
    RELATIONS,
    TYPES,
    Bounds,
    World,
    bmc_world,
    induction_world,
)

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
    "Encoding",
    "ProofResult",
    "check_bounds",
    "prove",
]

DEFAULT_ITEMS = 6
DEFAULT_PASSES = 3
DEFAULT_APPENDS = 2
DEFAULT_OUT = "ctxproof-prove"
DEFAULT_TIMEOUT = 60.0
"""``ctxproof prove``'s wall-clock limit for a whole proof, in seconds, when ``--timeout``
is not given (the API's :func:`prove` has none unless asked)."""
MAX_ITEMS = 256
MAX_PASSES = 64
MAX_APPENDS = MAX_ITEMS
Z3_STATISTICS = frozenset(
    {
        "assertions",
        "checks",
        "conflicts",
        "decisions",
        "propagations",
        "rlimit count",
        "max memory",
        "mk bool var",
        "restarts",
    }
)
"""The z3 statistics a result reports (summed over every check; memory: the peak, MB)."""


@dataclass(frozen=True, slots=True)
class Counterexample:
    """A refuted property: the trace that shows it, and the finding its audit reports."""

    code: str
    path: str
    pass_: int
    size: int
    """How many items the counterexample uses (no fewer can show this finding)."""
    finding: Finding
    scenario: Scenario | None = field(default=None, compare=False, repr=False)
    """The model as concrete values: another spec can be run on the same appends."""
    text: str = field(default="", repr=False, compare=False)
    """The trace written at ``path``."""

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "path": self.path,
            "pass": self.pass_,
            "items": list(self.finding.items),
            "size": self.size,
        }


@dataclass(frozen=True, slots=True)
class ProofResult:
    """The outcome of :func:`prove`.

    ``result`` is ``proved`` (every property unsatisfiable within the bounds),
    ``counterexample`` (``code`` and ``path`` name the first refuted property in
    the order of :data:`PROPERTIES` and its trace; ``counterexamples`` has them
    all; ``reason``, when not None, names the properties left unsettled) or
    ``undecided`` (``reason`` says which properties z3 could not settle and why).
    """

    result: str
    code: str | None
    path: str | None
    reason: str | None
    items: int
    passes: int
    induction: bool
    seconds: float
    stats: Mapping[str, Any] = field(default_factory=dict)
    counterexamples: tuple[Counterexample, ...] = ()
    appends: int = DEFAULT_APPENDS

    @property
    def finding(self) -> Finding | None:
        """The finding of the first counterexample."""
        return self.counterexamples[0].finding if self.counterexamples else None

    def to_json(self, spec: str) -> dict[str, Any]:
        return {
            "spec": spec,
            "result": self.result,
            "items": self.items,
            "passes": self.passes,
            "induction": self.induction,
            "code": self.code,
            "path": self.path,
            "reason": self.reason,
            "seconds": round(self.seconds, 3),
            "stats": dict(self.stats),
        }


def spec_bounds(spec: Spec) -> Bounds:
    """The ranges of a proof of ``spec``: past every token count and age it compares with,
    so no value it tells apart is out of reach (docs/prove.md, "Two ways to prove")."""

    def finite(values: Iterable[float]) -> list[float]:
        return [v for v in values if math.isfinite(v)]

    tokens = finite([spec.stub_tokens, *(c.value for r in spec.rules for c in r.when.tokens or ())])
    ages = finite(c.value for r in spec.rules for c in r.when.age or ())
    pressures = [
        v for v in finite(c.value for r in spec.rules for c in r.when.pressure or ()) if v > 0
    ]
    need_tokens, need_budget = _pressure_reach(pressures)
    return Bounds.beyond(
        max([*tokens, *need_tokens], default=0), max(ages, default=0), need_budget
    )


def _pressure_reach(pressures: Sequence[float]) -> tuple[list[float], float]:
    """The token counts and the budget that every pressure a spec tells apart needs.

    A pressure v is told apart from above by an item of v tokens in a budget of 1, from
    below by an item of 1 token in a budget of 1/v, and v itself by the fraction the
    spec wrote it as (``1.0000001`` is 10000001 tokens in a budget of 10**7); between
    two values v < w, by a budget past 2 / (w - v) and the tokens that put the pressure
    in the middle. A pressure is a quotient of integers: the ranges must reach them.
    1 is among the values (``stop = "fits"`` tells the window over its budget apart)."""
    # exact fractions: a tiny pressure (5e-324) needs a budget no float holds
    tokens: list[float] = list(pressures)
    budget: float = max((math.ceil(1 / Fraction(v)) for v in pressures), default=0)
    points = sorted({*pressures, 1.0}) if pressures else []
    for v in points:
        written = _simplest_quotient(v)
        tokens.append(written.numerator)
        budget = max(budget, written.denominator)
    for low, high in itertools.pairwise(points):
        between = math.ceil(2 / (Fraction(high) - Fraction(low)))
        tokens.append(math.ceil((Fraction(low) + Fraction(high)) / 2 * between) + 1)
        budget = max(budget, between)
    return tokens, budget


def _simplest_quotient(v: float) -> Fraction:
    """A fraction of small terms whose quotient, as the interpreter divides, is ``v``
    (``0.3333333333333333`` is 1/3; ``1.0000001`` is 10000001/10**7); the fraction
    ``v`` is written as when none smaller is."""
    written = Fraction(repr(v))
    bound = 1
    while bound < written.denominator:
        near = written.limit_denominator(bound)
        if near.numerator / near.denominator == v:
            return near
        bound *= 10
    return written


class Encoding:
    """The constraints of one proof: the world, its passes, and each property's flag."""

    def __init__(
        self,
        spec: Spec,
        *,
        items: int,
        passes: int,
        appends: int,
        induction: bool,
        arith: str = "int",
        deadline: float | None = None,
    ) -> None:
        self.spec = spec
        self.induction = induction
        self.smt = smt = Smt(deadline)
        self._upto: list[Term] = []
        # BMC: windows of at most `items` items, up to `appends` appended before each pass,
        # so at most that many (and no more than a window holds) are appended before each
        appended = passes * min(appends, items)
        slots = items if induction else appended + passes - 1
        self.bounds = bounds = spec_bounds(spec)
        biggest = max(bounds.tokens, spec.stub_tokens)
        width = max(
            bounds.budget.bit_length() + 1,
            (slots * biggest).bit_length() + 3,
            bounds.age.bit_length() + 1,  # an age is a number of the proof as well
        )
        self.ar: Arith = (BitVecArith if arith == "bv" else IntArith)(smt, width)
        if induction:
            self.world: World = induction_world(smt, self.ar, items, bounds)
            before = self.world.initial
            self.passes = [encode_pass(self.world, spec, 1, before)]
        else:
            self.world = bmc_world(smt, self.ar, appended, passes, appends, bounds)
            self.passes = []
            prev = None
            for p in range(1, passes + 1):
                # pass p's constraints hold under the literal upto[p]: a search for a finding
                # at pass d models passes 1..d only, as bounded model checking goes deeper
                lit = smt.boolean(f"upto{p}")
                self._upto.append(lit)
                smt.scope = lit
                before = bmc_before(self.world, p, prev)
                if min(p * appends, appended) > items:
                    # the window as the pass starts (stubs and summaries included) holds at
                    # most `items` items: said only where more could be there (a summary
                    # stands for one item or more, so no window outgrows the appends)
                    smt.add(smt.at_most([smt.or_([st.win, st.stub]) for st in before], items))
                summary = appended + p - 1 if p < passes else None
                enc = encode_pass(self.world, spec, p, before, summary)
                smt.scope = None
                self.passes.append(enc)
                prev = enc.after
        self.violations: dict[str, list[Violation]] = {code: [] for code in PROPERTIES}
        for enc in self.passes:
            for code, found in violations(self.world, enc).items():
                self.violations[code].extend(found)
        self.flags: dict[str, Term] = {}
        self.by_pass: dict[tuple[str, int], Term] = {}
        for code in PROPERTIES:
            flag = smt.boolean(f"violated.{code}")
            smt.add(smt.implies(flag, smt.or_(v.term for v in self.violations[code])))
            self.flags[code] = flag
            for q in range(1, len(self.passes)):
                # the finding shows by pass q: a shorter trace
                lit = smt.boolean(f"violated.{code}.by{q}")
                early = [v.term for v in self.violations[code] if v.pass_no <= q]
                smt.add(smt.implies(lit, smt.or_(early)))
                self.by_pass[(code, q)] = lit
        self._at_most: dict[int, Term] = {}
        self._links_at_most: dict[int, Term] = {}
        self.small = smt.boolean("small")
        self._small_bound(spec)
        self.plain = self._plain_groups()
        self._ordered: Term | None = None

    def _small_bound(self, spec: Spec) -> None:
        """A literal that keeps numbers small, so counterexamples read easily when they can."""
        consts = [spec.stub_tokens]
        for rule in spec.rules:
            for cmps in (rule.when.tokens, rule.when.age, rule.when.score):
                for c in cmps or ():
                    consts.append(int(min(abs(c.value), 1 << 20)))
        bound = max(32, 2 * max(consts) + 2)
        ar, smt, world = self.ar, self.smt, self.world
        terms = [ar.le(world.budget, ar.val(bound * 4))]
        for slot in world.slots[: world.item_count]:
            terms.append(ar.le(slot.tokens, ar.val(bound)))
        for st in world.initial:
            terms.append(ar.le(st.age, ar.val(bound)))
        smt.add(smt.implies(self.small, smt.and_(terms)))

    def _plain_groups(self) -> list[tuple[str, Term]]:
        """Literals for plain values (no score, age 0, default load_bearing), tried greedily
        (where ages 0 are no counterexample, :meth:`ages_in_order` is tried instead)."""
        smt, ar, world = self.smt, self.ar, self.world
        items = world.slots[: world.item_count]
        zero = ar.val(0)
        groups = {
            "no_score": [ar.eq(s.score, zero) for s in items],
            "age0": [ar.eq(st.age, zero) for st in world.initial],
            "lb_default": [smt.iff(s.load_bearing, s.kind["commitment"]) for s in items],
        }
        out = []
        for name, terms in groups.items():
            if not terms:
                continue
            lit = smt.boolean(f"plain.{name}")
            smt.add(smt.implies(lit, smt.and_(terms)))
            out.append((name, lit))
        return out

    def ages_in_order(self) -> Term | None:
        """A literal for ages oldest first along the window, as appends leave a window: its
        trace can give every age (docs/prove.md, "Counterexamples"). Made when asked (only
        where ages 0 are no counterexample): a constraint added changes the models z3 finds.
        None with no state to age (bounded model checking)."""
        if self._ordered is not None:
            return self._ordered
        world, ar, smt = self.world, self.ar, self.smt
        terms = [ar.le(later.age, st.age) for st, later in itertools.pairwise(world.initial)]
        if not terms:
            return None
        self._ordered = smt.boolean("plain.age_ordered")
        smt.add(smt.implies(self._ordered, smt.and_(terms)))
        return self._ordered

    def links_at_most(self, m: int) -> Term:
        lit = self._links_at_most.get(m)
        if lit is None:
            lit = self.smt.boolean(f"links_at_most.{m}")
            links = list(self.world.links.values())
            self.smt.add(self.smt.implies(lit, self.smt.at_most(links, m)))
            self._links_at_most[m] = lit
        return lit

    def link_count(self) -> int:
        return sum(1 for t in self.world.links.values() if self.smt.value(t))

    def depth(self, d: int) -> list[Term]:
        """The literals that model passes 1..d (none for a proof by induction)."""
        return self._upto[:d]

    def flag_at(self, code: str, d: int) -> Term:
        """``code`` shows at some pass up to d."""
        return self.flags[code] if d >= len(self.passes) else self.by_pass[(code, d)]

    def refutable(self, code: str, *assumptions: Term) -> CheckResult:
        """Is there a counterexample of ``code``?"""
        return self.smt.check([self.flags[code], *self._upto, *assumptions])

    def at_most(self, m: int) -> Term:
        lit = self._at_most.get(m)
        if lit is None:
            lit = self.smt.boolean(f"at_most.{m}")
            self.smt.add(self.smt.implies(lit, self.smt.at_most(self.world.used_flags(), m)))
            self._at_most[m] = lit
        return lit

    # -- reading a model ------------------------------------------------------------------
    def used_count(self) -> int:
        return sum(1 for u in self.world.used_flags() if self.smt.value(u))

    def _one(self, bits: Mapping[str, Term], names: tuple[str, ...]) -> str:
        for name in names:
            if self.smt.value(bits[name]):
                return name
        raise AssertionError("a one-hot group with no bit set")  # pragma: no cover

    def first_violation(self, code: str) -> Violation:
        """The violation of ``code`` the current model shows: earliest pass, then slot."""
        smt = self.smt
        for v in sorted(self.violations[code], key=lambda v: (v.pass_no, v.items)):
            if smt.value(v.term):
                return v
        raise AssertionError(f"the model shows no {code}")  # pragma: no cover

    def shown(self) -> set[tuple[str, int, tuple[int, ...]]]:
        """Every (code, pass, slots) the current model shows."""
        return {
            (v.code, v.pass_no, v.items)
            for found in self.violations.values()
            for v in found
            if self.smt.value(v.term)
        }

    def scenario(self, code: str) -> tuple[Scenario, Violation]:
        """The concrete counterexample of the current model for ``code``."""
        viol = self.first_violation(code)
        formulas: dict[int, str] = {}
        if viol.support:
            ids = self.ids()
            shown = [ids[j] for j, t in viol.support if self.smt.value(t)]
            formulas[viol.items[0]] = " & ".join(shown)
        return self.concrete(viol.pass_no, formulas), viol

    def ids(self) -> dict[int, str]:
        """The ids the current model's slots get in a trace."""
        world, smt = self.world, self.smt
        out: dict[int, str] = {}
        for i, slot in enumerate(world.slots):
            if slot.summary_pass is not None:
                out[i] = f"summary@{slot.summary_pass}"
            elif smt.value(slot.used):
                out[i] = slot_id(i, self._one(slot.kind, KINDS))
        return out

    def concrete(self, passes: int, formulas: Mapping[int, str]) -> Scenario:
        """The current model as concrete values, run for ``passes`` passes."""
        smt, world = self.smt, self.world
        slots: list[ConcreteSlot] = []
        kinds: dict[int, str] = {}
        for i, slot in enumerate(world.slots[: world.item_count]):
            if smt.value(slot.used):
                kinds[i] = self._one(slot.kind, KINDS)
        called = {
            j
            for i in kinds
            for j, t in world.targets("call", i)
            if j < world.item_count and smt.value(t)
        }
        for i, slot in enumerate(world.slots[: world.item_count]):
            if i not in kinds:
                continue
            if (
                not self.induction
                and i not in called
                and not any(smt.value(slot.appended[p]) for p in range(1, passes + 1))
            ):
                continue  # appended after the last pass the trace runs (and no result's call)
            links: dict[str, tuple[int, ...]] = {}
            for rel in RELATIONS:
                cited = tuple(j for j, t in world.targets(rel, i) if smt.value(t))
                if cited:
                    links[rel] = cited
            if self.induction:
                st = world.initial[i]
                place = next(
                    p
                    for p, t in (("win", st.win), ("stub", st.stub), ("store", st.store))
                    if smt.value(t)
                )
                mod = self._one(st.mod, MODALITIES)
                appended, age = None, smt.value(st.age)
            else:
                place = None
                mod = self._one(self.passes[0].before[i].mod, MODALITIES)
                appended = next(p for p, t in slot.appended.items() if smt.value(t))
                age = 0
            slots.append(
                ConcreteSlot(
                    i,
                    kinds[i],
                    self._one(slot.ctype, TYPES),
                    bool(smt.value(slot.load_bearing)),
                    mod,
                    smt.value(slot.tokens),
                    smt.value(slot.score),
                    links,
                    appended,
                    place,
                    age,
                )
            )
        summaries = {
            s.index: s.summary_pass
            for s in world.slots[world.item_count :]
            if s.summary_pass is not None and s.summary_pass <= passes
        }
        ids = {s.index: slot_id(s.index, s.kind) for s in slots}
        ids.update({i: f"summary@{p}" for i, p in summaries.items()})
        expected = []
        for enc in self.passes[:passes]:
            want: dict[str, tuple[str, str | None]] = {}
            for i, iid in ids.items():
                st = enc.after[i]
                if smt.value(st.win):
                    kind = kinds.get(i, "prose")
                    shown = self._one(st.mod, MODALITIES) if kind != "prose" else None
                    want[iid] = ("win", shown)
                elif smt.value(st.stub):
                    want[iid] = ("stub", None)
                else:
                    want[iid] = ("out", None)
            if enc.pass_no == self.world.passes or self.induction:
                want[f"summary@{enc.pass_no}"] = (
                    ("win", None) if smt.value(enc.summarized) else ("out", None)
                )
            expected.append(want)
        return Scenario(
            self.induction,
            smt.value(world.budget),
            tuple(slots),
            passes,
            summaries,
            dict(formulas),
            tuple(expected),
        )

    def pin(self, sc: Scenario) -> Term:
        """A constraint that fixes every input of the model to the scenario's values.

        Used to ask the encoding about one concrete window (the tests compare its
        answer with the interpreter's and the checker's). The scenario's slots
        must come first, and (BMC) be appended in slot order.
        """
        smt, ar, world = self.smt, self.ar, self.world
        parts: list[Term] = [*self._upto, ar.eq(world.budget, ar.val(sc.budget))]
        given = {s.index: s for s in sc.slots}
        for i, slot in enumerate(world.slots[: world.item_count]):
            s = given.get(i)
            if s is None:
                parts.append(smt.not_(slot.used))
                continue
            parts.append(slot.used)
            parts.append(slot.kind[s.kind])
            parts.append(slot.ctype[s.ctype if s.kind == "commitment" else "decision"])
            parts.append(_bit(smt, slot.load_bearing, s.load_bearing))
            parts.append(ar.eq(slot.tokens, ar.val(s.tokens)))
            parts.append(ar.eq(slot.score, ar.val(s.score)))
            for rel in RELATIONS:
                for j, t in world.targets(rel, i):
                    parts.append(_bit(smt, t, j in s.links.get(rel, ())))
            if self.induction:
                st = world.initial[i]
                parts.append({"win": st.win, "stub": st.stub, "store": st.store}[s.place or "win"])
                parts.append(st.mod[s.modality])
                parts.append(ar.eq(st.age, ar.val(s.age)))
            else:
                parts.append(slot.appended[s.appended or 1])
                parts.append(self.passes[0].before[i].mod[s.modality])
        return smt.and_(parts)


def _bit(smt: Smt, term: Term, value: bool) -> Term:
    return term if value else smt.not_(term)


def check_bounds(items: int, passes: int, appends: int, timeout: float | None) -> None:
    for name, value, hi in (
        ("items", items, MAX_ITEMS),
        ("passes", passes, MAX_PASSES),
        ("appends", appends, MAX_APPENDS),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
            raise InputError(
                f"--{name} must be an integer from 1 to {hi}, not {value!r}",
                fix=f"give --{name} N with 1 <= N <= {hi}",
            )
    if timeout is not None and not timeout > 0:
        raise InputError(
            f"--timeout must be a positive number of seconds, not {timeout!r}",
            fix="give --timeout S with S > 0, or leave it out",
        )


def prove(
    spec: Spec | str | Path,
    *,
    items: int = DEFAULT_ITEMS,
    passes: int = DEFAULT_PASSES,
    appends: int = DEFAULT_APPENDS,
    induction: bool = False,
    timeout: float | None = None,
    out_dir: str | Path = DEFAULT_OUT,
    arith: str = "int",
    minimize: str = "iterate",
) -> ProofResult:
    """Prove that ``spec`` never causes the eight findings, or find a minimal counterexample.

    ``spec`` is a parsed :class:`~verifier.policies.spec.Spec` or the path of a
    spec file (a bad spec raises :class:`~verifier.errors.InputError` naming the
    key). Bounds: ``items`` (induction: slots of the state as the pass starts; BMC:
    the items a window holds as each pass starts), ``passes`` and ``appends`` (BMC
    only: at most that many appended before each pass).
    ``timeout`` is a wall-clock limit in seconds for the whole proof; a
    property z3 cannot settle in time leaves the result ``undecided``.
    Counterexample traces go to ``out_dir``. ``arith`` (``int`` or ``bv``)
    and ``minimize`` (``iterate`` or ``optimize``) choose encodings the
    benchmark compares; both decide the same questions.

    Raises :class:`~verifier.errors.InternalError` when a model does not
    replay with its finding (a bug in the encoding).
    """
    if not isinstance(spec, Spec):
        spec = load_spec(spec)
    check_bounds(items, passes, appends, timeout)
    if arith not in ("int", "bv") or minimize not in ("iterate", "optimize"):
        raise InputError(f"unknown encoding option {arith!r}/{minimize!r}")
    start = time.perf_counter()
    deadline = None if timeout is None else start + timeout
    try:
        enc = Encoding(
            spec,
            items=items,
            passes=1 if induction else passes,
            appends=appends,
            induction=induction,
            arith=arith,
            deadline=deadline,
        )
    except OutOfTime:
        seconds = time.perf_counter() - start
        return ProofResult(
            "undecided",
            None,
            None,
            f"{', '.join(PROPERTIES)}: the encoding of these bounds ran out of time"
            " (--timeout); give more time, or smaller --items, --passes or --appends",
            items,
            1 if induction else passes,
            induction,
            seconds,
            {"arith": arith, "minimize": minimize, "encode_seconds": round(seconds, 3)},
            (),
            appends,
        )
    encode_seconds = time.perf_counter() - start
    per_property: dict[str, dict[str, Any]] = {}
    found: list[Counterexample] = []
    undecided: dict[str, list[str]] = {}  # reason -> the properties it left unsettled
    for code in PROPERTIES:
        outcome = _settle(enc, code, deadline, minimize, out_dir)
        per_property[code] = outcome.summary
        if outcome.counterexample is not None:
            found.append(outcome.counterexample)
        elif outcome.reason is not None:
            undecided.setdefault(outcome.reason, []).append(code)
    _write_counterexamples(out_dir, found)
    seconds = time.perf_counter() - start
    stats: dict[str, Any] = {
        "arith": arith,
        "minimize": minimize,
        "appends": None if induction else appends,
        "encode_seconds": round(encode_seconds, 3),
        "properties": per_property,
        "counterexamples": [c.to_json() for c in found],
        "z3": {
            k.replace(" ", "_"): _round(v)
            for k, v in sorted(enc.smt.statistics().items())
            if k in Z3_STATISTICS
        },
    }
    items_n, passes_n = items, 1 if induction else passes

    def result(
        kind: str, code: str | None = None, path: str | None = None, reason: str | None = None
    ) -> ProofResult:
        return ProofResult(
            kind,
            code,
            path,
            reason,
            items_n,
            passes_n,
            induction,
            seconds,
            stats,
            tuple(found),
            appends,
        )

    reason = "; ".join(f"{', '.join(codes)}: {why}" for why, codes in undecided.items())
    if found:
        # a counterexample settles the question; the reason says what else was left open
        return result("counterexample", found[0].code, found[0].path, reason or None)
    if undecided:
        return result("undecided", reason=reason)
    return result("proved")


def _write_counterexamples(out_dir: str | Path, found: Sequence[Counterexample]) -> None:
    """The counterexamples of this proof, written as one set; those an earlier proof left
    in the folder are removed (a folder that is not there is made only for one)."""
    if not found and not Path(out_dir).is_dir():
        return
    write_set(
        out_dir,
        {f"cex-{c.code}.jsonl": c.text for c in found},
        stale={"": _is_counterexample},
        what="counterexample folder",
    )


def _is_counterexample(name: str) -> bool:
    return name.startswith("cex-") and name.endswith(".jsonl") and name[4:-6] in PROPERTIES


def _round(v: float) -> float | int:
    return int(v) if float(v).is_integer() else round(v, 3)


@dataclass(frozen=True, slots=True)
class _Outcome:
    summary: dict[str, Any]
    counterexample: Counterexample | None = None
    reason: str | None = None


def _remaining(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    return deadline - time.perf_counter()


def _ask(
    enc: Encoding, assumptions: list[Term], deadline: float | None, *, loose: bool = False
) -> CheckResult:
    left = _remaining(deadline)
    if left is not None and left <= 0:
        return CheckResult("unknown", "timeout")
    return enc.smt.check(assumptions, left, loose=loose)


def _sizes(n: int) -> list[int]:
    """The item counts a counterexample is searched at, smallest first, ending at n."""
    out = [m for m in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192) if m < n]
    return [*out, n]


def _settle(
    enc: Encoding, code: str, deadline: float | None, minimize: str, out_dir: str | Path
) -> _Outcome:
    """Prove one property, or find, shrink and replay its counterexample."""
    start = time.perf_counter()

    def summary(result: str, **more: Any) -> dict[str, Any]:
        return {"result": result, "seconds": round(time.perf_counter() - start, 3), **more}

    def undecided(res: CheckResult) -> _Outcome:
        reason = _reason(res)
        return _Outcome(summary("undecided", reason=reason), reason=reason)

    # first with any subset of the window visited: when even that shows no finding, the
    # property holds without the arithmetic of the visiting order
    k = len(enc.passes)
    loose = _ask(enc, [enc.flags[code], *enc.depth(k)], deadline, loose=True)
    if loose.unsat:
        return _Outcome(summary("proved", by="any visits"))
    n = enc.world.item_count

    def query(m: int, d: int) -> list[Term]:
        return [enc.flag_at(code, d), *enc.depth(d), enc.at_most(m)]

    def shallowest(m: int) -> tuple[CheckResult, int]:
        """The first depth with a counterexample of at most m items (BMC deepens)."""
        res = CheckResult("unsat")
        for d in range(1, k + 1):
            res = _ask(enc, query(m, d), deadline)
            if not res.unsat:
                return res, d
        return res, k

    if minimize == "optimize":
        res = enc.smt.minimize(
            [enc.flags[code], *enc.depth(k)], enc.world.used_flags(), _remaining(deadline)
        )
        if res.unsat:
            return _Outcome(summary("proved", by="exact visits"))
        if not res.sat:
            return undecided(res)
        size = enc.used_count()
        res, depth = shallowest(size)
    else:
        # small windows and few passes first: a counterexample is usually small and found
        # at once, while the solver can wander long among many items; a search that reaches
        # n items and every pass without one is the proof
        lo, size, depth = 0, 0, k
        for m in _sizes(n):
            res, depth = shallowest(m)
            if res.sat:
                size = m
                break
            if not res.unsat:
                return undecided(res)
            lo = m
        if not size:
            return _Outcome(summary("proved", by="exact visits"))
        # the fewest items: between the last size without one and the first with one
        while size - lo > 1:
            mid = (lo + size) // 2
            res, d = shallowest(mid)
            if res.sat:
                size, depth = mid, d
            elif res.unsat:
                lo = mid
            else:
                break  # out of time: keep the size found
    bound = query(size, depth)
    res = _ask(enc, bound, deadline)
    if res.sat:
        # readable counterexamples: fewest citations, small numbers, plain values
        links = enc.link_count()
        for m in range(links + 1):
            lit = enc.links_at_most(m)
            tried = _ask(enc, [*bound, lit], deadline) if m < links else None
            if tried is None or tried.sat:
                bound.append(lit)
                break
            if not tried.unsat:
                break
        for name, lit in [("small", enc.small), *enc.plain]:
            if _ask(enc, [*bound, lit], deadline).sat:
                bound.append(lit)
            elif (
                name == "age0"
                and (ordered := enc.ages_in_order()) is not None
                and _ask(enc, [*bound, ordered], deadline).sat
            ):
                bound.append(ordered)
        res = _ask(enc, bound, deadline)
    if not res.sat:
        return undecided(res)
    scenario, viol = enc.scenario(code)
    replayed = replay_scenario(enc.spec, scenario, code, viol.pass_no, out_dir)
    # the items of its windows: a call appended after its last pass, that closes the
    # trace, is no part of them
    size = sum(1 for s in scenario.slots if s.appended is None or s.appended <= scenario.passes)
    # the trace's pass (an induction trace's setup rewrites come first), as audit reports it
    cex = Counterexample(
        code, replayed.path, replayed.finding.pass_, size, replayed.finding, scenario, replayed.text
    )
    return _Outcome(summary("counterexample", size=size, path=replayed.path), cex)


def _reason(res: CheckResult) -> str:
    why = res.reason or "unknown"
    if why in ("timeout", "canceled"):
        return "z3 ran out of time (--timeout)"
    return f"z3 answered unknown ({why})"
