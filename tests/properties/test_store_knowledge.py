"""The store's knowledge kept across events answers what a full re-read answers.

An audit keeps the store's commitments (CP003) and content (CF005) as premise
indexes updated with each spill, exclusion and supersession, and reads of the
store's content only what the window and the goals reach. The reference reads
the whole store at every event, as one premise set, like a check with no
history would.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from verifier.audit import Auditor, TraceReport, audit_trace
from verifier.formula import Formula
from verifier.io import item_from_json, parse_trace_text
from verifier.rules.context import RewriteContext, StoreKnowledge
from verifier.strategies import formula_texts, traces


@contextmanager
def _full_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every event reads the whole store afresh, as one premise set."""

    def fresh(self: RewriteContext) -> StoreKnowledge:
        known = StoreKnowledge(self.session, self.store)
        return known.sync(self.history.excluded, self.history.superseded)

    def everything(self: StoreKnowledge, seed: object) -> list[tuple[str, Formula]]:
        return [(it.id, f) for it, f in _store_content(self)]

    def all_commitments(self: StoreKnowledge, seed: object) -> list[tuple[str, Formula]]:
        return [(it.id, f) for it, f in _store_content(self) if it.kind == "commitment"]

    with monkeypatch.context() as m:
        m.setattr(RewriteContext, "store_knowledge", fresh)
        m.setattr(StoreKnowledge, "content_near", everything)
        m.setattr(StoreKnowledge, "commitments_near", all_commitments)
        yield


def _store_content(known: StoreKnowledge) -> list[tuple[Any, Formula]]:
    from verifier.formula import TRUE

    return [
        (it, it.formula)
        for it in known.store.items()
        if it.id not in known._excluded
        and it.key not in known._superseded
        and it.formula != TRUE
    ]


def _observable(report: TraceReport) -> list[object]:
    """Verdicts, findings and what was left undecided. Counterexample values are left
    out: each is a model the solver picked, and which one it picks can follow the
    queries asked before (any assignment that refutes the question is right)."""
    return [
        [(r.pass_, r.verdict) for r in report.rewrites],
        [(f.code, f.pass_, f.items, f.message, f.line) for f in report.findings],
        list(report.undecided),
    ]


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(traces(max_events=10))
def test_kept_knowledge_answers_like_a_full_reread(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    note(text)
    trace = parse_trace_text(text, "<generated>")
    kept = audit_trace(trace)
    with _full_reads(monkeypatch):
        full = audit_trace(parse_trace_text(text, "<generated>"))
    assert _observable(kept) == _observable(full)


ATOMS = ("a", "b", "c", "d", "e")
Obj = dict[str, Any]


@st.composite
def _item(draw: st.DrawFn, n: int) -> Obj:
    """An item over a small vocabulary: ids repeat (new versions), sources repeat
    (supersession), formulas share atoms (slices that meet) and may contradict."""
    kind = draw(st.sampled_from(["commitment", "commitment", "claim", "observation"]))
    item_id = draw(st.sampled_from([f"k{i}" for i in range(6)] + [f"x{n}"]))
    text = draw(formula_texts(ATOMS, max_depth=draw(st.sampled_from([0, 1, 2]))))
    if kind == "observation":
        return {
            "id": item_id,
            "kind": "observation",
            "modality": "verified",
            "exit_code": 0,
            "source": draw(st.sampled_from(["run a", "run b"])),
            "shows": text,
        }
    obj: Obj = {"id": item_id, "kind": kind, "formula": text}
    if kind == "commitment":
        obj["type"] = "decision"
    return obj


@st.composite
def sessions(draw: st.DrawFn) -> list[tuple[str, list[Obj]]]:
    """Events for an Auditor: spills straight to the store or of the window, appends,
    rewrites that keep part of the window and add or change claims (CF005's goals)."""
    events: list[tuple[str, list[Obj]]] = []
    for n in range(draw(st.integers(2, 12))):
        what = draw(st.sampled_from(["spill", "keep", "append", "append", "rewrite"]))
        items = draw(st.lists(_item(n), min_size=1, max_size=3))
        events.append((what, items))
    return events


def _run(events: list[tuple[str, list[Obj]]], background: list[str]) -> TraceReport:
    auditor = Auditor(background)
    for line, (what, objs) in enumerate(events, start=2):
        items = [item_from_json(o) for o in objs]
        if what == "spill":
            auditor.spill(items, line)
        elif what == "keep":  # what the window holds goes to the store too
            auditor.spill([it for it in auditor.window if it.kind != "stub"], line)
        elif what == "append":  # ids new to the window, each once (Auditor refuses others)
            fresh = {it.id for it in auditor.window}
            once = {it.id: it for it in reversed(items) if it.id not in fresh}
            auditor.append(list(reversed(once.values())), line)
        else:
            new = {it.id: it for it in items}
            kept = [new.pop(it.id, it) for it in auditor.window[::2]]
            auditor.rewrite([*kept, *new.values()], line=line)
    return auditor.report()


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(sessions(), st.sampled_from([[], ["a -> b"], ["c | d", "!e"]]))
def test_kept_knowledge_answers_like_a_full_reread_on_contradicting_sessions(
    monkeypatch: pytest.MonkeyPatch, events: list[tuple[str, list[Obj]]], background: list[str]
) -> None:
    note(repr(events))
    kept = _run(events, background)
    with _full_reads(monkeypatch):
        full = _run(events, background)
    assert _observable(kept) == _observable(full)


def test_an_exclusion_takes_every_stored_version_of_its_id_out_of_the_premises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[tuple[str, list[Obj]]] = [
        ("spill", [{"id": "k0", "kind": "commitment", "type": "decision", "formula": "a"}]),
        ("spill", [{"id": "k1", "kind": "commitment", "type": "decision", "formula": "b"}]),
        # contradicts k1: CP003 excludes the id k0, its stored version included
        ("append", [{"id": "k0", "kind": "claim", "formula": "!b"}]),
        ("rewrite", [{"id": "c1", "kind": "claim", "formula": "a"}]),
    ]
    kept = _run(events, [])
    with _full_reads(monkeypatch):
        full = _run(events, [])
    assert _observable(kept) == _observable(full)
    assert [f.code for f in kept.findings] == ["CP003", "CF005"]


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(sessions(), st.sampled_from([[], ["a -> b"], ["c | d", "!e"]]))
def test_models_extended_in_python_answer_like_the_solver(
    monkeypatch: pytest.MonkeyPatch, events: list[tuple[str, list[Obj]]], background: list[str]
) -> None:
    """CP003/CP004 skip the solver when a model of the premises and the append's earlier
    items extends to the new item; asking the solver every time gives the same findings."""
    from verifier.rules import composition

    note(repr(events))
    kept = _run(events, background)
    with monkeypatch.context() as m:
        m.setattr(composition, "_extends", lambda model, f: False)
        asked = _run(events, background)
    assert _observable(kept) == _observable(asked)
