"""Commitment fidelity: CF001–CF007 (docs/rules.md).

"Prune prose, never prune commitments; and never let the pruner certify its
own output." Each rule is a function of the rewrite context that reports its
findings there.
"""

from __future__ import annotations

from collections.abc import Container

from verifier.formula import Atom, atoms
from verifier.rules.context import (
    ReadWhole,
    RewriteContext,
    WindowView,
    cite,
    preserved,
    show,
)
from verifier.solver import PremiseIndex, Result
from verifier.window import Item

__all__ = ["bound", "check_commitments"]


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


def _merge_problem(
    ctx: RewriteContext, merged: Item
) -> tuple[str, list[str], Result | None] | Result | None:
    """Why a merge is invalid and the covered ids that reason names; None when it is
    valid, the solver's Result when undecided."""
    covered: list[Item] = []
    for cid in merged.covers:
        old = _covered_version(ctx, cid)
        if old is None:
            return (
                f"covers {cid!r}, which is neither in the window before nor in the store",
                [cid],
                None,
            )
        if old.kind != merged.kind:
            kinds = f"a {merged.kind} merges {merged.kind}s only"
            return (f"covers {cid!r}, a {old.kind}: {kinds}", [cid], None)
        covered.append(old)
    vacuous: Result | None = None
    for old in covered:
        res = ctx.session.entails([merged.formula], old.formula, [merged.id])
        if res.vacuous:
            # the merge contradicts itself (or the background): it entails everything, and
            # it asserts more than the covered items whenever they are consistent
            vacuous = res
            break
        if res.unknown:
            return res
        if res.fails:
            return (f"does not entail the covered {old.id!r} ({show(old.formula)})", [old.id], res)
    premises = [old for old in covered if old.id not in ctx.excluded]
    res = ctx.session.entails(
        [old.formula for old in premises], merged.formula, [old.id for old in premises]
    )
    if res.unknown:
        return vacuous or res
    if res.fails:
        return (
            f"asserts more than the conjunction of {cite(merged.covers)}",
            list(dict.fromkeys(merged.covers)),
            res,
        )
    return vacuous


class _Merges:
    """The merges (``covers``) of after, each judged once, on demand.

    A changed merge is always judged (CF007). An unchanged one is judged only
    when a dropped item needs it (CF001): a question nobody asks cannot leave
    the rewrite undecided.
    """

    def __init__(self, ctx: RewriteContext) -> None:
        self.ctx = ctx
        self.merges: list[Item] = []
        for _, real in ctx.after.resolved():
            if real is not None and real.kind in ("commitment", "claim") and real.covers:
                self.merges.append(real)
        self._judged: dict[str, bool | None] = {}
        self._changed: set[str] | None = None

    def valid(self, merged: Item) -> bool | None:
        """Is the merge valid? None: the solver could not tell (the rewrite is undecided)."""
        if merged.id in self._judged:
            return self._judged[merged.id]
        ctx = self.ctx
        problem = _merge_problem(ctx, merged)
        ok: bool | None
        if isinstance(problem, Result):
            ctx.unknown(f"merge {merged.id!r}", problem, merged.id)
            ok = None
        elif problem is None:
            ok = True
        else:
            ok = False
            if merged.id in self.changed_ids():
                text, named, res = problem
                ctx.report(
                    "CF007",
                    [merged.id, *named],
                    f"merge {merged.id!r} {text}; make it equivalent to the conjunction of the"
                    f" {merged.kind}s it covers, or keep the covered items",
                    res,
                )
        self._judged[merged.id] = ok
        return ok

    def changed_ids(self) -> set[str]:
        """The ids of after's changed items, less a merge now behind a stub that resolves
        to the very version the window held (spilled and stubbed: nothing to judge)."""
        if self._changed is None:
            ctx = self.ctx
            out: set[str] = set()
            for it in ctx.changed():
                if it.kind == "stub":
                    real, old = ctx.after.resolve(it.id), ctx.before.resolve(it.id)
                    if real is not None and old is not None and real.same_version(old):
                        continue
                out.add(it.id)
            self._changed = out
        return self._changed

    def judge_changed(self) -> None:
        changed = self.changed_ids()
        for merged in self.merges:
            if merged.id in changed:
                self.valid(merged)

    def carries(self, item_id: str) -> bool | None:
        """Does a valid merge in after cover this id? None: none does that the solver could
        judge, and one it could not judge covers it (no finding can be asserted)."""
        unknown = False
        for m in self.merges:
            if item_id in m.covers:
                ok = self.valid(m)
                if ok:
                    return True
                unknown = unknown or ok is None
        return None if unknown else False


def check_commitments(ctx: RewriteContext) -> None:
    """Run CF001–CF007 on one rewrite."""
    merges = _Merges(ctx)
    merges.judge_changed()
    _cf001_to_003(ctx, merges)
    _cf004(ctx, merges)
    _cf005(ctx)
    _cf006(ctx)


def _cf001_to_003(ctx: RewriteContext, merges: _Merges) -> None:
    after = ctx.after  # read by id only: a kept window's side is read the same way
    # a stub stands for the item the store holds: that is the version to compare
    for entry, old in ctx.before.resolved():
        if after.get(entry.id) is entry:
            continue  # the very entry kept: it resolves alike in both, nothing to compare
        if old is None or not bound(ctx, old, ctx.before):
            continue
        if entry.id not in after and entry.kind == "stub":
            continue  # the store holds it: a record exists
        if old.id not in after:
            if ctx.store.has_id(old.id) or merges.carries(old.id) is not False:
                continue  # kept, or by a merge the solver could not judge: undecided
            ctx.report(
                "CF001",
                [old.id],
                f"{old.kind} {old.id!r} was dropped with no store record; spill it to the store"
                " and leave a stub, or keep it",
            )
            continue
        if old.id in ctx.excluded:
            continue  # a reported contradiction: its formula is no commitment to hold to
        new = ctx.after.resolve(old.id)
        if new is None or new is old or new.same_version(old):
            continue  # an unresolvable stub is WR006's
        if new.formula == old.formula:
            continue
        stronger = ctx.session.entails([old.formula], new.formula, [old.id])
        if stronger.unknown:
            ctx.unknown(f"formula of {old.id!r}", stronger, old.id)
            continue
        if stronger.fails:
            ctx.report(
                "CF002",
                [old.id],
                f"{old.kind} {old.id!r} now says {show(new.formula)}, which {show(old.formula)}"
                f" does not entail: the rewrite asserts more than the {old.kind} did; restore"
                f" {show(old.formula)}",
                stronger,
            )
            continue
        if ctx.stored_version(old):
            continue  # weaker or equivalent, the original is recorded: nothing to report
        weaker = ctx.session.entails([new.formula], old.formula, [old.id])
        if weaker.unknown:
            ctx.unknown(f"formula of {old.id!r}", weaker, old.id)
            continue
        if weaker.fails:
            # a failed result is never softened, stored original or not (WR004)
            advice = (
                f"restore {show(old.formula)}: a failed result keeps its formula"
                if old.modality == "failed"
                else "spill the original first"
            )
            ctx.report(
                "CF003",
                [old.id],
                f"{old.kind} {old.id!r} was weakened from {show(old.formula)} to"
                f" {show(new.formula)} and the original is not in the store; {advice}",
                weaker,
            )


def _orphaned(ctx: RewriteContext, view: WindowView, rid: str) -> bool:
    return rid not in view and not ctx.store.has_id(rid)


def _cites_kept(item: Item, window: Container[str]) -> bool:
    """Every rationale the item cites is in the window (by id): for an item kept as the
    very item it was, CF004 has nothing to look at."""
    return all(rid in window for rid in item.rationale)


def _cf004(ctx: RewriteContext, merges: _Merges) -> None:
    """CF004 for every commitment of after, a new one included: a rationale it cites is in
    neither the window nor the store. A citation that was orphaned already before this
    rewrite was reported where that happened."""
    # looked up by id in the view itself: a kept window's side has no id table of its
    # own, and would make one of the whole window for it
    in_after = ctx.after
    for _, it in ctx.after.resolved():
        if it is None or it.kind != "commitment":
            continue
        old = ctx.before.resolve(it.id)
        if old is it and _cites_kept(it, in_after):
            continue
        for rid in it.rationale:
            if not _orphaned(ctx, ctx.after, rid):
                continue
            was = (
                old is not None
                and old.kind == "commitment"
                and rid in old.rationale
                and _orphaned(ctx, ctx.before, rid)
            )
            if was:
                continue  # orphaned at an earlier event: reported there, not again
            merged = [m.id for m in merges.merges if rid in m.covers and merges.valid(m)]
            advice = (
                f"cite the merge {merged[0]!r} that covers it instead"
                if merged
                else "keep it, or spill it and leave a stub"
            )
            ctx.report(
                "CF004",
                [it.id, rid],
                f"commitment {it.id!r} cites rationale {rid!r}, which is no longer in the window"
                f" or the store; {advice}",
            )


def _cf005(ctx: RewriteContext) -> None:
    goals: list[Item] = []
    for it in ctx.changed():
        if it.kind not in ("commitment", "claim", "observation") or ctx.restored(it):
            continue
        if it.id in ctx.excluded:
            # a reported contradiction is asked again only once its formula changes
            earlier = ctx.earlier_version(it.id)
            if earlier is not None and earlier.formula == it.formula:
                continue
        goals.append(it)
    if not goals:
        return
    if ctx.kept_content is not None:
        _cf005_kept(ctx, ctx.kept_content, goals)
        return
    # the premises: the window before, the store and the background (excluded items and
    # superseded observations are no part of them)
    window = ctx.content(ctx.before)
    seed = {f.name for _, f in window if type(f) is Atom}
    seed.update(*[atoms(f) for _, f in window if type(f) is not Atom])
    seed.update(*[atoms(it.formula) for it in goals])
    # of the store, only what the window or a goal reaches through shared atoms: the rest
    # shares no atom with any question asked here (it is consistent on its own)
    stored = ctx.store_knowledge()
    if stored.content.consistent().holds:
        near = stored.content_near(seed)
    else:
        near = stored.content.labeled()  # all of it: the vacuity reason names a core
    premises = ctx.session.premises(
        [*(f for _, f in window), *(f for _, f in near)],
        [*(it.id for it, _ in window), *(label for label, _ in near)],
    )
    for it in goals:
        goal = it.formula
        res = premises.entails(goal)
        if res.unknown:
            ctx.unknown(f"content of {it.id!r}", res, it.id)
        elif res.fails:
            earlier = ctx.before.resolve(it.id)
            if earlier is not None and earlier.kind == it.kind:
                # a changed item: removing it would drop it (CF001); its earlier version holds
                advice = f"restore its earlier version ({show(earlier.formula)})"
            else:
                advice = "remove it, or restore what supports it"
            ctx.report(
                "CF005",
                [it.id],
                f"{it.kind} {it.id!r} asserts {show(goal)}, which the window before, the store"
                f" and the background do not entail; {advice}",
                res,
            )


def _cf005_kept(ctx: RewriteContext, content: PremiseIndex, goals: list[Item]) -> None:
    """CF005 read from the kept premises (the window before and the store as one index):
    when they are consistent, a goal follows from all of them iff it follows from those
    linked to it through shared atoms. Anything but "it follows" is left to the whole
    reading (:class:`ReadWhole`), which words the finding."""
    if not content.consistent().holds:
        raise ReadWhole("CF005")
    for it in goals:
        keys: dict[str, None] = {}
        content.reach(atoms(it.formula), keys)
        near = content.formulas_of(keys)
        res = ctx.session.entails([f for _, f in near], it.formula, [label for label, _ in near])
        if not res.holds:
            raise ReadWhole("CF005")


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
