"""A rewrite checked on what it changed prints what the whole reading prints.

An audit keeps its window across events (:class:`verifier.rules.kept.KeptWindow`)
and checks a rewrite on the entries it touched; with ``verifier.audit.KEPT_VIEW``
off, every rewrite reads both windows whole: the reference. Both audit the same
generated traces (appends, spills, stubs of stored and of unknown items,
rewrites as a ``diff`` and as a whole window that drop, stub, change, move,
insert and put back items, results and their calls, rationale, merges, text-only
changes, ids put twice and other bad input) and must give the same ``audit``
output, text and JSON byte for byte, the same exit code, the same final window
and the same justification graph.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from benchmarks.workloads import stub_window_trace
from verifier import audit as audit_module
from verifier.audit import Auditor, audit_trace
from verifier.check import check_rewrite
from verifier.cli import main
from verifier.errors import InputError
from verifier.graph import JustificationGraph, to_dot
from verifier.io import item_from_json, parse_trace_text
from verifier.strategies import formula_texts, ref_of
from verifier.window import Rewrite, Trace

Obj = dict[str, Any]
ATOMS = ("a", "b", "c", "d", "e")
SOURCES = ("run a", "run b")


@st.composite
def _item(
    draw: st.DrawFn, item_id: str, window: dict[str, Obj], observations: list[str], clean: bool
) -> Obj:
    """An item that may cite what the window holds: over a small vocabulary (items meet
    and contradict each other), or, ``clean``, over atoms of its own."""
    kind = draw(
        st.sampled_from(["commitment", "commitment", "claim", "claim", "observation", "prose"])
    )
    if clean:
        text = f"p.{item_id} | q.{item_id}"
    else:
        text = draw(formula_texts(ATOMS, max_depth=draw(st.sampled_from([0, 0, 1]))))
    others = sorted(window)
    if kind == "prose":
        obj: Obj = {"id": item_id, "kind": "prose", "text": draw(st.sampled_from(["x", "y"]))}
        if others and draw(st.integers(0, 3)) == 0:
            obj["call"] = draw(st.sampled_from(others))  # a result of that call
        return obj
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
    obj = {"id": item_id, "kind": kind, "formula": text}
    if kind == "commitment":
        obj["type"] = draw(st.sampled_from(["decision", "rejection", "invariant"]))
        if others and draw(st.integers(0, 3)) == 0:
            obj["rationale"] = [draw(st.sampled_from(others))]
    same = [i for i in others if window[i].get("kind") == kind]
    if same and draw(st.integers(0, 6)) == 0:
        obj["covers"] = [draw(st.sampled_from(same))]
    if bool(observations) and draw(st.booleans()):
        obj["witnesses"] = draw(
            st.lists(st.sampled_from(observations), min_size=1, max_size=2, unique=True)
        )
        obj["modality"] = draw(st.sampled_from(["verified", "unverified", "unwitnessed"]))
    return obj


def _stub(obj: Obj) -> Obj:
    return {"id": obj["id"], "kind": "stub", "ref": ref_of(obj)}


@st.composite
def kept_traces(draw: st.DrawFn) -> str:
    """A session of appends, spills and rewrites (``diff`` or whole window)."""
    background = draw(st.sampled_from([[], ["a -> b"], ["c | d"]]))
    clean = draw(st.booleans())
    lines: list[Obj] = [{"event": "header", "format": "ctxproof-trace/1", "background": background}]
    window: dict[str, Obj] = {}
    stored: dict[str, Obj] = {}
    observations: list[str] = []
    serial = 0

    def fresh() -> Obj:
        nonlocal serial
        serial += 1
        obj = draw(_item(f"x{serial}", window, observations, clean))
        if obj["kind"] == "observation":
            observations.append(obj["id"])
        return obj

    def prose() -> Obj:
        nonlocal serial
        serial += 1
        return {"id": f"x{serial}", "kind": "prose", "text": "more"}

    for _ in range(draw(st.integers(1, 10))):
        what = draw(st.sampled_from(["append", "append", "spill", "diff", "whole", "whole"]))
        if what == "append" or not window:
            items: list[Obj] = []
            for _ in range(draw(st.integers(1, 5))):
                taken = {it["id"] for it in items}
                spare = [o for i, o in stored.items() if i not in window and i not in taken]
                if spare and draw(st.integers(0, 4)) == 0:
                    items.append(_stub(draw(st.sampled_from(spare))))
                    continue
                obj = fresh()
                items.append(obj)
                window[obj["id"]] = obj
            window.update((it["id"], it) for it in items)
            lines.append({"event": "append", "items": items})
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
            order: list[Obj] = []
            remove: list[str] = []
            put: list[Obj] = []
            tail: list[Obj] = []
            gentle = draw(st.booleans())  # no drop of a bound item, no stub left unresolved
            for iid, obj in list(window.items()):
                op = draw(
                    st.sampled_from(
                        ["keep"] * 6
                        + ["drop", "stub", "lost", "change", "text", "again", "move", "insert"]
                    )
                )
                if gentle and (
                    op == "lost" or (op == "drop" and obj["kind"] not in ("prose", "stub"))
                ):
                    op = "keep"
                new: Obj | None = obj
                if op == "drop":
                    remove.append(iid)
                    new = None
                elif op == "stub" and obj["kind"] != "stub" and iid in stored:
                    new = _stub(stored[iid])
                elif op == "lost" and obj["kind"] != "stub":
                    new = _stub(dict(obj, text="never stored"))  # a stub no store resolves
                elif op == "change" and obj["kind"] in ("commitment", "claim"):
                    if clean and draw(st.integers(0, 3)) > 0:
                        text = f"q.{iid} | p.{iid}"  # the same, said otherwise
                        if obj.get("formula") == text:
                            text = f"(p.{iid} | q.{iid}) & (r | !r)"
                    else:
                        text = draw(formula_texts(ATOMS, max_depth=1))
                    new = dict(obj, formula=text)
                elif op == "text" and obj["kind"] != "stub":
                    new = dict(obj, text="told again", score=draw(st.integers(0, 3)))
                elif op == "again":
                    remove.append(iid)  # taken out and put back: it goes to the end
                    tail.append(obj)
                    new = None
                elif op == "move" and what == "whole":
                    tail.append(obj)
                    new = None
                elif op == "insert":
                    order.append(prose() if gentle else fresh())
                if new is not None:
                    order.append(new)
                    if new is not obj:
                        put.append(new)
            for _ in range(draw(st.integers(0, 2))):
                tail.append(prose() if gentle else fresh())
            if what == "diff":
                put_all = put + [o for o in order if o["id"] not in window] + tail
                if put_all and draw(st.integers(0, 19)) == 0:
                    put_all.append(put_all[0])  # an id put twice: bad input
                event: Obj = {
                    "event": "rewrite",
                    "policy": "random",
                    "diff": {"remove": remove, "put": put_all},
                }
                kept_ids = set(window) - set(remove)
                after = [o for o in order if o["id"] in kept_ids]
                after += [o for o in put_all if o["id"] not in kept_ids]
            else:
                after = order + tail
                if after and draw(st.integers(0, 19)) == 0:
                    after.append(after[0])  # an id twice in the window: bad input
                event = {"event": "rewrite", "policy": "random", "window": after}
            if draw(st.integers(0, 3)) == 0:
                pool = sorted({o["id"] for o in after} | set(window))
                event["claimed_preserved"] = draw(
                    st.lists(st.sampled_from(pool), max_size=3, unique=True)
                )
            lines.append(event)
            window = {}
            for o in after:
                window[o["id"]] = o
    return "".join(json.dumps(line) + "\n" for line in lines)


SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
LONG = settings(SETTINGS, max_examples=300)


def _outputs(path: Path, text: str) -> list[Any]:
    """``audit`` in text and in JSON (output and exit code), the final window, the graph."""
    out: list[Any] = []
    for fmt in ("text", "json"):
        stdout, stderr = io.StringIO(), io.StringIO()
        code = main(["audit", str(path), "--format", fmt], stdout=stdout, stderr=stderr)
        out.append((code, stdout.getvalue(), stderr.getvalue()))
    try:
        trace = parse_trace_text(text, path.name)
    except Exception as exc:  # bad input: the reader's, the same either way
        return [*out, repr(exc)]
    graph = JustificationGraph()
    report = audit_trace(trace, graph=graph)
    out.append([it.raw for it in report.final_window])
    out.append(json.dumps(report.to_json(repairs=True), sort_keys=True))
    out.append(to_dot(graph))
    g = graph.g
    out.append(json.dumps([list(g.nodes(data=True)), list(g.edges(data=True))], default=str))
    return out


def _same(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str) -> None:
    note(text)
    path = tmp_path / "generated.jsonl"
    path.write_text(text, encoding="utf-8")
    kept = _outputs(path, text)
    with monkeypatch.context() as m:
        m.setattr(audit_module, "KEPT_VIEW", False)
        whole = _outputs(path, text)
    assert kept == whole


@SETTINGS
@given(kept_traces())
def test_a_kept_window_prints_what_the_whole_reading_prints(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str
) -> None:
    _same(monkeypatch, tmp_path, text)


@pytest.mark.slow
@LONG
@given(kept_traces())
def test_a_kept_window_prints_what_the_whole_reading_prints_long(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str
) -> None:
    _same(monkeypatch, tmp_path, text)


def _fresh_objects(trace: Trace) -> Trace:
    """The trace with every rewrite's window built anew, each item a new object of its
    canonical JSON, as a caller that builds each window from JSON gives it (a trace's
    reader gives an item whose text it read before as that very object)."""
    events = tuple(
        replace(ev, window=tuple(item_from_json(it.as_json()) for it in ev.window))
        if isinstance(ev, Rewrite) and ev.window is not None
        else ev
        for ev in trace.events
    )
    return replace(trace, events=events)


@SETTINGS
@given(kept_traces())
def test_a_window_of_new_objects_is_read_as_the_whole_reading_reads_it(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    """Whole windows whose every item is a new object (the kept window compares them by
    their text, not as the same objects) give the audit that reads every rewrite whole."""
    note(text)
    try:
        trace = parse_trace_text(text, "generated.jsonl")
    except InputError:
        return  # bad input: the reader's, before any window is compared
    anew = audit_trace(_fresh_objects(trace))
    with monkeypatch.context() as m:
        m.setattr(audit_module, "KEPT_VIEW", False)
        as_read = audit_trace(trace)
    assert json.dumps(anew.to_json(repairs=True), sort_keys=True) == json.dumps(
        as_read.to_json(repairs=True), sort_keys=True
    )
    assert [it.raw for it in anew.final_window] == [it.raw for it in as_read.final_window]


@st.composite
def _in_place_rewrites(draw: st.DrawFn) -> str:
    """A window of commitments, then whole windows that keep every entry where it stands
    and change some of them in place: restated alike, or weakened (CF002)."""
    n = draw(st.integers(2, 12))
    items = [
        {"id": f"c{i}", "kind": "commitment", "type": "decision", "formula": f"a.{i}"}
        for i in range(n)
    ]
    lines: list[Obj] = [
        {"event": "header", "format": "ctxproof-trace/1", "background": []},
        {"event": "append", "items": items},
    ]
    for _ in range(draw(st.integers(1, 3))):
        changed = draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n))
        window = []
        for i, it in enumerate(items):
            if i in changed:
                how = draw(st.sampled_from(["restated", "weakened"]))
                formula = f"a.{i} & a.{i}" if how == "restated" else f"a.{i} | w.{i}"
                it = {**it, "formula": formula}
            window.append(it)
        lines.append({"event": "rewrite", "policy": "in place", "window": window})
    return "".join(json.dumps(line) + "\n" for line in lines)


@SETTINGS
@given(_in_place_rewrites())
def test_changes_in_place_to_a_window_of_new_objects_are_each_checked(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    """Every entry a whole window changes in place is checked, whether the unchanged
    entries are the objects read before or new ones: the audit is the whole reading's."""
    trace = parse_trace_text(text, "in-place.jsonl")
    with monkeypatch.context() as m:
        m.setattr(audit_module, "KEPT_VIEW", False)
        reference = json.dumps(audit_trace(trace).to_json(repairs=True), sort_keys=True)
    for given_trace in (trace, _fresh_objects(trace)):
        report = audit_trace(given_trace)
        assert json.dumps(report.to_json(repairs=True), sort_keys=True) == reference


def _whole_readings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time the audit reads a rewrite's windows whole."""
    calls: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return check_rewrite(*args, **kwargs)

    monkeypatch.setattr(audit_module, "check_rewrite", counted)
    return calls


def _stub_session(n: int) -> Auditor:
    """A window of n commitment stubs and the claim ``q`` (the benchmark's shape)."""
    trace = parse_trace_text(stub_window_trace(n, 0), "stubs.jsonl")
    auditor = Auditor(trace.header.background)
    for ev in trace.events:
        auditor.feed(ev)
    auditor.append([item_from_json({"id": "q", "kind": "claim", "formula": "f | g"})])
    return auditor


def test_a_rewrite_of_one_item_is_checked_on_that_item(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept path settles a one-item rewrite (diff and whole window) without reading
    the windows whole, and its results are those of the whole reading."""
    results = []
    for kept_view in (True, False):
        auditor = _stub_session(40)
        auditor.kept_view = kept_view
        whole = _whole_readings(monkeypatch)
        claim = item_from_json({"id": "q", "kind": "claim", "formula": "g | f"})
        auditor.feed(Rewrite(9, "restate", None, put=(claim,)))
        again = item_from_json({"id": "q", "kind": "claim", "formula": "(f | g) & (h | !h)"})
        window = tuple(
            again if it.id == "q" else item_from_json(it.as_json()) for it in auditor.window
        )
        auditor.feed(Rewrite(10, "restate", window))
        assert len(whole) == (0 if kept_view else 2)
        results.append((auditor.report(), [it.raw for it in auditor.window]))
    assert [r.verdict for r in results[0][0].rewrites] == ["accept", "accept", "accept"]
    assert results[0] == results[1]


def test_an_untouched_item_that_cites_a_touched_one_is_read_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A load-bearing claim witnessed by an observation: stubbing the observation (spilled)
    keeps the claim's support and stays on the kept path; dropping the stub leaves the
    claim, untouched, without a witness in the window: the claim is read with the rewrite
    and WR001 reported (by the whole reading, which words every finding)."""
    auditor = Auditor()
    obs = {
        "id": "o",
        "kind": "observation",
        "modality": "verified",
        "exit_code": 0,
        "source": "run",
        "shows": "a",
    }
    claim = {
        "id": "c",
        "kind": "claim",
        "formula": "a",
        "witnesses": ["o"],
        "modality": "verified",
        "load_bearing": True,
    }
    assert auditor.append([item_from_json(obs), item_from_json(claim)]) == []
    auditor.feed(Rewrite(2, None, None, put=(item_from_json(dict(obs, text="again")),)))
    whole = _whole_readings(monkeypatch)
    auditor.spill([item_from_json(obs)])
    stub = item_from_json({"id": "o", "kind": "stub", "ref": item_from_json(obs).ref})
    auditor.feed(Rewrite(4, None, None, put=(stub,)))
    assert (whole, auditor.rewrites[-1].verdict) == ([], "accept")
    auditor.feed(Rewrite(5, None, None, remove=("o",)))
    assert whole == [1]
    result = auditor.rewrites[-1]
    assert result.verdict == "refuse"
    assert [f.code for f in result.findings] == ["WR001"]
