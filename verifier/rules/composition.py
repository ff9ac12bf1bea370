"""Composition over a trace: CP001–CP004 (docs/rules.md).

Per-pass correctness "is not closed under composition": these rules look at
what an append uses and contradicts, given everything the session kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Set

from verifier.formula import (
    FALSE,
    Atom,
    Const,
    Formula,
    Not,
    atoms,
    conj,
    extend_model,
    is_true,
)
from verifier.rules.context import RewriteContext, WindowKnowledge, cite, show
from verifier.solver import PremiseIndex, PremiseSet, Result, UnionFind, Verdict
from verifier.window import WITNESSED, Item

__all__ = ["check_append", "check_cycles"]


def check_append(ctx: RewriteContext, appended: tuple[Item, ...]) -> None:
    """WR006, CP001, WR005, CP003, CP004 and CP002 for the items of one append.

    The append's items are in the graph already: an item may use another of
    the same append (CP001). What CP003 and CP004 exclude is recorded in
    ``ctx.newly_excluded``; it takes effect from the next event.
    """
    from verifier.rules.witnesses import _wr006, check_item_witnesses

    for it in appended:
        if it.kind == "stub":
            _wr006(ctx, it)
    named = _cp001(ctx, appended)
    for it in appended:
        if it.kind in ("commitment", "claim"):
            check_item_witnesses(ctx, it, ctx.after, named.get(it.id, ()))
    _consistency(ctx, appended)
    check_cycles(ctx, appended)


def _cp001(ctx: RewriteContext, appended: tuple[Item, ...]) -> dict[str, list[str]]:
    """CP001 for every (used, user) pair of the append; returns user -> used ids reported."""
    named: dict[str, list[str]] = {}
    graph = ctx.graph
    if graph is None:
        return named  # composition needs the session's graph: only audits have one
    from verifier.graph import why  # imported where a graph is: a check has none

    for it in appended:
        uses = dict.fromkeys((*it.rationale, *it.witnesses, *it.derived_from))
        for used_id in uses:
            if used_id == it.id:
                continue  # an item citing itself is a cycle (CP002), not a use
            used = ctx.seen_version(ctx.after, used_id)
            if used is None or used.modality not in WITNESSED:
                continue
            try:
                answer = why(graph, used_id)
            except KeyError:
                continue  # known only to an external store the graph was not given
            if answer.chain is not None:
                continue
            if answer.cut_pass is not None:
                where = f"the rewrite at pass {answer.cut_pass} cut its last path to a primitive"
            else:
                where = "no primitive ever backed it"
            if used.kind == "observation":
                advice = "restore it (a stub is enough), or cite a new observation instead"
            else:
                # a failed result stays failed (WR004): no advice to tag it unwitnessed
                untag = "" if used.modality == "failed" else ", or tag it 'unwitnessed'"
                advice = (
                    "restore the observation it rested on (a stub is enough), or re-derive it"
                    f" from a new observation{untag}"
                )
            ctx.report(
                "CP001",
                [used_id, it.id],
                f"{it.id!r} uses {used.kind} {used_id!r}, which says {used.modality!r} but has no"
                f" path to a retained primitive: {where}; {advice}",
            )
            named.setdefault(it.id, []).append(used_id)
    return named


# -- CP003 and CP004: what an append asserts against what the session holds -----------------


def _window_commitments(ctx: RewriteContext) -> list[Item]:
    """The window's commitments (stubs resolved), excluded ids out, one per version."""
    out: dict[str, Item] = {}
    excluded = ctx.excluded
    for it in ctx.before.items:
        real = ctx.before.resolve(it.id)
        if real is not None and real.kind == "commitment" and real.id not in excluded:
            out.setdefault(real.key, real)
    return list(out.values())


def _knowledge(ctx: RewriteContext) -> list[Item]:
    """The window's commitments (stubs resolved), then every commitment version stored.

    Read in full only when an append contradicts the knowledge (to name who).
    """
    out: dict[str, Item] = {k.key: k for k in _window_commitments(ctx)}
    excluded = ctx.excluded
    for real in ctx.store.items():
        if real.kind == "commitment" and real.id not in excluded:
            out.setdefault(real.key, real)
    return list(out.values())


def _alone(ctx: RewriteContext, f: Formula) -> Result:
    """Is f satisfiable with the background? (A literal the background does not name,
    without the solver.)"""
    literal = f.arg if isinstance(f, Not) else f
    if (isinstance(f, Const) and f != FALSE) or (
        isinstance(literal, Atom) and literal.name not in ctx.session.bg_atom_set
    ):
        return Result(Verdict.HOLDS)
    return ctx.session.satisfiable([f], model=False)


def _connected(
    ctx: RewriteContext, fixed: Formula, candidates: list[tuple[Item, Formula]]
) -> list[tuple[Item, Formula]]:
    """The candidates linked to fixed through shared atoms (the background included).

    When the candidates are satisfiable together, every unsatisfiable core with
    fixed lies in its component, so a core searched there is the core searched
    among all candidates.
    """
    uf = UnionFind()
    uf.union_all(sorted(atoms(fixed)))
    for _, f in candidates:
        uf.union_all(sorted(atoms(f)))
    for names in ctx.session._bg_atoms:
        uf.union_all(sorted(names))
    roots = {uf.find(a) for a in atoms(fixed)}
    return [
        (c, f) for c, f in candidates if not atoms(f) or any(uf.find(a) in roots for a in atoms(f))
    ]


def _core(
    ctx: RewriteContext, item: Item, fixed: Formula, candidates: list[tuple[Item, Formula]]
) -> list[Item] | None:
    """A minimal core with fixed, by deletion in the candidates' order; None if undecided
    (the question is then among the undecided: a finding that needs the core names less)."""
    near = _connected(ctx, fixed, candidates)
    labeled = [(str(i), f) for i, (_, f) in enumerate(near)]
    core = ctx.session.minimal_core(labeled, [fixed])
    if core.status == "unknown":
        what = f"the minimal core of what {item.id!r} contradicts"
        if not any(u.startswith(f"{what}:") for u in ctx.undecided):
            ctx.unknown(what, Result(Verdict.UNKNOWN, reason=core.reason), item.id)
    if core.status != "unsat":
        return None
    return [near[int(label)][0] for label in core.labels]


def _reruns(ctx: RewriteContext, it: Item) -> list[str]:
    """The evicted failed observations an appended observation runs again (CP003)."""
    if it.kind != "observation" or it.source is None:
        return []
    evicted = ctx.history.evicted_failed
    if any(it.id in ids for ids in evicted.values()):
        return []  # the evicted observation itself, appended again: no re-run
    return list(evicted.get(it.source, ()))


class _Prefix:
    """The append's earlier items still standing, in append order, by id and by source."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[Item, Formula]] = {}
        self.order: dict[str, int] = {}
        self._by_source: dict[str, dict[str, None]] = {}

    def __iter__(self) -> Iterator[tuple[Item, Formula]]:
        return iter(list(self.entries.values()))

    def __contains__(self, item_id: object) -> bool:
        return item_id in self.entries

    def holds(self, item: Item) -> bool:
        """Is this very item (not only its id) one of the prefix's?"""
        entry = self.entries.get(item.id)
        return entry is not None and entry[0] == item

    def add(self, item: Item, f: Formula) -> None:
        self.entries[item.id] = (item, f)
        self.order[item.id] = len(self.order)
        if item.kind == "observation" and item.source is not None:
            self._by_source.setdefault(item.source, {})[item.id] = None

    def remove(self, ids: Iterable[str]) -> list[tuple[Item, Formula]]:
        """Take these ids out; returns the entries taken out, in prefix order."""
        out: list[tuple[Item, Formula]] = []
        for item_id in ids:
            entry = self.entries.pop(item_id, None)
            if entry is None:
                continue
            out.append(entry)
            source = entry[0].source
            if source is not None and source in self._by_source:
                self._by_source[source].pop(item_id, None)
        out.sort(key=lambda e: self.order[e[0].id])
        return out

    def of_source(self, source: str) -> list[str]:
        """The ids of the prefix's observations of this source."""
        return list(self._by_source.get(source, ()))


class _Listed:
    """The premises of an append's consistency questions as lists read from the windows:
    the reference that :class:`_Indexed` answers like, and its fallback.

    The knowledge: the window's commitments, then the stored ones the window's
    commitments or the append reach through shared atoms (all of them when the
    stored ones are not consistent). The window's content with this append's
    supersessions applied, without the ids in ``excluded``.
    """

    def __init__(
        self,
        ctx: RewriteContext,
        appended: tuple[Item, ...],
        excluded: Set[str] = frozenset(),
        superseded: Set[str] = frozenset(),
    ) -> None:
        self.ctx = ctx
        session, history = ctx.session, ctx.history
        stored = ctx.store_knowledge()
        in_window = _window_commitments(ctx)
        self.has_knowledge = bool(in_window) or len(stored) > 0
        if stored.commitments_consistent():
            # of the store, only what the window's commitments or this append reach through
            # shared atoms: the rest shares no atom with any question asked here
            seed: set[str] = set()
            for k in in_window:
                seed |= atoms(k.formula)
            for it in appended:
                real = ctx.after.resolve(it.id) if it.kind == "stub" else it
                if real is not None:
                    seed |= atoms(real.formula)
            near = stored.commitments_near(seed)
        else:
            near = [(k.id, k.formula) for k in _knowledge(ctx)[len(in_window) :]]
        self.known = session.premises(
            [*(k.formula for k in in_window), *(f for _, f in near)],
            [*(k.id for k in in_window), *(label for label, _ in near)],
        )
        self.k_state = self.known.consistent()
        # the window's content, with the supersessions of this append's items asked so far
        # (``superseded``: their sources) applied
        gone: set[str] = set(history.superseded)
        for src in superseded:
            gone |= history.by_source.get(src, set())
        window = ctx.before.content(ctx.excluded, gone)
        self.window = [(w, g) for w, g in window if w.id not in excluded]
        self.content: PremiseSet | None = session.premises(
            [g for _, g in self.window], [w.id for w, _ in self.window]
        )
        self.w_state = self.content.consistent()
        # models of the premises and of the append's standing items so far: an item that one
        # extends to satisfies it is consistent with them, with no solver call
        self.k_model = self.known.model() if self.k_state.holds else None
        self.w_model = self.content.model() if self.w_state.holds else None
        self._knowledge: list[Item] | None = None

    @property
    def k_holds(self) -> bool:
        return self.k_state.holds

    @property
    def k_active(self) -> bool:
        return self.k_state.holds and self.has_knowledge

    @property
    def w_active(self) -> bool:
        return self.w_state.holds

    def vacuity(self) -> None:
        """Nothing is reported against premises that are themselves unsatisfiable: every
        question would hold vacuously."""
        if not self.k_state.holds and self.has_knowledge:
            why_k = self.known.vacuous() if self.k_state.fails else self.k_state
            self.ctx.unknown("the knowledge CP003 reads", why_k)
        if not self.w_state.holds:
            why_w = self._content().vacuous() if self.w_state.fails else self.w_state
            self.ctx.unknown("the window's content", why_w)

    def alone(self, f: Formula) -> Result:
        return _alone(self.ctx, f)

    def k_extends(self, f: Formula) -> bool:
        return _extends(self.k_model, f)

    def k_refutes(self, prefix: _Prefix, f: Formula) -> Result:
        """Does the knowledge entail that the prefix and f do not hold together?"""
        self.k_model = None  # the solver is asked from here on in this append
        return self.known.entails(Not(conj([*(g for _, g in prefix), f])))

    def knowledge(self, prefix: _Prefix, f: Formula) -> list[Item]:
        """The knowledge, read in full when an append contradicts it (to name who)."""
        if self._knowledge is None:
            self._knowledge = _knowledge(self.ctx)
        return self._knowledge

    def k_candidates(self, prefix: _Prefix, f: Formula) -> list[tuple[Item, Formula]]:
        return [*prefix, *((k, k.formula) for k in self.knowledge(prefix, f))]

    def w_extends(self, f: Formula) -> bool:
        return _extends(self.w_model, f)

    def w_refutes(self, prefix: _Prefix, f: Formula) -> Result:
        """Does the window's content entail that the prefix and f do not hold together?"""
        self.w_model = None
        return self._content().entails(Not(conj([*(g for _, g in prefix), f])))

    def w_candidates(self, prefix: _Prefix, f: Formula) -> list[tuple[Item, Formula]]:
        return [*prefix, *self.window]

    def exclude(self, ids: Sequence[str]) -> None:
        if ids:
            self.window = [(w, g) for w, g in self.window if w.id not in ids]
            self.content = None

    def supersede(self, source: str) -> None:
        """An appended run of ``source``: the window's earlier runs are no content from here
        on (a model of the premises stays one of fewer)."""
        kept = [(w, g) for w, g in self.window if w.kind != "observation" or w.source != source]
        if len(kept) != len(self.window):
            self.window = kept
            self.content = None

    def rest_satisfiable(self, prefix: _Prefix, it: Item, f: Formula, excluded: list[str]) -> bool:
        """Are the window's content, the prefix and f satisfiable, the excluded ids out?"""
        rest = [(p, g) for p, g in [*self.window, *prefix, (it, f)] if p.id not in excluded]
        return self.ctx.session.satisfiable([g for _, g in rest], model=False).holds

    def _content(self) -> PremiseSet:
        if self.content is None:
            self.content = self.ctx.session.premises(
                [g for _, g in self.window], [w.id for w, _ in self.window]
            )
        return self.content

    def added(self, it: Item, f: Formula) -> None:
        pass

    def removed(self, entries: Sequence[tuple[Item, Formula]]) -> None:
        pass

    def finish(self) -> None:
        pass


_PREFIX = "\x00append:"
"""Knowledge-index keys of the append's standing items (no version key starts so)."""


class _Indexed:
    """The same premises read from the indexes kept across events
    (:class:`~verifier.rules.context.WindowKnowledge`), each with a model: a question
    costs what the item's atoms reach, not what the window holds.

    Used when the knowledge and the window's content are consistent (there is
    nothing vacuous to report). The append's standing items are put in both
    indexes as they stand; a question the indexes cannot answer exactly (the
    solver gave up on a slice, or a standing item no model takes in) goes, from
    then on, to a :class:`_Listed` made at that point.
    """

    def __init__(self, ctx: RewriteContext, appended: tuple[Item, ...], known: WindowKnowledge):
        self.ctx = ctx
        self.appended = appended
        self.known = known
        self.has_knowledge = known.has_knowledge
        self.k_holds = True
        self.k_active = self.has_knowledge
        self.w_active = True
        self._keys: dict[str, str] = {}
        """prefix id -> its knowledge-index key."""
        self._excluded: set[str] = set()
        """Ids this append took out of the premises so far."""
        self._superseded: set[str] = set()
        """The sources of this append's observations asked so far."""
        self._listed: _Listed | None = None

    @classmethod
    def start(cls, ctx: RewriteContext, appended: tuple[Item, ...]) -> _Indexed | None:
        """The indexes, synced to the window before the append; None when the premises are
        not known to be consistent (the lists then say why)."""
        known = ctx.window_knowledge()
        if any(known.holds(it.id) for it in appended):
            return None  # an id appended again (bad input a trace never holds): the lists
        if known.content.model() is None:
            return None
        if known.has_knowledge and known.knowledge.model() is None:
            return None
        return cls(ctx, appended, known)

    def _fallback(self) -> _Listed:
        if self._listed is None:
            listed = _Listed(self.ctx, self.appended, self._excluded, self._superseded)
            # its models are of the premises alone, not with the prefix: the solver is asked
            listed.k_model = listed.w_model = None
            self._listed = listed
        return self._listed

    def vacuity(self) -> None:
        if self._listed is not None:
            self._listed.vacuity()

    def alone(self, f: Formula) -> Result:
        if self._listed is None and _extends(self.known.content.model(), f):
            return Result(Verdict.HOLDS)  # a model of the window and f: f is satisfiable
        return _alone(self.ctx, f)

    def k_extends(self, f: Formula) -> bool:
        if self._listed is not None:
            return self._listed.k_extends(f)
        return _extends(self.known.knowledge.model(), f)

    def k_refutes(self, prefix: _Prefix, f: Formula) -> Result:
        if self._listed is None:
            res = self.known.knowledge.satisfiable_with(f)
            if not res.unknown:
                return Result(Verdict.FAILS) if res.holds else Result(Verdict.HOLDS)
        return self._fallback().k_refutes(prefix, f)

    def _reached(self, index: PremiseIndex, f: Formula) -> dict[str, None]:
        keys: dict[str, None] = {}
        index.reach(atoms(f), keys)
        return keys

    def knowledge(self, prefix: _Prefix, f: Formula) -> list[Item]:
        """The knowledge linked to f through shared atoms (the prefix and the background
        link too), in the order of the full knowledge: only these can take part in a
        contradiction of f."""
        if self._listed is not None:
            return self._listed.knowledge(prefix, f)
        known = self.known
        keys = [k for k in self._reached(known.knowledge, f) if not k.startswith(_PREFIX)]
        keys.sort(key=known.knowledge_order)
        return [known.knowledge_item(k) for k in keys]

    def k_candidates(self, prefix: _Prefix, f: Formula) -> list[tuple[Item, Formula]]:
        if self._listed is not None:
            return self._listed.k_candidates(prefix, f)
        known = self.known
        keys = self._reached(known.knowledge, f)
        standing = [
            prefix.entries[k[len(_PREFIX) :]] for k in keys if k.startswith(_PREFIX)
        ]
        standing.sort(key=lambda e: prefix.order[e[0].id])
        stored = [k for k in keys if not k.startswith(_PREFIX)]
        stored.sort(key=known.knowledge_order)
        return [*standing, *((k, k.formula) for k in map(known.knowledge_item, stored))]

    def w_extends(self, f: Formula) -> bool:
        if self._listed is not None:
            return self._listed.w_extends(f)
        return _extends(self.known.content.model(), f)

    def w_refutes(self, prefix: _Prefix, f: Formula) -> Result:
        if self._listed is None:
            res = self.known.content.satisfiable_with(f)
            if not res.unknown:
                return Result(Verdict.FAILS) if res.holds else Result(Verdict.HOLDS)
        return self._fallback().w_refutes(prefix, f)

    def w_candidates(self, prefix: _Prefix, f: Formula) -> list[tuple[Item, Formula]]:
        if self._listed is not None:
            return self._listed.w_candidates(prefix, f)
        known = self.known
        keys = self._reached(known.content, f)
        standing = [prefix.entries[k] for k in keys if k in prefix]
        standing.sort(key=lambda e: prefix.order[e[0].id])
        window = [k for k in keys if k not in prefix]
        window.sort(key=known.position)
        out = list(standing)
        for k in window:
            real = known.real(k)
            assert real is not None
            out.append((real, real.formula))
        return out

    def exclude(self, ids: Sequence[str]) -> None:
        self._excluded.update(ids)
        if self._listed is not None:
            self._listed.exclude(ids)
        for item_id in ids:
            self.known.content.remove(item_id)
            key = self._keys.pop(item_id, None)
            if key is not None:
                self.known.knowledge.remove(key)

    def supersede(self, source: str) -> None:
        self._superseded.add(source)
        if self._listed is not None:
            self._listed.supersede(source)
        _drop_runs(self.ctx, self.known, source)

    def rest_satisfiable(self, prefix: _Prefix, it: Item, f: Formula, excluded: list[str]) -> bool:
        if self._listed is None:
            if it.id in excluded:
                # the rest is part of what was consistent: the model still holds it
                return self.known.content.model() is not None or (
                    self._fallback().rest_satisfiable(prefix, it, f, excluded)
                )
            res = self.known.content.satisfiable_with(f)
            if not res.unknown:
                return res.holds
        return self._fallback().rest_satisfiable(prefix, it, f, excluded)

    def added(self, it: Item, f: Formula) -> None:
        if self._listed is not None:
            return
        self.known.content.add(it.id, it.id, f)
        if self.k_active:
            key = self._keys[it.id] = _PREFIX + it.id
            self.known.knowledge.add(key, it.id, f)

    def removed(self, entries: Sequence[tuple[Item, Formula]]) -> None:
        self.exclude([p.id for p, _ in entries])

    def finish(self) -> None:
        for key in self._keys.values():
            self.known.knowledge.remove(key)
        self._keys.clear()


def _consistency(ctx: RewriteContext, appended: tuple[Item, ...]) -> None:
    """CP003 (re-adoption, re-runs) and CP004 (inconsistent append), item by item in order.

    Each appended item is asked against the knowledge (CP003) and the window's
    content (CP004) together with the append's earlier items still standing.
    The premises are read from the indexes the session keeps when they are
    consistent (:class:`_Indexed`), else from the windows (:class:`_Listed`);
    both give the same answers.
    """
    prem: _Indexed | _Listed | None = _Indexed.start(ctx, appended)
    if prem is None:
        prem = _Listed(ctx, appended)
    asked = False
    prefix = _Prefix()
    for it in appended:
        real = ctx.after.resolve(it.id) if it.kind == "stub" else it
        if real is None:
            continue
        if real.kind == "observation" and real.source is not None:
            # a later run of the same source supersedes the earlier ones from here on: the
            # append's and the window's (the append's earlier items were asked beside them)
            prem.removed(prefix.remove(prefix.of_source(real.source)))
            prem.supersede(real.source)
        if it.kind != "stub" and prem.k_holds and (rerun := _reruns(ctx, it)):
            ctx.report(
                "CP003",
                [it.id, *rerun],
                f"{it.id!r} re-runs {it.source!r}, whose failed result {cite(rerun)} a rewrite"
                " evicted without a stub; restore that record instead of trying again",
            )
        f = real.formula
        if is_true(f):
            continue
        if not asked:
            asked = True
            prem.vacuity()
        alone = prem.alone(f)
        if alone.unknown:
            ctx.unknown(f"consistency of {it.id!r}", alone)
            continue
        if alone.fails:
            # unsatisfiable by itself, or only with the background: say which
            what = "contradicts the background" if extend_model({}, f, 12) else "is unsatisfiable"
            ctx.report(
                "CP004",
                [it.id],
                f"{it.id!r} ({show(f)}) {what} on its own: it can contradict no"
                " commitment, and it is no premise from now on; correct it",
            )
            ctx.newly_excluded.append(it.id)
            continue
        if prem.k_active and not prem.k_extends(f):
            res = prem.k_refutes(prefix, f)
            if res.unknown:
                ctx.unknown(f"re-adoption by {it.id!r}", res)
                continue
            if res.holds:
                excluded = _readoption(ctx, it, f, prefix, prem)
                if excluded is not None:
                    prem.removed(prefix.remove(excluded))
                    continue
        if prem.w_active and not prem.w_extends(f):
            res = prem.w_refutes(prefix, f)
            if res.unknown:
                ctx.unknown(f"consistency of {it.id!r}", res)
                continue
            if res.holds:
                if _inconsistent(ctx, it, f, prefix, prem):
                    prefix.add(it, f)
                    prem.added(it, f)
                continue
        prefix.add(it, f)
        prem.added(it, f)
    prem.finish()
    known = ctx.history.window_knowledge
    if known is not None and known.items is ctx.before.items:
        if isinstance(prem, _Listed):
            # the lists took the superseded runs out of their own premises only
            for src in {it.source for it in appended if it.kind == "observation" and it.source}:
                _drop_runs(ctx, known, src)
        known.appended(ctx.after, appended, set(ctx.newly_excluded))


def _drop_runs(ctx: RewriteContext, known: WindowKnowledge, source: str) -> None:
    """The window's earlier runs of ``source`` are no part of its content from now on."""
    for key in ctx.history.by_source.get(source, ()):
        known.drop_observation(key)


def _extends(model: dict[str, bool] | None, f: Formula) -> bool:
    """Can the model be extended over the atoms of f it does not assign to satisfy f?

    On success the model is extended in place. It assigns the atoms of the
    background, the premises and the items it was extended to, so the new
    values change nothing it already satisfies.
    """
    return model is not None and extend_model(model, f)


def _readoption(
    ctx: RewriteContext,
    it: Item,
    f: Formula,
    prefix: _Prefix,
    prem: _Indexed | _Listed,
) -> list[str] | None:
    """Report CP003 for an item that contradicts the knowledge (with the append's earlier
    items); returns the ids it excludes, None when no commitment takes part (that is
    CP004's)."""
    knowledge = prem.knowledge(prefix, f)
    own = [k for k in knowledge if ctx.session.entails([k.formula], Not(f), [k.id]).holds]
    if own:
        named = list(dict.fromkeys(k.id for k in own))
        others: list[str] = []
    else:
        core = _core(ctx, it, f, prem.k_candidates(prefix, f))
        if core is None or not any(c.kind == "commitment" and c in knowledge for c in core):
            return None
        others = [c.id for c in core if c.id in prefix]
        named = list(dict.fromkeys(c.id for c in core if c.id not in prefix))
    together = f" together with {cite(others)}" if others else ""
    ctx.report(
        "CP003",
        list(dict.fromkeys([it.id, *others, *named])),  # an id once (its stored version too)
        f"{it.id!r} ({show(f)}){together} contradicts what the session committed to"
        f" ({cite(named)}); drop it, or revise the commitment explicitly",
    )
    excluded = [it.id, *others]
    ctx.newly_excluded.extend(excluded)
    return excluded


def _inconsistent(
    ctx: RewriteContext,
    it: Item,
    f: Formula,
    prefix: _Prefix,
    prem: _Indexed | _Listed,
) -> bool:
    """Report CP004 for an item that makes the window's content unsatisfiable.

    The exclusions are applied to the premises and the prefix; returns whether
    the item itself still stands.
    """
    core = _core(ctx, it, f, prem.w_candidates(prefix, f)) or []
    in_prefix = [c for c in core if prefix.holds(c)]
    appended = [*in_prefix, it]
    # the core lists the prefix's items first, then the window's in window order
    others = [c for c in core if not prefix.holds(c)]
    claims = [c.id for c in (*appended, *others) if _kind(ctx, c) == "claim"]
    excluded = list(claims) if claims else [a.id for a in appended]
    prem.exclude(excluded)
    more: list[str] = []
    if claims and not prem.rest_satisfiable(prefix, it, f, excluded):
        more = [a.id for a in appended if a.id not in excluded]
        excluded += more
        prem.exclude(more)
    names = cite(a.id for a in appended)
    verb = "contradicts" if len(appended) == 1 else "contradict"
    if others:
        against = f" {verb} {cite(o.id for o in others)}"
    elif len(appended) > 1:
        against = " contradict each other"
    else:  # no core was found (the solver could not tell): the content as a whole
        against = " contradicts the window's content"
    if claims:
        many = len(claims) > 1
        advice = (
            f"the claim{'s' if many else ''} {cite(claims)} {'are' if many else 'is'} stale and"
            f" no premise from now on; re-derive or drop {'them' if many else 'it'}"
        )
        if more:  # the content is unsatisfiable without the claims too
            them = "them" if len(more) > 1 else "it"
            advice += (
                f"; {cite(more)} {'are' if len(more) > 1 else 'is'} no premise either:"
                f" the window contradicts {them} without the claim{'s' if many else ''} too;"
                f" correct {them}"
            )
    else:
        advice = "what was appended is no premise from now on; correct it"
    ctx.report(
        "CP004",
        [*(a.id for a in appended), *(o.id for o in others)],
        f"{names}{against}: the window's content is unsatisfiable; {advice}",
    )
    ctx.newly_excluded.extend(excluded)
    prem.removed(prefix.remove(excluded))
    return it.id not in excluded


def _kind(ctx: RewriteContext, it: Item) -> str:
    """The kind of what an item states: an appended stub is the item it stands for."""
    if it.kind != "stub":
        return it.kind
    real = ctx.after.resolve(it.id)
    return real.kind if real is not None else it.kind


def _has_cycle(edges: dict[str, tuple[str, ...]]) -> bool:
    """Does the citation graph hold a cycle? (Kahn's algorithm: no node left over.)"""
    indegree: dict[str, int] = dict.fromkeys(edges, 0)
    for targets in edges.values():
        for v in targets:
            indegree[v] = indegree.get(v, 0) + 1
    ready = [n for n, d in indegree.items() if d == 0]
    removed = 0
    while ready:
        n = ready.pop()
        removed += 1
        for v in edges.get(n, ()):
            indegree[v] -= 1
            if indegree[v] == 0:
                ready.append(v)
    return removed < len(indegree)


def check_cycles(ctx: RewriteContext, touched: Iterable[Item]) -> None:
    """CP002: a justification cycle through a touched item with no primitive under it."""
    start = [it.id for it in touched]
    edges: dict[str, tuple[str, ...]] = {}
    stack = list(start)
    while stack:
        cur = stack.pop()
        if cur in edges:
            continue
        it = ctx.seen_version(ctx.after, cur)
        edges[cur] = () if it is None else (*it.witnesses, *it.derived_from, *it.rationale)
        stack.extend(edges[cur])
    if not _has_cycle(edges):
        return  # the common case, settled without building a graph
    import networkx as nx

    graph: nx.DiGraph[str] = nx.DiGraph()
    graph.add_edges_from((u, v) for u, vs in edges.items() for v in vs)
    for comp in nx.strongly_connected_components(graph):
        if len(comp) == 1:
            (only,) = comp
            if not graph.has_edge(only, only):
                continue
        key = frozenset(comp)
        if key in ctx.history.cycles or not key & set(start):
            continue
        below = set(comp)
        for node in comp:
            below |= nx.descendants(graph, node)
        if any(
            (v := ctx.seen_version(ctx.after, n)) is not None and v.kind == "observation"
            for n in below
        ):
            continue
        ctx.history.cycles.add(key)
        if len(comp) == 1:
            (only,) = comp
            self_cited = ctx.seen_version(ctx.after, only)
            fields = [
                name
                for name, ids in (
                    ("rationale", self_cited.rationale if self_cited else ()),
                    ("witness", self_cited.witnesses if self_cited else ()),
                    ("derived_from", self_cited.derived_from if self_cited else ()),
                )
                if only in ids
            ]
            message = (
                f"{only!r} cites itself ({', '.join(fields) or 'justification'}), so nothing"
                " outside it backs it; drop the self-citation and cite what it rests on"
            )
        else:
            message = (
                f"{cite(sorted(comp))} justify each other in a cycle with no observation under"
                " it; ground one of them in a primitive"
            )
        ctx.report("CP002", sorted(comp), message)
