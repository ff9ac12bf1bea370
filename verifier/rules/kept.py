"""The window kept across an audit's events, so a rewrite costs what it changed
(docs/rules.md, "Composition over a trace").

An audit keeps one :class:`KeptWindow`: the window's entries by id, what each
stub resolves to, who cites whom, and the window's content together with the
store's as one premise index. Appends and rewrites update it by what they
change. A rewrite is first checked on what it touched (:meth:`KeptWindow.check`):
the rules read the touched entries and the untouched ones that cite them (a
rule reads an entry's own citations, so no other entry can read differently),
and for a tool result among those, its call and all the call's results; the
rest of the window through lookups by id. Whenever that reading could differ
from reading the whole window (a stub the store does not resolve, any finding
or undecided question) the audit checks the rewrite the whole way instead,
which also words every finding: the output is the same either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import is_not, itemgetter, ne

from verifier.formula import is_true
from verifier.rules.commitments import check_commitments
from verifier.rules.composition import check_cycles
from verifier.rules.context import (
    History,
    LookedUpView,
    ReadWhole,
    RewriteContext,
    puts_back,
    record_eviction,
)
from verifier.rules.pairing import check_pairing
from verifier.rules.witnesses import check_witnesses
from verifier.solver import PremiseIndex, Session
from verifier.store import Store
from verifier.window import RAW_SLOT, Item

__all__ = ["Change", "KeptWindow"]

_RAW_SLOT = RAW_SLOT.__get__
"""An item's ``raw`` slot as it holds it: its canonical JSON, or :class:`Unwritten` (the
field's getter writes it first)."""


@dataclass(frozen=True, slots=True)
class Change:
    """What one rewrite changes: the window after, and the entries it touched.

    ``gone``: ids of before that after replaces or lacks, in window order;
    ``came``: the entries of after that are new or replaced, in window order
    (an entry is replaced when its bytes differ: text, score or tokens count);
    ``left``: ids whose entry leaves its place (removed, or put again at the end);
    ``removed``: ids after lacks.
    """

    after: tuple[Item, ...]
    gone: tuple[str, ...]
    came: tuple[Item, ...]
    left: frozenset[str]
    removed: frozenset[str]


class _Side(LookedUpView):
    """One side of a rewrite as the kept window reads it: lookups by id read the whole
    window, while :attr:`items` (and so :meth:`resolved`) hold the touched entries only."""

    def __init__(
        self, kept: KeptWindow, items: tuple[Item, ...], over: Mapping[str, Item | None]
    ) -> None:
        self.items = items
        self.store = kept.store
        self._kept = kept
        self._over = over
        self._resolved = {}
        self._pairs = None

    @property
    def by_id(self) -> dict[str, Item]:
        """The id table of the whole window (made on first use: the checks never ask)."""
        table = {k: v for k, v in self._kept.by_id.items() if k not in self._over}
        table.update((k, v) for k, v in self._over.items() if v is not None)
        return table

    @by_id.setter
    def by_id(self, table: dict[str, Item]) -> None:  # pragma: no cover - never set
        raise AttributeError("a side of a kept window is read only")

    def __contains__(self, item_id: object) -> bool:
        return self.get(item_id) is not None  # type: ignore[arg-type]

    def get(self, item_id: str) -> Item | None:
        if item_id in self._over:
            return self._over[item_id]
        return self._kept.by_id.get(item_id)

    def resolve(self, item_id: str) -> Item | None:
        if item_id in self._over:
            it = self._over[item_id]
            if it is None or it.kind != "stub":
                return it
            if item_id not in self._resolved:
                self._resolved[item_id] = self._kept.resolve_stub(it)
            return self._resolved[item_id]
        it = self._kept.by_id.get(item_id)
        if it is None or it.kind != "stub":
            return it
        return self._kept.real.get(item_id)


class KeptWindow:
    """The window of an audit with the indexes a rewrite's check reads, updated by each
    event's change (see the module's docstring)."""

    def __init__(self, window: Sequence[Item], session: Session, store: Store) -> None:
        self.session = session
        self.store = store
        self.items: tuple[Item, ...] = tuple(window)
        self.by_id: dict[str, Item] = {}
        self.rank: dict[str, int] = {}
        """id -> a number growing along the window (gaps where entries left)."""
        self.real: dict[str, Item | None] = {}
        """id -> what the entry stands for: itself, or what its stub resolves to."""
        self.unresolved: set[str] = set()
        self.cited_by: dict[str, dict[str, None]] = {}
        """id (in the window or not) -> ids of the window's entries that cite it."""
        self._cites: dict[str, tuple[str, ...]] = {}
        self.pending: set[str] = set()
        """Stub ids whose last version seen may not be yet what they resolve to."""
        self.content = PremiseIndex(session, keep_model=True)
        """The window's content ("w" + id) and the store's ("s" + version key): CF005's
        premises, kept."""
        self._obs: dict[str, dict[str, None]] = {}
        """version key of an observation in the content -> window ids standing for it."""
        self._stored_keys: dict[str, list[str]] = {}
        self._excluded: set[str] = set()
        self._superseded: set[str] = set()
        self._seen = 0
        self._next = 0
        self._at: dict[str, int] | None = None
        for it in self.items:
            if it.id in self.by_id:
                raise ValueError("an id twice in the window")
            self._enter(it)

    @classmethod
    def of(cls, window: Sequence[Item], session: Session, store: Store) -> KeptWindow | None:
        """The kept window of this window (None: it holds an id twice, bad input)."""
        try:
            return cls(window, session, store)
        except ValueError:
            return None

    # -- keeping up -------------------------------------------------------------------------
    def resolve_stub(self, stub: Item) -> Item | None:
        assert stub.stub_ref is not None
        return self.store.resolve(stub.stub_ref, stub.id)

    def _enter(self, it: Item) -> None:
        self.by_id[it.id] = it
        self.rank[it.id] = self._next
        self._next += 1
        self._describe(it)

    def _describe(self, it: Item) -> None:
        real = it if it.kind != "stub" else self.resolve_stub(it)
        self.real[it.id] = real
        if real is None:
            self.unresolved.add(it.id)
            self.pending.add(it.id)
            return
        if it.kind == "stub":
            self.pending.add(it.id)
        cites = tuple(dict.fromkeys(i for _, i in real.citations))
        self._cites[it.id] = cites
        for c in cites:
            self.cited_by.setdefault(c, {})[it.id] = None
        self._premise(it.id, real)

    def _premise(self, item_id: str, real: Item) -> None:
        if item_id in self._excluded:
            return
        if real.kind == "observation":
            if real.key in self._superseded:
                return
            self._obs.setdefault(real.key, {})[item_id] = None
        self.content.add("w" + item_id, item_id, real.formula)

    def _leave(self, item_id: str) -> None:
        del self.by_id[item_id]
        del self.rank[item_id]
        self._undescribe(item_id)

    def _undescribe(self, item_id: str) -> None:
        real = self.real.pop(item_id, None)
        self.unresolved.discard(item_id)
        self.pending.discard(item_id)
        for c in self._cites.pop(item_id, ()):
            holders = self.cited_by[c]
            del holders[item_id]
            if not holders:
                del self.cited_by[c]
        if real is not None and real.kind == "observation":
            standing = self._obs.get(real.key)
            if standing is not None:
                standing.pop(item_id, None)
                if not standing:
                    del self._obs[real.key]
        self.content.remove("w" + item_id)

    def sync(self, history: History) -> None:
        """Take in what was spilled, excluded and superseded since the last event."""
        if len(history.excluded) != len(self._excluded):  # exclusions only grow
            for item_id in history.excluded - self._excluded:
                self._excluded.add(item_id)
                self.content.remove("w" + item_id)
                for key in self._stored_keys.pop(item_id, ()):
                    self.content.remove("s" + key)
        if len(history.superseded) != len(self._superseded):
            for key in history.superseded - self._superseded:
                self._superseded.add(key)
                self.content.remove("s" + key)
                for item_id in self._obs.pop(key, ()):
                    self.content.remove("w" + item_id)
        fresh = self.store.entries_since(self._seen)
        self._seen += len(fresh)
        for real in fresh:
            if real.id in self._excluded:
                continue
            key = real.key
            keys = self._stored_keys.setdefault(real.id, [])
            if key in keys:
                continue
            keys.append(key)
            if not is_true(real.formula) and key not in self._superseded:
                self.content.add("s" + key, real.id, real.formula)
        if fresh and self.unresolved:
            for item_id in sorted(self.unresolved):  # a spill may resolve a stub
                stub = self.by_id[item_id]
                if self.resolve_stub(stub) is not None:
                    self._undescribe(item_id)
                    self._describe(stub)

    def appended(self, items: Iterable[Item], window: tuple[Item, ...]) -> None:
        """The window grew by these items (ids new to it) and is now ``window``."""
        at = self._at
        for it in items:
            if at is not None:
                at[it.id] = len(at)
            self._enter(it)
        self.items = window

    # -- a rewrite ----------------------------------------------------------------------------
    def change_of(
        self, after: Sequence[Item] | None, remove: Sequence[str] = (), put: Sequence[Item] = ()
    ) -> Change | None:
        """The change from this window to ``after`` (a whole window), or by a diff (``remove``
        and ``put``, applied as a trace's ``diff`` is). None when the window after moves an
        entry or puts a new one among the old (the kept window is then made anew)."""
        if after is None:
            return self._diff(remove, put)
        after = tuple(after)
        quick = self._in_place(after)
        if quick is not None:
            return quick
        by_id, rank = self.by_id, self.rank
        seen: set[str] = set()
        came: list[Item] = []
        replaced: list[str] = []
        last = -1
        fresh = False
        for it in after:
            i = it.id
            if i in seen:
                return None  # an id twice: bad input, read the whole way
            seen.add(i)
            old = by_id.get(i)
            if old is None:
                fresh = True
                came.append(it)
                continue
            r = rank[i]
            if fresh or r < last:
                return None  # an old entry after a new one, or moved
            last = r
            if old is not it and old.raw != it.raw:
                came.append(it)
                replaced.append(i)
        kept = len(seen) - (len(came) - len(replaced))
        removed = [] if kept == len(by_id) else [i for i in by_id if i not in seen]
        gone = sorted([*replaced, *removed], key=rank.__getitem__)
        left = frozenset(removed)
        return Change(tuple(after), tuple(gone), tuple(came), left, left)

    def _in_place(self, after: tuple[Item, ...]) -> Change | None:
        """The change to a whole window that keeps every entry where it stands (replaced or
        not) and adds new ones at the end, found by comparing bytes position by position
        (None: another change, left to the match by id)."""
        items = self.items
        n = len(items)
        if len(after) < n:
            return None
        head = after[:n] if len(after) > n else after
        # the very same objects first (a trace's reader gives an item whose text it has
        # read before as that object), then the slots (no call of the field's getter):
        # equal texts are equal items, and only the others (text still unwritten
        # included) are compared as written
        differ = list(compress(range(n), map(is_not, head, items)))
        if len(differ) > 1:
            pick = itemgetter(*differ)
            slots = map(ne, map(_RAW_SLOT, pick(head)), map(_RAW_SLOT, pick(items)))
            differ = list(compress(differ, slots))
        differ = [k for k in differ if head[k].raw != items[k].raw]
        for k in differ:
            if after[k].id != items[k].id:
                return None
        tail = after[n:]
        if tail:
            ids = {it.id for it in tail}
            if len(ids) != len(tail) or any(i in self.by_id for i in ids):
                return None
        came = (*(after[k] for k in differ), *tail)
        gone = tuple(items[k].id for k in differ)
        return Change(after, gone, came, frozenset(), frozenset())

    def _diff(self, remove: Sequence[str], put: Sequence[Item]) -> Change | None:
        """A ``diff``: removed ids leave; a put replaces the entry with its id where it
        stands, or (a new id, or one removed too) goes to the end in the order put."""
        by_id = self.by_id
        puts = {it.id: it for it in put}
        if len(puts) != len(put):
            return None  # an id put twice: bad input, read the whole way
        dropped = {i for i in remove if i in by_id}
        replaced = sorted(
            (i for i in puts if i in by_id and i not in dropped), key=self.rank.__getitem__
        )
        tail = [it for it in put if it.id not in by_id or it.id in dropped]
        if dropped:
            window = [puts.get(it.id, it) for it in self.items if it.id not in dropped]
        else:
            window = list(self.items)
            at = self._positions()
            for i in replaced:
                window[at[i]] = puts[i]
        window.extend(tail)
        gone = sorted([*dropped, *replaced], key=self.rank.__getitem__)
        came = (*(puts[i] for i in replaced), *tail)
        return Change(
            tuple(window), tuple(gone), came, frozenset(dropped), frozenset(dropped - puts.keys())
        )

    def _positions(self) -> dict[str, int]:
        """Where each id stands in :attr:`items` (made again after entries left)."""
        if self._at is None:
            self._at = {it.id: n for n, it in enumerate(self.items)}
        return self._at

    def check(
        self,
        change: Change,
        *,
        history: History,
        pass_no: int,
        line: int | None,
        mode: str,
        claimed_preserved: Sequence[str] | None,
    ) -> RewriteContext | None:
        """Check a rewrite on what it touched; the context when that settles it (no finding,
        nothing undecided), None when the whole window must be read."""
        self.sync(history)
        if self.unresolved:
            return None
        touched = set(change.gone)
        touched.update(it.id for it in change.came)
        over: dict[str, Item | None] = dict.fromkeys(change.removed)
        over.update((it.id, it) for it in change.came)
        before = _Side(self, (), {})
        after = _Side(self, (), over)
        # the untouched entries that cite a touched one are read too: every rule reads an
        # entry's own citations, so these are all the untouched entries a rule could see
        # change; with a tool result among them, its call and all the call's results
        read = set(touched)
        for t in touched:
            read.update(self.cited_by.get(t, ()))
        calls: set[str] = set()
        for t in read:
            for side in (before, after):
                real = side.resolve(t)
                if real is None and side.get(t) is not None:
                    return None  # a stub the store does not resolve
                if real is not None and real.call is not None:
                    calls.add(real.call)
        for c in calls:
            read.add(c)
            read.update(self.cited_by.get(c, ()))
            for side in (before, after):
                if side.resolve(c) is None and side.get(c) is not None:
                    return None
        rank = self.rank
        came_at = {it.id: n for n, it in enumerate(change.came)}

        def where(it: Item) -> tuple[int, int]:
            """Window order: the entries in place by rank, then those put at the end."""
            if it.id not in rank or it.id in change.left:
                return (1, came_at[it.id])
            return (0, rank[it.id])

        in_before = sorted((i for i in read if i in self.by_id), key=rank.__getitem__)
        before.items = tuple(self.by_id[i] for i in in_before)
        in_after = [it for i in read if (it := after.get(i)) is not None]
        after.items = tuple(sorted(in_after, key=where))
        ctx = RewriteContext(
            session=self.session,
            store=self.store,
            before=before,
            after=after,
            pass_no=pass_no,
            line=line,
            mode=mode,
            claimed_preserved=None if claimed_preserved is None else tuple(claimed_preserved),
            history=history,
            kept_content=self.content,
        )
        ctx._changed = []
        for it in change.came:
            old = before.get(it.id)
            if old is not it and not it.same_version(old):
                ctx._changed.append(it)
        ctx._touched = {it.id for it in ctx._changed} | set(change.removed)
        cycles = set(history.cycles)
        try:
            check_commitments(ctx)
            check_witnesses(ctx)
            check_pairing(ctx)
            check_cycles(ctx, ctx.changed())
        except ReadWhole:
            history.cycles.clear()  # a cycle reported is the whole reading's to record
            history.cycles.update(cycles)
            return None
        assert not ctx.findings and not ctx.undecided
        ctx.finish()
        return ctx

    def remember(self, change: Change, history: History, pass_no: int) -> None:
        """Carry what later rules need across the rewrite (as the audit's ``_remember``
        does for the whole window: the untouched entries change nothing there but the
        versions their stubs stand for)."""
        store = self.store
        last_seen = history.last_seen
        came = {it.id: it for it in change.came}
        for item_id in [i for i in self.pending if i not in change.removed and i not in came]:
            stub = self.by_id[item_id]
            resolved = store.resolve(stub.stub_ref or "")
            if resolved is not None:
                last_seen[item_id] = resolved
                self.pending.discard(item_id)

        def in_after(i: str) -> Item | None:
            return came[i] if i in came else None if i in change.removed else self.by_id.get(i)

        for item_id in change.gone:
            it = self.by_id[item_id]
            real = it
            if it.kind == "stub":
                resolved = store.resolve(it.stub_ref or "")
                if resolved is None:
                    continue
                real = resolved
            last_seen[it.id] = real
            if real.kind != "observation":
                continue
            now = in_after(item_id)
            kept = now is not None and (now.kind != "stub" or self.resolve_stub(now) is not None)
            if now is None or not kept:
                history.evicted_at[it.id] = pass_no
                if real.modality == "failed" and real.source is not None and now is None:
                    record_eviction(history, real, real.source)
        for source, ids in history.evicted_failed.items():
            # a failed record a rewrite put back (item or stub) is in sight again; another
            # observation appended under its id since is not that record
            if any(in_after(i) is not None for i in ids):
                ids[:] = [
                    i for i in ids if not puts_back(history, in_after(i), source, i, store)
                ]
        for it in change.came:
            if it.kind != "stub":
                last_seen[it.id] = it
            history.saw(it)

    def rewritten(self, change: Change) -> None:
        """The window is now the change's window after."""
        for item_id in change.left:
            self._leave(item_id)
        at = None if change.left else self._at
        for it in change.came:
            if it.id in self.by_id:  # replaced where it stands
                self.by_id[it.id] = it
                self._undescribe(it.id)
                self._describe(it)
            else:
                if at is not None:
                    at[it.id] = len(at)
                self._enter(it)
        self._at = at
        self.items = change.after
