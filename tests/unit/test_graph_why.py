"""why and the graph on the cases that are easy to get wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verifier.audit import audit_trace
from verifier.check import check_rewrite
from verifier.graph import JustificationGraph, to_dot, why
from verifier.io import item_from_json, parse_trace_text
from verifier.store import MemoryStore, SqliteStore
from verifier.strategies import ref_of

O1 = {
    "id": "o1",
    "kind": "observation",
    "shows": "t.pass",
    "modality": "verified",
    "source": "make test",
    "exit_code": 0,
}
D1 = {
    "id": "d1",
    "kind": "claim",
    "formula": "t.pass",
    "witnesses": ["o1"],
    "modality": "verified",
    "load_bearing": True,
}
HEADER = {"event": "header", "format": "ctxproof-trace/1"}


def graph_of(*events: dict[str, Any], store: Any = None) -> tuple[JustificationGraph, Any]:
    text = "\n".join(json.dumps(e) for e in (HEADER, *events))
    known = store.has_id if store is not None else None
    graph = JustificationGraph()
    report = audit_trace(parse_trace_text(text, known_ids=known), store=store, graph=graph)
    return graph, report


def test_a_stub_that_does_not_resolve_keeps_no_evidence() -> None:
    stub = {"id": "o1", "kind": "stub", "ref": ref_of(O1)}
    graph, report = graph_of(
        {"event": "append", "items": [O1, D1]},
        {"event": "rewrite", "window": [stub, D1]},
    )
    assert "WR006" in {f.code for f in report.findings}
    assert why(graph, "d1").chain is None


def test_a_spilled_witness_behind_a_stub_still_answers() -> None:
    stub = {"id": "o1", "kind": "stub", "ref": ref_of(O1)}
    graph, report = graph_of(
        {"event": "append", "items": [O1, D1]},
        {"event": "spill", "items": [O1]},
        {"event": "rewrite", "window": [stub, D1]},
    )
    assert report.findings == ()
    chain = why(graph, "d1").chain
    # the cited version itself, then the store entry that keeps it
    assert chain == ["d1@0", "o1@0", f"store:{ref_of(O1)}"]
    assert graph.current["o1"] != "o1@0" and graph.retained("o1@0")


def test_a_stub_dropped_from_the_window_is_no_item_lost_when_the_store_holds_it() -> None:
    """The item was spilled and stubbed, then the stub left the window: the store still
    holds the item, so why answers through its store entry and says nothing of a drop."""
    graph, _ = graph_of(
        {"event": "append", "items": [O1, D1]},
        {"event": "spill", "items": [O1, D1]},
        {"event": "rewrite", "window": [{"id": "d1", "kind": "stub", "ref": ref_of(D1)}]},
        {"event": "rewrite", "window": []},
    )
    answer = why(graph, "d1")
    assert answer.chain is not None and answer.dropped is None
    assert graph.g.nodes[answer.chain[1]]["kind"] == "store"
    # an item dropped with no store record is still named as dropped
    graph, _ = graph_of(
        {"event": "append", "items": [O1, D1]},
        {"event": "rewrite", "window": [O1]},
    )
    assert why(graph, "d1").dropped is not None


def test_another_observation_reusing_the_id_is_not_the_evidence() -> None:
    other = {**O1, "shows": "!t.pass", "modality": "failed", "exit_code": 1}
    user = {"id": "c8", "kind": "commitment", "type": "decision", "rationale": ["d1"]}
    graph, report = graph_of(
        {"event": "append", "items": [O1, D1]},
        {"event": "rewrite", "window": [D1]},
        {"event": "append", "items": [other]},
        {"event": "append", "items": [user]},
    )
    answer = why(graph, "d1")
    assert answer.chain is None and answer.cut_pass == 1
    assert ("CP001", ("d1", "c8")) in {(f.code, f.items) for f in report.findings}


def test_a_rewrite_that_drops_the_citations_is_named_as_the_cut() -> None:
    bare = {k: v for k, v in D1.items() if k != "witnesses"}
    graph, _ = graph_of(
        {"event": "append", "items": [O1, D1]},
        {"event": "rewrite", "policy": "strip", "window": [O1, bare]},
    )
    answer = why(graph, "d1")
    assert answer.chain is None
    assert (answer.cut_pass, answer.cut_policy) == (1, "strip")
    assert [graph.g.nodes[n]["id"] for n in answer.reached] == ["o1"]


def test_an_item_may_cite_one_listed_after_it_in_the_same_append() -> None:
    graph, _ = graph_of({"event": "append", "items": [D1, O1]})
    assert graph.g.has_edge("d1@0", "o1@0")
    assert why(graph, "d1").chain == ["d1@0", "o1@0"]


def test_entries_of_an_external_store_are_in_the_graph(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite")
    store.spill([item_from_json(O1)])
    stub = {"id": "o1", "kind": "stub", "ref": ref_of(O1)}
    graph, report = graph_of({"event": "append", "items": [stub, D1]}, store=store)
    assert report.findings == ()
    chain = why(graph, "d1").chain
    assert chain is not None and chain[-1] == f"store:{ref_of(O1)}"


def test_a_chain_to_a_primitive_out_of_the_window_ends_at_its_store_entry() -> None:
    """o1 is spilled, stubbed, then its stub dropped: only the store keeps it, and the chain
    runs from the version d1 cited to that entry (where it is retained)."""
    stub = {"id": "o1", "kind": "stub", "ref": ref_of(O1)}
    graph, _ = graph_of(
        {"event": "append", "items": [O1, D1]},
        {"event": "spill", "items": [O1]},
        {"event": "rewrite", "window": [stub, D1]},
        {"event": "rewrite", "window": [D1]},
    )
    chain = why(graph, "d1").chain
    assert chain is not None
    assert chain[-2:] == ["o1@0", f"store:{ref_of(O1)}"]
    assert graph.g.nodes["o1@0"]["retained"] is False


def test_dot_labels_break_lines_the_dot_way() -> None:
    graph, _ = graph_of({"event": "append", "items": [O1]})
    assert 'label="o1@0\\nobservation"' in to_dot(graph)


def test_the_repair_keeps_a_valid_new_summary() -> None:
    summary = {
        "id": "s1",
        "kind": "claim",
        "formula": "t.pass",
        "witnesses": ["o1"],
        "modality": "verified",
    }
    before = [item_from_json(x) for x in (O1, D1)]
    after = [item_from_json(x) for x in (D1, summary)]
    result = check_rewrite(before, after, store=MemoryStore())
    assert result.verdict == "refuse" and result.repair is not None
    ids = [it.id for it in result.repair.window]
    assert "s1" in ids and result.repair.verdict == "accept"
    assert next(it for it in result.repair.window if it.id == "o1").kind == "stub"


def test_the_repair_keeps_a_legitimate_stub_and_spills_its_evidence() -> None:
    store = MemoryStore()
    store.spill([item_from_json(D1)])
    stub = {"id": "d1", "kind": "stub", "ref": ref_of(D1)}
    before = [item_from_json(x) for x in (O1, D1)]
    after = [item_from_json(stub)]
    result = check_rewrite(before, after, store=store)
    assert result.repair is not None and result.repair.verdict == "accept"
    assert [it.kind for it in result.repair.window] == ["stub"]
    assert [it.id for it in result.repair.spill] == ["o1"]


def test_the_rewrite_that_put_an_unresolvable_stub_is_named() -> None:
    stub = {"id": "o1", "kind": "stub", "ref": ref_of(O1)}
    graph, _ = graph_of(
        {"event": "append", "items": [O1, D1]},
        {"event": "rewrite", "policy": "bad-stub", "window": [stub, D1]},
    )
    answer = why(graph, "d1")
    assert (answer.cut_pass, answer.cut_policy) == (1, "bad-stub")


def _obs(oid: str, source: str, shows: str, **extra: Any) -> dict[str, Any]:
    obs = {"id": oid, "kind": "observation", "source": source, "shows": shows}
    return {**obs, "modality": "verified", **extra}


def _claim(cid: str, formula: str, witnesses: list[str], **extra: Any) -> dict[str, Any]:
    claim = {"id": cid, "kind": "claim", "formula": formula, "witnesses": witnesses}
    return {**claim, "modality": "verified", **extra}


def _use(cited: str) -> dict[str, Any]:
    use = {"id": "u1", "kind": "commitment", "type": "decision", "formula": "q"}
    return {"event": "append", "items": [{**use, "rationale": [cited]}]}


def _cp001(report: Any) -> list[tuple[tuple[str, ...], str]]:
    return [(f.items, f.message) for f in report.findings if f.code == "CP001"]


def test_a_version_a_restore_replaces_is_lost_at_that_rewrite() -> None:
    # o1 is dropped, appended again with other content (c2 cites that one), then the first
    # o1 is put back: the second is out of the window from then on, lost at pass 2
    first, second = _obs("o1", "s1", "x", content="one"), _obs("o1", "s1b", "x", content="two")
    c1, c2 = _claim("c1", "x", ["o1"]), _claim("c2", "x", ["o1"], load_bearing=True)
    graph, report = graph_of(
        {"event": "append", "items": [first, c1]},
        {"event": "rewrite", "policy": "drop-o1", "window": [c1]},
        {"event": "append", "items": [second, c2]},
        {"event": "rewrite", "policy": "restore-o1", "window": [c1, c2, first]},
        _use("c2"),
    )
    answer = why(graph, "c2")
    assert answer.chain is None
    assert (answer.cut_pass, answer.cut_policy) == (2, "restore-o1")
    assert graph.g.nodes["o1@1"]["lost_at"] == 2
    ((items, message),) = _cp001(report)
    assert items == ("c2", "u1")
    assert "the rewrite at pass 2 cut its last path" in message


def test_a_claim_is_backed_through_a_later_version_that_a_rewrite_restored() -> None:
    # d1 cites c1's second version; a rewrite puts c1's first version back (witnessed by
    # o1, kept) and drops o2, o3: d1 is backed through c1's later version, restored or new
    o1, o2, o3 = _obs("o1", "s1", "x"), _obs("o2", "s2", "x"), _obs("o3", "s3", "y")
    first, second = _claim("c1", "x", ["o1"]), _claim("c1", "x", ["o2"])
    d1 = {**_claim("d1", "y", ["o3"]), "derived_from": ["c1"]}
    for last in (first, _claim("c1", "x & true", ["o1"])):  # restored, then new
        graph, report = graph_of(
            {"event": "append", "items": [o1, o2, o3, first]},
            {"event": "rewrite", "policy": "to-B", "window": [o1, o2, o3, second]},
            {"event": "append", "items": [d1]},
            {"event": "rewrite", "policy": "back", "window": [o1, last, d1]},
            _use("d1"),
        )
        assert _cp001(report) == []
        chain = why(graph, "d1").chain
        assert chain is not None and chain[-1] == "o1@0"


def test_a_spill_of_another_version_is_no_spilled_edge_of_the_window_version() -> None:
    # the store gets a version of c1 no window held (formula w, witness o2); the window's
    # c1 (formula x, witness o1) loses o1: it is not backed by the other version's witness
    o1, o2 = _obs("o1", "s1", "x"), _obs("o2", "s2", "w")
    c1 = _claim("c1", "x", ["o1"], load_bearing=True)
    graph, report = graph_of(
        {"event": "append", "items": [o1, o2, c1]},
        {"event": "spill", "items": [_claim("c1", "w", ["o2"], load_bearing=True)]},
        {"event": "rewrite", "policy": "drop-o1", "window": [o2, c1]},
        _use("c1"),
    )
    assert not any(v.startswith("store:") for v in graph.g.successors("c1@0"))
    answer = why(graph, "c1")
    assert answer.chain is None and answer.cut_pass == 1
    assert [items for items, _ in _cp001(report)] == [("c1", "u1")]
