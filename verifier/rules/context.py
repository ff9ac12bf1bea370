"""What every rule sees: the windows around one event, the store and the solver.

Identity questions (same id, same bytes, in the store?) are answered here with
dicts and sets; only changed items and witness questions go to the solver.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verifier.findings import Finding, Refutes, group_by_cause
from verifier.formula import Const, Formula, is_true, render
from verifier.io import item_from_json
from verifier.solver import PremiseIndex, Result, Session, falsifies, relevant_background
from verifier.store import Store
from verifier.window import Item

if TYPE_CHECKING:  # only audits build a graph: a check does not import it
    from verifier.graph import JustificationGraph

__all__ = [
    "History",
    "LookedUpView",
    "ReadWhole",
    "RewriteContext",
    "WindowKnowledge",
    "WindowView",
]


class ReadWhole(Exception):
    """A check on what a rewrite touched (``kept_content`` set) found something or could
    not decide: the rewrite is to be checked on the whole windows, which words it."""

MODE_SUPPORT = "support"
MODE_COUNT = "count"


class StoreKnowledge:
    """What the rules read of the store, as premise indexes that live as long as an audit.

    ``commitments``: the commitment versions CP003 reads; ``content``: what the
    store asserts, CF005's premises. Both are kept up to date with each spill
    (entries are only ever added), each exclusion (never lifted) and each
    superseded observation (never restored as a premise): an event costs the same
    with a thousand stored entries or fifty thousand.
    """

    def __init__(self, session: Session, store: Store) -> None:
        self.session = session
        self.store = store
        self.commitments = PremiseIndex(session)
        self.content = PremiseIndex(session)
        self._seen = 0
        self._excluded: set[str] = set()
        self._superseded: set[str] = set()
        self._keys: dict[str, list[str]] = {}
        """id -> keys of its stored versions (in either index)."""
        self._order: dict[str, int] = {}
        """content key -> its place in spill order."""
        self._commitment_keys: set[str] = set()

    def __len__(self) -> int:
        """Stored commitment versions whose id is not excluded (TRUE formulas counted)."""
        return len(self._commitment_keys)

    def sync(self, excluded: Set[str], superseded: Set[str]) -> StoreKnowledge:
        """Take in what was spilled, excluded and superseded since the last call."""
        if len(excluded) != len(self._excluded):  # exclusions only grow
            for item_id in excluded - self._excluded:
                self._excluded.add(item_id)
                for key in self._keys.pop(item_id, ()):
                    self._commitment_keys.discard(key)
                    self.commitments.remove(key)
                    self.content.remove(key)
        if len(superseded) != len(self._superseded):
            for key in superseded - self._superseded:
                self._superseded.add(key)
                self.content.remove(key)
        fresh = self.store.entries_since(self._seen)
        self._seen += len(fresh)
        for real in fresh:
            key = real.key
            if real.id in self._excluded:
                continue
            keys = self._keys.setdefault(real.id, [])
            if key in keys:
                continue
            keys.append(key)
            f = real.formula
            if real.kind == "commitment":
                self._commitment_keys.add(key)
                self.commitments.add(key, real.id, f)
            if not is_true(f) and key not in self._superseded:
                self._order[key] = len(self._order)
                self.content.add(key, real.id, f)
        return self

    def commitments_consistent(self) -> bool:
        """Are the stored commitments satisfiable together? The content holds every one of
        them and CF005 needs its answer too: it is asked first, the commitments only when
        the content is not satisfiable (one read of the store where there were two)."""
        return self.content.consistent().holds or self.commitments.consistent().holds

    def content_near(self, seed: Iterable[str]) -> list[tuple[str, Formula]]:
        """The store's content linked to the seed atoms (the background links too), as
        (id, formula) in spill order."""
        return self._near(self.content, seed)

    def commitments_near(self, seed: Iterable[str]) -> list[tuple[str, Formula]]:
        """The store's commitments linked to the seed atoms, as (id, formula) in spill order."""
        return self._near(self.commitments, seed)

    def _near(self, index: PremiseIndex, seed: Iterable[str]) -> list[tuple[str, Formula]]:
        keys: dict[str, None] = {}
        index.reach(seed, keys)
        order = self._order  # every key of either index has its place (TRUE is in neither)
        return index.formulas_of(sorted(keys, key=order.__getitem__))


class WindowKnowledge:
    """The window's content and the knowledge CP003 reads, as premise indexes kept across
    events, each with a model (docs/rules.md, "Composition over a trace").

    ``content``: what the window asserts, one entry per window id (stubs
    resolved; excluded ids and superseded observations out). ``knowledge``: the
    window's commitments and every stored commitment version, one entry per
    version key (excluded ids out). An append changes them by its own items and
    a rewrite by what it changed, so an append costs what it adds, not what the
    window holds; the window described is :attr:`items`, compared by identity.
    """

    def __init__(self, session: Session, store: Store) -> None:
        self.session = session
        self.store = store
        self.items: tuple[Item, ...] | None = None
        """The window described (None: none yet)."""
        self.by_id: dict[str, Item] = {}
        self.content = PremiseIndex(session, keep_model=True)
        self.knowledge = PremiseIndex(session, keep_model=True)
        self._real: dict[str, Item | None] = {}
        """window id -> the item it stands for (None: a stub the store does not resolve)."""
        self._unresolved: set[str] = set()
        self._observations: dict[str, str] = {}
        """version key of an observation in the content -> its window id."""
        self.in_window: dict[str, str] = {}
        """version key of a window commitment (excluded ids out) -> its window id."""
        self.stored: dict[str, Item] = {}
        """version key of a stored commitment (excluded ids out) -> its first stored entry."""
        self._stored_keys: dict[str, list[str]] = {}
        self.store_order: dict[str, int] = {}
        """version key of a stored commitment -> its place in spill order."""
        self._positions: dict[str, int] | None = None
        self._excluded: set[str] = set()
        self._superseded: set[str] = set()
        self._seen = 0

    # -- keeping up -------------------------------------------------------------------------
    def sync(self, view: WindowView, history: History) -> WindowKnowledge:
        """Describe the view's window, with the history's exclusions and supersessions and
        everything spilled so far."""
        if len(history.excluded) != len(self._excluded):  # exclusions only grow
            for item_id in history.excluded - self._excluded:
                self._excluded.add(item_id)
                self._forget(item_id)
                for key in self._stored_keys.pop(item_id, ()):
                    self.stored.pop(key, None)
                    self._release(key)
        if len(history.superseded) != len(self._superseded):
            for key in history.superseded - self._superseded:
                self._superseded.add(key)
                self.drop_observation(key)
        fresh = self.store.entries_since(self._seen)
        self._seen += len(fresh)
        for real in fresh:
            if real.kind != "commitment" or real.id in self._excluded:
                continue
            key = real.key
            if key in self.store_order:
                continue
            self.store_order[key] = len(self.store_order)
            self._stored_keys.setdefault(real.id, []).append(key)
            self.stored[key] = real
            self.knowledge.add(key, real.id, real.formula)
        if fresh and self._unresolved:
            for item_id in sorted(self._unresolved):  # a spill may resolve a stub
                stub = self.by_id[item_id]
                if self._resolve(stub) is not None:
                    self._drop(item_id)
                    self._take(stub)
        if view.items is not self.items:
            old, new = self.by_id, view.by_id
            for item_id, it in old.items():
                if new.get(item_id) is not it:
                    self._drop(item_id)
            for it in view.items:
                if old.get(it.id) is not it:
                    self._take(it)
            self.items, self.by_id = view.items, view.by_id
            self._positions = None
        return self

    def appended(self, view: WindowView, items: Sequence[Item], excluded: Set[str]) -> None:
        """The window is now the view's: the one described, then these items (those with
        ids in ``excluded`` kept out of the premises)."""
        if any(self.holds(it.id) for it in items):
            # an id appended again (bad input a trace never holds): read the window anew
            for item_id in list(self._real):
                self._drop(item_id)
            self.items, self.by_id = None, {}
            return
        positions = self._positions
        for it in items:
            if positions is not None:
                positions[it.id] = len(positions)
            if it.id in excluded:
                self._real[it.id] = self._resolve(it)
                self.content.remove(it.id)  # it may stand there from the append's own checks
                continue
            self._take(it)
        self.items, self.by_id = view.items, view.by_id

    def _resolve(self, it: Item) -> Item | None:
        if it.kind != "stub":
            return it
        assert it.stub_ref is not None
        return self.store.resolve(it.stub_ref, it.id)

    def _take(self, it: Item) -> None:
        real = self._resolve(it)
        self._real[it.id] = real
        if real is None:
            self._unresolved.add(it.id)
            return
        if it.id in self._excluded:
            self.content.remove(it.id)
            return
        if real.kind == "observation":
            if real.key in self._superseded:
                self.content.remove(it.id)
                return
            self._observations[real.key] = it.id
        self.content.add(it.id, real.id, real.formula)
        if real.kind == "commitment":
            key = real.key
            self.in_window[key] = it.id
            self.knowledge.add(key, real.id, real.formula)

    def _drop(self, item_id: str) -> None:
        self._unresolved.discard(item_id)
        self._forget(item_id)
        self._real.pop(item_id, None)

    def _forget(self, item_id: str) -> None:
        """The id's window entry is no premise any more."""
        self.content.remove(item_id)
        real = self._real.get(item_id)
        if real is None:
            return
        key = real.key
        if real.kind == "observation" and self._observations.get(key) == item_id:
            del self._observations[key]
        if real.kind == "commitment" and self.in_window.get(key) == item_id:
            del self.in_window[key]
            self._release(key)

    def _release(self, key: str) -> None:
        if key not in self.in_window and key not in self.stored:
            self.knowledge.remove(key)

    def drop_observation(self, key: str) -> None:
        """A superseded observation version is no part of the content from now on."""
        item_id = self._observations.pop(key, None)
        if item_id is not None:
            self.content.remove(item_id)

    # -- reading ----------------------------------------------------------------------------
    @property
    def has_knowledge(self) -> bool:
        """Does the window or the store hold a commitment (excluded ids aside)?"""
        return bool(self.in_window) or bool(self.stored)

    def position(self, item_id: str) -> int:
        """The id's place in the window."""
        if self._positions is None:
            assert self.items is not None
            self._positions = {it.id: i for i, it in enumerate(self.items)}
        return self._positions[item_id]

    def real(self, item_id: str) -> Item | None:
        return self._real.get(item_id)

    def holds(self, item_id: str) -> bool:
        """Is the id in the window described?"""
        return item_id in self._real

    def knowledge_item(self, key: str) -> Item:
        """The knowledge entry under a version key: the window's commitment, else the
        first stored entry."""
        item_id = self.in_window.get(key)
        if item_id is not None:
            real = self._real[item_id]
            assert real is not None
            return real
        return self.stored[key]

    def knowledge_order(self, key: str) -> tuple[int, int]:
        """Where a knowledge entry stands: the window's commitments in window order, then
        the stored versions in spill order."""
        item_id = self.in_window.get(key)
        if item_id is not None:
            return (0, self.position(item_id))
        return (1, self.store_order[key])


@dataclass
class History:
    """What an audit remembers across events (empty for a single ``check``)."""

    appended_obs: set[str] = field(default_factory=set)
    """Versions (keys) of every observation an append created."""
    last_seen: dict[str, Item] = field(default_factory=dict)
    """The last version of every id that was ever in the window."""
    evicted_failed: dict[str, list[str]] = field(default_factory=dict)
    """source -> ids of its failed observations a rewrite evicted without a stub."""
    evicted_at: dict[str, int] = field(default_factory=dict)
    """observation id -> pass of the rewrite that last took it out of the window."""
    excluded: set[str] = field(default_factory=set)
    """Ids reported by CP003 or CP004: no premise of any later entailment."""
    cycles: set[frozenset[str]] = field(default_factory=set)
    """Justification cycles already reported."""
    held: set[str] = field(default_factory=set)
    """Every version (key) a window held: putting one back restores it."""
    held_versions: dict[str, list[Item]] = field(default_factory=dict)
    """id -> the first item of each version in :attr:`held`: one written otherwise (other
    spaces, a default written out) restores it too."""
    superseded: set[str] = field(default_factory=set)
    """Observation versions a later appended observation with their source superseded."""
    by_source: dict[str, set[str]] = field(default_factory=dict)
    """source -> versions of every observation with it seen so far."""
    answered: dict[str, list[str]] = field(default_factory=dict)
    """call id -> ids of every result (an item with that ``call``) seen so far."""
    evicted_records: dict[tuple[str, str], Item] = field(default_factory=dict)
    """(source, id) -> the failed version :attr:`evicted_failed` names by that id."""
    store_knowledge: StoreKnowledge | None = field(default=None, repr=False, compare=False)
    """The store's commitments as a premise index kept across events (not copied)."""
    window_knowledge: WindowKnowledge | None = field(default=None, repr=False, compare=False)
    """The window's content and CP003's knowledge, kept across appends (not copied)."""

    def copy(self) -> History:
        return History(
            set(self.appended_obs),
            dict(self.last_seen),
            {k: list(v) for k, v in self.evicted_failed.items()},
            dict(self.evicted_at),
            set(self.excluded),
            set(self.cycles),
            set(self.held),
            {k: list(v) for k, v in self.held_versions.items()},
            set(self.superseded),
            {k: set(v) for k, v in self.by_source.items()},
            {k: list(v) for k, v in self.answered.items()},
            dict(self.evicted_records),
        )

    def saw(self, item: Item) -> None:
        """Record a version seen in a window (an append's, or a rewrite's)."""
        if item.kind == "stub":
            return
        key = item.key
        if key not in self.held:
            self.held.add(key)
            self.held_versions.setdefault(item.id, []).append(item)
        if item.kind == "observation" and item.source is not None:
            self.by_source.setdefault(item.source, set()).add(item.key)
        if item.call is not None:
            results = self.answered.setdefault(item.call, [])
            if item.id not in results:
                results.append(item.id)


class WindowView:
    """A window as rules read it: items by id, stubs resolved through the store."""

    def __init__(self, items: Iterable[Item], store: Store) -> None:
        self.items = tuple(items)
        self.by_id: dict[str, Item] = {it.id: it for it in self.items}
        self.store = store
        self._resolved: dict[str, Item | None] = {}
        """What each stub resolved to (an item that is not a stub resolves to itself)."""
        self._pairs: tuple[tuple[Item, Item | None], ...] | None = None

    def appended(self, items: Iterable[Item]) -> tuple[WindowView, WindowView]:
        """Views of this window before and after an append of items, made in time
        proportional to the items: the view after takes this view's tables (this view is
        not to be used again), the view before reads them with the appended ids hidden."""
        added = tuple(items)
        table = self.by_id
        before = _Before(self, frozenset(it.id for it in added))
        table.update((it.id, it) for it in added)
        after = WindowView.__new__(WindowView)
        after.items = self.items + added
        after.by_id = table
        after.store = self.store
        after._resolved = self._resolved  # an id resolves alike in both: the same item
        after._pairs = None
        return before, after

    def forget_unresolved(self) -> None:
        """The store grew: a stub it did not resolve may resolve now (what it resolved
        stays: entries are only ever added, under the hash of their bytes)."""
        for item_id in [i for i, found in self._resolved.items() if found is None]:
            del self._resolved[item_id]
        self._pairs = None

    def __contains__(self, item_id: object) -> bool:
        return item_id in self.by_id

    def get(self, item_id: str) -> Item | None:
        return self.by_id.get(item_id)

    def resolve(self, item_id: str) -> Item | None:
        """The item for this id: itself, or what its stub resolves to (None if it does not)."""
        it = self.by_id.get(item_id)
        if it is None or it.kind != "stub":
            return it
        if item_id in self._resolved:
            return self._resolved[item_id]
        assert it.stub_ref is not None
        out = self.store.resolve(it.stub_ref, it.id)
        self._resolved[item_id] = out
        return out

    def resolved(self) -> tuple[tuple[Item, Item | None], ...]:
        """Each item, in window order, with what it resolves to (:meth:`resolve`); made
        once, for the many rules that read the whole window."""
        if self._pairs is None:
            self._pairs = tuple(
                (it, it if it.kind != "stub" else self.resolve(it.id)) for it in self.items
            )
        return self._pairs

    def is_stub(self, item_id: str) -> bool:
        it = self.by_id.get(item_id)
        return it is not None and it.kind == "stub"

    def retained(self, item_id: str) -> bool:
        """In the window as an item or a resolving stub."""
        return self.resolve(item_id) is not None

    def content(
        self, excluded: Set[str] = frozenset(), superseded: Set[str] = frozenset()
    ) -> list[tuple[Item, Formula]]:
        """What the window asserts, item by item in window order (stubs resolved).

        Items excluded by a finding and superseded observations are no part of it.
        """
        out: list[tuple[Item, Formula]] = []
        for it, real in self.resolved():
            if it.id in excluded:
                continue
            if real is None or (
                superseded and real.kind == "observation" and real.key in superseded
            ):
                continue
            f = real.formula
            if type(f) is not Const or f.value is not True:  # not is_true(f), inline
                out.append((real, f))
        return out

    def surviving_witnesses(
        self, item: Item, *, spilled: bool = False, excluded: Set[str] = frozenset()
    ) -> list[Item]:
        """The observations among item's witnesses that this window retains.

        For an item that was spilled (it stands in the window as a stub) the
        witnesses may also come from the store: they were spilled with it, whatever
        stands in the window under their ids (a stub the store cannot resolve
        included). Witnesses excluded by a finding do not count.
        """
        out: list[Item] = []
        for wid in item.witnesses:
            if wid in excluded:
                continue
            w = self.resolve(wid)
            if w is None and spilled:
                w = self.store.latest(wid)
            if w is not None and w.kind == "observation":
                out.append(w)
        return out

    def retained_witnesses(self, item: Item, *, excluded: Set[str] = frozenset()) -> list[Item]:
        """The observations item cites that are retained: in the window, behind a stub
        the store resolves, or in the store (WR005 reads these)."""
        out: list[Item] = []
        for wid in item.witnesses:
            if wid in excluded:
                continue
            w = self.resolve(wid)
            if w is None:
                w = self.store.latest(wid)
            if w is not None and w.kind == "observation":
                out.append(w)
        return out


class LookedUpView(WindowView):
    """A view whose lookups go through :meth:`get` and ``in`` (overridden by a subclass)
    rather than the id table :class:`WindowView` reads directly."""

    def is_stub(self, item_id: str) -> bool:
        it = self.get(item_id)
        return it is not None and it.kind == "stub"

    def surviving_witnesses(
        self, item: Item, *, spilled: bool = False, excluded: Set[str] = frozenset()
    ) -> list[Item]:
        out: list[Item] = []
        for wid in item.witnesses:
            if wid in excluded:
                continue
            w = self.resolve(wid)
            if w is None and spilled:
                w = self.store.latest(wid)
            if w is not None and w.kind == "observation":
                out.append(w)
        return out


class _Before(LookedUpView):
    """The window before an append, read from the id table the window after it took,
    with the appended ids hidden (:meth:`WindowView.appended`)."""

    def __init__(self, view: WindowView, hidden: frozenset[str]) -> None:
        self.items = view.items
        self.store = view.store
        self._table = view.by_id
        self._hidden = hidden
        self._resolved = view._resolved
        self._pairs = view._pairs
        self._own: dict[str, Item] | None = None

    @property
    def by_id(self) -> dict[str, Item]:
        """The id table of this window alone (copied on first use: appends never use it)."""
        if self._own is None:
            self._own = {k: v for k, v in self._table.items() if k not in self._hidden}
        return self._own

    @by_id.setter
    def by_id(self, table: dict[str, Item]) -> None:
        self._own = table

    def __contains__(self, item_id: object) -> bool:
        return item_id not in self._hidden and item_id in self._table

    def get(self, item_id: str) -> Item | None:
        return None if item_id in self._hidden else self._table.get(item_id)

    def resolve(self, item_id: str) -> Item | None:
        it = self.get(item_id)
        if it is None or it.kind != "stub":
            return it
        if item_id in self._resolved:
            return self._resolved[item_id]
        assert it.stub_ref is not None
        out = self.store.resolve(it.stub_ref, it.id)
        self._resolved[item_id] = out
        return out


_THROUGH_STUBS = frozenset({"WR006", "TP002"})
"""The rules a stub the store cannot resolve does not silence when it is a finding's first
item: WR006 (the stub's own), and TP002 (a call is known by its id alone)."""


@dataclass
class RewriteContext:
    """Everything the rules of one rewrite read, and the findings they report."""

    session: Session
    store: Store
    before: WindowView
    after: WindowView
    pass_no: int
    line: int | None
    mode: str = MODE_SUPPORT
    claimed_preserved: tuple[str, ...] | None = None
    history: History = field(default_factory=History)
    graph: JustificationGraph | None = None
    """The justification graph so far (audits keep one; CP001 asks it)."""
    findings: list[Finding] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    undecided_items: list[str] = field(default_factory=list)
    """The ids of the items whose questions were left undecided (a repair reverts or
    removes them: a repaired rewrite must be accepted)."""
    demoted: list[str] = field(default_factory=list)
    newly_excluded: list[str] = field(default_factory=list)
    """Ids this event's CP003/CP004 findings exclude (from the next event on)."""
    kept_content: PremiseIndex | None = None
    """The window before's content and the store's as one premise index kept across
    events (an audit's kept window): CF005 reads it instead of the whole window, and
    the first finding or undecided question raises :class:`ReadWhole`."""
    _valid_cache: dict[Formula, Result] = field(default_factory=dict)
    _changed: list[Item] | None = None
    _touched: set[str] | None = None
    _checkable_cache: dict[tuple[str, str], list[tuple[Item, bool | None]]] = field(
        default_factory=dict
    )
    """(side, id) -> each version of that id asked about on that side, with its answer."""
    _refuted: dict[int, Result] = field(default_factory=dict)
    """finding index -> the refuted entailment behind its counterexample."""

    # -- reporting ------------------------------------------------------------------------
    def report(
        self, code: str, items: Iterable[str], message: str, result: Result | None = None
    ) -> None:
        """Record a finding; a CF, WR or TP001 finding concerning a stub of the window after
        that the store cannot resolve is dropped: that stub is WR006's, and nothing else
        is charged for what it stands for (docs/rules.md, "Stubs the store cannot
        resolve"). TP002 reads only its id: a call standing as such a stub is still a call
        in the window, and a rewrite that drops its last result is charged."""
        items = tuple(items)
        silenced = code not in _THROUGH_STUBS and not code.startswith("CP")
        if silenced and self._unresolvable(items[0]):
            return
        if self.kept_content is not None:
            raise ReadWhole(code)
        cex = None
        refutes = None
        shown = result.shown_counterexample() if result is not None else None
        if shown is not None and result is not None:
            cex = tuple(sorted(shown.items()))
            if result.goal is not None:
                self._refuted[len(self.findings)] = result
                refutes = self._refutes(result, shown)
        self.findings.append(
            Finding(code, self.pass_no, tuple(items), message, self.line, cex, refutes)
        )

    def _refutes(self, result: Result, shown: Mapping[str, bool]) -> Refutes:
        assert result.goal is not None
        bg = relevant_background(self.session.background, shown)
        return Refutes(
            tuple(render(b) for b in bg),
            tuple(render(p) for p in result.premises),
            render(result.goal),
        )

    def finish(self) -> None:
        """Group the findings of this event by cause, and show one counterexample for all
        the findings on one item.

        Of the findings on one item the most causal is the primary; the others get
        ``related_to`` (:func:`verifier.findings.group_by_cause`).

        The findings on an item (CF002, CF005 and WR005 on a changed claim, say)
        each refute their own entailment. When one assignment of the union of
        their atoms falsifies every one of them (checked in plain Python), each
        shows that assignment, so the counterexamples agree; otherwise each keeps
        its own.
        """
        self.findings[:] = group_by_cause(self.findings)
        by_item: dict[str, list[int]] = {}
        for i in self._refuted:
            by_item.setdefault(self.findings[i].items[0], []).append(i)
        background = self.session.background
        for group in by_item.values():
            if len(group) < 2:
                continue
            results = [self._refuted[i] for i in group]
            union: set[str] = set()
            for r in results:
                union |= r.focus or set()
            # the most constrained question first: its model is likeliest to fit the others
            order = sorted(results, key=lambda r: -len(r.premises))
            chosen = None
            for cand in order:
                trial: dict[str, bool] = {}
                for r in (cand, *order):
                    cex = r.counterexample if r.counterexample is not None else {}
                    for name in union:
                        value = cex.get(name)
                        if value is not None:
                            trial.setdefault(name, value)
                trial = {name: trial.get(name, False) for name in sorted(union)}
                if all(
                    r.goal is not None
                    and falsifies(trial, relevant_background(background, trial), r.premises, r.goal)
                    for r in results
                ):
                    chosen = trial
                    break
            if chosen is None:
                continue
            for i in group:
                f = self.findings[i]
                self.findings[i] = dataclasses.replace(
                    f, counterexample=tuple(sorted(chosen.items()))
                )

    def _unresolvable(self, item_id: str) -> bool:
        return self.after.is_stub(item_id) and self.after.resolve(item_id) is None

    def unknown(self, what: str, result: Result, item: str | None = None) -> None:
        """A question the solver left undecided; ``item``: the id of the item it is about."""
        if self.kept_content is not None:
            raise ReadWhole(what)
        self.undecided.append(f"{what}: {result.reason or 'unknown'}")
        if item is not None and item not in self.undecided_items:
            self.undecided_items.append(item)

    # -- identity -------------------------------------------------------------------------
    def changed(self) -> list[Item]:
        """Items of after that are new or differ from their before version.

        Text, score and tokens are not read by any rule: an item that differs
        only in those is unchanged.
        """
        if self._changed is None:
            out = []
            earlier = self.before.by_id
            for it in self.after.items:
                old = earlier.get(it.id)
                if old is not it and not it.same_version(old):
                    out.append(it)
            self._changed = out
        return self._changed

    def restored(self, item: Item) -> bool:
        """A version some window held earlier, put back: not new (no CF005, no WR007)."""
        held = self.history.held
        if not held or item.kind == "stub":
            return False
        if item.key in held:
            return True
        return any(item.same_version(v) for v in self.history.held_versions.get(item.id, ()))

    @property
    def excluded(self) -> set[str]:
        return self.history.excluded

    def store_knowledge(self) -> StoreKnowledge:
        """The store's commitments not excluded, as a premise index kept in the history."""
        known = self.history.store_knowledge
        if known is None or known.store is not self.store or known.session is not self.session:
            known = self.history.store_knowledge = StoreKnowledge(self.session, self.store)
        return known.sync(self.history.excluded, self.history.superseded)

    def window_knowledge(self) -> WindowKnowledge:
        """The window before this event, as premise indexes kept in the history."""
        known = self.history.window_knowledge
        if known is None or known.store is not self.store or known.session is not self.session:
            known = self.history.window_knowledge = WindowKnowledge(self.session, self.store)
        return known.sync(self.before, self.history)

    def content(self, view: WindowView) -> list[tuple[Item, Formula]]:
        """The window's content as a premise: excluded items and superseded observations out."""
        return view.content(self.history.excluded, self.history.superseded)

    def stored_version(self, item: Item) -> bool:
        """Does the store hold this version of the item (text, score, tokens aside, and
        as parsed: written otherwise, it is the same version)?"""
        if item.ref in self.store:
            return True
        return any(item.same_version(v) for v in self.store.versions(item.id))

    def touched(self) -> set[str]:
        """Ids that are new, changed or removed in this rewrite."""
        if self._touched is None:
            ids = {it.id for it in self.changed()}
            ids.update(i for i in self.before.by_id if i not in self.after.by_id)
            self._touched = ids
        return self._touched

    def stands_for(self, it: Item, real: Item | None) -> Item | None:
        """What an entry of a window stands for: itself, what its stub resolves to, or,
        for a stub the store cannot resolve, the version of that id seen last (in the
        window before, else earlier in the session): such a stub is still an entry with
        its id (a call whose result stands as one is answered); never a surviving
        witness."""
        if real is not None or it.kind != "stub":
            return real
        earlier = self.before.resolve(it.id)
        return earlier if earlier is not None else self.history.last_seen.get(it.id)

    def earlier_version(self, item_id: str) -> Item | None:
        old = self.before.resolve(item_id)
        if old is None and item_id not in self.before:
            old = self.history.last_seen.get(item_id)
        return old

    # -- questions --------------------------------------------------------------------------
    def valid(self, formula: Formula) -> Result:
        hit = self._valid_cache.get(formula)
        if hit is None:
            hit = self.session.valid(formula, model=False)  # read for its verdict only
            self._valid_cache[formula] = hit
        return hit

    def seen_version(self, view: WindowView, item_id: str) -> Item | None:
        """The version of an id as the session knows it now: the view's (a stub resolved),
        else the one it saw last, out of the view or behind a stub the store does not
        resolve, else the store's. An id used again is its newer version, not one spilled
        before; the graph's path search starts from the same one."""
        it = view.resolve(item_id)
        if it is None:
            it = self.history.last_seen.get(item_id) or self.store.latest(item_id)
        return it

    def observation(self, view: WindowView, obs_id: str) -> Item | None:
        it = self.seen_version(view, obs_id)
        return it if it is not None and it.kind == "observation" else None

    def negative(self, item: Item, view: WindowView) -> bool:
        """Negative-result: failed modality, a rejection, or a failed witness."""
        if item.modality == "failed" or item.type == "rejection":
            return True
        for wid in item.witnesses:
            w = self.observation(view, wid)
            if w is not None and w.modality == "failed":
                return True
        return False

    def supports(self, witnesses: list[Item], item: Item, what: str) -> bool | None:
        """Do these witnesses jointly support item? None when the solver cannot tell."""
        goal = item.formula
        valid = self.valid(goal)
        if valid.unknown:
            self.unknown(what, valid, item.id)
            return None
        if valid.holds:
            return False
        res = self.session.entails([w.formula for w in witnesses], goal, [w.id for w in witnesses])
        if res.unknown:
            self.unknown(what, res, item.id)
            return None
        return res.holds

    def checkable(self, item: Item, view: WindowView, side: str) -> bool | None:
        """Item cites witnesses and those the view retains support it.

        Answered once per side and version (the same canonical JSON, hence the same id):
        a version is looked for among those of its id asked about already, so an item
        asked about once never has its canonical JSON written for it."""
        asked = self._checkable_cache.setdefault((side, item.id), [])
        for other, known in asked:
            if other is item or other.raw == item.raw:
                return known
        if not item.witnesses:
            out: bool | None = False
        else:
            spilled = view.is_stub(item.id)
            witnesses = view.surviving_witnesses(item, spilled=spilled, excluded=self.excluded)
            out = self.supports(witnesses, item, f"support of {item.id!r}")
        asked.append((item, out))
        return out


def preserved(before: WindowView, after: WindowView, item_id: str) -> bool:
    """Is the id in after unchanged: the same version, or one that resolves to the same?"""
    old, new = before.get(item_id), after.get(item_id)
    if old is None or new is None:
        return False
    if old.same_version(new):
        return True
    kept = after.resolve(item_id)
    return kept is not None and kept.same_version(before.resolve(item_id))


def demote(item: Item) -> Item:
    """The same item tagged ``unwitnessed``."""
    obj: dict[str, Any] = json.loads(item.raw)
    obj["modality"] = "unwitnessed"
    return item_from_json(obj)


def show(formula: Formula) -> str:
    return render(formula)


def record_eviction(history: History, real: Item, source: str) -> None:
    """Record a failed observation a rewrite evicted without a stub (CP003 re-runs)."""
    ids = history.evicted_failed.setdefault(source, [])
    if real.id not in ids:
        ids.append(real.id)
    history.evicted_records[source, real.id] = real


def puts_back(
    history: History, entry: Item | None, source: str, item_id: str, store: Store
) -> bool:
    """Does a window entry (an item, or a stub the store resolves) put the evicted failed
    record of ``source`` under this id back in sight (CP003)? Only that version does: another
    observation appended under its id since, of the same source or not, is not that record."""
    if entry is not None and entry.kind == "stub":
        entry = store.resolve(entry.stub_ref or "")
    return entry is not None and entry.same_version(history.evicted_records.get((source, item_id)))


def cite(ids: Iterable[str]) -> str:
    return ", ".join(repr(i) for i in ids)


def lookup_map(items: Iterable[Item]) -> Mapping[str, Item]:
    return {it.id: it for it in items}
