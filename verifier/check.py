"""Checking one rewrite, and computing its repair (docs/rules.md).

>>> from verifier.io import parse_window_text
>>> w = parse_window_text('{"format": "ctxproof-window/1", "items": '
...     '[{"id": "c1", "kind": "commitment", "type": "decision"}]}')
>>> check_rewrite(w, w).verdict
'accept'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verifier.errors import want_bool, want_choice, want_int, want_strings, want_text, wrong_type
from verifier.findings import REFUSING, WITNESS_MODES, Finding
from verifier.io import background_argument, collector_paused, items_argument, stub_for
from verifier.parser import parse_formula
from verifier.rules.commitments import check_commitments
from verifier.rules.composition import check_cycles
from verifier.rules.context import (
    MODE_SUPPORT,
    History,
    RewriteContext,
    WindowView,
    cite,
    demote,
    preserved,
)
from verifier.rules.pairing import check_pairing
from verifier.rules.witnesses import check_witnesses
from verifier.solver import Session
from verifier.store import LayeredStore, MemoryStore, Store, store_argument
from verifier.window import Item, Window

__all__ = ["Guarded", "Repair", "RewriteResult", "check_rewrite", "guard", "repair_rewrite"]

MAX_REPAIR_ROUNDS = 6


@dataclass(frozen=True, slots=True)
class Repair:
    """The least change that makes a refused rewrite acceptable."""

    spill: tuple[Item, ...]
    window: tuple[Item, ...]
    claimed_preserved: tuple[str, ...]
    verdict: str
    actions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RewriteResult:
    """The verdict on one rewrite, its findings, and (when refused) its repair."""

    pass_: int
    line: int | None
    policy: str | None
    verdict: str
    findings: tuple[Finding, ...]
    undecided: tuple[str, ...] = ()
    demoted: tuple[str, ...] = ()
    repair: Repair | None = field(default=None, compare=False)

    @property
    def accepted(self) -> bool:
        return self.verdict in ("accept", "accept-demoted")


WindowLike = Window | Sequence[Item] | Sequence[Mapping[str, Any]]
"""A window as the API takes it: a Window, Items, or plain item dicts (validated)."""


def _items(w: WindowLike, func: str = "check_rewrite", arg: str = "window") -> tuple[Item, ...]:
    """The items of a window given to the API, validated (docs/api.md, "Errors")."""
    if isinstance(w, Window):
        return w.items
    return items_argument(w, func=func, arg=arg)


def _arguments(
    func: str,
    *,
    store: object,
    background: object,
    mode: object,
    claimed_preserved: object,
    optional_store: bool = True,
) -> tuple[Store | None, tuple[str, ...], tuple[str, ...] | None]:
    """The arguments :func:`check_rewrite` and :func:`guard` share, checked at the door:
    the store, the background, the claimed ids (None: no claim)."""
    checked_store = store_argument(store, func=func, optional=optional_store)
    want_choice(mode, WITNESS_MODES, func=func, arg="mode")
    bg = background_argument(background, func=func)
    claimed = (
        None
        if claimed_preserved is None
        else want_strings(claimed_preserved, func=func, arg="claimed_preserved", what="item ids")
    )
    return checked_store, bg, claimed


def run_rules(
    session: Session,
    store: Store,
    before: Sequence[Item],
    after: Sequence[Item],
    *,
    pass_no: int,
    line: int | None,
    mode: str,
    claimed_preserved: Sequence[str] | None,
    history: History,
) -> RewriteContext:
    """Run every CF and WR rule (and CP002) on one rewrite."""
    ctx = RewriteContext(
        session=session,
        store=store,
        before=WindowView(before, store),
        after=WindowView(after, store),
        pass_no=pass_no,
        line=line,
        mode=mode,
        claimed_preserved=None if claimed_preserved is None else tuple(claimed_preserved),
        history=history,
    )
    check_commitments(ctx)
    check_witnesses(ctx)
    check_pairing(ctx)
    check_cycles(ctx, ctx.changed())
    ctx.finish()
    return ctx


def verdict_of(ctx: RewriteContext) -> str:
    """refuse on any CF, WR or TP finding; undecided on a solver unknown; else accept."""
    if any(f.code.startswith(REFUSING) for f in ctx.findings):
        return "refuse"
    if ctx.undecided:
        return "undecided"
    return "accept-demoted" if ctx.demoted else "accept"


@collector_paused()
def check_rewrite(
    before: WindowLike,
    after: WindowLike,
    *,
    store: Store | None = None,
    background: Iterable[str] = (),
    mode: str = MODE_SUPPORT,
    claimed_preserved: Sequence[str] | None = None,
    session: Session | None = None,
    history: History | None = None,
    pass_no: int = 1,
    line: int | None = None,
    policy: str | None = None,
    with_repair: bool = True,
) -> RewriteResult:
    """Check one rewrite of ``before`` into ``after`` against the store.

    Returns a :class:`RewriteResult` whose verdict is ``accept``,
    ``accept-demoted``, ``refuse`` or ``undecided``; a refusal carries the
    repair that would make the same rewrite acceptable.

    Python's cycle collector is paused while the check runs (see
    :func:`verifier.io.collector_paused`) and runs again afterwards.

    Raises:
        TypeError: an argument of the wrong type (a window that is not a list of items,
            a ``store`` that is not a Store, a ``mode`` that is not a string...).
        InputError: an argument with bad content: an invalid item, an id twice in a
            window, an unknown ``mode``, a background that does not parse or is
            unsatisfiable.
    """
    if session is None or history is None:  # called from outside, not by the audit
        store, given_bg, claimed_preserved = _arguments(
            "check_rewrite",
            store=store,
            background=background,
            mode=mode,
            claimed_preserved=claimed_preserved,
        )
        want_int(pass_no, func="check_rewrite", arg="pass_no", minimum=1)
        want_int(line, func="check_rewrite", arg="line", minimum=1, optional=True)
        want_text(policy, func="check_rewrite", arg="policy", optional=True)
        want_bool(with_repair, func="check_rewrite", arg="with_repair")
        if session is not None and not isinstance(session, Session):
            raise wrong_type("check_rewrite", "session", session, "a solver Session or None")
        if history is not None and not isinstance(history, History):
            raise wrong_type("check_rewrite", "history", history, "a History or None")
        bg = given_bg
    else:
        bg = tuple(background)
    if isinstance(before, Window) and not bg:
        bg = before.background
    store = store if store is not None else MemoryStore()
    session = session or Session([parse_formula(b) for b in bg])
    history = history if history is not None else History()
    b_items, a_items = _items(before, arg="before"), _items(after, arg="after")
    ctx = run_rules(
        session,
        store,
        b_items,
        a_items,
        pass_no=pass_no,
        line=line,
        mode=mode,
        claimed_preserved=claimed_preserved,
        history=history,
    )
    verdict = verdict_of(ctx)
    repair = None
    if verdict in ("refuse", "undecided") and with_repair:
        repair = repair_rewrite(session, store, b_items, a_items, ctx, mode=mode, history=history)
    return RewriteResult(
        pass_no,
        line,
        policy,
        verdict,
        tuple(ctx.findings),
        tuple(ctx.undecided),
        tuple(ctx.demoted),
        repair,
    )


def _preserved(before: WindowView, after: WindowView) -> tuple[str, ...]:
    return tuple(it.id for it in after.items if preserved(before, after, it.id))


_REVERT = {"CF002", "CF005", "CF007", "WR003", "WR004", "WR005", "WR006", "WR007"}


class WindowEdit:
    """A window under repair: each put and removal costs O(1), the order is settled once.

    It behaves as the list of items it starts from would: :meth:`put` replaces
    the item with that id where it stands; an id the window does not hold goes
    right after the nearest item before it (in the order of the window before)
    that the window holds at that moment, first when there is none, last when
    the window before did not have it. :meth:`remove` takes an id out.
    """

    def __init__(self, window: Sequence[Item], before_ids: Sequence[str]) -> None:
        self._before_ids = before_ids
        self._before_index = {iid: i for i, iid in enumerate(before_ids)}
        self._slot: dict[str, int] = {}  # id -> the place it holds now
        self._items: dict[int, Item] = {}  # place -> item (a place removed holds none)
        self._followers: dict[int | None, list[int]] = {}  # place -> places put after it
        self._end: list[int] = []
        self._made = 0
        self._base = [self._place(it) for it in window]

    def _place(self, item: Item) -> int:
        """A new place holding item (places are numbered in the order they were made)."""
        self._made += 1
        self._slot[item.id] = self._made
        self._items[self._made] = item
        return self._made

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._slot

    def get(self, item_id: str) -> Item | None:
        place = self._slot.get(item_id)
        return None if place is None else self._items[place]

    def put(self, item: Item) -> None:
        place = self._slot.get(item.id)
        if place is not None:
            self._items[place] = item
            return
        place = self._place(item)
        i = self._before_index.get(item.id)
        if i is None:
            self._end.append(place)
            return
        anchor: int | None = None
        for j in range(i - 1, -1, -1):
            anchor = self._slot.get(self._before_ids[j])
            if anchor is not None:
                break
        self._followers.setdefault(anchor, []).append(place)

    def remove(self, item_id: str) -> None:
        place = self._slot.pop(item_id, None)
        if place is not None:
            del self._items[place]

    def items(self) -> list[Item]:
        """The window in order: each place followed by what was put after it, the latest
        put first (a removed item's followers stay where it stood)."""
        out: list[Item] = []
        stack = [*reversed(self._end), *reversed(self._base), *self._followers.get(None, ())]
        while stack:
            place = stack.pop()
            item = self._items.get(place)
            if item is not None:
                out.append(item)
            stack.extend(self._followers.get(place, ()))
        return out


def _plan(
    ctx: RewriteContext,
    window: list[Item],
    spill: dict[str, Item],
    actions: list[str],
    *,
    mend_only: bool,
) -> int:
    """One round of repairs for the findings of ctx, applied to window and spill.

    With ``mend_only``, only what keeps the rewrite's own changes is done: spill,
    stub, restore witnesses. Otherwise what cannot be mended is demoted, reverted
    or removed. Returns how many actions were taken.
    """
    taken = len(actions)
    before = ctx.before
    edit = WindowEdit(window, [it.id for it in before.items])
    put, remove = edit.put, edit.remove
    done = set(actions)

    def spill_with_evidence(item: Item) -> None:
        spill.setdefault(item.ref, item)
        for wid in (*item.witnesses, *item.rationale, *item.derived_from):
            ev = before.resolve(wid)
            if ev is not None and ev.ref not in ctx.store:
                spill.setdefault(ev.ref, ev)

    def act(text: str) -> None:
        if text not in done:
            done.add(text)
            actions.append(text)

    def back_to_before(iid: str, why: str = "", *, held_only: bool = False) -> None:
        """Revert iid to its version before the rewrite, or remove it when it is new (with
        ``held_only``, only while the repaired window still holds it)."""
        prev = before.get(iid)
        cur_it = ctx.after.get(iid)
        if cur_it is None or (prev is not None and prev.same_version(cur_it)):
            return
        if prev is not None:
            put(prev)
            act(f"revert {iid!r}{why}")
        elif not held_only or iid in edit:
            remove(iid)
            act(f"remove new item {iid!r}{why}")

    for f in ctx.findings:
        head = f.items[0]
        old = before.get(head)
        real_old = before.resolve(head)
        if not mend_only and f.code in ("CF001", "WR008", "CF003", "CF004"):
            continue  # mended in the first round, or beyond mending by spilling
        if f.code in ("CF001", "WR008") and real_old is not None and old is not None:
            spill_with_evidence(real_old)
            put(old if old.kind == "stub" else stub_for(real_old))
            act(f"spill {head!r} and leave a stub")
        elif f.code == "CF003" and real_old is not None:
            spill.setdefault(real_old.ref, real_old)
            act(f"spill the original of {head!r}")
        elif f.code == "CF004":
            rid = f.items[1]
            r_old = before.resolve(rid)
            if r_old is not None:
                spill.setdefault(r_old.ref, r_old)
                kept_stub = before.get(rid) if before.is_stub(rid) else None
                put(kept_stub or stub_for(r_old))
                act(f"spill rationale {rid!r} and leave a stub")
        elif f.code in ("WR001", "WR002") and real_old is not None and mend_only:
            if ctx.after.is_stub(head):
                # a spilled item is checked as the store holds it: its evidence goes there
                for wid in real_old.witnesses:
                    w_real = before.resolve(wid)
                    if w_real is not None and w_real.ref not in ctx.store:
                        spill.setdefault(w_real.ref, w_real)
                        act(f"spill witness {wid!r} of {head!r} with it")
                continue
            for wid in real_old.witnesses:
                w_item = before.get(wid)
                w_real = before.resolve(wid)
                if w_real is None or w_item is None or w_real.kind != "observation":
                    continue
                kept = ctx.after.resolve(wid)
                if kept is not None and kept.ref == w_real.ref:
                    continue
                spill.setdefault(w_real.ref, w_real)
                put(w_item if w_item.kind == "stub" else stub_for(w_real))
                act(f"keep witness {wid!r} of {head!r} as a stub")
        elif f.code == "WR001" and not mend_only and old is not None:
            cur_it = ctx.after.get(head)
            if cur_it is not None and not cur_it.same_version(old):
                put(old)
                act(f"revert {head!r}")
        elif f.code == "TP001":
            # restore the call when the window before had it, else drop the orphan
            result_id, call_id = f.items[0], f.items[1]
            call_before = before.get(call_id)
            if mend_only and call_before is not None:
                put(call_before)
                act(f"restore call {call_id!r} of result {result_id!r}")
            elif not mend_only and call_before is None and result_id in edit:
                remove(result_id)
                act(f"remove orphaned result {result_id!r}")
        elif f.code == "TP002":
            call_id, left = f.items[0], f.items[1:]
            partners = [p for r in left if (p := before.get(r)) is not None]
            if mend_only and partners:
                for partner in partners:
                    put(partner)
                act(f"restore the result(s) of call {call_id!r}")
            elif not mend_only and not partners and call_id in edit:
                remove(call_id)
                act(f"remove orphaned call {call_id!r}")
        elif f.code == "WR002" and not mend_only:
            cur = edit.get(head)
            if cur is not None and cur.kind != "stub":
                put(demote(cur))
                act(f"demote {head!r} to unwitnessed")
        elif f.code in _REVERT and not mend_only:
            for iid in f.items if f.code == "CP002" else (head,):
                back_to_before(iid)
    if not mend_only:
        # a question the solver left undecided: the item it is about goes back to what the
        # window before held (or, new, goes): the repaired rewrite must be accepted
        for iid in ctx.undecided_items:
            back_to_before(iid, " (its check was left undecided)", held_only=True)
    window[:] = edit.items()
    return len(actions) - taken


def _drop_dangling(
    window: list[Item], before: Sequence[Item], store: Store, actions: list[str]
) -> None:
    """Revert (or, when new, remove) what cites an id the repair left nowhere.

    Removing a new item can orphan a citation of it; the repaired window must
    still be valid input, so whatever cites an id that is in neither window
    nor in the store goes back to its before version, until nothing dangles.
    """
    before_by_id = {it.id: it for it in before}
    changed = True
    while changed:
        changed = False
        present = {it.id for it in window} | set(before_by_id)
        for i, it in enumerate(window):
            missing = [
                ref for _, ref in it.citations if ref not in present and not store.has_id(ref)
            ]
            if not missing:
                continue
            old = before_by_id.get(it.id)
            if old is not None and old is not it:
                window[i] = old
                actions.append(f"revert {it.id!r}: it cites {missing[0]!r}, which is gone")
            else:
                del window[i]
                actions.append(f"remove new item {it.id!r}: it cites {missing[0]!r}, which is gone")
            changed = True
            break


def repair_rewrite(
    session: Session,
    store: Store,
    before: Sequence[Item],
    after: Sequence[Item],
    first: RewriteContext,
    *,
    mode: str,
    history: History,
) -> Repair:
    """Find the repair of a refused rewrite: spill, stub, demote, revert — then check again."""
    window = list(after)
    spill: dict[str, Item] = {}
    actions: list[str] = []

    def recheck(trial: Store, into: Sequence[Item], claimed: Sequence[str]) -> RewriteContext:
        """The rewrite into ``into`` checked again against ``trial``, from the same history."""
        return run_rules(
            session,
            trial,
            before,
            into,
            pass_no=first.pass_no,
            line=first.line,
            mode=mode,
            claimed_preserved=claimed,
            history=history.copy(),
        )

    ctx = first
    verdict = verdict_of(ctx)
    for round_no in range(MAX_REPAIR_ROUNDS):
        # mend first (spill, stub, restore witnesses); demote, revert or remove only what
        # mending cannot fix: the least change keeps what the rewrite did legitimately
        acted = _plan(ctx, window, spill, actions, mend_only=True) or _plan(
            ctx, window, spill, actions, mend_only=False
        )
        if not acted and round_no > 0:
            break  # nothing more to try
        trial = LayeredStore(store)
        trial.spill(list(spill.values()))
        _drop_dangling(window, before, trial, actions)
        view_b, view_a = WindowView(before, trial), WindowView(window, trial)
        claimed = _preserved(view_b, view_a)
        ctx = recheck(trial, window, claimed)
        verdict = verdict_of(ctx)
        if verdict in ("accept", "accept-demoted"):
            if not actions:  # the window stands: only the claim of what it preserves was wrong
                actions.append(f"claim preserved only {cite(claimed) if claimed else 'nothing'}")
            spill, actions = _unspill_reverted(
                store, before, window, spill, actions, claimed, recheck
            )
            return Repair(tuple(spill.values()), tuple(window), claimed, verdict, tuple(actions))
        if not acted:
            break  # the corrected claim alone is not enough, and nothing else is to be tried
    # nothing smaller worked: keep the window as it was
    ctx = recheck(LayeredStore(store), before, [it.id for it in before])
    return Repair(
        (),
        tuple(before),
        tuple(it.id for it in before),
        verdict_of(ctx),
        (*actions, "keep the window as it was"),
    )


def _unspill_reverted(
    store: Store,
    before: Sequence[Item],
    window: Sequence[Item],
    spill: dict[str, Item],
    actions: list[str],
    claimed: tuple[str, ...],
    recheck: Callable[[Store, Sequence[Item], Sequence[str]], RewriteContext],
) -> tuple[dict[str, Item], list[str]]:
    """The repair without the spills of items it put back as they were (a weakened item
    spilled for CF003, then reverted for another finding): the window holds them, so the
    store needs no copy. Kept only where the same window, checked again without them,
    is accepted alike, claiming to preserve the same items."""
    by_id = {it.id: it for it in window}
    needless = {key: it.id for key, it in spill.items() if it.same_version(by_id.get(it.id))}
    if not needless:
        return spill, actions
    fewer = {key: it for key, it in spill.items() if key not in needless}
    trial = LayeredStore(store)
    trial.spill(list(fewer.values()))
    if _preserved(WindowView(before, trial), WindowView(window, trial)) != claimed:
        return spill, actions
    if verdict_of(recheck(trial, window, claimed)) not in ("accept", "accept-demoted"):
        return spill, actions
    gone = {f"spill the original of {iid!r}" for iid in needless.values()}
    return fewer, [a for a in actions if a not in gone]


@dataclass(frozen=True, slots=True)
class Guarded:
    """What :func:`guard` let through: the window to use from now on, and why.

    ``verdict`` says what was returned: ``accept`` or ``accept-demoted`` (the
    rewrite as given), ``repaired`` (the repaired window, its spills committed),
    ``refuse`` or ``undecided`` (no repair was accepted: the window before).
    ``result`` is the check of the rewrite as given; ``spilled`` the ids written
    to the store, ``spilled_refs`` their store keys.
    """

    window: tuple[Item, ...]
    result: RewriteResult
    spilled: tuple[str, ...] = ()
    repaired: bool = False
    spilled_refs: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        if self.repaired:
            return "repaired"
        return self.result.verdict

    @property
    def accepted(self) -> bool:
        """The window returned is the rewrite as given, or its repair."""
        return self.repaired or self.result.accepted


def guard(
    before: WindowLike,
    after: WindowLike,
    store: Store,
    *,
    background: Iterable[str] = (),
    mode: str = MODE_SUPPORT,
    claimed_preserved: Sequence[str] | None = None,
) -> Guarded:
    """Gate a rewrite: accept it, or route it to spill instead.

    An accepted rewrite passes through. A refused one is repaired: the items to
    spill are written to the store (committed before this returns), and the
    repaired window is returned. When no repair is accepted (or the solver
    cannot decide), the window before is kept: unknown never counts as accept.

    >>> from verifier.store import MemoryStore
    >>> before = [{"id": "r1", "kind": "commitment", "type": "rejection", "formula": "!db.mysql"}]
    >>> g = guard(before, [], MemoryStore())
    >>> g.verdict, g.spilled, [it.kind for it in g.window]
    ('repaired', ('r1',), ['stub'])

    Raises:
        TypeError, InputError: as :func:`check_rewrite`; ``store`` is required (the
            spills of a repair go there).
    """
    _, background, _ = _arguments(
        "guard",
        store=store,
        background=background,
        mode=mode,
        claimed_preserved=claimed_preserved,
        optional_store=False,
    )
    if isinstance(before, Window) and not background:
        background = before.background
    before, after = _items(before, "guard", "before"), _items(after, "guard", "after")
    result = check_rewrite(
        before,
        after,
        store=store,
        background=background,
        mode=mode,
        claimed_preserved=claimed_preserved,
    )
    if result.accepted:
        return Guarded(_items(after), result)
    repair = result.repair
    if repair is None or repair.verdict not in ("accept", "accept-demoted"):
        return Guarded(_items(before), result)
    refs = store.spill(list(repair.spill)) if repair.spill else []
    ids = tuple(it.id for it in repair.spill)
    return Guarded(repair.window, result, ids, True, tuple(refs))
