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
solver's reason). Unknown is never read as holds. When the premises of an
entailment are themselves unsatisfiable, every entailment from them holds
vacuously: that answer is ``UNKNOWN`` too, with a reason naming a minimal
unsatisfiable core of the premises (:meth:`Session.minimal_core`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from verifier.encoding import Encoder
from verifier.errors import InputError, InternalError
from verifier.formula import TRUE, And, Atom, Formula, Not, Or, atoms, evaluate

__all__ = [
    "DEFAULT_RLIMIT",
    "Core",
    "PremiseSet",
    "Result",
    "Session",
    "UnionFind",
    "Verdict",
    "falsifies",
    "relevant_background",
]

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
    """The atoms of the question: those of the goal and of every premise and background
    formula linked to it through shared atoms (None: all of them)."""
    vacuous: bool = False
    """Unknown because the premises are unsatisfiable (the reason names a core)."""
    premises: tuple[Formula, ...] = ()
    """For a refuted entailment: the premises the question read (those linked to the goal)."""
    goal: Formula | None = None
    """For a refuted entailment: the goal the counterexample falsifies."""

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
        """The counterexample restricted to its focus, for reports: a total assignment of
        the question's atoms under which the relevant background and the premises hold and
        the goal does not (atoms the model left open are false)."""
        if self.counterexample is None or self.focus is None:
            return self.counterexample
        return {k: bool(self.counterexample.get(k, False)) for k in sorted(self.focus)}


def relevant_background(background: Iterable[Formula], focus: Iterable[str]) -> list[Formula]:
    """The background formulas that share an atom with the focus."""
    names = set(focus)
    return [b for b in background if atoms(b) & names]


def falsifies(
    assignment: dict[str, bool],
    background: Iterable[Formula],
    premises: Iterable[Formula],
    goal: Formula,
) -> bool:
    """Does the assignment satisfy the background and the premises and falsify the goal?

    Evaluated in plain Python, without the solver (atoms it leaves out are false).
    """
    return (
        all(evaluate(b, assignment) for b in background)
        and all(evaluate(p, assignment) for p in premises)
        and not evaluate(goal, assignment)
    )


HOLDS = Result(Verdict.HOLDS)


@dataclass(frozen=True, slots=True)
class Core:
    """A minimal unsatisfiable core: the labels of the formulas in it, in the order given.

    ``status`` is ``"unsat"`` (``labels`` is the core), ``"sat"`` (there is no
    core: the formulas have a model) or ``"unknown"`` (with the solver's reason).
    """

    status: str
    labels: tuple[str, ...] = ()
    reason: str | None = None


def describe_core(labels: Sequence[str]) -> str:
    return ", ".join(repr(label) for label in labels) if labels else "the background"


def _literal(f: Formula) -> tuple[str, bool] | None:
    """(atom, polarity) when f is a literal, else None."""
    if isinstance(f, Atom):
        return f.name, True
    if isinstance(f, Not) and isinstance(f.arg, Atom):
        return f.arg.name, False
    return None


def _literals_of(f: Formula) -> dict[str, bool]:
    """atom -> polarity for a conjunction of literals (empty when f is not one)."""
    parts = f.args if isinstance(f, And) else (f,)
    out: dict[str, bool] = {}
    for p in parts:
        lit = _literal(p)
        if lit is None:
            return {}
        out.setdefault(lit[0], lit[1])
    return out


class UnionFind:
    """Disjoint sets of atom names."""

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
        self._consistency: dict[frozenset[Formula], Result] = {}
        if self.background:
            self._reject_unsatisfiable_background()

    def _reject_unsatisfiable_background(self) -> None:
        """An unsatisfiable background is bad input: every entailment would be vacuous."""
        if not self.satisfiable(()).fails:
            return
        core = self.background_core()
        raise InputError(
            "the background is unsatisfiable on its own, so every check would hold vacuously"
            f" (a minimal core: {describe_core(core.labels)})",
            fix="remove or correct one of these background formulas",
        )

    def new_solver(self, premises: Iterable[Formula]) -> Any:
        """A solver holding the background and the given premises."""
        solver = z3.SolverFor("QF_FD", ctx=self.enc.ctx)
        solver.set("random_seed", SEED)
        solver.set("rlimit", self.rlimit)
        for f in (*self.background, *premises):
            solver.add(self.enc.convert(f))
        return solver

    # -- the one place that calls check() -------------------------------------------------
    def _check(
        self, solver: Any, names: Iterable[str], assumptions: Sequence[Any] = ()
    ) -> tuple[str, Any]:
        """Check the solver; on sat, return the values of the named atoms.

        With assumptions, an unsat answer returns the assumptions of z3's
        (not necessarily minimal) unsat core.
        """
        self.queries += 1
        try:
            answer = solver.check(*assumptions)
        except z3.Z3Exception as exc:  # pragma: no cover - z3 refuses the query
            return "unknown", str(exc)
        if answer == z3.unsat:
            return "unsat", (list(solver.unsat_core()) if assumptions else None)
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
    def premises(
        self, formulas: Iterable[Formula], labels: Iterable[str] | None = None
    ) -> PremiseSet:
        """A premise set; labels (one per formula) name the premises in a vacuity reason."""
        return PremiseSet(self, formulas, labels)

    def entails(
        self, premises: Iterable[Formula], goal: Formula, labels: Iterable[str] | None = None
    ) -> Result:
        """Does background ∧ premises ⊨ goal? (Unknown, vacuous, if the premises are unsat.)"""
        return self.premises(premises, labels).entails(goal)

    def background_core(self) -> Core:
        """A minimal unsatisfiable core of the background, or status "sat"."""
        labeled = [(f"background[{i}]", f) for i, f in enumerate(self.background)]
        solver = z3.SolverFor("QF_FD", ctx=self.enc.ctx)
        solver.set("random_seed", SEED)
        solver.set("rlimit", self.rlimit)
        return self._deletion_core(solver, labeled)

    def minimal_core(
        self, labeled: Sequence[tuple[str, Formula]], fixed: Sequence[Formula] = ()
    ) -> Core:
        """A minimal subset of labeled that, with the background and fixed, is unsatisfiable.

        Found by deletion in the order given: each formula is dropped in turn when
        the rest (with the background and fixed) stays unsatisfiable. z3's unsat
        cores only skip queries whose answer they already prove, so the result is
        the one plain deletion gives.
        """
        return self._deletion_core(self.new_solver(fixed), labeled)

    def _deletion_core(self, solver: Any, labeled: Sequence[tuple[str, Formula]]) -> Core:
        ctx = self.enc.ctx
        lits = [z3.Bool(f"core!{i}", ctx) for i in range(len(labeled))]
        for lit, (_, f) in zip(lits, labeled, strict=True):
            solver.add(z3.Implies(lit, self.enc.convert(f)))
        index = {lit.get_id(): i for i, lit in enumerate(lits)}
        alive = list(range(len(labeled)))
        status, core = self._check(solver, (), [lits[i] for i in alive] or [z3.BoolVal(True, ctx)])
        if status == "sat":
            return Core("sat")
        if status == "unknown":
            return Core("unknown", reason=str(core))
        known = {index[c.get_id()] for c in core if c.get_id() in index}
        for i in list(alive):
            rest = [j for j in alive if j != i]
            if known <= set(rest):
                alive = rest  # the known core is still there: the rest stays unsat
                continue
            status, core = self._check(
                solver, (), [lits[j] for j in rest] or [z3.BoolVal(True, ctx)]
            )
            if status == "unsat":
                alive = rest
                known = {index[c.get_id()] for c in core if c.get_id() in index}
            elif status == "unknown":
                return Core("unknown", reason=str(core))
        return Core("unsat", tuple(labeled[i][0] for i in alive))

    def consistency(self, formulas: Iterable[Formula]) -> Result:
        """HOLDS (with a model) when background ∧ formulas is satisfiable; cached."""
        given = list(formulas)
        key = frozenset(given)
        hit = self._consistency.get(key)
        if hit is None:
            hit = self._consistency[key] = _consistent(self, given)
        return hit

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

    def __init__(
        self,
        session: Session,
        formulas: Iterable[Formula],
        labels: Iterable[str] | None = None,
    ) -> None:
        self.session = session
        seen: set[Formula] = set()
        self.formulas: list[Formula] = []
        self.labels: list[str] = []
        given = list(formulas)
        names = list(labels) if labels is not None else [f"premise {i}" for i in range(len(given))]
        for f, name in zip(given, names, strict=True):
            if f in seen or f == TRUE:
                continue
            seen.add(f)
            self.formulas.append(f)
            self.labels.append(name)
        uf = self._uf = UnionFind()
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
        self._component_atoms: dict[str, list[str]] | None = None
        self._global: Result | None = None
        self._vacuous: Result | None = None
        self._checked_model: dict[str, bool] | None = None
        self._big_solvers: dict[frozenset[str], Any] = {}

    def _roots(self, goal: Formula) -> set[str]:
        uf = self._uf
        return {uf.find(a) for a in atoms(goal) if a in uf.parent}

    def _slice(self, roots: set[str]) -> list[Formula]:
        """The premises linked to the given components (and those with no atom)."""
        inside = list(self._constants)
        for r in sorted(roots):
            inside.extend(self._groups.get(r, ()))
        return inside

    def _focus(self, goal: Formula, roots: set[str]) -> frozenset[str]:
        """The atoms of the question: the goal's, and every atom of its components."""
        if self._component_atoms is None:
            by_root: dict[str, list[str]] = {}
            uf = self._uf
            for name in list(uf.parent):
                by_root.setdefault(uf.find(name), []).append(name)
            self._component_atoms = by_root
        out = set(atoms(goal))
        for r in roots:
            out.update(self._component_atoms.get(r, ()))
        return frozenset(out)

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
        """Does background ∧ premises ⊨ goal?

        Unknown (``vacuous``) when the premises are unsatisfiable: every goal
        would follow from them.
        """
        every = self.consistent()
        if every.unknown:
            return every
        if every.fails:
            return self.vacuous()
        if self._obviously_entailed(goal):
            return HOLDS
        refuted = self._refuted_by_model(goal)
        if refuted is not None:
            return refuted
        roots = self._roots(goal)
        inside = self._slice(roots)
        if len(inside) > BIG_SLICE:
            return self._entails_big(goal, inside, roots)
        first = self.session._ask(inside, goal)
        if not first.fails:
            return first
        return self._complete(first, goal, roots)

    def _model(self) -> dict[str, bool]:
        """A model of background ∧ premises over their atoms, checked once in Python."""
        if self._checked_model is None:
            every = self.consistent()
            assert every.holds and every.counterexample is not None
            model = dict(every.counterexample)
            session = self.session
            missing = [a for a in session.bg_atom_set if a not in model]
            if missing:
                # literal premises leave the background's atoms to a model of the background
                if session._bg_model is None:
                    session._bg_model = session.satisfiable(())
                bg = session._bg_model.counterexample or {}
                model.update({a: bg.get(a, False) for a in missing})
            session._recheck(model, self.formulas, None)
            self._checked_model = model
        return self._checked_model

    def _refuted_by_model(self, goal: Formula) -> Result | None:
        """A model of the premises that falsifies the goal refutes it, with no solver call.

        Atoms the premises and the background never mention are free: for a
        goal ``!(l1 & ... & ln)`` over literals, they are set to make the
        literals true.
        """
        model = self._model()
        known = self._uf.parent
        trial = model
        free = [a for a in atoms(goal) if a not in known]
        if free:
            trial = dict(model)
            wanted = _literals_of(goal.arg) if isinstance(goal, Not) else None
            for name in free:
                trial[name] = wanted.get(name, False) if wanted is not None else False
        if evaluate(goal, trial):
            return None
        roots = self._roots(goal)
        return Result(
            Verdict.FAILS,
            counterexample=trial,
            focus=self._focus(goal, roots),
            premises=tuple(self._slice(roots)),
            goal=goal,
        )

    def vacuous(self) -> Result:
        """The answer to every goal when the premises are unsatisfiable: unknown, with a core."""
        if self._vacuous is None:
            core = self.session.minimal_core(list(zip(self.labels, self.formulas, strict=True)))
            if core.status == "unknown":
                reason = f"the premises may be unsatisfiable ({core.reason})"
            else:
                reason = (
                    "the premises are unsatisfiable, so every entailment from them holds"
                    f" vacuously (a minimal core: {describe_core(core.labels)})"
                )
            self._vacuous = Result(Verdict.UNKNOWN, reason=reason, vacuous=True)
        return self._vacuous

    def _complete(self, first: Result, goal: Formula, roots: set[str]) -> Result:
        """A model of the goal's slice, with the other slices' values from a global model."""
        assert first.counterexample is not None
        every = self.consistent()
        assert every.holds and every.counterexample is not None
        # components share no atom: the goal's values from the first model (which also
        # satisfies every background formula), the other components' from the global one
        cex = dict(first.counterexample)
        uf = self._uf
        for name, value in every.counterexample.items():
            if name in uf.parent and uf.find(name) not in roots:
                cex[name] = value
        self.session._recheck(cex, self.formulas, goal)
        return Result(
            Verdict.FAILS,
            counterexample=cex,
            focus=self._focus(goal, roots),
            premises=tuple(self._slice(roots)),
            goal=goal,
        )

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
            self._global = self.session.consistency(self.formulas)
        return self._global


def _consistent(session: Session, formulas: Sequence[Formula]) -> Result:
    """HOLDS (with a model) when background ∧ formulas is satisfiable.

    Literals over atoms the background does not mention are settled in Python.
    """
    bg_atoms = session.bg_atom_set
    polarity: dict[str, bool] = {}
    hard: list[Formula] = []
    for f in formulas:
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
    sat = session.satisfiable(hard)
    if not sat.holds:
        return sat
    return Result(Verdict.HOLDS, counterexample={**model, **(sat.counterexample or {})})
