"""Every entailment ctxproof decides, behind one function that calls ``check()``.

A :class:`Session` owns one z3 context. Its solver (``QF_FD``, fixed seed,
per-check ``rlimit``) holds the background, asserted once; each small query is
asked in a push/pop frame, so nothing piles up between queries.

Before asking z3, a query is sliced (identity in Python, logic in z3): only
the premises that share atoms with the goal, through the premises and the
background, can matter — unless the other premises are inconsistent, which a
:class:`PremiseSet` checks once for all its goals. A premise set too large to
slice usefully gets a solver of its own with every premise asserted once, and
each goal is asked in a frame on top.

Results are values, never bools: ``Verdict.HOLDS``, ``Verdict.FAILS`` (with a
counterexample re-evaluated in plain Python) or ``Verdict.UNKNOWN`` (with the
solver's reason). Unknown is never read as holds.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from verifier.encoding import Encoder
from verifier.errors import InternalError
from verifier.formula import TRUE, And, Atom, Formula, Not, Or, atoms, evaluate

__all__ = ["DEFAULT_RLIMIT", "PremiseSet", "Result", "Session", "Verdict"]

DEFAULT_RLIMIT = 20_000_000
"""Resource budget of one solver query (deterministic, unlike a wall clock)."""

BIG_SLICE = 256
"""A sliced query with more premises than this goes to the premise set's own solver."""

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

    @property
    def holds(self) -> bool:
        return self.verdict is Verdict.HOLDS

    @property
    def fails(self) -> bool:
        return self.verdict is Verdict.FAILS

    @property
    def unknown(self) -> bool:
        return self.verdict is Verdict.UNKNOWN

    def shown_counterexample(self) -> dict[str, bool] | None:
        """The counterexample restricted to its focus, for reports."""
        if self.counterexample is None or self.focus is None:
            return self.counterexample
        return {k: v for k, v in self.counterexample.items() if k in self.focus}


HOLDS = Result(Verdict.HOLDS)


def _literal(f: Formula) -> tuple[str, bool] | None:
    """(atom, polarity) when f is a literal, else None."""
    if isinstance(f, Atom):
        return f.name, True
    if isinstance(f, Not) and isinstance(f.arg, Atom):
        return f.arg.name, False
    return None


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

    def union_all(self, names: Iterable[str]) -> None:
        first: str | None = None
        for n in names:
            r = self.find(n)
            if first is None:
                first = r
            elif r != first:
                self.parent[r] = first


class Session:
    """One z3 context for a whole audit; asks every question."""

    def __init__(self, background: Sequence[Formula] = (), *, rlimit: int = DEFAULT_RLIMIT) -> None:
        self.background = tuple(background)
        self.rlimit = rlimit
        self.enc = Encoder()
        self.queries = 0
        self._bg_atoms = [atoms(b) for b in self.background]
        self.bg_atom_set: frozenset[str] = frozenset().union(*self._bg_atoms)
        self._solver = self.new_solver(())
        self._bg_model: Result | None = None

    def new_solver(self, premises: Iterable[Formula]) -> Any:
        """A solver holding the background and the given premises."""
        solver = z3.SolverFor("QF_FD", ctx=self.enc.ctx)
        solver.set("random_seed", SEED)
        solver.set("rlimit", self.rlimit)
        for f in (*self.background, *premises):
            solver.add(self.enc.convert(f))
        return solver

    # -- the one place that calls check() -------------------------------------------------
    def _check(self, solver: Any, names: Iterable[str]) -> tuple[str, Any]:
        """Check the solver; on sat, return the values of the named atoms."""
        self.queries += 1
        try:
            answer = solver.check()
        except z3.Z3Exception as exc:  # pragma: no cover - z3 refuses the query
            return "unknown", str(exc)
        if answer == z3.unsat:
            return "unsat", None
        if answer == z3.sat:
            return "sat", self.enc.assignment(solver.model(), names)
        return "unknown", solver.reason_unknown()

    def ask_in(
        self, solver: Any, extra: Sequence[Formula], names: Iterable[str]
    ) -> tuple[str, Any]:
        """Check solver ∧ extra in a push/pop frame."""
        solver.push()
        try:
            for f in extra:
                solver.add(self.enc.convert(f))
            return self._check(solver, names)
        finally:
            solver.pop()

    def _ask(self, premises: Sequence[Formula], negated_goal: Formula | None) -> Result:
        """HOLDS when background ∧ premises ∧ ¬goal is unsat (goal None: premises unsat)."""
        extra = list(premises)
        if negated_goal is not None:
            extra.append(Not(negated_goal))
        names: set[str] = set(self.bg_atom_set)
        for f in extra:
            names |= atoms(f)
        status, payload = self.ask_in(self._solver, extra, names)
        if status == "unsat":
            return HOLDS
        if status == "unknown":
            return Result(Verdict.UNKNOWN, reason=str(payload))
        cex: dict[str, bool] = payload
        self._recheck(cex, premises, negated_goal)
        return Result(Verdict.FAILS, counterexample=cex)

    def _recheck(
        self, cex: dict[str, bool], premises: Iterable[Formula], goal: Formula | None
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
        lit = _literal(goal)
        if lit is not None and lit[0] not in self.bg_atom_set:
            # a literal over an atom the background never mentions is false in some
            # model of the background, if the background has one
            if self._bg_model is None:
                self._bg_model = self.satisfiable(())
            if self._bg_model.holds:
                name, value = lit
                cex = {**(self._bg_model.counterexample or {}), name: not value}
                return Result(Verdict.FAILS, counterexample=cex)
        return self._ask((), goal)

    def satisfiable(self, formulas: Iterable[Formula]) -> Result:
        """HOLDS (with a model as counterexample) when background ∧ formulas has a model."""
        status = self._ask(list(formulas), None)
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


class PremiseSet:
    """A fixed set of premises, sliced by shared atoms, asked many goals.

    Components (premises linked by shared atoms, the background included) are
    independent: ``premises ⊨ goal`` iff the goal's components entail it, or
    some other component is inconsistent.
    """

    def __init__(self, session: Session, formulas: Iterable[Formula]) -> None:
        self.session = session
        seen: set[Formula] = set()
        self.formulas: list[Formula] = []
        for f in formulas:
            if f in seen or f == TRUE:
                continue
            seen.add(f)
            self.formulas.append(f)
        uf = self._uf = _UnionFind()
        atom_lists = [sorted(atoms(f)) for f in self.formulas]
        for names in atom_lists:
            uf.union_all(names)
        for bg in session._bg_atoms:
            uf.union_all(sorted(bg))
        self._groups: dict[str, list[Formula]] = {}
        self._constants: list[Formula] = []
        for f, names in zip(self.formulas, atom_lists, strict=True):
            if names:
                self._groups.setdefault(uf.find(names[0]), []).append(f)
            else:
                self._constants.append(f)
        self._members = seen
        self._global: Result | None = None
        self._big_solvers: dict[frozenset[str], Any] = {}

    def _roots(self, goal: Formula) -> set[str]:
        uf = self._uf
        return {uf.find(a) for a in atoms(goal) if a in uf.parent}

    def _obviously_entailed(self, goal: Formula) -> bool:
        """A sound syntactic shortcut: the goal is a premise, or built from premises."""
        if goal == TRUE or goal in self._members:
            return True
        if isinstance(goal, Or):
            return any(self._obviously_entailed(a) for a in goal.args)
        if isinstance(goal, And):
            return all(self._obviously_entailed(a) for a in goal.args)
        return False

    def entails(self, goal: Formula) -> Result:
        """Does background ∧ premises ⊨ goal?"""
        if self._obviously_entailed(goal):
            return HOLDS
        roots = self._roots(goal)
        inside = list(self._constants)
        for r in sorted(roots):
            inside.extend(self._groups.get(r, ()))
        if len(inside) > BIG_SLICE:
            return self._entails_big(goal, inside, roots)
        first = self.session._ask(inside, goal)
        if not first.fails:
            return first
        return self._complete(first, goal, roots)

    def _complete(self, first: Result, goal: Formula, roots: set[str]) -> Result:
        """A model of the goal's slice refutes the goal unless another slice is inconsistent."""
        assert first.counterexample is not None
        every = self.consistent()
        if every.fails:
            # the goal's components have a model, so another component is inconsistent
            return HOLDS
        if every.unknown:
            return every
        assert every.counterexample is not None
        # components share no atom: the goal's values from the first model (which also
        # satisfies every background formula), the other components' from the global one
        cex = dict(first.counterexample)
        uf = self._uf
        for name, value in every.counterexample.items():
            if name in uf.parent and uf.find(name) not in roots:
                cex[name] = value
        self.session._recheck(cex, self.formulas, goal)
        return Result(Verdict.FAILS, counterexample=cex, focus=frozenset(first.counterexample))

    def _entails_big(self, goal: Formula, inside: list[Formula], roots: set[str]) -> Result:
        """A large slice: its premises asserted once in a solver of their own."""
        session = self.session
        key = frozenset(roots)
        solver = self._big_solvers.get(key)
        if solver is None:
            solver = self._big_solvers[key] = session.new_solver(inside)
        names: set[str] = set(session.bg_atom_set) | atoms(goal)
        for f in inside:
            names |= atoms(f)
        status, payload = session.ask_in(solver, [Not(goal)], names)
        if status == "unsat":
            return HOLDS
        if status == "unknown":
            return Result(Verdict.UNKNOWN, reason=str(payload))
        first = Result(Verdict.FAILS, counterexample=payload)
        return self._complete(first, goal, roots)

    def consistent(self) -> Result:
        """HOLDS (with a model) when background ∧ all premises is satisfiable."""
        if self._global is None:
            self._global = self._consistent()
        return self._global

    def _consistent(self) -> Result:
        bg_atoms = self.session.bg_atom_set
        polarity: dict[str, bool] = {}
        hard: list[Formula] = []
        for f in self.formulas:
            lit = _literal(f)
            if lit is None or lit[0] in bg_atoms:
                hard.append(f)
                continue
            name, value = lit
            if polarity.setdefault(name, value) is not value:
                return Result(Verdict.FAILS)
        hard_atoms: set[str] = set()
        for h in hard:
            hard_atoms |= atoms(h)
        model = {name: value for name, value in polarity.items() if name not in hard_atoms}
        hard += [Atom(n) if v else Not(Atom(n)) for n, v in polarity.items() if n in hard_atoms]
        if not hard:
            return Result(Verdict.HOLDS, counterexample=model)
        sat = self.session.satisfiable(hard)
        if not sat.holds:
            return sat
        return Result(Verdict.HOLDS, counterexample={**model, **(sat.counterexample or {})})
