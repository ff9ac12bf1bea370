"""Laws of the justification graph, why, and CP001 over random traces."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx
from hypothesis import HealthCheck, given, settings

from verifier.audit import audit_trace
from verifier.graph import JustificationGraph, why
from verifier.io import parse_trace_text
from verifier.strategies import ref_of, traces

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JUSTIFY = {"witness", "derived_from", "rationale"}


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def _graph(text: str, mode: str = "support") -> tuple[JustificationGraph, Any]:
    graph = JustificationGraph()
    report = audit_trace(parse_trace_text(text), graph=graph, mode=mode)
    return graph, report


@SETTINGS
@given(traces())
def test_every_version_has_exactly_the_edges_its_fields_name(text: str) -> None:
    graph, _ = _graph(text)
    items: dict[str, dict[str, Any]] = {}
    for ev in _events(text):
        for it in ev.get("items", []) + ev.get("window", []):
            items[ref_of(it)] = it
    for node, attrs in graph.g.nodes(data=True):
        if attrs["kind"] not in ("commitment", "claim", "observation", "prose"):
            continue
        item = items[attrs["version"]]
        named = {
            (rel, ref)
            for rel in ("witnesses", "derived_from", "rationale")
            for ref in item.get(rel, [])
        }
        named = {("witness" if rel == "witnesses" else rel, ref) for rel, ref in named}
        found = {
            (rel, graph.g.nodes[v]["id"])
            for _, v, data in graph.g.out_edges(node, data=True)
            for rel in data["relation"].split(",")
            if rel in JUSTIFY
        }
        assert found == named, (node, found, named)


def _rename(text: str) -> str:
    """Rename every id and every atom consistently, recomputing stub refs."""
    events = _events(text)

    def ren_id(i: str) -> str:
        return "z_" + i

    def ren_formula(f: str) -> str:
        return f.replace("p.", "q.")

    def ren_item(it: dict[str, Any]) -> dict[str, Any]:
        out = dict(it, id=ren_id(it["id"]))
        for key in ("formula", "shows"):
            if key in out:
                out[key] = ren_formula(out[key])
        for key in ("witnesses", "derived_from", "rationale", "covers"):
            if key in out:
                out[key] = [ren_id(r) for r in out[key]]
        return out

    spilled: dict[str, str] = {}
    lines = []
    for ev in events:
        ev = dict(ev)
        if ev["event"] == "header":
            ev["background"] = [ren_formula(b) for b in ev["background"]]
        for key in ("items", "window"):
            if key in ev:
                renamed = []
                for it in ev[key]:
                    if it["kind"] == "stub":
                        renamed.append(dict(it, id=ren_id(it["id"]), ref=spilled[it["ref"]]))
                    else:
                        new = ren_item(it)
                        if ev["event"] == "spill":
                            spilled[ref_of(it)] = ref_of(new)
                        renamed.append(new)
                ev[key] = renamed
        if "claimed_preserved" in ev:
            ev["claimed_preserved"] = [ren_id(i) for i in ev["claimed_preserved"]]
        lines.append(json.dumps(ev))
    return "\n".join(lines) + "\n"


@SETTINGS
@given(traces())
def test_renaming_gives_an_isomorphic_graph_and_the_same_verdicts(text: str) -> None:
    g1, r1 = _graph(text)
    g2, r2 = _graph(_rename(text))
    assert [w.verdict for w in r1.rewrites] == [w.verdict for w in r2.rewrites]
    assert sorted(f.code for f in r1.findings) == sorted(f.code for f in r2.findings)

    def same_node(a: dict[str, Any], b: dict[str, Any]) -> bool:
        keys = ("kind", "modality", "pass", "retained", "lost_at")
        return all(a.get(k) == b.get(k) for k in keys)

    def same_edge(a: dict[str, Any], b: dict[str, Any]) -> bool:
        return bool(a["relation"] == b["relation"])

    assert nx.is_isomorphic(g1.g, g2.g, node_match=same_node, edge_match=same_edge)


@SETTINGS
@given(traces())
def test_cp001_quiet_for_window_items_when_count_mode_accepts_everything(text: str) -> None:
    """Accepted count-mode rewrites and clean appends keep every verified item in the
    window traceable: CP001 can then fire only for items no longer in the window."""
    graph, report = _graph(text, mode="count")
    if any(not w.accepted for w in report.rewrites):
        return
    if any(f.code != "CP001" for f in report.findings):
        return
    for f in report.findings:
        used = f.items[0]
        assert (
            graph.current.get(used) is None or graph.g.nodes[graph.current[used]]["pass"] > f.pass_
        )


@SETTINGS
@given(traces())
def test_why_finds_a_chain_exactly_when_cp001_stays_quiet(text: str) -> None:
    graph, _ = _graph(text)
    modality = {
        item_id: graph.g.nodes[node].get("modality") for item_id, node in graph.last.items()
    }
    for item_id, mod in sorted(modality.items()):
        if mod not in ("verified", "failed"):
            continue
        use = {
            "event": "append",
            "items": [
                {"id": "user.x", "kind": "commitment", "type": "obligation", "rationale": [item_id]}
            ],
        }
        extended = text + json.dumps(use) + "\n"
        report = audit_trace(parse_trace_text(extended))
        cp001 = [f for f in report.findings if f.code == "CP001" and f.items == (item_id, "user.x")]
        assert (why(graph, item_id).chain is None) == bool(cp001), item_id
