"""Composition over a trace: CP001–CP003 (SPEC §4).

Per-pass correctness "is not closed under composition": these rules look at
what an append uses and contradicts, given everything the session kept.
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from verifier.formula import FALSE, Atom, Const, Not, atoms, conj
from verifier.graph import why
from verifier.rules.context import RewriteContext, cite, show
from verifier.window import WITNESSED, Item

__all__ = ["check_append", "check_cycles"]


def check_append(ctx: RewriteContext, appended: tuple[Item, ...]) -> None:
    """CP001, CP003 and WR005 for the items of one append."""
    from verifier.rules.witnesses import check_item_witnesses

    for it in appended:
        if it.kind in ("commitment", "claim"):
            check_item_witnesses(ctx, it, ctx.after)
        if it.kind == "stub":
            from verifier.rules.witnesses import _wr006

            _wr006(ctx, it)
    _cp001(ctx, appended)
    _cp003(ctx, appended)
    check_cycles(ctx, appended)


def _version(ctx: RewriteContext, item_id: str) -> Item | None:
    """The version of an id the session knows now: window, store, or last seen."""
    it = ctx.after.resolve(item_id)
    if it is None:
        it = ctx.store.latest(item_id)
    if it is None:
        it = ctx.history.last_seen.get(item_id)
    return it


def _cp001(ctx: RewriteContext, appended: tuple[Item, ...]) -> None:
    graph = ctx.graph
    if graph is None:
        return  # composition needs the session's graph: only audits have one
    new_ids = {it.id for it in appended}
    for it in appended:
        for used_id in (*it.rationale, *it.witnesses, *it.derived_from):
            if used_id in new_ids:
                continue
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
            ctx.report(
                "CP001",
                [used_id, it.id],
                f"{it.id!r} uses {used_id!r}, which says {used.modality!r} but has no path to a"
                f" retained primitive: {where}; re-derive it from a new observation or treat it"
                " as unwitnessed",
            )


def _knowledge(ctx: RewriteContext) -> list[Item]:
    """The window's commitments (stubs resolved) and every commitment version stored."""
    out: dict[str, Item] = {}
    readopted = ctx.history.readopted
    for it in ctx.before.items:
        real = ctx.before.resolve(it.id)
        if real is not None and real.kind == "commitment" and real.id not in readopted:
            out[real.raw] = real
    for real in ctx.store.items():
        if real.kind == "commitment" and real.id not in readopted:
            out[real.raw] = real
    return list(out.values())


def _satisfiable_alone(ctx: RewriteContext, item: Item) -> bool:
    f = item.formula
    if isinstance(f, Atom | Const) and f != FALSE:
        return True
    if isinstance(f, Not) and isinstance(f.arg, Atom):
        return True
    return ctx.session.satisfiable([f]).holds


def _cp003(ctx: RewriteContext, appended: tuple[Item, ...]) -> None:
    knowledge = _knowledge(ctx)
    formulas = [k.formula for k in knowledge]
    # an item sharing no atom with the knowledge or the background contradicts it only
    # if it is unsatisfiable by itself
    linked: set[str] = set(ctx.session.bg_atom_set)
    for f in formulas:
        linked |= atoms(f)
    reruns = [
        it
        for it in appended
        if it.kind == "observation" and it.source in ctx.history.evicted_failed_sources
    ]
    candidates = [
        it
        for it in appended
        if it.kind != "stub"
        and it not in reruns
        and it.id not in ctx.history.readopted
        and (atoms(it.formula) & linked or not _satisfiable_alone(ctx, it))
    ]
    if not reruns and not (candidates and knowledge):
        return
    premises = ctx.session.premises(formulas)
    consistent = premises.consistent()
    if consistent.unknown:
        ctx.unknown("knowledge before the append", consistent)
        return
    if consistent.fails:
        return  # nothing is reported while the knowledge itself is unsatisfiable
    for it in reruns:
        if it.source is not None:
            old = ctx.history.evicted_failed_sources[it.source]
            if old is not None:
                ctx.report(
                    "CP003",
                    [it.id],
                    f"{it.id!r} re-runs {it.source!r}, whose failed result {old!r} a rewrite"
                    " evicted without a stub; restore that record instead of trying again",
                )
                ctx.history.readopted.add(it.id)
    if not candidates or not knowledge:
        return
    hits: list[Item] = []
    for it in candidates:
        res = premises.entails(Not(it.formula))
        if res.unknown:
            ctx.unknown(f"re-adoption by {it.id!r}", res)
        elif res.holds:
            hits.append(it)
    if not hits and len(candidates) > 1:
        joint = premises.entails(Not(conj([it.formula for it in candidates])))
        if joint.holds:
            hits = candidates
    for it in hits:
        against = _contradicted(ctx, knowledge, it)
        ctx.report(
            "CP003",
            [it.id],
            f"{it.id!r} ({show(it.formula)}) contradicts what the session committed to"
            f"{' (' + cite(against) + ')' if against else ''}; drop it, or revise the"
            " commitment explicitly",
        )
        ctx.history.readopted.add(it.id)


def _contradicted(ctx: RewriteContext, knowledge: list[Item], item: Item) -> list[str]:
    """The commitments that, each with the background, rule the item out."""
    out: list[str] = []
    for k in knowledge:
        if ctx.session.entails([k.formula], Not(item.formula)).holds and k.id not in out:
            out.append(k.id)
    return sorted(out)


def check_cycles(ctx: RewriteContext, touched: Iterable[Item]) -> None:
    """CP002: a justification cycle through a touched item with no primitive under it."""
    graph: nx.DiGraph[str] = nx.DiGraph()
    start = [it.id for it in touched]
    stack = list(start)
    seen: set[str] = set()
    while stack:
        cur = stack.pop()
        if cur in seen:
            continue
        seen.add(cur)
        it = _version(ctx, cur)
        if it is None:
            continue
        for nxt in (*it.witnesses, *it.derived_from, *it.rationale):
            graph.add_edge(cur, nxt)
            stack.append(nxt)
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
        ctx.report(
            "CP002",
            sorted(comp),
            f"{cite(sorted(comp))} justify each other in a cycle with no observation under it;"
            " ground one of them in a primitive",
        )
