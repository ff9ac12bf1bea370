"""Unresolvable stubs, CF004 on new commitments, accept-demoted, CP004's words, repairs.

The corpus (tests/corpus/EXPECTED.json) pins each reading on a trace; these tests
ask the same questions of the API (a single check, the graph, ``guard``).
"""

from __future__ import annotations

import json
from typing import Any

from verifier.audit import TraceReport, audit_trace
from verifier.check import check_rewrite, guard
from verifier.graph import JustificationGraph, why
from verifier.io import item_from_json, parse_trace_text, ref_of
from verifier.store import MemoryStore
from verifier.window import Item

Obj = dict[str, Any]
MISSING = "sha256:" + "0" * 64

CALL: Obj = {"id": "call1", "kind": "prose", "text": "run the tests"}
OBS: Obj = {"id": "o1", "kind": "observation", "source": "pytest", "shows": "t"}
OBS["modality"] = "verified"
RESULT: Obj = {**OBS, "call": "call1"}
NOTE: Obj = {"id": "p1", "kind": "prose", "text": "notes"}
CLAIM: Obj = {"id": "k1", "kind": "claim", "formula": "t", "witnesses": ["o1"]}
CLAIM["modality"] = "verified"
REASON: Obj = {"id": "r1", "kind": "prose", "text": "why"}


def its(*objs: Obj) -> list[Item]:
    return [item_from_json(o) for o in objs]


def stub(obj: Obj, ref: str | None = None) -> Obj:
    return {"id": obj["id"], "kind": "stub", "ref": ref or ref_of(obj)}


def codes(findings: Any) -> list[tuple[str, tuple[str, ...]]]:
    return [(f.code, tuple(f.items)) for f in findings]


def audit(*events: Obj, background: tuple[str, ...] = ()) -> TraceReport:
    head = {"event": "header", "format": "ctxproof-trace/1", "background": list(background)}
    text = "\n".join(json.dumps(e) for e in (head, *events)) + "\n"
    return audit_trace(parse_trace_text(text, "t.jsonl"))


def append(*items: Obj) -> Obj:
    return {"event": "append", "items": list(items)}


def window(*items: Obj) -> Obj:
    return {"event": "rewrite", "policy": "p", "window": list(items)}


def spill(*items: Obj) -> Obj:
    return {"event": "spill", "items": list(items)}


# -- a stub the store cannot resolve is still an entry with its id ----------------------------


def test_a_call_whose_result_is_an_unresolvable_stub_is_not_orphaned() -> None:
    res = check_rewrite(its(CALL, RESULT), its(CALL, stub(RESULT, MISSING)))
    assert codes(res.findings) == [("WR006", ("o1",))]


def test_a_call_behind_an_unresolvable_stub_whose_result_is_dropped_is_tp002() -> None:
    """A call is known by its id: standing as a stub the store cannot resolve, it is still
    a call in the window, and dropping its only result is TP002 (the stub itself is
    WR006's); with the result kept, the stub is charged WR006 alone."""
    res = check_rewrite(its(CALL, RESULT), its(stub(CALL, MISSING)))
    assert sorted(codes(res.findings)) == [("TP002", ("call1", "o1")), ("WR006", ("call1",))]
    assert res.verdict == "refuse"
    kept = check_rewrite(its(CALL, RESULT), its(stub(CALL, MISSING), RESULT))
    assert codes(kept.findings) == [("WR006", ("call1",))]


def test_a_call_stub_kept_while_a_later_rewrite_drops_its_result_is_tp002() -> None:
    report = audit(
        append(CALL, RESULT),
        spill(RESULT),
        window(stub(CALL, MISSING), stub(RESULT)),
        window(stub(CALL, MISSING)),
    )
    assert ("TP002", ("call1", "o1")) in codes(report.findings)
    assert [f.pass_ for f in report.findings if f.code == "TP002"] == [2]


def test_a_call_put_back_whose_result_id_now_answers_another_call_names_it() -> None:
    """The result id the call had was used again for another call's result: the call put
    back is orphaned, and TP002 names the result it lost (no hole in the message)."""
    later = {"id": "call2", "kind": "prose", "text": "run it again"}
    other = {**RESULT, "shows": "u", "call": "call2", "source": "ls"}
    report = audit(append(CALL, RESULT), window(), append(later, other), window(later, other, CALL))
    (found,) = [f for f in report.findings if f.code == "TP002"]
    assert found.items == ("call1", "o1")
    assert "its result 'o1' is not" in found.message


def test_a_stub_naming_another_stored_item_is_unresolvable_and_charged_nothing_else() -> None:
    store = MemoryStore()
    store.spill(its(NOTE))
    res = check_rewrite(
        its(CALL, RESULT, NOTE), its(CALL, stub(RESULT, ref_of(NOTE)), NOTE), store=store
    )
    assert codes(res.findings) == [("WR006", ("o1",))]
    assert "points at the stored item 'p1'" in res.findings[0].message


def test_a_result_behind_an_unresolvable_stub_is_charged_wr006_alone() -> None:
    res = check_rewrite(its(CALL, RESULT), its(stub(RESULT, MISSING)))
    assert codes(res.findings) == [("WR006", ("o1",))]
    assert res.repair is not None and res.repair.verdict == "accept"


def test_a_kept_commitment_behind_an_unresolvable_stub_is_charged_wr006_alone() -> None:
    # its rationale dropped: with a stub that resolves, CF004 [c1, r1]
    c = {"id": "c1", "kind": "commitment", "type": "decision", "rationale": ["r1"]}
    store = MemoryStore()
    store.spill(its(c))
    assert codes(check_rewrite(its(REASON, c), its(stub(c)), store=store).findings) == [
        ("CF004", ("c1", "r1"))
    ]
    res = check_rewrite(its(REASON, c), its(stub(c, MISSING)), store=store)
    assert codes(res.findings) == [("WR006", ("c1",))]


def test_claiming_an_unresolvable_stub_preserved_is_wr006_alone() -> None:
    c = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "a"}
    res = check_rewrite(its(c), its(stub(c, MISSING)), claimed_preserved=["c1"])
    assert codes(res.findings) == [("WR006", ("c1",))]


def test_a_witness_behind_an_unresolvable_stub_is_lost_for_wr001() -> None:
    inv = {**CLAIM, "id": "i1", "kind": "commitment", "type": "invariant"}
    store = MemoryStore()
    store.spill(its(OBS))
    res = check_rewrite(its(OBS, inv), its(stub(OBS, MISSING), inv), store=store)
    assert sorted(codes(res.findings)) == [("WR001", ("i1", "o1")), ("WR006", ("o1",))]


def test_a_stubbed_item_finds_its_witness_in_the_store_past_an_unresolvable_stub() -> None:
    """A stubbed item's witnesses are found in the window or the store: an unresolvable
    stub of its witness in the window is WR006's alone (no worse than no stub); the
    rewrite that puts the item back beside only that stub is the one that loses it."""
    inv = {**CLAIM, "id": "i1", "kind": "commitment", "type": "invariant"}
    report = audit(
        append(OBS, inv),
        spill(OBS, inv),
        window(stub(OBS), stub(inv)),
        window(stub(OBS, MISSING), stub(inv)),
        window(stub(OBS, MISSING), inv),
    )
    assert [(f.pass_, f.code, f.items) for f in report.findings] == [
        (2, "WR006", ("o1",)),
        (3, "WR001", ("i1", "o1")),
    ]
    assert [r.verdict for r in report.rewrites] == ["accept", "refuse", "refuse"]


def test_an_item_put_back_from_behind_its_stub_is_asked_wr005_again() -> None:
    """Put back from behind its stub, an item is restored, as when it was absent: WR005
    reads the evidence retained now (CF007 does too), where an item kept in the window
    whose claim and witnesses are unchanged is not asked again."""
    off: Obj = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "b"}
    off["witnesses"] = ["o1"]
    for hidden in (stub(off), None):
        between = window(OBS, hidden) if hidden is not None else window(OBS)
        report = audit(append(OBS, off), spill(off), between, window(OBS, off))
        assert [(f.pass_, f.code) for f in report.findings] == [(0, "WR005"), (2, "WR005")]
    kept = audit(append(OBS, off), window(OBS, {**off, "rationale": ["o1"]}))
    assert [(f.pass_, f.code) for f in kept.findings] == [(0, "WR005")]


def test_a_false_claim_alone_is_repaired_by_correcting_the_claim() -> None:
    """CF006 alone: the least change keeps the rewrite (its legitimate evictions) and
    corrects claimed_preserved, as it does beside other findings."""
    other = {"id": "p2", "kind": "prose", "text": "more"}
    res = check_rewrite(its(NOTE, other, REASON), its(NOTE), claimed_preserved=["p2"])
    assert codes(res.findings) == [("CF006", ("p2",))]
    assert res.repair is not None and res.repair.verdict == "accept"
    assert [it.id for it in res.repair.window] == ["p1"]
    assert res.repair.claimed_preserved == ("p1",)
    assert res.repair.actions == ("claim preserved only 'p1'",)


def test_a_reused_id_does_not_put_an_evicted_failure_back_in_sight() -> None:
    """An unrelated observation appended under the id of an evicted failed run is not that
    run: a rewrite that keeps it (even one that changes nothing) leaves the failure out of
    sight, and a later run of its source is a re-run (CP003)."""
    failed = {"id": "o1", "kind": "observation", "source": "make test", "modality": "failed"}
    failed["shows"] = "!t"
    other = {"id": "o1", "kind": "observation", "source": "ls", "shows": "d"}
    rerun = {**failed, "id": "o2"}
    noop = {"event": "rewrite", "policy": "p", "diff": {"remove": [], "put": []}}
    for between in ([noop], []):
        report = audit(append(failed), window(), append(other), *between, append(rerun))
        assert ("CP003", ("o2", "o1")) in codes(report.findings), between
    # nor is a passing run of the same source under that id: a rewrite that keeps it as it
    # stands changes no later finding
    passing = {**failed, "shows": "t", "modality": "verified"}
    for between in ([window(passing)], [noop], []):
        report = audit(append(failed), window(), append(passing), *between, append(rerun))
        assert ("CP003", ("o2", "o1")) in codes(report.findings), between
    back = audit(append(failed), window(), append(passing), window(failed), append(rerun))
    assert ("CP003", ("o2", "o1")) not in codes(back.findings)


def test_the_graph_finds_a_stored_primitive_behind_an_unresolvable_stub() -> None:
    text = "\n".join(
        json.dumps(e)
        for e in (
            {"event": "header", "format": "ctxproof-trace/1"},
            append(OBS, NOTE),
            spill(OBS),
            window(stub(OBS, MISSING), NOTE),
        )
    )
    graph = JustificationGraph()
    audit_trace(parse_trace_text(text, "t"), graph=graph)
    answer = why(graph, "o1")
    assert answer.chain is not None and answer.chain[-1] == f"store:{ref_of(OBS)}"


def test_a_stub_never_links_to_another_items_store_entry() -> None:
    other = {**OBS, "id": "o2", "shows": "u"}
    text = "\n".join(
        json.dumps(e)
        for e in (
            {"event": "header", "format": "ctxproof-trace/1"},
            append(OBS, other),
            spill(other),
            window(stub(OBS, ref_of(other)), other),
        )
    )
    graph = JustificationGraph()
    audit_trace(parse_trace_text(text, "t"), graph=graph)
    # o1 was never stored: the stub that names o2's entry backs nothing
    assert why(graph, "o1").chain is None


def test_a_stored_stub_that_does_not_resolve_is_no_edge_to_itself() -> None:
    text = "\n".join(
        json.dumps(e)
        for e in (
            {"event": "header", "format": "ctxproof-trace/1"},
            append(OBS),
            spill(stub(OBS, MISSING)),
        )
    )
    graph = JustificationGraph()
    audit_trace(parse_trace_text(text, "t"), graph=graph)
    assert not [u for u, v in graph.g.edges if u == v]


def test_a_later_use_of_a_primitive_the_store_holds_is_no_cp001() -> None:
    user = {**CLAIM, "id": "u", "derived_from": ["o1"]}
    report = audit(append(OBS, NOTE), spill(OBS), window(stub(OBS, MISSING), NOTE), append(user))
    assert codes(report.findings) == [("WR006", ("o1",))]


def test_a_witness_cp001_names_under_an_id_used_again_is_its_newer_version() -> None:
    """CP001 names the observation the claim cites as the session last saw it, not the one
    spilled under that id before: its failure is CP001's alone (no WR005 beside it)."""
    old = {**OBS, "shows": "!u", "source": "ls"}
    report = audit(append(old), spill(old), window(), append(OBS), window(), append(CLAIM))
    assert codes(report.findings) == [("CP001", ("o1", "k1"))]


def test_a_claim_used_under_an_id_used_again_is_its_newer_version() -> None:
    """CP001 asks whether the version the session saw last says 'verified', not the one
    spilled under that id before (which said less)."""
    old = {"id": "k9", "kind": "claim", "formula": "q", "modality": "unverified"}
    new = {**old, "modality": "verified"}
    user = {"id": "k38", "kind": "claim", "formula": "q", "derived_from": ["k9"]}
    report = audit(append(old), spill(old), window(), append(new), window(), append(user))
    assert ("CP001", ("k9", "k38")) in codes(report.findings)


def test_a_claim_behind_an_unresolvable_stub_is_backed_through_its_last_version() -> None:
    """Nothing but WR006 is charged for the stub: a later use of the claim finds its path
    through the version the stub replaced (as through a dropped item's last version), to
    the observation the window still holds."""
    user = {"id": "k3", "kind": "claim", "formula": "t", "derived_from": ["k1"]}
    user["modality"] = "unverified"
    report = audit(append(OBS, CLAIM), window(OBS, stub(CLAIM, MISSING)), append(user))
    assert codes(report.findings) == [("WR006", ("k1",))]
    gone = audit(append(OBS, CLAIM), window(OBS, stub(CLAIM, MISSING)), window(OBS), append(user))
    assert codes(gone.findings) == [("WR006", ("k1",))]
    # with its observation gone too, the use names the rewrite that cut the path
    cut = audit(append(OBS, CLAIM), window(stub(CLAIM, MISSING)), append(user))
    assert ("CP001", ("k1", "k3")) in codes(cut.findings)
    assert "the rewrite at pass 1 cut" in next(f for f in cut.findings if f.code == "CP001").message


def test_a_failed_witness_behind_an_unresolvable_stub_keeps_its_claim_negative() -> None:
    """The witness is no surviving witness (WR001), but what it showed stays what the
    claim rests on: the claim is still negative-result, so dropping it later is CF001."""
    failed = {**OBS, "shows": "!t", "modality": "failed"}
    claim = {**CLAIM, "formula": "!t", "load_bearing": False}
    report = audit(
        append(failed, claim), window(claim, stub(failed, MISSING)), window(stub(failed, MISSING))
    )
    found = codes(report.findings)
    assert ("WR001", ("k1", "o1")) in found and ("CF001", ("k1",)) in found


def test_a_witness_id_reused_after_its_failed_version_was_spilled_is_the_new_one() -> None:
    """An item citing the observation appended under a spilled failure's id rests on that
    observation, not on the stored failure: it is not negative-result."""
    failed = {**OBS, "shows": "!t", "modality": "failed", "source": "make"}
    claim = {**CLAIM, "load_bearing": False}
    report = audit(append(failed), spill(failed), window(), append(OBS, claim), window(claim))
    assert codes(report.findings) == [("WR002", ("k1",))]


# -- CF004 on new commitments ------------------------------------------------------------------

FACT: Obj = {"id": "n1", "kind": "claim", "formula": "a"}
NEW: Obj = {
    "id": "c1",
    "kind": "commitment",
    "type": "decision",
    "formula": "a",
    "rationale": ["r1"],
}


def test_a_new_commitment_citing_a_rationale_the_rewrite_dropped_is_cf004() -> None:
    res = check_rewrite(its(REASON, FACT), its(FACT, NEW))
    assert codes(res.findings) == [("CF004", ("c1", "r1"))]


def test_with_the_rationale_spilled_it_is_not() -> None:
    store = MemoryStore()
    store.spill(its(REASON))
    assert check_rewrite(its(REASON, FACT), its(FACT, NEW), store=store).findings == ()


def test_a_rationale_that_is_a_commitment_is_cf001_too() -> None:
    reason = {"id": "r1", "kind": "commitment", "type": "invariant", "formula": "b"}
    res = check_rewrite(its(reason, FACT), its(FACT, NEW))
    assert sorted(codes(res.findings)) == [("CF001", ("r1",)), ("CF004", ("c1", "r1"))]


# -- accept-demoted -----------------------------------------------------------------------------


def test_verified_to_unverified_with_support_kept_is_accept() -> None:
    res = check_rewrite(its(OBS, CLAIM), its(OBS, {**CLAIM, "modality": "unverified"}))
    assert (res.verdict, res.demoted) == ("accept", ())


def test_unverified_to_unwitnessed_is_accept_demoted() -> None:
    plain = {**CLAIM, "modality": "unverified"}
    res = check_rewrite(its(OBS, plain), its(OBS, {**plain, "modality": "unwitnessed"}))
    assert (res.verdict, res.demoted) == ("accept-demoted", ("k1",))


def test_a_demotion_beside_a_finding_is_refused() -> None:
    plain = {**CLAIM, "modality": "unverified"}
    res = check_rewrite(its(OBS, plain), its({**plain, "modality": "unwitnessed"}, OBS, NEW))
    assert res.verdict == "refuse" and res.demoted == ("k1",)


def test_a_new_unwitnessed_item_is_no_demotion() -> None:
    res = check_rewrite(its(OBS), its(OBS, {**CLAIM, "modality": "unwitnessed"}))
    assert res.demoted == ()


# -- CP004's message names what the item contradicts ---------------------------------------------


def test_a_claim_against_the_background_says_so() -> None:
    report = audit(
        append({"id": "k1", "kind": "claim", "formula": "db.mysql"}), background=("!db.mysql",)
    )
    assert codes(report.findings) == [("CP004", ("k1",))]
    message = report.findings[0].message
    assert "contradicts the background" in message and "each other" not in message


def test_a_negated_atom_against_the_background_says_so() -> None:
    report = audit(append({"id": "k1", "kind": "claim", "formula": "!a"}), background=("a",))
    assert "'k1' (!a) contradicts the background on its own" in report.findings[0].message


def test_a_contradiction_in_itself_is_unsatisfiable_on_its_own() -> None:
    report = audit(append({"id": "k1", "kind": "claim", "formula": "a & !a"}))
    assert "'k1' (a & !a) is unsatisfiable on its own" in report.findings[0].message


def test_a_plain_literal_the_background_does_not_name_is_no_finding() -> None:
    report = audit(append({"id": "k1", "kind": "claim", "formula": "b"}), background=("!a",))
    assert report.findings == ()


# -- repairs --------------------------------------------------------------------------------------


def _spilled_claim_put_back() -> tuple[list[Item], list[Item], MemoryStore]:
    """k1 and its witness o1 spilled, k1 a stub; the rewrite puts k1 back without o1."""
    lint_obs = {**OBS, "shows": "lint"}
    lint = {**CLAIM, "formula": "lint"}
    store = MemoryStore()
    store.spill(its(lint_obs, lint))
    return its(stub(lint)), its(lint), store


def test_a_repair_that_demotes_is_accept_demoted() -> None:
    before, after, store = _spilled_claim_put_back()
    res = check_rewrite(before, after, store=store)
    assert codes(res.findings) == [("WR002", ("k1",))]
    assert res.repair is not None
    assert (res.repair.verdict, res.repair.actions) == (
        "accept-demoted",
        ("demote 'k1' to unwitnessed",),
    )


def test_guard_takes_a_demoted_repair() -> None:
    before, after, store = _spilled_claim_put_back()
    g = guard(before, after, store)
    assert (g.verdict, g.accepted, g.spilled) == ("repaired", True, ())
    assert [(it.id, it.modality) for it in g.window] == [("k1", "unwitnessed")]


def test_guard_of_an_undecided_rewrite_keeps_the_window_as_its_repair() -> None:
    # contradictory premises: whether n1 follows cannot be told; the repair removes the
    # new item whose check was left undecided, which leaves the window as it was and asks
    # nothing (unknown is never read as accept)
    a = {"id": "c", "kind": "commitment", "type": "decision", "formula": "a"}
    not_a = {**a, "id": "d", "formula": "!a"}
    before = its(a, not_a, NOTE)
    g = guard(before, its(a, not_a, NOTE, FACT), MemoryStore())
    assert g.result.verdict == "undecided"
    assert g.result.repair is not None
    assert (g.result.repair.verdict, g.result.repair.actions) == (
        "accept",
        ("remove new item 'n1' (its check was left undecided)",),
    )
    assert (g.verdict, g.window) == ("repaired", tuple(before))


def test_a_refusal_whose_repair_would_keep_an_undecided_item_removes_it() -> None:
    """A repair must be accepted when checked again: mending the refusal (a commitment
    dropped: spill it) is not enough while a new claim's check is left undecided (the
    window before contradicts itself); the repair removes that claim too."""
    a = {"id": "n2", "kind": "claim", "formula": "a"}
    not_a = {"id": "n5", "kind": "claim", "formula": "!a"}
    c = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "y"}
    new = {"id": "n6", "kind": "claim", "formula": "x"}
    res = check_rewrite(its(c, a, not_a), its(a, not_a, new), store=MemoryStore())
    assert codes(res.findings) == [("CF001", ("c1",))] and res.undecided
    assert res.repair is not None and res.repair.verdict == "accept"
    assert res.repair.actions == (
        "spill 'c1' and leave a stub",
        "remove new item 'n6' (its check was left undecided)",
    )
    assert [(it.id, it.kind) for it in res.repair.window] == [
        ("c1", "stub"),
        ("n2", "claim"),
        ("n5", "claim"),
    ]
