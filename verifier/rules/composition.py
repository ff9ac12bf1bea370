"""Composition over a trace: CP001–CP004 (docs/rules.md).

Per-pass correctness "is not closed under composition": these rules look at
what an append uses and contradicts, given everything the session kept.
"""

from __future__ import annotations

from collections.abc import Iterable

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
from verifier.graph import why
from verifier.rules.context import RewriteContext, cite, show
from verifier.solver import Result, UnionFind, Verdict
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


def _version(ctx: RewriteContext, item_id: str) -> Item | None:
    """The version of an id the session knows now: window, store, or last seen."""
    it = ctx.after.resolve(item_id)
    if it is None:
        it = ctx.store.latest(item_id)
    if it is None:
        it = ctx.history.last_seen.get(item_id)
    return it


def _cp001(ctx: RewriteContext, appended: tuple[Item, ...]) -> dict[str, list[str]]:
    """CP001 for every (used, user) pair of the append; returns user -> used ids reported."""
    named: dict[str, list[str]] = {}
    graph = ctx.graph
    if graph is None:
        return named  # composition needs the session's graph: only audits have one
    for it in appended:
        uses = dict.fromkeys((*it.rationale, *it.witnesses, *it.derived_from))
        for used_id in uses:
            if used_id == it.id:
                continue  # an item citing itself is a cycle (CP002), not a use
            used = _version(ctx, used_id)
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
    return ctx.session.satisfiable([f])


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
    ctx: RewriteContext, fixed: Formula, candidates: list[tuple[Item, Formula]]
) -> list[Item] | None:
    """A minimal core with fixed, by deletion in the candidates' order; None if undecided."""
    near = _connected(ctx, fixed, candidates)
    labeled = [(str(i), f) for i, (_, f) in enumerate(near)]
    core = ctx.session.minimal_core(labeled, [fixed])
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


def _consistency(ctx: RewriteContext, appended: tuple[Item, ...]) -> None:
    """CP003 (re-adoption, re-runs) and CP004 (inconsistent append), item by item in order.

    Each appended item is asked against the knowledge (CP003) and the window's
    content (CP004) together with the append's earlier items still standing.
    """
    session = ctx.session
    history = ctx.history
    # the knowledge: the window's commitments, then the store's (an index kept across events)
    stored = ctx.store_knowledge()
    in_window = _window_commitments(ctx)
    has_knowledge = bool(in_window) or len(stored) > 0
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
    known = session.premises(
        [*(k.formula for k in in_window), *(f for _, f in near)],
        [*(k.id for k in in_window), *(label for label, _ in near)],
    )
    k_state = known.consistent()
    # the window's content, with this append's supersessions applied
    gone: set[str] = set(history.superseded)
    for src in {it.source for it in appended if it.kind == "observation" and it.source}:
        gone |= history.by_source.get(src, set())
    window = ctx.before.content(ctx.excluded, gone)
    content = session.premises([f for _, f in window], [it.id for it, _ in window])
    w_state = content.consistent()
    asked = False
    prefix: list[tuple[Item, Formula]] = []
    # models of the premises and of the append's standing items so far: an item that one
    # extends to satisfies it is consistent with them, with no solver call
    k_model = known.model() if k_state.holds else None
    w_model = content.model() if w_state.holds else None
    for it in appended:
        real = ctx.after.resolve(it.id) if it.kind == "stub" else it
        if real is None:
            continue
        if real.kind == "observation" and real.source is not None:
            # a later run of the same source supersedes the earlier ones of this append
            prefix = [
                (p, f) for p, f in prefix if p.kind != "observation" or p.source != real.source
            ]
        if it.kind != "stub" and k_state.holds and (rerun := _reruns(ctx, it)):
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
            # nothing is reported against premises that are themselves unsatisfiable: every
            # question would hold vacuously
            if not k_state.holds and has_knowledge:
                why_k = known.vacuous() if k_state.fails else k_state
                ctx.unknown("the knowledge CP003 reads", why_k)
            if not w_state.holds:
                why_w = content.vacuous() if w_state.fails else w_state
                ctx.unknown("the window's content", why_w)
        alone = _alone(ctx, f)
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
        together = conj([*(g for _, g in prefix), f])
        if k_state.holds and has_knowledge and not _extends(k_model, f):
            k_model = None  # the solver is asked from here on in this append
            res = known.entails(Not(together))
            if res.unknown:
                ctx.unknown(f"re-adoption by {it.id!r}", res)
                continue
            if res.holds and _readoption(ctx, it, f, prefix, _knowledge(ctx)):
                prefix = [(p, g) for p, g in prefix if p.id not in ctx.newly_excluded]
                continue
        if w_state.holds and not _extends(w_model, f):
            w_model = None
            res = content.entails(Not(together))
            if res.unknown:
                ctx.unknown(f"consistency of {it.id!r}", res)
                continue
            if res.holds:
                window, prefix = _inconsistent(ctx, it, f, prefix, window)
                content = session.premises([g for _, g in window], [w.id for w, _ in window])
                continue
        prefix.append((it, f))


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
    prefix: list[tuple[Item, Formula]],
    knowledge: list[Item],
) -> bool:
    """Report CP003 for an item that contradicts the knowledge (with the append's earlier
    items); False when no commitment takes part (that is CP004's)."""
    own = [k for k in knowledge if ctx.session.entails([k.formula], Not(f), [k.id]).holds]
    if own:
        named = list(dict.fromkeys(k.id for k in own))
        others: list[str] = []
    else:
        core = _core(ctx, f, [*prefix, *((k, k.formula) for k in knowledge)])
        if core is None or not any(c.kind == "commitment" and c in knowledge for c in core):
            return False
        in_prefix = {p.id for p, _ in prefix}
        others = [c.id for c in core if c.id in in_prefix]
        named = list(dict.fromkeys(c.id for c in core if c.id not in in_prefix))
    together = f" together with {cite(others)}" if others else ""
    ctx.report(
        "CP003",
        [it.id, *others, *named],
        f"{it.id!r} ({show(f)}){together} contradicts what the session committed to"
        f" ({cite(named)}); drop it, or revise the commitment explicitly",
    )
    ctx.newly_excluded.extend([it.id, *others])
    return True


def _inconsistent(
    ctx: RewriteContext,
    it: Item,
    f: Formula,
    prefix: list[tuple[Item, Formula]],
    window: list[tuple[Item, Formula]],
) -> tuple[list[tuple[Item, Formula]], list[tuple[Item, Formula]]]:
    """Report CP004 for an item that makes the window's content unsatisfiable.

    Returns the window content and the append's standing items once the
    exclusions are applied.
    """
    core = _core(ctx, f, [*prefix, *window]) or []
    in_prefix = [p for p, _ in prefix if p in core]
    appended = [*in_prefix, it]
    others = [w for w, _ in window if w in core]
    claims = [c.id for c in (*appended, *others) if c.kind == "claim"]
    excluded = list(claims) if claims else [a.id for a in appended]
    rest = [(p, g) for p, g in [*window, *prefix, (it, f)] if p.id not in excluded]
    if claims and not ctx.session.satisfiable([g for _, g in rest]).holds:
        excluded += [a.id for a in appended if a.id not in excluded]
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
    else:
        advice = "what was appended is no premise from now on; correct it"
    ctx.report(
        "CP004",
        [*(a.id for a in appended), *(o.id for o in others)],
        f"{names}{against}: the window's content is unsatisfiable; {advice}",
    )
    ctx.newly_excluded.extend(excluded)
    window = [(w, g) for w, g in window if w.id not in excluded]
    prefix = [(p, g) for p, g in prefix if p.id not in excluded]
    if it.id not in excluded:
        prefix.append((it, f))
    return window, prefix


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
        it = _version(ctx, cur)
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
        if any((v := _version(ctx, n)) is not None and v.kind == "observation" for n in below):
            continue
        ctx.history.cycles.add(key)
        if len(comp) == 1:
            (only,) = comp
            self_cited = _version(ctx, only)
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
