"""Every entailment ctxproof decides, behind one function that calls ``check()``.

A :class:`Session` owns one z3 context and one persistent solver
(``QF_FD``, fixed seed, per-check ``rlimit``). The background is asserted once;
every query is asked under assumptions only: each premise is named by a
literal defined as equivalent to it, and a query assumes the premise literals
and the negated goal literal. The solver is rebuilt after many definitions so
that old ones do not pile up.

Before asking z3, a query is sliced: only the premises that share atoms with
the goal (through the premises and the background) can matter, unless the
remaining premises are inconsistent on their own, which is checked separately
and only when the sliced query fails.

Results are values, never bools: ``Verdict.HOLDS``, ``Verdict.FAILS`` (with a
counterexample re-evaluated in plain Python) or ``Verdict.UNKNOWN`` (with the
solver's reason). Unknown is never read as holds.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from verifier.encoding import Encoder
from verifier.errors import InternalError
from verifier.formula import Atom, Const, Formula, Not, atoms, evaluate

__all__ = ["DEFAULT_RLIMIT", "PremiseSet", "Result", "Session", "Verdict"]

DEFAULT_RLIMIT = 20_000_000
"""Resource budget of one solver query (deterministic, unlike a wall clock)."""

REBUILD_AFTER = 20_000
"""Definitions asserted before the solver is rebuilt from the background."""

SEED = 0


class Verdict(enum.Enum):
    HOLDS = "holds"
    FAILS = "fails"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Result:
    """The answer to one question: does it hold, and if not, why not."""

    verdict: Verdict
    counterexample: dict[str, bool] | None = None
    reason: str | None = None
    focus: frozenset[str] | None = None
    """The atoms of the counterexample that bear on the question (None: all of them)."""

    def shown_counterexample(self) -> dict[str, bool] | None:
        """The counterexample restricted to its focus, for reports."""
        if self.counterexample is None or self.focus is None:
            return self.counterexample
        return {k: v for k, v in self.counterexample.items() if k in self.focus}

    @property
    def holds(self) -> bool:
        return self.verdict is Verdict.HOLDS

    @property
    def fails(self) -> bool:
        return self.verdict is Verdict.FAILS

    @property
    def unknown(self) -> bool:
        return self.verdict is Verdict.UNKNOWN


HOLDS = Result(Verdict.HOLDS)


def _is_literal(f: Formula) -> bool:
    return isinstance(f, Atom | Const) or (isinstance(f, Not) and isinstance(f.arg, Atom))


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        parent = self.parent
        root = parent.setdefault(x, x)
        while root != parent[root]:
            root = parent[root]
        while x != root:
            parent[x], x = root, parent[x]
        return root

    def union_all(self, names: Iterable[str]) -> str | None:
        first: str | None = None
        for n in names:
            r = self.find(n)
            if first is None:
                first = r
            elif r != first:
                self.parent[r] = first
        return first


class Session:
    """One z3 context and solver for a whole audit; asks every question."""

    def __init__(self, background: Sequence[Formula] = (), *, rlimit: int = DEFAULT_RLIMIT) -> None:
        self.background = tuple(background)
        self.rlimit = rlimit
        self.enc = Encoder()
        self.queries = 0
        self._bg_atoms = [atoms(b) for b in self.background]
        self._build()

    def _build(self) -> None:
        self.enc = Encoder(self.enc.ctx)
        solver = z3.SolverFor("QF_FD", ctx=self.enc.ctx)
        solver.set("random_seed", SEED)
        solver.set("rlimit", self.rlimit)
        for b in self.background:
            solver.add(self.enc.convert(b))
        self._solver = solver
        self._lits: dict[Formula, Any] = {}
        self._definitions = 0

    # -- the one place that calls check() -------------------------------------------------
    def _check(self, assumptions: list[Any]) -> tuple[str, Any]:
        self.queries += 1
        try:
            answer = self._solver.check(assumptions)
        except z3.Z3Exception as exc:  # pragma: no cover - z3 refuses the query
            return "unknown", str(exc)
        if answer == z3.unsat:
            return "unsat", None
        if answer == z3.sat:
            return "sat", self._solver.model()
        return "unknown", self._solver.reason_unknown()

    def _literal(self, f: Formula) -> Any:
        """An assumption literal equivalent to f (f itself for literals)."""
        if _is_literal(f):
            return self.enc.convert(f)
        lit = self._lits.get(f)
        if lit is None:
            if self._definitions >= REBUILD_AFTER:
                self._build()
            lit = self.enc.fresh()
            self._solver.add(lit == self.enc.convert(f))
            self._lits[f] = lit
            self._definitions += 1
        return lit

    def _ask(self, premises: Sequence[Formula], negated_goal: Formula | None) -> Result:
        """HOLDS when background ∧ premises ∧ ¬goal is unsat (goal None: satisfiable?)."""
        assumptions = [self._literal(p) for p in premises]
        if negated_goal is not None:
            assumptions.append(z3.Not(self._literal(negated_goal), self.enc.ctx))
        status, payload = self._check(assumptions)
        if status == "unsat":
            return HOLDS
        if status == "unknown":
            return Result(Verdict.UNKNOWN, reason=str(payload))
        names: set[str] = set()
        for f in (*premises, *self.background):
            names |= atoms(f)
        if negated_goal is not None:
            names |= atoms(negated_goal)
        cex = self.enc.assignment(payload, names)
        self._recheck(cex, premises, negated_goal)
        return Result(Verdict.FAILS, counterexample=cex)

    def _recheck(
        self, cex: dict[str, bool], premises: Sequence[Formula], goal: Formula | None
    ) -> None:
        """Evaluate a counterexample again without the solver."""
        ok = all(evaluate(b, cex) for b in self.background) and all(
            evaluate(p, cex) for p in premises
        )
        if goal is not None:
            ok = ok and not evaluate(goal, cex)
        if not ok:
            raise InternalError("the solver returned a model that does not re-evaluate")

    # -- public questions -------------------------------------------------------------------
    def premises(self, formulas: Iterable[Formula]) -> PremiseSet:
        return PremiseSet(self, formulas)

    def entails(self, premises: Iterable[Formula], goal: Formula) -> Result:
        """Does background ∧ premises ⊨ goal?"""
        return self.premises(premises).entails(goal)

    def valid(self, goal: Formula) -> Result:
        """Does the background alone entail goal?"""
        return self._ask((), goal)

    def satisfiable(self, formulas: Iterable[Formula]) -> Result:
        """HOLDS when background ∧ formulas has a model (given as the counterexample)."""
        fs = list(formulas)
        status = self._ask(fs, None)
        if status.holds:  # unsat
            return Result(Verdict.FAILS)
        if status.unknown:
            return status
        return Result(Verdict.HOLDS, counterexample=status.counterexample)

    def equivalent(self, left: Formula, right: Formula) -> Result:
        first = self.entails([left], right)
        if not first.holds:
            return first
        return self.entails([right], left)


@dataclass
class PremiseSet:
    """A fixed set of premises, sliced by shared atoms, asked many goals."""

    session: Session
    formulas: Iterable[Formula]
    _uf: _UnionFind = field(default_factory=_UnionFind, init=False)
    _list: list[Formula] = field(default_factory=list, init=False)
    _consistent_rest: dict[str, Result] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        seen: set[Formula] = set()
        for f in self.formulas:
            if f in seen or f == Const(True):
                continue
            seen.add(f)
            self._list.append(f)
        self._atoms = [sorted(atoms(f)) for f in self._list]
        for names in self._atoms:
            self._uf.union_all(names)
        for bg_names in self.session._bg_atoms:
            self._uf.union_all(sorted(bg_names))

    def _component(self, goal_atoms: Iterable[str]) -> set[str]:
        return {self._uf.find(a) for a in goal_atoms}

    def entails(self, goal: Formula) -> Result:
        """Does background ∧ premises ⊨ goal?"""
        # premises are unioned with the goal's atoms virtually: the goal's roots
        roots = self._component(sorted(atoms(goal)))
        # merge goal atoms into one component without mutating the structure
        inside: list[Formula] = []
        rest: list[Formula] = []
        for f, names in zip(self._list, self._atoms, strict=True):
            if not names or self._uf.find(names[0]) in roots:  # constant premise (false)
                inside.append(f)
            else:
                rest.append(f)
        first = self.session._ask(inside, goal)
        if not first.fails:
            return first
        # not entailed by the slice: still entailed if the rest is inconsistent
        key = ",".join(sorted(roots))
        cons = self._consistent_rest.get(key)
        if cons is None:
            cons = self._rest_consistent(rest)
            self._consistent_rest[key] = cons
        if cons.fails:
            return HOLDS
        if cons.unknown:
            return cons
        assert first.counterexample is not None and cons.counterexample is not None
        # components share no atom: the goal's from the first model, the rest's from cons
        cex = dict(first.counterexample)
        for name, value in cons.counterexample.items():
            if name in self._uf.parent and self._uf.find(name) not in roots:
                cex[name] = value
        self.session._recheck(cex, self._list, goal)
        return Result(Verdict.FAILS, counterexample=cex, focus=frozenset(first.counterexample))

    def consistent(self) -> Result:
        """HOLDS (with a model) when background ∧ all premises is satisfiable."""
        key = "*all*"
        hit = self._consistent_rest.get(key)
        if hit is None:
            hit = self._rest_consistent(self._list)
            self._consistent_rest[key] = hit
        return hit

    def _rest_consistent(self, rest: list[Formula]) -> Result:
        """HOLDS (with a model) when background ∧ rest is satisfiable."""
        polarity: dict[str, bool] = {}
        hard: list[Formula] = []
        model: dict[str, bool] = {}
        bg_atoms: set[str] = set()
        for names in self.session._bg_atoms:
            bg_atoms |= names
        for f in rest:
            if isinstance(f, Atom) and f.name not in bg_atoms:
                if polarity.setdefault(f.name, True) is not True:
                    return Result(Verdict.FAILS)
                model[f.name] = True
            elif isinstance(f, Not) and isinstance(f.arg, Atom) and f.arg.name not in bg_atoms:
                if polarity.setdefault(f.arg.name, False) is not False:
                    return Result(Verdict.FAILS)
                model[f.arg.name] = False
            else:
                hard.append(f)
        hard_atoms: set[str] = set()
        for h in hard:
            hard_atoms |= atoms(h)
        for name, value in polarity.items():
            if name in hard_atoms:
                hard.append(Atom(name) if value else Not(Atom(name)))
        if not hard:
            return Result(Verdict.HOLDS, counterexample=model)
        sat = self.session.satisfiable(hard)
        if not sat.holds:
            return sat
        return Result(Verdict.HOLDS, counterexample={**model, **(sat.counterexample or {})})
