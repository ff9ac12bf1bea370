"""Witness retention: WR001–WR008 (docs/rules.md).

"The invariant is still checkable by the same means that established it."
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from verifier.rules.context import MODE_COUNT, RewriteContext, WindowView, cite, show
from verifier.window import WITNESSED, Item

__all__ = ["check_item_witnesses", "check_witnesses"]

_RANK = {"unverified": 0, "unwitnessed": 0, "verified": 1, "failed": 1}


def check_witnesses(ctx: RewriteContext) -> None:
    """Run WR001–WR008 on one rewrite."""
    changed = ctx.changed()
    changed_ids = {it.id for it in changed}
    _demotions(ctx, changed)
    _wr001_002(ctx, changed_ids)
    _wr003(ctx)
    _wr004(ctx)
    for it in changed:
        real = ctx.after.resolve(it.id)
        if it.kind == "stub":
            _wr006(ctx, it)
        if real is None or real.kind not in ("commitment", "claim") or it.kind == "stub":
            continue
        held = ctx.before.get(it.id)
        old = None if held is None or held.kind == "stub" else held
        if old is not None and (old.formula, old.witnesses, old.modality) == (
            real.formula,
            real.witnesses,
            real.modality,
        ):
            continue  # what it claims and cites is unchanged: any defect predates this event
        # new, changed in what it claims or cites, or put back (from behind its stub too):
        # WR005 reads the evidence retained now
        check_item_witnesses(ctx, real, ctx.after)
    _wr007(ctx, changed)
    _wr008(ctx)


def _demotions(ctx: RewriteContext, changed: list[Item]) -> None:
    """The items this rewrite demoted: tagged ``unwitnessed`` where they said anything else
    (stubs read as what they resolve to). A demotion is permitted unless a rule objects:
    with nothing found, the verdict is ``accept-demoted``. Lowering ``verified`` to
    ``unverified`` is no demotion."""
    for it in changed:
        new = ctx.after.resolve(it.id)
        old = ctx.before.resolve(it.id)
        if (
            new is not None
            and old is not None
            and old.kind in ("commitment", "claim", "observation")
            and new.modality == "unwitnessed"
            and old.modality != "unwitnessed"
        ):
            ctx.demoted.append(it.id)


def _surviving_ids(ctx: RewriteContext, view: WindowView, item: Item) -> list[str]:
    spilled = view.is_stub(item.id)
    return [w.id for w in view.surviving_witnesses(item, spilled=spilled, excluded=ctx.excluded)]


def _wr001_002(ctx: RewriteContext, changed_ids: set[str]) -> None:
    touched = ctx.touched()
    after = ctx.after
    for it, old in ctx.before.resolved():
        if old is None or old.kind not in ("commitment", "claim"):
            continue
        new = after.resolve(it.id)
        if new is None or new.kind not in ("commitment", "claim"):
            continue
        if (
            old.id not in touched
            and (new is old or old.same_version(new))
            and touched.isdisjoint(old.witnesses)
        ):
            continue  # nothing its support depends on changed in this rewrite
        heavy = (
            old.load_bearing
            or new.load_bearing
            or ctx.negative(old, ctx.before)
            or ctx.negative(new, ctx.after)
        )
        was = ctx.checkable(old, ctx.before, "before")
        if not was:
            continue
        now = ctx.checkable(new, ctx.after, "after")
        if now is None:
            continue
        lost = not now
        kept = set(_surviving_ids(ctx, ctx.after, new))
        gone = [w for w in _surviving_ids(ctx, ctx.before, old) if w not in kept]
        if heavy and not lost and ctx.mode == MODE_COUNT and gone:
            ctx.report(
                "WR001",
                [old.id, *gone],
                f"{old.kind} {old.id!r} is load-bearing and lost witness {cite(gone)}"
                " (count mode: no witness may leave); keep it or leave a stub",
            )
            continue
        if not lost:
            continue
        if heavy:
            why = "load-bearing" if old.load_bearing or new.load_bearing else "negative-result"
            ctx.report(
                "WR001",
                [old.id, *gone],
                f"{old.kind} {old.id!r} is {why}"
                " and its surviving witnesses no longer support it; keep its witnesses"
                " (a stub is enough)",
            )
        elif new.modality in WITNESSED:
            ctx.report(
                "WR002",
                [old.id],
                f"{old.kind} {old.id!r} lost its witnesses but still says {new.modality!r}; tag it"
                " 'unwitnessed' or keep a witness stub",
            )


def _wr003(ctx: RewriteContext) -> None:
    for it, new in ctx.after.resolved():
        if new is None or new.modality not in WITNESSED:
            continue
        old = ctx.earlier_version(it.id)
        if old is None or old.same_version(new) or _RANK[old.modality] >= _RANK[new.modality]:
            continue
        surviving = ctx.after.surviving_witnesses(
            new, spilled=it.kind == "stub", excluded=ctx.excluded
        )
        fresh = [w for w in surviving if w.id not in old.witnesses]
        ok = bool(fresh) and ctx.supports(surviving, new, f"promotion of {new.id!r}")
        if ok is None:
            continue
        if not ok:
            ctx.report(
                "WR003",
                [new.id],
                f"{new.kind} {new.id!r} rose from {old.modality!r} to {new.modality!r} without a"
                " new surviving witness that supports it; keep the old modality or cite the"
                " observation that establishes it",
            )


def _wr004(ctx: RewriteContext) -> None:
    for it, old in ctx.before.resolved():
        if old is None or old.modality != "failed":
            continue
        new = ctx.after.resolve(it.id)
        if new is None or new.same_version(old):
            continue
        if new.modality != "failed":
            ctx.report(
                "WR004",
                [old.id],
                f"failed {old.kind} {old.id!r} became {new.modality!r}; a failed result stays"
                " 'failed': restore it",
            )
            continue
        res = ctx.session.entails([new.formula], old.formula, [old.id])
        if res.unknown:
            ctx.unknown(f"formula of {old.id!r}", res, old.id)
        elif res.fails:
            ctx.report(
                "WR004",
                [old.id],
                f"failed {old.kind} {old.id!r} was softened from {show(old.formula)} to"
                f" {show(new.formula)}; keep the negative result as it was",
                res,
            )


_SAYS = ("observation", "claim", "commitment")
"""The kinds whose formula a witness CP001 named stands for (prose says nothing)."""


def check_item_witnesses(
    ctx: RewriteContext, item: Item, view: WindowView, named: Iterable[str] = ()
) -> None:
    """WR005 for one new or changed item (appends use it too).

    The witnesses read are those retained now: in the window, behind a stub the
    store resolves, or in the store. ``named`` are witnesses CP001 already
    reported for this item at an append: a failure they alone explain is not
    reported again.
    """
    if item.modality == "unwitnessed":
        return
    # a failed result stays failed (WR004): it is never advised to tag it unwitnessed
    earlier = ctx.before.resolve(item.id)
    was_failed = earlier is not None and earlier.modality == "failed"
    untag = "" if item.modality == "failed" or was_failed else ", or tag it 'unwitnessed'"
    if earlier is not None and not earlier.same_version(item):
        untag = f", or restore its earlier version ({show(earlier.formula)}){untag}"
    if not item.witnesses:
        if item.modality in WITNESSED:
            ctx.report(
                "WR005",
                [item.id],
                f"{item.kind} {item.id!r} says {item.modality!r} but cites no witness; cite the"
                f" observation that establishes it{untag}",
            )
        return
    goal = item.formula
    valid = ctx.valid(goal)
    if valid.unknown:
        ctx.unknown(f"witnesses of {item.id!r}", valid, item.id)
        return
    if valid.holds:
        ctx.report(
            "WR005",
            [item.id],
            f"{item.kind} {item.id!r} ({show(goal)}) holds under the background alone: no"
            " witness could ever refute it; state what was actually observed",
        )
        return
    witnesses = view.retained_witnesses(item, excluded=ctx.excluded)
    res = ctx.session.entails([w.formula for w in witnesses], goal, [w.id for w in witnesses])
    if res.unknown:
        ctx.unknown(f"witnesses of {item.id!r}", res, item.id)
        return
    if not res.fails:
        return
    # a named witness counts as what it says: an observation, or a claim or commitment
    # cited as one (its own missing path is CP001's finding, not this item's)
    # (only what it cites as a witness: a rationale or a source CP001 named is no witness)
    cited = set(item.witnesses)
    reported = [
        w
        for wid in named
        if wid in cited and (w := ctx.seen_version(view, wid)) is not None and w.kind in _SAYS
    ]
    if reported:
        both = [*witnesses, *reported]
        again = ctx.session.entails([w.formula for w in both], goal, [w.id for w in both])
        if not again.fails:
            return  # what fails is what CP001 already named
    ctx.report(
        "WR005",
        [item.id],
        f"the retained witnesses of {item.kind} {item.id!r} do not entail {show(goal)}; cite"
        f" observations whose 'shows' establish it{untag}",
        res,
    )


def _wr006(ctx: RewriteContext, stub: Item) -> None:
    assert stub.stub_ref is not None
    found = ctx.store.lookup(stub.stub_ref)
    if found.item is None:
        why = {
            "missing": "is not in the store",
            "corrupt": "is in the store, but the stored bytes do not hash to it",
            "unreadable": "is in the store, but the stored bytes are not an item",
        }.get(found.problem or "missing", "cannot be read")
        ctx.report(
            "WR006",
            [stub.id],
            f"stub {stub.id!r}: ref {stub.stub_ref[:15]}… {why}; spill the item before leaving"
            " its stub, or keep the item",
        )
    elif found.item.id != stub.id:
        ctx.report(
            "WR006",
            [stub.id],
            f"stub {stub.id!r} points at the stored item {found.item.id!r}; a stub keeps the id"
            " of the item it stands for",
        )


def _legit_observations(ctx: RewriteContext) -> set[str]:
    legit = set(ctx.history.appended_obs)
    for _, real in ctx.before.resolved():
        if real is not None and real.kind == "observation":
            legit.add(real.key)
    return legit


def _appended_version(ctx: RewriteContext, observation: Item) -> bool:
    """Is this version of an observation one an append made: appended earlier, or the one
    the window before holds (:func:`_legit_observations` holds its key)? A key names its
    id, so of the window before only the entry with that id can hold it."""
    if observation.key in ctx.history.appended_obs:
        return True
    old = ctx.before.resolve(observation.id)
    return old is not None and old.kind == "observation" and old.same_version(observation)


def _wr007(ctx: RewriteContext, changed: list[Item]) -> None:
    for it in changed:
        real = ctx.after.resolve(it.id)
        if real is None or real.kind != "observation" or ctx.restored(real):
            continue
        if _appended_version(ctx, real):
            continue
        old = ctx.before.resolve(it.id)
        if old is not None and old.kind == "observation":
            ctx.report(
                "WR007",
                [it.id],
                f"observation {it.id!r} was changed by a rewrite ({_change(old, real)}), and no"
                " append created that version; only appends create observations: put back the"
                " appended version, or remove it and leave a placeholder",
            )
            continue
        ctx.report(
            "WR007",
            [it.id],
            f"observation {it.id!r} was put in the window by a rewrite, and no append created"
            " it; only appends create observations: remove it",
        )


def _change(old: Item, new: Item) -> str:
    """What a rewrite changed in an observation, field by field with the values (text,
    tokens and score aside: the rules do not read them)."""

    def short(value: object) -> str:
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "..."

    a, b = json.loads(old.raw), json.loads(new.raw)
    skip = {"text", "tokens", "score"}
    if a.get("content") != b.get("content"):
        skip.add("digest")  # the digest follows the content
    out = [
        f"{name} {short(a.get(name))} -> {short(b.get(name))}"
        for name in sorted(set(a) | set(b))
        if name not in skip and a.get(name) != b.get(name)
    ]
    return "; ".join(out) or "changed"


def _wr008(ctx: RewriteContext) -> None:
    for it in ctx.before.items:
        if it.kind != "observation" or it.modality != "failed":
            continue
        if it.id in ctx.after or ctx.store.has_id(it.id):
            continue
        ctx.report(
            "WR008",
            [it.id],
            f"failed observation {it.id!r} left the window with no store record; it is the only"
            " witness that this was already tried: spill it and leave a stub",
        )
