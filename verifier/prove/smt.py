"""The z3 back-end of ``ctxproof prove``: the one module of ``verifier/prove`` that imports z3.

The other modules of the package build their constraints through :class:`Smt`
and :class:`Arith` and hold terms as the opaque :data:`Term`; no z3 type
appears in a signature outside this module, and :meth:`Smt.check` is the one
place that calls ``solver.check()`` (with a fixed random seed, and the
caller's wall-clock limit turned into z3's ``timeout``).

Numbers (tokens, budget, score, age, running totals) go through an
:class:`Arith`: bounded integers (:class:`IntArith`, linear integer
arithmetic) or bit-vectors wide enough that no sum overflows
(:class:`BitVecArith`). Both decide the same bounded questions;
``benchmarks/test_bench_prove.py`` measures which is faster.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from verifier.solver import z3_milliseconds

__all__ = ["Arith", "BitVecArith", "CheckResult", "IntArith", "OutOfTime", "Smt", "Term"]

Term = Any
"""A z3 term, opaque outside this module."""

SEED = 0


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One answer of the solver: ``sat``, ``unsat`` or ``unknown`` (with z3's reason)."""

    status: str
    reason: str | None = None
    seconds: float = 0.0

    @property
    def sat(self) -> bool:
        return self.status == "sat"

    @property
    def unsat(self) -> bool:
        return self.status == "unsat"




class OutOfTime(Exception):
    """Building the terms went past the proof's deadline (:class:`Smt`)."""


_TICKS = 4096
"""Terms built between two looks at the clock (a look costs more than a term)."""


class Smt:
    """One z3 context, its solver, and the term builders the encoding uses.

    ``deadline`` (``time.perf_counter()``): building terms past it raises
    :class:`OutOfTime`, so a proof too large to encode in its time limit ends at the
    limit, not when the encoding is done."""

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline
        self._ticks = 0
        self.ctx = z3.Context()
        self.solver = z3.Solver(ctx=self.ctx)
        self.solver.set("random_seed", SEED)
        # the same constraints but those added with guarded(): an over-approximation,
        # asked first (see World.exact)
        self.loose = z3.Solver(ctx=self.ctx)
        self.loose.set("random_seed", SEED)
        self.true: Term = z3.BoolVal(True, self.ctx)
        self.false: Term = z3.BoolVal(False, self.ctx)
        self._names: set[str] = set()
        self.scope: Term | None = None
        """When set, every constraint added holds only under this literal."""
        self.checks = 0
        self._stats: dict[str, float] = {}
        self._model: Any = None

    # -- terms ----------------------------------------------------------------------------
    def _unique(self, name: str) -> str:
        if name in self._names:
            raise ValueError(f"z3 name {name!r} used twice")
        self._names.add(name)
        return name

    def boolean(self, name: str) -> Term:
        return z3.Bool(self._unique(name), self.ctx)

    def const(self, value: bool) -> Term:
        return self.true if value else self.false

    # Constants are the two objects self.true and self.false, folded by identity; the
    # n-ary connectives go straight to the C API (z3py's And/Or coerce every argument).
    def _nary(self, make: Any, ts: list[Term]) -> Term:
        self._ticks += 1
        deadline = self.deadline
        if deadline is not None and self._ticks % _TICKS == 0 and time.perf_counter() > deadline:
            raise OutOfTime
        args = (z3.Ast * len(ts))()
        for k, t in enumerate(ts):
            args[k] = t.as_ast()
        return z3.BoolRef(make(self.ctx.ref(), len(ts), args), self.ctx)

    def and_(self, terms: Iterable[Term]) -> Term:
        ts: list[Term] = []
        for t in terms:
            if t is self.false:
                return self.false
            if t is not self.true:
                ts.append(t)
        if not ts:
            return self.true
        if len(ts) == 1:
            return ts[0]
        return self._nary(z3.Z3_mk_and, ts)

    def or_(self, terms: Iterable[Term]) -> Term:
        ts: list[Term] = []
        for t in terms:
            if t is self.true:
                return self.true
            if t is not self.false:
                ts.append(t)
        if not ts:
            return self.false
        if len(ts) == 1:
            return ts[0]
        return self._nary(z3.Z3_mk_or, ts)

    def not_(self, t: Term) -> Term:
        if t is self.true:
            return self.false
        if t is self.false:
            return self.true
        return z3.BoolRef(z3.Z3_mk_not(self.ctx.ref(), t.as_ast()), self.ctx)

    def implies(self, a: Term, b: Term) -> Term:
        return self.or_([self.not_(a), b])

    def ite(self, c: Term, a: Term, b: Term) -> Term:
        if c is self.true:
            return a
        if c is self.false:
            return b
        return z3.If(c, a, b)

    def iff(self, a: Term, b: Term) -> Term:
        if a is self.true:
            return b
        if b is self.true:
            return a
        if a is self.false:
            return self.not_(b)
        if b is self.false:
            return self.not_(a)
        return a == b

    def exactly_one(self, terms: Sequence[Term]) -> Term:
        return self.and_([self.or_(terms), self.at_most(terms, 1)])

    def at_most_one(self, terms: Sequence[Term]) -> Term:
        return self.at_most(terms, 1)

    def at_most(self, terms: Sequence[Term], k: int) -> Term:
        """At most k of the terms hold (a pseudo-Boolean constraint)."""
        live = [t for t in terms if t is not self.false]
        if len(live) <= k:
            return self.true
        if k == 1 and len(live) <= 4:
            return self.and_(
                self.or_([self.not_(a), self.not_(b)])
                for i, a in enumerate(live)
                for b in live[i + 1 :]
            )
        return z3.AtMost(*live, k)

    def count_le(self, terms: Sequence[Term], k: int) -> Term:
        return self.at_most(terms, k)

    def is_false(self, t: Term) -> bool:
        return t is self.false

    def is_true(self, t: Term) -> bool:
        return t is self.true

    def define(self, name: str, term: Term) -> Term:
        """A fresh Bool equal to term (constants stay constants)."""
        if term is self.true or term is self.false:
            return term
        var = self.boolean(name)
        self.add(var == term)
        return var

    def _scoped(self, term: Term) -> Term:
        return term if self.scope is None else z3.Implies(self.scope, term)

    def guarded(self, name: str, term: Term) -> Term:
        """A fresh Bool equal to term in the solver, left free in the loose solver."""
        var = self.boolean(name)
        self.solver.add(self._scoped(var == term))
        return var

    def guarded_add(self, term: Term) -> None:
        """A constraint of the solver that the loose solver leaves out."""
        self.solver.add(self._scoped(term))

    def add(self, *terms: Term) -> None:
        for t in terms:
            if t is not self.true:
                scoped = self._scoped(t)
                self.solver.add(scoped)
                self.loose.add(scoped)

    # -- solving --------------------------------------------------------------------------
    def push(self) -> None:
        self.solver.push()
        self.loose.push()

    def pop(self) -> None:
        self.solver.pop()
        self.loose.pop()

    def check(
        self,
        assumptions: Sequence[Term] = (),
        timeout: float | None = None,
        *,
        loose: bool = False,
    ) -> CheckResult:
        """Check under assumptions: the one call of ``solver.check()``.

        With ``loose``, the loose solver is asked (no model is kept).
        """
        solver = self.loose if loose else self.solver
        if timeout is not None:
            solver.set("timeout", z3_milliseconds(timeout))
        start = time.perf_counter()
        self.checks += 1
        try:
            answer = solver.check(*assumptions)
        except z3.Z3Exception as exc:  # pragma: no cover - z3 refuses the query
            return CheckResult("unknown", str(exc), time.perf_counter() - start)
        seconds = time.perf_counter() - start
        self._collect(solver)
        self._model = None
        if answer == z3.sat:
            if not loose:
                self._model = solver.model()
            return CheckResult("sat", None, seconds)
        if answer == z3.unsat:
            return CheckResult("unsat", None, seconds)
        return CheckResult("unknown", solver.reason_unknown(), seconds)

    def minimize(
        self, assumptions: Sequence[Term], flags: Sequence[Term], timeout: float | None = None
    ) -> CheckResult:
        """Check with z3's Optimize, minimizing how many of ``flags`` hold."""
        opt = z3.Optimize(ctx=self.ctx)
        opt.set("random_seed", SEED)
        if timeout is not None:
            opt.set("timeout", z3_milliseconds(timeout))
        opt.add(self.solver.assertions())
        for a in assumptions:
            opt.add(a)
        opt.minimize(z3.Sum([z3.If(f, 1, 0) for f in flags]))
        start = time.perf_counter()
        self.checks += 1
        answer = opt.check()
        seconds = time.perf_counter() - start
        self._collect(opt)
        if answer == z3.sat:
            self._model = opt.model()
            return CheckResult("sat", None, seconds)
        self._model = None
        if answer == z3.unsat:
            return CheckResult("unsat", None, seconds)
        return CheckResult("unknown", opt.reason_unknown(), seconds)

    def _collect(self, source: Any = None) -> None:
        st = (source or self.solver).statistics()
        for key in st.keys():  # noqa: SIM118 (z3's Statistics has keys(), no __iter__)
            value = st.get_key_value(key)
            if key in ("max memory", "memory"):
                self._stats[key] = max(self._stats.get(key, 0.0), float(value))
            elif key not in ("time",):
                self._stats[key] = self._stats.get(key, 0.0) + float(value)

    def value(self, term: Term) -> Any:
        """The value of a term in the last model: an int or a bool."""
        if self._model is None:
            raise RuntimeError("no model: the last check was not sat")
        v = self._model.eval(term, model_completion=True)
        if z3.is_true(v):
            return True
        if z3.is_false(v):
            return False
        if z3.is_int_value(v):
            return v.as_long()
        if z3.is_bv_value(v):
            return v.as_long()
        raise RuntimeError(f"cannot read {term} = {v}")  # pragma: no cover

    def statistics(self) -> dict[str, float]:
        """z3's statistics, summed over every check so far (memory: the peak)."""
        out = dict(self._stats)
        out["checks"] = float(self.checks)
        out["assertions"] = float(len(self.solver.assertions()))
        return out


class Arith:
    """Bounded non-negative numbers: one interface, two encodings."""

    name = "abstract"

    def __init__(self, smt: Smt, width: int) -> None:
        self.smt = smt
        self.width = width
        self.max = (1 << width) - 1

    def var(self, name: str, hi: int) -> Term:  # pragma: no cover - abstract
        raise NotImplementedError

    def val(self, value: int) -> Term:  # pragma: no cover - abstract
        raise NotImplementedError

    def sum(self, terms: Sequence[Term]) -> Term:  # pragma: no cover - abstract
        raise NotImplementedError

    def le(self, a: Term, b: Term) -> Term:  # pragma: no cover - abstract
        raise NotImplementedError

    def lt(self, a: Term, b: Term) -> Term:  # pragma: no cover - abstract
        raise NotImplementedError

    def ceil_div(self, a: Term, d: int) -> Term:  # pragma: no cover - abstract
        raise NotImplementedError

    def scaled_le(self, a: Term, ka: int, b: Term, kb: int) -> Term:  # pragma: no cover
        """``a * ka <= b * kb`` exactly (ka, kb >= 0)."""
        raise NotImplementedError

    def scaled_lt(self, a: Term, ka: int, b: Term, kb: int) -> Term:  # pragma: no cover
        raise NotImplementedError

    def eq(self, a: Term, b: Term) -> Term:
        return a == b

    def sub(self, a: Term, b: Term) -> Term:
        """a - b, for a value that is non-negative wherever it is read."""
        return a - b

    def ite(self, c: Term, a: Term, b: Term) -> Term:
        return self.smt.ite(c, a, b)


class IntArith(Arith):
    """Integers with explicit bounds (linear integer arithmetic)."""

    name = "int"

    def var(self, name: str, hi: int) -> Term:
        v = z3.Int(self.smt._unique(name), self.smt.ctx)
        self.smt.add(v >= 0, v <= min(hi, self.max))
        return v

    def val(self, value: int) -> Term:
        return z3.IntVal(value, self.smt.ctx)

    def sum(self, terms: Sequence[Term]) -> Term:
        ts = [t for t in terms if not (z3.is_int_value(t) and t.as_long() == 0)]
        if not ts:
            return self.val(0)
        if len(ts) == 1:
            return ts[0]
        return z3.Sum(ts)

    def le(self, a: Term, b: Term) -> Term:
        return a <= b

    def lt(self, a: Term, b: Term) -> Term:
        return a < b

    def ceil_div(self, a: Term, d: int) -> Term:
        return (a + (d - 1)) / d

    def scaled_le(self, a: Term, ka: int, b: Term, kb: int) -> Term:
        return a * ka <= b * kb

    def scaled_lt(self, a: Term, ka: int, b: Term, kb: int) -> Term:
        return a * ka < b * kb


class BitVecArith(Arith):
    """Unsigned bit-vectors of one width; differences wrap, but every value read is in range.

    A running total is a sum of token counts that may pass through negative
    partial sums; modulo 2^width the result is the true value as long as the
    true value fits, which the width guarantees.
    """

    name = "bv"

    def var(self, name: str, hi: int) -> Term:
        v = z3.BitVec(self.smt._unique(name), self.width, self.smt.ctx)
        if hi < self.max:
            self.smt.add(z3.ULE(v, self.val(hi)))
        return v

    def val(self, value: int) -> Term:
        return z3.BitVecVal(value % (1 << self.width), self.width, self.smt.ctx)

    def sum(self, terms: Sequence[Term]) -> Term:
        ts = [t for t in terms if not (z3.is_bv_value(t) and t.as_long() == 0)]
        if not ts:
            return self.val(0)
        out = ts[0]
        for t in ts[1:]:
            out = out + t
        return out

    def le(self, a: Term, b: Term) -> Term:
        return z3.ULE(a, b)

    def lt(self, a: Term, b: Term) -> Term:
        return z3.ULT(a, b)

    def ceil_div(self, a: Term, d: int) -> Term:
        return z3.UDiv(a + self.val(d - 1), self.val(d))

    def _wide(self, a: Term, k: int) -> tuple[Term, int]:
        extra = max(1, k.bit_length())
        return z3.ZeroExt(extra, a), extra

    def _scaled(self, a: Term, ka: int, b: Term, kb: int) -> tuple[Term, Term]:
        extra = max(1, ka.bit_length(), kb.bit_length()) + 1
        wa, wb = z3.ZeroExt(extra, a), z3.ZeroExt(extra, b)
        w = self.width + extra
        return wa * z3.BitVecVal(ka, w, self.smt.ctx), wb * z3.BitVecVal(kb, w, self.smt.ctx)

    def scaled_le(self, a: Term, ka: int, b: Term, kb: int) -> Term:
        x, y = self._scaled(a, ka, b, kb)
        return z3.ULE(x, y)

    def scaled_lt(self, a: Term, ka: int, b: Term, kb: int) -> Term:
        x, y = self._scaled(a, ka, b, kb)
        return z3.ULT(x, y)
