"""Every entailment ctxproof decides, behind one function that calls ``check()``.

A :class:`Session` owns one z3 context. Its solver (``QF_FD``, fixed seed,
per-check ``rlimit``) holds the background, asserted once; each small query is
asked in a push/pop frame, so nothing piles up between queries. A model that
may reach a report is read from a solver of a fresh context holding the
query's formulas alone, so it never depends on what was asked before.

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
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verifier import crosscheck
from verifier.encoding import Encoder, z3_module
from verifier.errors import InputError, InternalError
from verifier.formula import (
    And,
    Atom,
    Formula,
    Not,
    Or,
    atoms,
    evaluate,
    evaluate_partial,
    extend_model,
    is_true,
    new_atom,
)

__all__ = [
    "DEFAULT_RLIMIT",
    "Core",
    "PremiseSet",
    "Result",
    "Session",
    "UnionFind",
    "Verdict",
    "falsifies",
    "greedy_model",
    "relevant_background",
    "solver_budget",
]

DEFAULT_RLIMIT = 1_000_000
"""Resource budget of one solver query (deterministic, unlike a wall clock); a query that
needs more is undecided. A hard query (the pigeonhole principle, 12 to 18 holes, asked
as an entailment from the background) spends it in 4 to 5 s of CPU on the 2-core machine
of ``benchmarks/RESULTS.md`` (3,000,000 took 14 s); the queries of the corpus and of a
100k-item check use a small part of it. ``--rlimit`` or ``CTXPROOF_RLIMIT`` sets
another, ``--timeout`` adds a clock (docs/reliability.md, "Solver budgets")."""

RLIMIT_ENV = "CTXPROOF_RLIMIT"
TIMEOUT_ENV = "CTXPROOF_TIMEOUT"


def solver_budget() -> tuple[int, float | None]:
    """(rlimit, timeout in seconds or None) for new sessions: the environment's, else
    the defaults (README, "Commands")."""
    rlimit = DEFAULT_RLIMIT
    timeout: float | None = None
    raw = os.environ.get(RLIMIT_ENV)
    if raw:
        try:
            rlimit = int(raw)
        except ValueError:
            rlimit = -1
        if rlimit <= 0:
            raise InputError(
                f"{RLIMIT_ENV}={raw!r} is not a positive integer",
                fix="set a resource limit such as 1000000, or unset it",
            )
    raw = os.environ.get(TIMEOUT_ENV)
    if raw:
        try:
            timeout = float(raw)
        except ValueError:
            timeout = -1.0
        if not (timeout > 0 and math.isfinite(timeout)):
            raise InputError(
                f"{TIMEOUT_ENV}={raw!r} is not a positive number of seconds",
                fix="set a per-query time limit such as 10, or unset it",
            )
    return rlimit, timeout


Z3_MS_MAX = 2**32 - 1
"""The longest timeout z3 takes, in milliseconds (about 49 days): a longer one is that."""


def z3_milliseconds(seconds: float) -> int:
    """A time limit in seconds as z3 takes it (at least 1 ms, at most :data:`Z3_MS_MAX`;
    an infinite or huge one, 1e308 s, is the longest)."""
    if not math.isfinite(seconds) or seconds * 1000 >= Z3_MS_MAX:
        return Z3_MS_MAX
    return max(1, int(seconds * 1000))


BIG_SLICE = 256
"""A sliced query with more premises than this goes to the premise set's own solver."""

SEED = 0

TAUTOLOGY_ATOMS = 8
"""Goals over this many atoms or fewer that the background does not mention are checked
for validity by their truth table, without the solver."""


class Verdict(enum.Enum):
    HOLDS = "holds"
    FAILS = "fails"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Result:
    """The answer to one question: does it hold, and if not, why not."""

    verdict: Verdict
    counterexample: Mapping[str, bool] | None = None
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
            return None if self.counterexample is None else dict(self.counterexample)
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


class Overlay(Mapping[str, bool]):
    """Values over a shared base assignment, read-only: a counterexample that differs
    from a premise set's model in a few atoms holds those few, not a copy of the model
    (which may assign hundreds of thousands of atoms)."""

    __slots__ = ("_base", "_top")

    def __init__(self, top: dict[str, bool], base: Mapping[str, bool]) -> None:
        self._top = top
        self._base = base

    def __getitem__(self, name: str) -> bool:
        top = self._top
        return top[name] if name in top else self._base[name]

    def get(self, name: str, default: Any = None) -> Any:
        top = self._top
        return top[name] if name in top else self._base.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._top or name in self._base

    def __iter__(self) -> Iterator[str]:
        yield from self._top
        yield from (name for name in self._base if name not in self._top)

    def __len__(self) -> int:
        return len(self._top) + sum(1 for name in self._base if name not in self._top)

    def __bool__(self) -> bool:
        return bool(self._top) or bool(self._base)


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
    """The labels of a core, each once; a label that stands for several premises (two
    stored versions of one id) says how many.

    >>> describe_core(["c9", "a1", "c9"])
    "'c9' (2 versions), 'a1'"
    """
    if not labels:
        return "the background"
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return ", ".join(
        repr(label) if n == 1 else f"{label!r} ({n} versions)" for label, n in counts.items()
    )


def _literal(f: Formula) -> tuple[str, bool] | None:
    """(atom, polarity) when f is a literal, else None."""
    if isinstance(f, Atom):
        return f.name, True
    if isinstance(f, Not) and isinstance(f.arg, Atom):
        return f.arg.name, False
    return None


def _literals_of(f: Formula) -> dict[str, bool]:
    """atom -> polarity for a (nested) conjunction of literals; empty when f is not one."""
    out: dict[str, bool] = {}
    stack = [f]
    while stack:
        p = stack.pop()
        if isinstance(p, And):
            stack.extend(p.args)
            continue
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


ENTAILED_KEPT = 1 << 14
"""How many answers :meth:`Session.entails` keeps (all are dropped when it is full)."""


class Session:
    """One z3 context for a whole audit; asks every question."""

    def __init__(
        self,
        background: Sequence[Formula] = (),
        *,
        rlimit: int | None = None,
        timeout: float | None = None,
    ) -> None:
        self.background = tuple(background)
        env_rlimit, env_timeout = solver_budget()
        self.rlimit = rlimit if rlimit is not None else env_rlimit
        self.timeout = timeout if timeout is not None else env_timeout
        self.cross_check = crosscheck.enabled()
        self.cross_checked = 0
        self._asserted: dict[int, list[Formula]] = {}
        self.enc = Encoder()
        self.queries = 0
        self._bg_atoms = [atoms(b) for b in self.background]
        self.bg_atom_set: frozenset[str] = frozenset().union(*self._bg_atoms)
        self._main: Any = None
        self._bg_model: Result | None = None
        self._bg_python_model: dict[str, bool] | None = None
        self._consistency: dict[tuple[Formula, ...], Result] = {}
        self._entailed: dict[
            tuple[tuple[Formula, ...], Formula, tuple[str, ...] | None], Result
        ] = {}
        if self.background:
            self._reject_unsatisfiable_background()

    @property
    def _solver(self) -> Any:
        """The solver holding the background, made at the first question it is asked."""
        if self._main is None:
            self._main = self.new_solver(())
        return self._main

    def _reject_unsatisfiable_background(self) -> None:
        """An unsatisfiable background is bad input: every entailment would be vacuous."""
        if greedy_model(self.background) is not None or not self.satisfiable((), model=False).fails:
            return
        core = self.background_core()
        raise InputError(
            "the background is unsatisfiable on its own, so every check would hold vacuously"
            f" (a minimal core: {describe_core(core.labels)})",
            fix="remove or correct one of these background formulas",
        )

    def _empty_solver(self, ctx: Any = None) -> Any:
        solver = z3_module().SolverFor("QF_FD", ctx=self.enc.ctx if ctx is None else ctx)
        solver.set("random_seed", SEED)
        solver.set("rlimit", self.rlimit)
        if self.timeout is not None:
            solver.set("timeout", z3_milliseconds(self.timeout))
        if self.cross_check:
            self._asserted[id(solver)] = []
        return solver

    def new_solver(self, premises: Iterable[Formula]) -> Any:
        """A solver holding the background and the given premises."""
        solver = self._empty_solver()
        held = (*self.background, *premises)
        for f in held:
            solver.add(self.enc.convert(f))
        if self.cross_check:
            self._asserted[id(solver)] = list(held)
        return solver

    def _cross_check(self, solver: Any, facts: Sequence[Formula], z3_says: str) -> None:
        """Ask cvc5 the same query (--cross-check): what the solver holds and the query's
        own facts, from our formulas; a disagreement is an internal error."""
        query = [*self._asserted.get(id(solver), ()), *facts]
        cvc5_says = crosscheck.answer(query)
        if cvc5_says != "unknown" and cvc5_says != z3_says:
            raise crosscheck.disagreement(query, z3_says, cvc5_says)
        self.cross_checked += 1

    # -- the one place that calls check() -------------------------------------------------
    def _check(
        self,
        solver: Any,
        names: Iterable[str],
        assumptions: Sequence[Any] = (),
        facts: Sequence[Formula] = (),
        *,
        model_of: Sequence[Formula] | None = None,
        enc: Encoder | None = None,
    ) -> tuple[str, Any]:
        """Check the solver; on sat, return the values of the named atoms.

        With assumptions, an unsat answer returns the assumptions of z3's
        (not necessarily minimal) unsat core. ``facts`` are the formulas this
        query adds to what the solver holds (for the cross-check).

        ``model_of``: every formula the solver holds for this query. On sat the
        values are then read from a model of them found afresh
        (:meth:`_canonical_values`): a solver that answered other questions
        before may pick another model, and a model that reaches a report must
        not depend on what else was asked. ``enc``: the encoder of the solver's
        context (default: the session's).
        """
        z3 = z3_module()
        self.queries += 1
        try:
            answer = solver.check(*assumptions)
        except z3.Z3Exception as exc:  # pragma: no cover - z3 refuses the query
            return "unknown", str(exc)
        if answer == z3.unsat:
            core = list(solver.unsat_core()) if assumptions else None
            if self.cross_check:
                self._cross_check(solver, facts, "unsat")
            return "unsat", core
        if answer == z3.sat:
            values = None
            if model_of is not None:
                values = self._canonical_values(model_of, names)
            if values is None:
                values = (enc or self.enc).assignment(solver.model(), names)
            if self.cross_check:
                self._cross_check(solver, facts, "sat")
            return "sat", values
        reason = str(solver.reason_unknown())
        if any(w in reason for w in ("resource", "canceled", "timeout")):
            limit = f"rlimit {self.rlimit}" + (
                f", timeout {self.timeout:g} s" if self.timeout is not None else ""
            )
            reason = (
                f"the solver ran out of its budget ({limit}: {reason}); raise it with"
                " --rlimit/--timeout or CTXPROOF_RLIMIT/CTXPROOF_TIMEOUT"
            )
        return "unknown", reason

    def _canonical_values(
        self, formulas: Sequence[Formula], names: Iterable[str]
    ) -> dict[str, bool] | None:
        """The values of the named atoms in a model of the formulas that depends on them
        alone, not on what the session asked before (in one context, the order terms
        were made in, and the ids z3 reuses, steer the model).

        First the model :func:`greedy_model` finds in Python, a function of the formulas
        in their order; where it finds none, the model a solver of a z3 context of its
        own finds, its atoms made in the order of their names (a context costs
        milliseconds to make, more than most questions of a rewrite). None if that
        solver does not answer sat."""
        found = greedy_model(formulas)
        if found is not None:
            return {name: found.get(name, False) for name in sorted(set(names))}
        enc = Encoder()
        wanted = set(names)
        for f in formulas:
            wanted |= atoms(f)
        for name in sorted(wanted):
            enc.atom(name)
        solver = self._empty_solver(enc.ctx)
        for f in formulas:
            solver.add(enc.convert(f))
        try:
            status, values = self._check(solver, names, facts=formulas, enc=enc)
        finally:
            self._asserted.pop(id(solver), None)
        return values if status == "sat" else None

    def ask_in(
        self,
        solver: Any,
        extra: Sequence[Formula],
        names: Iterable[str],
        held: Sequence[Formula] | None = None,
    ) -> tuple[str, Any]:
        """Check solver ∧ extra in a push/pop frame. ``held``: what the solver holds besides
        (then a model is found afresh: see :meth:`_check`)."""
        solver.push()
        try:
            for f in extra:
                solver.add(self.enc.convert(f))
            model_of = None if held is None else [*held, *extra]
            return self._check(solver, names, facts=extra, model_of=model_of)
        finally:
            solver.pop()

    def _ask(
        self, premises: Sequence[Formula], negated_goal: Formula | None, *, model: bool = True
    ) -> Result:
        """HOLDS when background ∧ premises ∧ ¬goal is unsat (goal None: premises unsat).

        ``model=False``: the caller reads the verdict only, so the solver's own model
        will do (no model is found afresh: see :meth:`_check`)."""
        extra = list(premises)
        if negated_goal is not None:
            extra.append(Not(negated_goal))
        names: set[str] = set(self.bg_atom_set)
        for f in extra:
            names |= atoms(f)
        held = self.background if model else None
        status, payload = self.ask_in(self._solver, extra, names, held=held)
        if status == "unsat":
            return HOLDS
        if status == "unknown":
            return Result(Verdict.UNKNOWN, reason=str(payload))
        cex: dict[str, bool] = payload
        self._recheck(cex, premises, negated_goal)
        return Result(Verdict.FAILS, counterexample=cex)

    def _recheck(
        self, cex: Mapping[str, bool], premises: Iterable[Formula], goal: Formula | None
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
        """Does background ∧ premises ⊨ goal? (Unknown, vacuous, if the premises are unsat.)

        Answered once per premises, labels and goal: a rewrite's rules ask many a
        question twice (the same witnesses of the same claim, seen from both windows).
        The answer is what the same question gets anew: the solver's models are found
        afresh (:meth:`_check`), whatever was asked before."""
        given = tuple(premises)
        names = None if labels is None else tuple(labels)
        key = (given, goal, names)
        hit = self._entailed.get(key)
        if hit is None:
            if len(self._entailed) >= ENTAILED_KEPT:
                self._entailed.clear()
            hit = self._entailed[key] = self.premises(given, names).entails(goal)
        return hit

    def background_core(self) -> Core:
        """A minimal unsatisfiable core of the background, or status "sat"."""
        labeled = [(f"background[{i}]", f) for i, f in enumerate(self.background)]
        return self._deletion_core(self._empty_solver(), labeled)

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
        z3 = z3_module()
        ctx = self.enc.ctx
        lits = [z3.Bool(f"core!{i}", ctx) for i in range(len(labeled))]
        for lit, (_, f) in zip(lits, labeled, strict=True):
            solver.add(z3.Implies(lit, self.enc.convert(f)))
        index = {lit.get_id(): i for i, lit in enumerate(lits)}
        alive = list(range(len(labeled)))
        status, core = self._check(
            solver,
            (),
            [lits[i] for i in alive] or [z3.BoolVal(True, ctx)],
            [labeled[i][1] for i in alive],
        )
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
                solver,
                (),
                [lits[j] for j in rest] or [z3.BoolVal(True, ctx)],
                [labeled[j][1] for j in rest],
            )
            if status == "unsat":
                alive = rest
                known = {index[c.get_id()] for c in core if c.get_id() in index}
            elif status == "unknown":
                return Core("unknown", reason=str(core))
        return Core("unsat", tuple(labeled[i][0] for i in alive))

    def consistency(self, formulas: Iterable[Formula], *, shared: bool = True) -> Result:
        """HOLDS (with a model) when background ∧ formulas is satisfiable; cached.

        The cache is keyed by the formulas in their order: the model found follows
        the order, so a cached answer is the one the same list would get anew.
        ``shared=False``: for a caller that keeps the model to itself (it never
        reaches a report): not cached, and the solver's own model will do.
        """
        given = list(formulas)
        if not shared:
            return _consistent(self, given, model=False)
        key = tuple(given)
        hit = self._consistency.get(key)
        if hit is None:
            hit = self._consistency[key] = _consistent(self, given)
        return hit

    def valid(self, goal: Formula, *, model: bool = True) -> Result:
        """Does the background alone entail goal? (``model=False``: as in :meth:`_ask`.)

        A goal over atoms the background never mentions (at most
        ``TAUTOLOGY_ATOMS`` of them) is valid exactly when it is a tautology: its
        truth table is read in Python; a falsifying row with a model of the
        background is the counterexample.
        """
        names = atoms(goal)
        if len(names) <= TAUTOLOGY_ATOMS and names.isdisjoint(self.bg_atom_set):
            # the background is satisfiable (a session refuses one that is not) and shares
            # no atom with the goal: any of its models, with a falsifying row, refutes it
            falsifier: dict[str, bool] = {}
            if not extend_model(falsifier, Not(goal), TAUTOLOGY_ATOMS):
                return HOLDS  # no row falsifies it: a tautology
            bg = self._background_model()
            if bg is not None:
                return Result(Verdict.FAILS, counterexample={**bg, **falsifier})
        return self._ask((), goal, model=model)

    def _background_model(self) -> dict[str, bool] | None:
        """A model of the background: found in Python where it can be, else the solver's."""
        if self._bg_python_model is None:
            found = greedy_model(self.background)
            if found is None:
                if not self.background_model().holds:
                    return None
                found = dict(self.background_model().counterexample or {})
            self._bg_python_model = found
        return self._bg_python_model

    def background_model(self) -> Result:
        """HOLDS with the solver's model of the background alone (cached).

        The model is found afresh (:meth:`_check`): the same whatever the session
        asked before.
        """
        if self._bg_model is None:
            names = self.bg_atom_set
            status, payload = self.ask_in(self._solver, (), names, held=self.background)
            if status == "sat":
                self._recheck(payload, (), None)
                self._bg_model = Result(Verdict.HOLDS, counterexample=payload)
            elif status == "unsat":
                self._bg_model = Result(Verdict.FAILS)
            else:
                self._bg_model = Result(Verdict.UNKNOWN, reason=str(payload))
        return self._bg_model

    def satisfiable(self, formulas: Iterable[Formula], *, model: bool = True) -> Result:
        """HOLDS (with a model as counterexample) when background ∧ formulas has a model.
        (``model=False``: as in :meth:`_ask`.)"""
        status = self._ask(list(formulas), None, model=model)
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
            if is_true(f) or f in seen:
                continue
            seen.add(f)
            self.formulas.append(f)
            self.labels.append(name)
        self._members = seen
        self._component_atoms: dict[str, list[str]] | None = None
        self._global: Result | None = None
        self._vacuous: Result | None = None
        self._checked_model: dict[str, bool] | None = None
        self._big_solvers: dict[frozenset[str], Any] = {}
        self._unit_values: dict[str, bool] | None = None
        self._components: tuple[UnionFind, dict[str, list[Formula]], list[Formula]] | None = None

    def _parts(self) -> tuple[UnionFind, dict[str, list[Formula]], list[Formula]]:
        """The components: a union-find over the atoms (the background's formulas link
        atoms too), the premises by component root, and the premises with no atom.

        Built when a question first needs them: goals the shortcuts settle never do.
        """
        if self._components is None:
            uf = UnionFind()
            atom_lists = [[f.name] if type(f) is Atom else sorted(atoms(f)) for f in self.formulas]
            for names in atom_lists:
                uf.union_all(names)
            for bg in self.session._bg_atoms:
                uf.union_all(sorted(bg))
            groups: dict[str, list[Formula]] = {}
            constants: list[Formula] = []
            for f, names in zip(self.formulas, atom_lists, strict=True):
                if names:
                    groups.setdefault(uf.find(names[0]), []).append(f)
                else:
                    constants.append(f)
            self._components = (uf, groups, constants)
        return self._components

    @property
    def _uf(self) -> UnionFind:
        return self._parts()[0]

    @property
    def _groups(self) -> dict[str, list[Formula]]:
        return self._parts()[1]

    @property
    def _constants(self) -> list[Formula]:
        return self._parts()[2]

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

    def _units(self) -> dict[str, bool]:
        """The literals the premises assert (alone or in conjunctions of literals): every
        model of the premises gives these atoms these values."""
        if self._unit_values is None:
            units: dict[str, bool] = {}
            for f in self.formulas:
                lit = _literal(f)
                if lit is not None:
                    units.setdefault(*lit)
                elif isinstance(f, And):
                    for name, value in _literals_of(f).items():
                        units.setdefault(name, value)
            self._unit_values = units
        return self._unit_values

    def _obviously_entailed(self, goal: Formula) -> bool:
        """A sound syntactic shortcut: the goal is a premise, or built from premises."""
        if is_true(goal) or goal in self._members:
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
        if self._obviously_entailed(goal) or evaluate_partial(goal, self._units()) is True:
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

    def _model(self) -> dict[str, bool] | None:
        """A model of background ∧ premises over their atoms, checked once in Python;
        None when the background's own model is not known (the solver gave up on it)."""
        if self._checked_model is None:
            every = self.consistent()
            assert every.holds and every.counterexample is not None
            model = dict(every.counterexample)
            session = self.session
            missing = [a for a in session.bg_atom_set if a not in model]
            if missing:
                # literal premises leave the background's atoms to a model of the background
                if not session.background_model().holds:
                    return None
                bg = session.background_model().counterexample or {}
                model.update({a: bg.get(a, False) for a in missing})
            session._recheck(model, self.formulas, None)
            self._checked_model = model
        return self._checked_model

    def model(self) -> dict[str, bool] | None:
        """A fresh model of background ∧ premises, total over their atoms (checked in
        Python); None when they are not known to be satisfiable."""
        if not self.consistent().holds:
            return None
        found = self._model()
        if found is None:
            return None
        names = set(self._uf.parent) | self.session.bg_atom_set
        return {a: bool(found.get(a, False)) for a in names}

    def _refuted_by_model(self, goal: Formula) -> Result | None:
        """A model of the premises that falsifies the goal refutes it, with no solver call.

        Atoms the premises and the background never mention are free: for a
        goal ``!(l1 & ... & ln)`` over literals, they are set to make the
        literals true.
        """
        model = self._model()
        if model is None:
            return None
        # the model assigns every atom of the premises and the background: the goal's
        # other atoms are free
        trial: Mapping[str, bool] = model
        free = [a for a in atoms(goal) if a not in model]
        if free:
            wanted = _literals_of(goal.arg) if isinstance(goal, Not) else None
            values = {
                name: wanted.get(name, False) if wanted is not None else False for name in free
            }
            trial = Overlay(values, model)  # the model is shared, never copied
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
        uf = self._uf
        other = every.counterexample
        own = {
            name: value
            for name, value in first.counterexample.items()
            if name not in other or name not in uf.parent or uf.find(name) in roots
        }
        cex = Overlay(own, other)  # the global model is shared, never copied
        # the other components' values are the global model's, checked when it was found
        inside = self._slice(roots)
        self.session._recheck(cex, inside, goal)
        return Result(
            Verdict.FAILS,
            counterexample=cex,
            focus=self._focus(goal, roots),
            premises=tuple(inside),
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
        status, payload = session.ask_in(
            solver, [Not(goal)], names, held=[*session.background, *inside]
        )
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


GREEDY_MIN = 256
"""From this many formulas on, a model is first sought in Python before the solver is asked."""


def greedy_model(formulas: Sequence[Formula]) -> dict[str, bool] | None:
    """A model of every formula found without the solver, or None.

    The formulas are taken in order; each fixes the atoms no earlier one fixed
    (:func:`verifier.formula.extend_model`). None when some formula is false
    whatever its new atoms say: then the solver decides.
    """
    model: dict[str, bool] = {}
    for f in formulas:
        if not extend_model(model, f):
            return None
    return model


def _conjuncts(f: Formula) -> int:
    """How many literals a (nested) conjunction holds, repeats counted."""
    return sum(_conjuncts(a) for a in f.args) if isinstance(f, And) else 1


def _consistent(session: Session, formulas: Sequence[Formula], *, model: bool = True) -> Result:
    """HOLDS (with a model) when background ∧ formulas is satisfiable.

    Literals, and conjunctions of literals, over atoms the background does not
    mention are settled in Python. (``model=False``: as in :meth:`Session._ask`.)
    """
    bg_atoms = session.bg_atom_set
    polarity: dict[str, bool] = {}
    hard: list[Formula] = []
    for f in formulas:
        if type(f) is Atom and f.name not in bg_atoms:
            if not polarity.setdefault(f.name, True):
                return Result(Verdict.FAILS)
            continue
        lit = _literal(f)
        lits = dict((lit,)) if lit is not None else _literals_of(f) if isinstance(f, And) else {}
        if not lits or not bg_atoms.isdisjoint(lits) or len(lits) < _conjuncts(f):
            hard.append(f)
            continue
        for name, value in lits.items():
            if polarity.setdefault(name, value) is not value:
                return Result(Verdict.FAILS)
    hard_atoms: set[str] = set()
    for h in hard:
        hard_atoms |= atoms(h)
    easy = {name: value for name, value in polarity.items() if name not in hard_atoms}
    hard += [
        new_atom(n) if v else Not(new_atom(n)) for n, v in polarity.items() if n in hard_atoms
    ]
    if not hard:
        return Result(Verdict.HOLDS, counterexample=easy)
    if len(hard) >= GREEDY_MIN:
        found = greedy_model([*session.background, *hard])
        if found is not None:
            return Result(Verdict.HOLDS, counterexample={**easy, **found})
    sat = session.satisfiable(hard, model=model)
    if not sat.holds:
        return sat
    return Result(Verdict.HOLDS, counterexample={**easy, **(sat.counterexample or {})})


class PremiseIndex:
    """Premises that come and go across many events, sliced by shared atoms on demand.

    Made for premise sets that live as long as an audit: the durable store's
    content, the commitment versions CP003 reads. Adding or removing an entry
    costs only its own atoms; a question reads only the entries linked to it
    through shared atoms (the background's formulas link atoms too); whether
    the whole set is consistent is cached and, after additions, checked again
    only on the part the new entries reach. So a question costs the same with
    a thousand entries or fifty thousand.
    """

    def __init__(self, session: Session, *, keep_model: bool = False) -> None:
        self.session = session
        self._entries: dict[str, tuple[str, Formula, frozenset[str]]] = {}
        self._by_atom: dict[str, dict[str, None]] = {}
        self._constants: dict[str, None] = {}
        self._state: Result | None = None
        self._pending: dict[str, None] = {}
        self._bg_by_atom: dict[str, list[frozenset[str]]] = {}
        for group in session._bg_atoms:
            for a in group:
                self._bg_by_atom.setdefault(a, []).append(frozenset(group))
        self._keep_model = keep_model
        self._model: dict[str, bool] | None = None
        """With ``keep_model``: while the premises are known to be consistent, a model of
        the background and every premise (None: none known)."""
        self._offer: tuple[Formula, frozenset[str], Mapping[str, bool]] | None = None
        """The last formula :meth:`satisfiable_with` found satisfiable by asking, the atoms
        of its slice and the model found: what adding that formula next takes in."""

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def add(self, key: str, label: str, formula: Formula) -> None:
        """Add a premise under a key (a key already there is kept as it is)."""
        if key in self._entries or is_true(formula):
            return
        names = atoms(formula)
        self._entries[key] = (label, formula, names)
        for a in names:
            self._by_atom.setdefault(a, {})[key] = None
        if not names:
            self._constants[key] = None
        offer, self._offer = self._offer, None
        model = self._model
        if model is not None:
            if extend_model(model, formula):
                return  # the model satisfies it: still consistent, nothing to check
            if offer is not None and offer[0] is formula:
                _overwrite(model, offer[1], offer[2])
                return  # asked just now (satisfiable_with): the slice's model takes it in
        # the model (if any) still satisfies every premise but the pending ones: consistent()
        # asks about their slice and puts its model over theirs
        self._pending[key] = None

    def remove(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        for a in entry[2]:
            holders = self._by_atom.get(a)
            if holders is not None:
                holders.pop(key, None)
                if not holders:
                    del self._by_atom[a]
        self._constants.pop(key, None)
        self._pending.pop(key, None)
        if self._state is not None and not self._state.holds:
            self._state = None  # a subset of an inconsistent set may be consistent: check again
            self._model = None

    def remove_label(self, label: str) -> None:
        """Remove every premise with this label (an item id)."""
        for key in [k for k, (lab, _, _) in self._entries.items() if lab == label]:
            self.remove(key)

    def labeled(self) -> list[tuple[str, Formula]]:
        """Every premise, in the order added."""
        return [(lab, f) for lab, f, _ in self._entries.values()]

    def reach(self, seed: Iterable[str], keys: dict[str, None]) -> set[str]:
        """Add to ``keys`` the entries linked to the seed atoms; return the atoms reached."""
        seen: set[str] = set()
        todo = [a for a in seed]
        while todo:
            a = todo.pop()
            if a in seen:
                continue
            seen.add(a)
            for key in self._by_atom.get(a, ()):
                if key not in keys:
                    keys[key] = None
                    todo.extend(self._entries[key][2])
            for group in self._bg_by_atom.get(a, ()):
                todo.extend(group)
        for key in self._constants:
            keys.setdefault(key, None)
        return seen

    def formulas_of(self, keys: Iterable[str]) -> list[tuple[str, Formula]]:
        return [(self._entries[k][0], self._entries[k][1]) for k in keys if k in self._entries]

    def consistent(self) -> Result:
        """Is background ∧ every premise satisfiable? (HOLDS or not; with ``keep_model``,
        :meth:`model` then gives a model.)"""
        shared = not self._keep_model  # a kept model never reaches a report
        if self._state is None:
            state = self._state = self.session.consistency(
                [f for _, f, _ in self._entries.values()], shared=shared
            )
            self._pending.clear()
            self._model = None
            if self._keep_model and state.holds:
                self._model = self._full_model(state)
        elif self._pending:
            if self._state.holds:
                keys: dict[str, None] = dict(self._pending)
                seed: set[str] = set()
                for key in self._pending:
                    seed |= self._entries[key][2]
                reached = self.reach(seed, keys)
                part = self.session.consistency(
                    [f for _, f in self.formulas_of(keys)], shared=shared
                )
                if not part.holds:
                    self._state = part
                    self._model = None
                elif self._keep_model:
                    if self._model is None:
                        self._model = self._full_model(
                            self.session.consistency(
                                [f for _, f, _ in self._entries.values()], shared=False
                            )
                        )
                    else:
                        # the part holds every premise with an atom it reached: its model
                        # there, the kept model's elsewhere
                        _overwrite(self._model, reached, part.counterexample or {})
            self._pending.clear()
        return self._state

    def _full_model(self, state: Result) -> dict[str, bool] | None:
        """A model of the background and every premise, from a consistency result over all
        of them; None when the background's own model is not known."""
        if not state.holds:
            return None
        bg = self.session._background_model()
        if bg is None:
            return None
        # the result assigns either every atom of the background or none (no premise shares
        # one): the background's model fills in what it leaves
        return {**bg, **(state.counterexample or {})}

    def model(self) -> dict[str, bool] | None:
        """With ``keep_model``: a model of the background and every premise, kept across
        changes (extended in place by :meth:`satisfiable_with`); None when the premises
        are not consistent or no model is known."""
        return self._model if self.consistent().holds else None

    def satisfiable_with(self, formula: Formula) -> Result:
        """Is background ∧ every premise ∧ formula satisfiable? (``keep_model`` only.)

        HOLDS, FAILS or UNKNOWN as :meth:`Session.consistency` answers, asked of the
        premises linked to the formula only: the others have the kept model. When the
        kept model extends to the formula no question is asked (the model is extended
        in place); a model found by asking is kept for the formula's next :meth:`add`.
        Unknown, with no question asked, when no model is kept.
        """
        model = self.model()
        if model is None:
            return Result(Verdict.UNKNOWN, reason="the premises have no model kept")
        if extend_model(model, formula):
            return HOLDS
        keys: dict[str, None] = {}
        reached = self.reach(atoms(formula), keys)
        part = self.session.consistency(
            [*(f for _, f in self.formulas_of(keys)), formula], shared=False
        )
        if part.holds:
            self._offer = (formula, frozenset(reached), part.counterexample or {})
        return part


def _overwrite(model: dict[str, bool], names: Iterable[str], values: Mapping[str, bool]) -> None:
    """Give the named atoms their values (false where none is given): a slice's model put
    over a larger one. Sound when no premise and no background formula has atoms both
    among the names and outside them."""
    for name in names:
        model[name] = bool(values.get(name, False))


class CombinedPremises:
    """Several premise indexes read as one premise set (a window's content and the store's).

    Behaves like :class:`PremiseSet` — vacuous (unknown, with a minimal core)
    when the premises together are unsatisfiable — but every question reads
    only the slice of premises linked to its goal.
    """

    def __init__(self, session: Session, indexes: Sequence[PremiseIndex]) -> None:
        self.session = session
        self.indexes = list(indexes)
        self._state: Result | None = None
        self._vacuous: Result | None = None

    def _slice(self, seed: Iterable[str]) -> list[tuple[str, Formula]]:
        """The premises of every index linked to the seed atoms, through any index."""
        picked: list[dict[str, None]] = [{} for _ in self.indexes]
        atoms_seen: set[str] = set()
        frontier = set(seed)
        while frontier:
            grown: set[str] = set()
            for idx, keys in zip(self.indexes, picked, strict=True):
                grown |= idx.reach(frontier, keys)
            atoms_seen |= frontier
            frontier = grown - atoms_seen
        out: list[tuple[str, Formula]] = []
        for idx, keys in zip(self.indexes, picked, strict=True):
            out.extend(idx.formulas_of(keys))
        return out

    def consistent(self) -> Result:
        if self._state is None:
            state: Result = Result(Verdict.HOLDS)
            for idx in self.indexes:
                own = idx.consistent()
                if not own.holds:
                    state = own
                    break
            if state.holds and len(self.indexes) > 1:
                # each index is consistent on its own: the union is, unless the premises of
                # the first index and what they reach in the others are not
                seed: set[str] = set()
                for _, f in self.indexes[0].labeled():
                    seed |= atoms(f)
                part = self._slice(seed) if seed else []
                part += [p for p in self.indexes[0].labeled() if not atoms(p[1])]
                if part:
                    state = self.session.consistency([f for _, f in part])
            self._state = state
        return self._state

    def vacuous(self) -> Result:
        if self._vacuous is None:
            everything = [p for idx in self.indexes for p in idx.labeled()]
            labels = [lab for lab, _ in everything]
            self._vacuous = PremiseSet(self.session, [f for _, f in everything], labels).vacuous()
        return self._vacuous

    def entails(self, goal: Formula) -> Result:
        """Does background ∧ all premises ⊨ goal? Unknown (vacuous) when they are unsat."""
        state = self.consistent()
        if state.unknown:
            return state
        if state.fails:
            return self.vacuous()
        part = self._slice(atoms(goal))
        return PremiseSet(self.session, [f for _, f in part], [lab for lab, _ in part]).entails(
            goal
        )
