"""Commitment fidelity: CF001–CF007 (SPEC §4).

"Prune prose, never prune commitments; and never let the pruner certify its
own output." Each rule is a function of the rewrite context that reports its
findings there.
"""

from __future__ import annotations

from verifier.formula import Formula
from verifier.rules.context import RewriteContext, WindowView, cite, preserved, show
from verifier.solver import Result
from verifier.window import Item

__all__ = ["bound", "check_commitments", "valid_merges"]


def bound(ctx: RewriteContext, item: Item, view: WindowView) -> bool:
    """A commitment, or a claim that is load-bearing or negative-result."""
    if item.kind == "commitment":
        return True
    return item.kind == "claim" and (item.load_bearing or ctx.negative(item, view))


def _covered_version(ctx: RewriteContext, cid: str) -> Item | None:
    old = ctx.before.resolve(cid)
    if old is None:
        old = ctx.store.latest(cid)
    return old


def _merge_problem(ctx: RewriteContext, merged: Item) -> tuple[str, Result | None] | None:
    """Why a merge is invalid, or None when it is valid (or undecided)."""
    covered: list[Formula] = []
    for cid in merged.covers:
        old = _covered_version(ctx, cid)
        if old is None:
            return (f"covers {cid!r}, which is neither in the window before nor in the store", None)
        covered.append(old.formula)
    for cid, f in zip(merged.covers, covered, strict=True):
        res = ctx.session.entails([merged.formula], f)
        if res.unknown:
            ctx.unknown(f"merge {merged.id!r}", res)
            return None
        if res.fails:
            return (f"does not entail the covered {cid!r} ({show(f)})", res)
    res = ctx.session.entails(covered, merged.formula)
    if res.unknown:
        ctx.unknown(f"merge {merged.id!r}", res)
        return None
    if res.fails:
        return (f"asserts more than the conjunction of {cite(merged.covers)}", res)
    return None


def valid_merges(ctx: RewriteContext) -> set[str]:
    """Ids that a valid ``covers`` merge in after carries (CF007 reports the others)."""
    carried: set[str] = set()
    changed = {it.id for it in ctx.changed()}
    for it in ctx.after.items:
        real = ctx.after.resolve(it.id)
        if real is None or real.kind != "commitment" or not real.covers:
            continue
        problem = _merge_problem(ctx, real)
        if problem is None:
            carried.update(real.covers)
        elif it.id in changed:
            text, res = problem
            ctx.report(
                "CF007",
                [real.id],
                f"merge {real.id!r} {text}; make it equivalent to the conjunction of what it"
                " covers, or keep the covered commitments",
                res,
            )
    return carried


def check_commitments(ctx: RewriteContext) -> None:
    """Run CF001–CF007 on one rewrite."""
    merged = valid_merges(ctx)
    _cf001_to_003(ctx, merged)
    _cf004(ctx)
    _cf005(ctx)
    _cf006(ctx)


def _cf001_to_003(ctx: RewriteContext, merged: set[str]) -> None:
    for entry in ctx.before.items:
        # a stub stands for the item the store holds: that is the version to compare
        old = ctx.before.resolve(entry.id)
        if old is None or not bound(ctx, old, ctx.before):
            continue
        if entry.id not in ctx.after and entry.kind == "stub":
            continue  # the store holds it: a record exists
        if old.id not in ctx.after:
            if old.id in merged or ctx.store.has_id(old.id):
                continue
            ctx.report(
                "CF001",
                [old.id],
                f"{old.kind} {old.id!r} was dropped with no store record; spill it to the store"
                " and leave a stub, or keep it",
            )
            continue
        new = ctx.after.resolve(old.id)
        if new is None or new.raw == old.raw:
            continue  # an unresolvable stub is WR006's
        if new.formula == old.formula:
            continue
        stronger = ctx.session.entails([old.formula], new.formula)
        if stronger.unknown:
            ctx.unknown(f"formula of {old.id!r}", stronger)
            continue
        if stronger.fails:
            ctx.report(
                "CF002",
                [old.id],
                f"{old.id!r} now says {show(new.formula)}, which {show(old.formula)} does not"
                " entail; keep the committed formula or weaken it",
                stronger,
            )
            continue
        if old.ref in ctx.store:
            continue  # weaker or equivalent, the original is recorded: nothing to report
        weaker = ctx.session.entails([new.formula], old.formula)
        if weaker.unknown:
            ctx.unknown(f"formula of {old.id!r}", weaker)
            continue
        if weaker.fails:
            ctx.report(
                "CF003",
                [old.id],
                f"{old.id!r} was weakened from {show(old.formula)} to {show(new.formula)}"
                " and the original is not in the store; spill the original first",
                weaker,
            )


def _orphaned(ctx: RewriteContext, view: WindowView, rid: str) -> bool:
    return rid not in view and not ctx.store.has_id(rid)


def _cf004(ctx: RewriteContext) -> None:
    for stub_or_item in ctx.after.items:
        it = ctx.after.resolve(stub_or_item.id)
        if it is None or it.kind != "commitment":
            continue
        old = ctx.before.resolve(it.id)
        cited = list(it.rationale)
        if old is not None and old.kind == "commitment":
            # a rationale the before version cited counts too: dropping the citation
            # together with the item loses the reason just the same
            cited += [r for r in old.rationale if r not in it.rationale]
        for rid in cited:
            if not _orphaned(ctx, ctx.after, rid):
                continue
            was = old is not None and old.kind == "commitment" and _orphaned(ctx, ctx.before, rid)
            if was:
                continue  # orphaned at an earlier event: reported there, not again
            ctx.report(
                "CF004",
                [it.id, rid],
                f"commitment {it.id!r} cites rationale {rid!r}, which is no longer in the window"
                " or the store; keep it, or spill it and leave a stub",
            )


def _cf005(ctx: RewriteContext) -> None:
    changed = [it for it in ctx.changed() if it.kind in ("commitment", "claim", "observation")]
    if not changed:
        return
    # entailment is monotone: most goals follow from the window alone, and only the
    # others are asked again with the whole store added
    window = ctx.session.premises(ctx.before.content())
    everything = None
    for it in changed:
        goal = it.formula
        res = window.entails(goal)
        if not res.holds:
            if everything is None:
                store = [s.formula for s in ctx.store.items()]
                everything = ctx.session.premises(ctx.before.content() + store)
            res = everything.entails(goal)
        if res.unknown:
            ctx.unknown(f"content of {it.id!r}", res)
        elif res.fails:
            ctx.report(
                "CF005",
                [it.id],
                f"{it.id!r} asserts {show(goal)}, which the window before, the store and the"
                " background do not entail; remove it or restore what supports it",
                res,
            )


def _cf006(ctx: RewriteContext) -> None:
    for cid in ctx.claimed_preserved or ():
        old = ctx.before.get(cid)
        new = ctx.after.get(cid)
        if new is None:
            ctx.report(
                "CF006",
                [cid],
                f"the rewrite claims to preserve {cid!r}, which is missing from the new window;"
                " correct claimed_preserved or keep the item",
            )
            continue
        if not preserved(ctx.before, ctx.after, cid):
            what = "is new" if old is None else "was altered"
            ctx.report(
                "CF006",
                [cid],
                f"the rewrite claims to preserve {cid!r}, which {what}; the rewriter is not its"
                " own auditor: correct claimed_preserved",
            )
