"""The audit's fast paths give byte-identical output to the slow ones they replace.

An audit keeps the window's content and the knowledge CP003 reads as indexes
with a model across events (``WindowKnowledge``), asks each appended item only
about what its atoms reach, and keeps the window's view from one append to the
next. The slow path reads the premises from the windows at every append and
builds every view afresh: the reference. Both audit the same generated traces
(appends of items that contradict each other, the window and the store, over a
small vocabulary; spills, stubs, rewrites) and must print the same JSON, byte
for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from verifier.audit import Auditor, audit_trace
from verifier.io import parse_trace_text
from verifier.rules import composition
from verifier.rules.context import WindowView
from verifier.strategies import formula_texts, ref_of, traces, windows

Obj = dict[str, Any]
ATOMS = ("a", "b", "c", "d", "e", "f")
SOURCES = ("run a", "run b", "run c")


@contextmanager
def slow_paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every append reads its premises from the windows, and every view is built anew."""

    def fresh_views(self: WindowView, items: Any) -> tuple[WindowView, WindowView]:
        items = tuple(items)
        return WindowView(self.items, self.store), WindowView((*self.items, *items), self.store)

    with monkeypatch.context() as m:
        m.setattr(composition._Indexed, "start", classmethod(lambda cls, ctx, appended: None))
        m.setattr(WindowView, "appended", fresh_views)
        yield


def _output(text: str) -> str:
    """What ``ctxproof audit --format json`` prints for the trace, and the final window."""
    report = audit_trace(parse_trace_text(text, "generated.jsonl"))
    final = [it.raw for it in report.final_window]
    return json.dumps([report.to_json(repairs=True), final], sort_keys=True)


@st.composite
def _item(draw: st.DrawFn, item_id: str, observations: list[str]) -> Obj:
    """An item over a small vocabulary: formulas meet and contradict each other, sources
    repeat (later runs supersede earlier ones), claims cite observations."""
    kind = draw(st.sampled_from(["commitment", "commitment", "claim", "claim", "observation"]))
    text = draw(formula_texts(ATOMS, max_depth=draw(st.sampled_from([0, 0, 1, 2]))))
    if kind == "observation":
        modality = draw(st.sampled_from(["verified", "failed"]))
        return {
            "id": item_id,
            "kind": "observation",
            "modality": modality,
            "exit_code": 1 if modality == "failed" else 0,
            "source": draw(st.sampled_from(SOURCES)),
            "shows": text,
        }
    obj: Obj = {"id": item_id, "kind": kind, "formula": text}
    if kind == "commitment":
        obj["type"] = draw(st.sampled_from(["decision", "rejection", "invariant"]))
    if bool(observations) and draw(st.booleans()):
        obj["witnesses"] = draw(
            st.lists(st.sampled_from(observations), min_size=1, max_size=2, unique=True)
        )
        obj["modality"] = draw(st.sampled_from(["verified", "unverified"]))
    return obj


@st.composite
def contradicting_traces(draw: st.DrawFn) -> str:
    """Appends of up to eight items that contradict each other, the window and the store;
    spills of the window's items; rewrites (a diff) that stub, drop or change items."""
    background = draw(st.sampled_from([[], ["a -> b"], ["c | d", "!e"], ["a <-> !f"]]))
    lines: list[Obj] = [
        {"event": "header", "format": "ctxproof-trace/1", "background": background}
    ]
    window: dict[str, Obj] = {}
    stored: dict[str, Obj] = {}
    observations: list[str] = []
    serial = 0
    for _ in range(draw(st.integers(1, 9))):
        what = draw(st.sampled_from(["append", "append", "append", "spill", "rewrite"]))
        if what == "append" or not window:
            items: list[Obj] = []
            for _ in range(draw(st.integers(1, 8))):
                taken = {it["id"] for it in items}
                spare = [o for i, o in stored.items() if i not in window and i not in taken]
                if spare and draw(st.integers(0, 5)) == 0:
                    obj = draw(st.sampled_from(spare))
                    items.append({"id": obj["id"], "kind": "stub", "ref": ref_of(obj)})
                    continue
                serial += 1
                obj = draw(_item(f"x{serial}", observations))
                if obj["kind"] == "observation":
                    observations.append(obj["id"])
                items.append(obj)
            lines.append({"event": "append", "items": items})
            window.update((it["id"], it) for it in items)
        elif what == "spill":
            plain = [o for o in window.values() if o["kind"] != "stub"]
            if not plain:
                continue
            picked = draw(
                st.lists(
                    st.sampled_from(plain), min_size=1, max_size=3, unique_by=lambda o: o["id"]
                )
            )
            lines.append({"event": "spill", "items": picked})
            stored.update((o["id"], o) for o in picked)
        else:
            remove: list[str] = []
            put: list[Obj] = []
            for iid, obj in list(window.items()):
                op = draw(st.sampled_from(["keep", "keep", "keep", "drop", "stub", "change"]))
                if op == "drop":
                    remove.append(iid)
                    del window[iid]
                elif op == "stub" and obj["kind"] != "stub" and iid in stored:
                    stub = {"id": iid, "kind": "stub", "ref": ref_of(stored[iid])}
                    put.append(stub)
                    window[iid] = stub
                elif op == "change" and obj["kind"] in ("commitment", "claim"):
                    new = dict(obj, formula=draw(formula_texts(ATOMS, max_depth=1)))
                    put.append(new)
                    window[iid] = new
            lines.append(
                {"event": "rewrite", "policy": "random", "diff": {"remove": remove, "put": put}}
            )
    return "".join(json.dumps(line) + "\n" for line in lines)


LONG = settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
"""The long tier's run of each property (make test-slow)."""

SETTINGS = settings(LONG, max_examples=60)
"""The fast tier's: the same properties on 60 examples (the long tier runs 250)."""


def _fast_is_slow(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    note(text)
    fast = _output(text)
    with slow_paths(monkeypatch):
        slow = _output(text)
    assert fast == slow


@SETTINGS
@given(contradicting_traces())
def test_fast_paths_print_what_the_slow_ones_print_on_contradicting_traces(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    _fast_is_slow(monkeypatch, text)


@pytest.mark.slow
@LONG
@given(contradicting_traces())
def test_fast_paths_print_what_the_slow_ones_print_on_contradicting_traces_long(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    _fast_is_slow(monkeypatch, text)


@SETTINGS
@given(traces(max_events=10))
def test_fast_paths_print_what_the_slow_ones_print_on_generated_traces(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    _fast_is_slow(monkeypatch, text)


@pytest.mark.slow
@LONG
@given(traces(max_events=10))
def test_fast_paths_print_what_the_slow_ones_print_on_generated_traces_long(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    _fast_is_slow(monkeypatch, text)


def test_the_fast_path_is_taken_and_finds_what_the_slow_one_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A case the property must not pass vacuously: the fast path answers (no fallback),
    and the findings are CP003 and CP004 on most of an append's items."""
    taken: list[bool] = []
    start = composition._Indexed.start

    def spy(ctx: Any, appended: Any) -> Any:
        prem = start(ctx, appended)
        taken.append(prem is not None)
        return prem

    lines: list[Obj] = [
        {"event": "header", "format": "ctxproof-trace/1", "background": []},
        {"event": "append", "items": [
            {"id": "e1", "kind": "claim", "formula": "e.1"},
            {"id": "c1", "kind": "commitment", "type": "decision", "formula": "k.1"},
        ]},
        {"event": "append", "items": [
            {"id": "n1", "kind": "commitment", "type": "decision", "formula": "!e.1"},
            {"id": "n2", "kind": "claim", "formula": "!k.1"},
            {"id": "n3", "kind": "claim", "formula": "z & !z"},
            {"id": "n4", "kind": "claim", "formula": "e.1 | k.1"},
        ]},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    with monkeypatch.context() as m:
        m.setattr(composition._Indexed, "start", spy)
        fast = _output(text)
    assert taken == [True, True]
    with slow_paths(monkeypatch):
        slow = _output(text)
    assert fast == slow
    codes = [(f["code"], f["items"]) for f in json.loads(fast)[0]["findings"]]
    assert codes == [("CP004", ["n1", "e1"]), ("CP003", ["n2", "c1"]), ("CP004", ["n3"])]


def test_an_append_into_a_kept_window_reads_only_what_it_adds() -> None:
    """The kept indexes describe the window across appends: the second append finds them
    in sync (no re-read of the window) and they hold exactly the window's content."""
    auditor = Auditor([])
    first = [
        {"id": f"c{i}", "kind": "commitment", "type": "decision", "formula": f"a.{i} -> b.{i}"}
        for i in range(50)
    ]
    from verifier.io import item_from_json

    auditor.append([item_from_json(o) for o in first], 2)
    known = auditor.history.window_knowledge
    assert known is not None and known.items is auditor.window
    auditor.append([item_from_json({"id": "q", "kind": "claim", "formula": "!a.3"})], 3)
    assert known.items is auditor.window
    assert len(known.content) == 51 and len(known.knowledge) == 50
    model = known.content.model()
    assert model is not None and model["a.3"] is False


@SETTINGS
@given(contradicting_traces(), st.sets(st.integers(0, 40), max_size=4))
def test_a_question_the_indexes_cannot_answer_hands_the_append_to_the_lists(
    monkeypatch: pytest.MonkeyPatch, text: str, gives_up: set[int]
) -> None:
    """When the indexes cannot answer a question (the solver gives up on a slice), the
    rest of the append is read from the windows: the output is still the slow path's."""
    _gives_up(monkeypatch, text, gives_up)


@pytest.mark.slow
@LONG
@given(contradicting_traces(), st.sets(st.integers(0, 40), max_size=4))
def test_a_question_the_indexes_cannot_answer_hands_the_append_to_the_lists_long(
    monkeypatch: pytest.MonkeyPatch, text: str, gives_up: set[int]
) -> None:
    _gives_up(monkeypatch, text, gives_up)


def _gives_up(monkeypatch: pytest.MonkeyPatch, text: str, gives_up: set[int]) -> None:
    from verifier.solver import PremiseIndex, Result, Verdict

    asked = [0]
    satisfiable_with = PremiseIndex.satisfiable_with

    def flaky(self: PremiseIndex, formula: Any) -> Result:
        asked[0] += 1
        if asked[0] in gives_up:
            return Result(Verdict.UNKNOWN, reason="gave up (test)")
        return satisfiable_with(self, formula)

    note(text)
    with monkeypatch.context() as m:
        m.setattr(PremiseIndex, "satisfiable_with", flaky)
        fast = _output(text)
    with slow_paths(monkeypatch):
        slow = _output(text)
    assert fast == slow


@settings(max_examples=100, deadline=None)
@given(windows(max_size=8), windows(min_size=1, max_size=4, prefix="new"), st.data())
def test_the_views_of_an_append_answer_like_views_built_afresh(
    window: list[Obj], added: list[Obj], data: st.DataObject
) -> None:
    """``WindowView.appended`` hands the id table over instead of copying it; the view
    before hides the appended ids. Every question gets the fresh views' answer."""
    from verifier.io import item_from_json
    from verifier.store import MemoryStore

    store = MemoryStore()
    spilled = [o for o in window if data.draw(st.booleans())]
    store.spill([item_from_json(o) for o in spilled])
    stubbed = {o["id"] for o in spilled if data.draw(st.booleans())}
    before_items = [
        item_from_json(
            {"id": o["id"], "kind": "stub", "ref": ref_of(o)} if o["id"] in stubbed else o
        )
        for o in window
    ]
    new_items = [item_from_json(o) for o in added]
    before, after = WindowView(before_items, store).appended(new_items)
    fresh_before = WindowView(before_items, store)
    fresh_after = WindowView([*before_items, *new_items], store)
    ids = [o["id"] for o in (*window, *added)] + ["absent"]
    for got, want in ((before, fresh_before), (after, fresh_after)):
        assert got.items == want.items
        for iid in ids:
            assert (iid in got) == (iid in want)
            assert got.get(iid) == want.get(iid)
            assert got.resolve(iid) == want.resolve(iid)
            assert got.is_stub(iid) == want.is_stub(iid)
        for it in new_items:
            assert got.surviving_witnesses(it, spilled=True) == want.surviving_witnesses(
                it, spilled=True
            )
        assert got.by_id == want.by_id
        assert got.content() == want.content()


def test_an_append_of_an_id_already_in_the_window_reads_views_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A trace never holds one (bad input), and Auditor.append refuses it as the trace
    reader does (docs/api.md, "Errors"); fed to the audit underneath all the same, the views
    are built afresh, and the findings are the slow path's."""
    from verifier.errors import InputError
    from verifier.io import item_from_json

    first = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "a"}
    again = {"id": "c1", "kind": "claim", "formula": "!a", "modality": "verified"}
    later = {"id": "c2", "kind": "commitment", "type": "decision", "formula": "a & b"}
    refusing = Auditor([])
    refusing.append([first], 2)
    with pytest.raises(InputError, match="an append of an id already in the window"):
        refusing.append([again], 3)

    def session() -> list[Any]:
        auditor = Auditor([])
        auditor._append([item_from_json(first)], 2)
        auditor._append([item_from_json(again)], 3)
        auditor._append([item_from_json(later)], 4)
        return [f.to_json() for f in auditor.findings]

    fast = session()
    with slow_paths(monkeypatch):
        slow = session()
    assert fast == slow and fast
