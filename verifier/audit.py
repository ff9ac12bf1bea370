"""Auditing a whole trace, event by event (docs/rules.md; the trace format: docs/formats.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verifier.check import Repair, RewriteResult, check_rewrite, verdict_of
from verifier.errors import (
    FormulaError,
    InputError,
    bad_argument,
    want_bool,
    want_choice,
    want_int,
    want_strings,
    want_text,
    wrong_type,
)
from verifier.findings import WITNESS_MODES, Finding
from verifier.io import background_argument, collector_paused, items_argument, trace_from_dicts
from verifier.parser import parse_formula
from verifier.rules.composition import check_append
from verifier.rules.context import (
    MODE_SUPPORT,
    History,
    RewriteContext,
    WindowView,
    puts_back,
    record_eviction,
)
from verifier.solver import Session
from verifier.store import LayeredStore, Store, store_argument
from verifier.window import Append, Event, Item, Rewrite, Spill, Trace

if TYPE_CHECKING:  # imported where used: `ctxproof check` reads neither
    from verifier.graph import JustificationGraph
    from verifier.rules.kept import Change, KeptWindow

__all__ = ["Auditor", "TraceReport", "audit_trace", "exit_code_for", "repair_json"]

KEPT_VIEW = True
"""Keep the window across events and check a rewrite on what it changed (docs/rules.md,
"Composition over a trace"); False reads every rewrite's windows whole. Either way the
output is the same: an auditor reads this when it is made."""


@dataclass(frozen=True, slots=True)
class TraceReport:
    """Everything an audit found in one trace."""

    trace: str
    rewrites: tuple[RewriteResult, ...]
    findings: tuple[Finding, ...]
    undecided: tuple[str, ...] = ()
    final_window: tuple[Item, ...] = field(default=(), compare=False, repr=False)

    @property
    def exit_code(self) -> int:
        return exit_code_for([self])

    def to_json(self, *, repairs: bool = False) -> dict[str, Any]:
        """The JSON result (docs/formats.md); with ``repairs``, each refused rewrite carries
        its ``repair`` (verdict, spill, actions, claimed_preserved)."""
        return {
            "trace": self.trace,
            "rewrites": [
                {
                    "pass": r.pass_,
                    "line": r.line,
                    "policy": r.policy,
                    "verdict": r.verdict,
                    **({"undecided": list(r.undecided)} if r.undecided else {}),
                    **({"demoted": list(r.demoted)} if r.demoted else {}),
                    **(
                        {"repair": repair_json(r.repair)}
                        if repairs and r.repair is not None
                        else {}
                    ),
                }
                for r in self.rewrites
            ],
            "findings": [f.to_json() for f in self.findings],
            **({"undecided": list(self.undecided)} if self.undecided else {}),
            "exit": self.exit_code,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> TraceReport:
        """The report :meth:`to_json` wrote, rebuilt (equal to the original).

        A rewrite's own findings are those of its pass made at its line (an
        append's findings carry the append's line). ``final_window`` and each
        rewrite's ``repair`` are not in the JSON (the JSON's repair holds ids
        only): they come back empty (they take no part in equality).
        """
        findings = tuple(Finding.from_json(f) for f in obj["findings"])
        rewrites = tuple(
            RewriteResult(
                r["pass"],
                r["line"],
                r["policy"],
                r["verdict"],
                tuple(f for f in findings if f.pass_ == r["pass"] and f.line == r["line"]),
                tuple(r.get("undecided", ())),
                tuple(r.get("demoted", ())),
            )
            for r in obj["rewrites"]
        )
        return cls(obj["trace"], rewrites, findings, tuple(obj.get("undecided", ())))


def repair_json(repair: Repair) -> dict[str, Any]:
    """A repair as the JSON output gives it: the ids spilled, not the items."""
    return {
        "verdict": repair.verdict,
        "spill": [it.id for it in repair.spill],
        "actions": list(repair.actions),
        "claimed_preserved": list(repair.claimed_preserved),
    }


def exit_code_for(reports: Iterable[TraceReport]) -> int:
    """0 all accepted and no finding; 1 any finding; 3 undecided and no finding."""
    reports = list(reports)
    if any(r.findings for r in reports):
        return 1
    if any(r.undecided or any(w.verdict == "undecided" for w in r.rewrites) for r in reports):
        return 3
    return 0


class Auditor:
    """An audit fed one event at a time: what ``audit_trace`` runs, for callers that build
    the trace as they go (the fuzzer's simulated agent, a guard in an agent loop).

    The store given is only read; spills go to a memory layer over it. The
    justification graph is built along the way. With ``repair``, a refused
    rewrite's result carries its repair, computed with the session's history (as
    ``check --repair`` computes it for one rewrite). A ``session`` made for the same
    background may be shared by several audits (its answers do not depend on what it
    was asked before); by default each audit makes its own.
    """

    def __init__(
        self,
        background: Iterable[str] = (),
        *,
        name: str = "<trace>",
        store: Store | None = None,
        mode: str = MODE_SUPPORT,
        graph: JustificationGraph | None = None,
        repair: bool = False,
        session: Session | None = None,
    ) -> None:
        self.session = _session_for(background, session)
        want_text(name, func="Auditor", arg="name")
        _common_arguments("Auditor", store, mode, graph)
        want_bool(repair, func="Auditor", arg="repair")
        self.name = name
        self.mode = mode
        self.repair = repair
        self.store = LayeredStore(store)
        from verifier.graph import JustificationGraph

        self.graph = graph if graph is not None else JustificationGraph()
        self.history = History()
        if store is not None:
            entries = list(store.items())
            self.graph.spill(entries, 0)  # entries that predate the trace
            _stored(self.history, entries)
        self.window: tuple[Item, ...] = ()
        self._view: WindowView | None = None
        """A view of the window, kept from one append to the next."""
        self.kept_view = KEPT_VIEW
        self._kept: KeptWindow | None = None
        """The window with what a rewrite's check reads, kept across events."""
        self.pass_no = 0
        self.rewrites: list[RewriteResult] = []
        self.findings: list[Finding] = []
        self.undecided: list[str] = []

    def append(
        self, items: Sequence[Item | Mapping[str, Any]], line: int | None = None
    ) -> list[Finding]:
        """Check an append of items (Items or plain item dicts); returns its findings.

        Raises:
            TypeError: ``items`` is not a list of items, ``line`` not an int or None.
            InputError: an invalid item, an id twice, or an id already in the window.
        """
        checked = items_argument(items, func="Auditor.append", arg="items")
        want_int(line, func="Auditor.append", arg="line", minimum=1, optional=True)
        view = self._view
        if view is None or view.items is not self.window:
            view = self._view = WindowView(self.window, self.store)  # the one _append reads
        for it in checked:
            if it.id in view:
                raise InputError(
                    "an append of an id already in the window",
                    file="Auditor.append()",
                    item=it.id,
                    fix="give the new item a new id, or rewrite the window to change it",
                )
        return self._append(checked, line)

    def _append(self, items: Sequence[Item], line: int | None) -> list[Finding]:
        history, graph = self.history, self.graph
        items = tuple(items)
        view = self._view
        if view is None or view.items is not self.window:
            view = WindowView(self.window, self.store)
        self._view = None
        again = any(it.id in view for it in items)
        if again:
            # an id already in the window (bad input a trace never holds): views of its own
            before = WindowView(self.window, self.store)
            after_view = WindowView((*self.window, *items), self.store)
        else:
            before, after_view = view.appended(items)
        after = after_view.items
        # the append's items are in the graph when their uses are checked (CP001)
        graph.append(items, self.pass_no, line)
        ctx = RewriteContext(
            session=self.session,
            store=self.store,
            before=before,
            after=after_view,
            pass_no=self.pass_no,
            line=line,
            mode=self.mode,
            history=history,
            graph=graph,
        )
        check_append(ctx, tuple(items))
        ctx.finish()
        self.findings.extend(ctx.findings)
        self.undecided.extend(f"line {line}: {u}" for u in ctx.undecided)
        _appended(history, items, ctx.newly_excluded)
        if ctx.newly_excluded:
            # each id excluded by the first CP003 or CP004 finding that names it
            code_of: dict[str, str] = {}
            for f in ctx.findings:
                if f.code in ("CP003", "CP004"):
                    for item_id in f.items:
                        code_of.setdefault(item_id, f.code)
            for item_id in dict.fromkeys(ctx.newly_excluded):
                graph.exclude(item_id, f"{code_of[item_id]} at line {line}")
        kept = self._kept
        if kept is not None:
            if kept.items is self.window and not again:
                kept.appended(items, after)
            else:
                self._kept = None
        self.window = after
        self._view = after_view
        return ctx.findings

    def spill(self, items: Sequence[Item | Mapping[str, Any]], line: int | None = None) -> None:
        """Record a spill: the items (Items or plain item dicts) are in the store from now on.

        Raises:
            TypeError, InputError: as :meth:`append` (a spilled id may be in the window).
        """
        checked = items_argument(items, func="Auditor.spill", arg="items", unique=False)
        want_int(line, func="Auditor.spill", arg="line", minimum=1, optional=True)
        self._spill(checked, line)

    def _spill(self, items: Sequence[Item], line: int | None) -> None:
        self.store.spill(items)
        self.graph.spill(items, self.pass_no, line)
        _stored(self.history, items)
        if self._view is not None:
            self._view.forget_unresolved()

    def rewrite(
        self,
        after: Sequence[Item | Mapping[str, Any]],
        *,
        policy: str | None = None,
        claimed_preserved: Sequence[str] | None = None,
        line: int | None = None,
    ) -> RewriteResult:
        """Check a rewrite of the current window into ``after`` (Items or plain item dicts);
        the audit goes on from it.

        Raises:
            TypeError: an argument of the wrong type.
            InputError: an invalid item, or an id twice in ``after``.
        """
        checked = items_argument(after, func="Auditor.rewrite", arg="after")
        want_text(policy, func="Auditor.rewrite", arg="policy", optional=True)
        if claimed_preserved is not None:
            claimed_preserved = want_strings(
                claimed_preserved, func="Auditor.rewrite", arg="claimed_preserved", what="ids"
            )
        want_int(line, func="Auditor.rewrite", arg="line", minimum=1, optional=True)
        return self._rewrite(
            checked, policy=policy, claimed_preserved=claimed_preserved, line=line
        )

    def _rewrite(
        self,
        after: tuple[Item, ...] | None,
        *,
        policy: str | None,
        claimed_preserved: Sequence[str] | None,
        line: int | None,
        diff: Rewrite | None = None,
    ) -> RewriteResult:
        """Check a rewrite into ``after``, or by the ``diff`` of a rewrite event."""
        self.pass_no += 1
        kept = self._kept_window()
        change = None
        if kept is not None:
            if diff is None:
                change = kept.change_of(after)
            else:
                change = kept.change_of(None, diff.remove, diff.put)
        if change is None:
            if after is None:
                assert diff is not None
                after = tuple(diff.apply(self.window))
            self._kept = None  # made anew at the next rewrite
        else:
            after = change.after
        result = None
        if change is not None and kept is not None:
            result = self._kept_check(kept, change, policy, claimed_preserved, line)
        if result is None:
            result = check_rewrite(
                self.window,
                after,
                store=self.store,
                session=self.session,
                history=self.history,
                mode=self.mode,
                claimed_preserved=claimed_preserved,
                pass_no=self.pass_no,
                line=line,
                policy=policy,
                with_repair=self.repair,
            )
        self.rewrites.append(result)
        self.findings.extend(result.findings)
        if change is not None and kept is not None:
            kept.remember(change, self.history, self.pass_no)
            self.graph.rewrite_change(
                kept.by_id.get, change.came, change.removed, self.pass_no, policy=policy, line=line
            )
            kept.rewritten(change)
        else:
            _remember(self.history, self.window, after, self.pass_no, self.store)
            self.graph.rewrite(self.window, after, self.pass_no, policy=policy, line=line)
        self.window = after
        self._view = None
        return result

    def _kept_window(self) -> KeptWindow | None:
        """The kept window of the window now (None: not kept, or it holds an id twice)."""
        if not self.kept_view:
            return None
        kept = self._kept
        if kept is None or kept.items is not self.window:
            from verifier.rules.kept import KeptWindow

            kept = self._kept = KeptWindow.of(self.window, self.session, self.store)
        return kept

    def _kept_check(
        self,
        kept: KeptWindow,
        change: Change,
        policy: str | None,
        claimed_preserved: Sequence[str] | None,
        line: int | None,
    ) -> RewriteResult | None:
        """The result of a rewrite checked on what it changed; None when the whole windows
        are to be read (a finding, an undecided question, or a change that reaches
        untouched entries: see :mod:`verifier.rules.kept`)."""
        ctx = kept.check(
            change,
            history=self.history,
            pass_no=self.pass_no,
            line=line,
            mode=self.mode,
            claimed_preserved=claimed_preserved,
        )
        if ctx is None:
            return None
        return RewriteResult(
            self.pass_no, line, policy, verdict_of(ctx), (), (), tuple(ctx.demoted)
        )

    def feed(self, ev: Event) -> None:
        """Check one parsed trace event (an event of a :class:`Trace`: validated already).

        The cycle collector is paused while the event is checked, as while a rewrite is
        checked (:func:`verifier.io.collector_paused`): an event builds many small objects
        and no cycles, and a collector pass that walks the growing heap finds nothing (at a
        50k-item trace, about a quarter of the audit).

        Raises:
            TypeError: ``ev`` is not an event of a Trace (build one with trace_from_dicts).
        """
        with collector_paused():
            self._feed(ev)

    def _feed(self, ev: Event) -> None:
        if isinstance(ev, Append):
            self._append(ev.items, ev.line)
        elif isinstance(ev, Rewrite):
            self._rewrite(
                ev.window,
                diff=ev if ev.window is None else None,
                policy=ev.policy,
                claimed_preserved=ev.claimed_preserved,
                line=ev.line,
            )
        elif isinstance(ev, Spill):
            self._spill(ev.items, ev.line)
        else:
            raise wrong_type(
                "Auditor.feed",
                "ev",
                ev,
                "an event of a Trace (Append, Spill or Rewrite)",
                "call append(items), spill(items) or rewrite(window) with plain dicts instead",
            )

    def report(self) -> TraceReport:
        return TraceReport(
            self.name,
            tuple(self.rewrites),
            tuple(self.findings),
            tuple(self.undecided),
            self.window,
        )


def audit_trace(
    trace: Trace,
    *,
    store: Store | None = None,
    mode: str = MODE_SUPPORT,
    graph: JustificationGraph | None = None,
    until_pass: int | None = None,
    repair: bool = True,
) -> TraceReport:
    """Check every event of a trace in order; the store given is only read.

    With ``graph``, the justification graph is built along the way; with
    ``until_pass``, the audit stops after that rewrite. Each refused rewrite
    carries its repair (``rewrites[i].repair``: the spill, the repaired window,
    what was done), computed with the session's history; ``repair=False`` skips
    that work.

    >>> from verifier.io import trace_from_dicts
    >>> rej = {"id": "r1", "kind": "commitment", "type": "rejection", "formula": "!db.mysql"}
    >>> report = audit_trace(trace_from_dicts([
    ...     {"event": "header", "format": "ctxproof-trace/1"},
    ...     {"event": "append", "items": [rej]},
    ...     {"event": "rewrite", "policy": "summarize", "window": []}]))
    >>> [f.code for f in report.findings], report.rewrites[0].verdict
    (['CF001'], 'refuse')
    >>> [it.kind for it in report.rewrites[0].repair.window]
    ['stub']

    Raises:
        TypeError: ``trace`` is not a Trace (or a list of event dicts), or another
            argument is of the wrong type.
        InputError: a list of event dicts that is not a valid trace, an unknown ``mode``.
    """
    if not isinstance(trace, Trace):
        if isinstance(trace, str | bytes | bytearray) or not isinstance(trace, list | tuple):
            raise wrong_type(
                "audit_trace",
                "trace",
                trace,
                "a Trace (or a list of event dicts)",
                "read one with load_trace(path) or parse_trace_text(text)",
            )
        trace = trace_from_dicts(trace)
    _common_arguments("audit_trace", store, mode, graph)
    want_int(until_pass, func="audit_trace", arg="until_pass", minimum=0, optional=True)
    want_bool(repair, func="audit_trace", arg="repair")
    auditor = Auditor(
        trace.header.background,
        name=trace.name,
        store=store,
        mode=mode,
        graph=graph,
        repair=repair,
    )
    for ev in trace.events:
        if isinstance(ev, Rewrite) and until_pass is not None and auditor.pass_no >= until_pass:
            break
        auditor.feed(ev)
    return auditor.report()


def _session_for(background: object, session: object) -> Session:
    """The solver session an audit asks: its own, or one made for the same background and
    shared by several audits (the fuzzer's sessions: its answers do not depend on what it
    was asked before; it refused an unsatisfiable background when it was made)."""
    if session is None:
        texts = background_argument(background, func="Auditor")
        return Session([parse_formula(b) for b in texts])
    if not isinstance(session, Session):
        raise wrong_type("Auditor", "session", session, "a verifier.solver.Session, or None")
    texts = want_strings(background, func="Auditor", arg="background", what="formula strings")
    try:
        formulas = tuple(parse_formula(b) for b in texts)
    except FormulaError:
        background_argument(texts, func="Auditor")  # says which formula, and how to fix it
        raise
    if session.background != formulas:
        raise bad_argument(
            "Auditor",
            "session was made for another background than the one given",
            fix="give a Session made with the same background formulas, or None",
        )
    return session


def _common_arguments(func: str, store: object, mode: object, graph: object) -> None:
    store_argument(store, func=func)
    want_choice(mode, WITNESS_MODES, func=func, arg="mode")
    from verifier.graph import JustificationGraph

    if graph is not None and not isinstance(graph, JustificationGraph):
        raise wrong_type(func, "graph", graph, "a verifier.graph.JustificationGraph or None")


def _appended(history: History, items: Iterable[Item], excluded: Iterable[str]) -> None:
    """Carry an append's effects: exclusions, superseded runs, the versions it created."""
    history.excluded.update(excluded)
    for it in items:
        if it.kind == "observation":
            history.appended_obs.add(it.key)
            if it.source is not None:
                # a later run of a source supersedes every earlier one: no part of content
                earlier = history.by_source.get(it.source, set())
                history.superseded.update(k for k in earlier if k != it.key)
        history.saw(it)
        history.last_seen[it.id] = it


def _stored(history: History, items: Iterable[Item]) -> None:
    """Observations in the store are earlier runs of their source too."""
    for it in items:
        if it.kind == "observation" and it.source is not None:
            history.by_source.setdefault(it.source, set()).add(it.key)


def _remember(
    history: History, before: tuple[Item, ...], after: tuple[Item, ...], pass_no: int, store: Store
) -> None:
    """Carry what later rules need across a rewrite: evictions and versions seen."""
    view = WindowView(after, store)
    after_ids = {it.id for it in after}
    for it in before:
        real = it
        if it.kind == "stub":
            resolved = store.resolve(it.stub_ref or "")
            if resolved is None:
                continue
            real = resolved
        history.last_seen[it.id] = real
        if real.kind != "observation":
            continue
        if it.id not in after_ids or not view.retained(it.id):
            history.evicted_at[it.id] = pass_no
            if real.modality == "failed" and real.source is not None and it.id not in after_ids:
                record_eviction(history, real, real.source)
    held = {it.id: it for it in after}
    for source, ids in history.evicted_failed.items():
        # a failed record a rewrite put back (item or stub) is in sight again; another
        # observation appended under its id since is not that record
        ids[:] = [i for i in ids if not puts_back(history, held.get(i), source, i, store)]
    for it in after:
        if it.kind != "stub":
            history.last_seen[it.id] = it
        history.saw(it)
