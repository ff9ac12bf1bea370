"""Checks that stay loud after a contradiction, tool pairing, retention by version."""

from __future__ import annotations

import json
from typing import Any

from verifier.audit import TraceReport, audit_trace
from verifier.check import check_rewrite
from verifier.graph import JustificationGraph, why
from verifier.io import item_from_json, parse_trace_text, ref_of

Obj = dict[str, Any]
PG = "db.postgres -> !db.mysql"


def audit(*events: Obj, background: tuple[str, ...] = ()) -> TraceReport:
    head = {"event": "header", "format": "ctxproof-trace/1", "background": list(background)}
    text = "\n".join(json.dumps(e) for e in (head, *events)) + "\n"
    return audit_trace(parse_trace_text(text, "t.jsonl"))


def found(report: TraceReport) -> list[tuple[str, int, tuple[str, ...]]]:
    return [(f.code, f.pass_, f.items) for f in report.findings]


def append(*items: Obj) -> Obj:
    return {"event": "append", "items": list(items)}


def put(*items: Obj, remove: tuple[str, ...] = ()) -> Obj:
    return {"event": "rewrite", "policy": "p", "diff": {"remove": list(remove), "put": list(items)}}


def window(*items: Obj) -> Obj:
    return {"event": "rewrite", "policy": "p", "window": list(items)}


D1 = {"id": "d1", "kind": "commitment", "type": "decision", "formula": "db.postgres"}
MYSQL = {"id": "a91", "kind": "claim", "formula": "db.mysql"}
INVENTED = {"id": "sec", "kind": "claim", "formula": "security.audit_passed"}
O1 = {"id": "o1", "kind": "observation", "source": "make test", "shows": "t"}
O1["modality"] = "verified"
C1 = {"id": "c1", "kind": "claim", "formula": "t", "witnesses": ["o1"], "modality": "verified"}


# -- the checks do not go silent -------------------------------------------------------------


def test_a_fabrication_after_a_readoption_is_still_cf005() -> None:
    report = audit(append(D1), append(MYSQL), put(INVENTED), background=(PG,))
    assert found(report) == [("CP003", 0, ("a91", "d1")), ("CF005", 1, ("sec",))]
    assert report.rewrites[0].verdict == "refuse"


def test_without_the_readoption_the_same_rewrite_is_cf005_too() -> None:
    report = audit(append(D1), put(INVENTED), background=(PG,))
    assert found(report) == [("CF005", 1, ("sec",))]


def test_a_self_contradictory_append_is_cp004_and_cp003_still_fires_later() -> None:
    bad = {"id": "x", "kind": "claim", "formula": "p & !p"}
    report = audit(append(bad), append(D1), append(MYSQL), background=(PG,))
    assert found(report) == [("CP004", 0, ("x",)), ("CP003", 0, ("a91", "d1"))]


def test_a_joint_contradiction_names_a_minimal_core() -> None:
    d = {"id": "d1", "kind": "commitment", "type": "decision", "formula": "d"}
    a = {"id": "c1", "kind": "claim", "formula": "a"}
    b = {"id": "c2", "kind": "claim", "formula": "b"}
    noise = {"id": "c0", "kind": "claim", "formula": "z"}
    report = audit(append(d), append(noise, a, b), background=("a & b -> !d",))
    # the item that completes the contradiction, the earlier appended item, the commitment
    assert found(report) == [("CP003", 0, ("c2", "c1", "d1"))]


def test_a_readopted_item_is_no_premise_later() -> None:
    # a91 (excluded) would entail 'db.mysql | q': CF005 must fire for the rewrite's claim
    claim = {"id": "k", "kind": "claim", "formula": "db.mysql | q"}
    report = audit(append(D1), append(MYSQL), put(claim), background=(PG,))
    assert ("CF005", 1, ("k",)) in found(report)


def test_unsatisfiable_premises_make_the_rewrite_undecided() -> None:
    a = {"id": "c", "kind": "commitment", "type": "decision", "formula": "a"}
    not_a = {"id": "d", "kind": "commitment", "type": "decision", "formula": "!a"}
    report = audit(append({"id": "p", "kind": "prose"}), put(a, not_a), put(INVENTED))
    assert [r.verdict for r in report.rewrites] == ["refuse", "undecided"]
    reason = report.rewrites[1].undecided[0]
    assert "unsatisfiable" in reason and "'c', 'd'" in reason


def test_unsatisfiable_premises_alone_give_exit_3() -> None:
    # a window made contradictory by the store (a stored commitment version) and an
    # append: nothing found, the question vacuous
    a = {"id": "c", "kind": "commitment", "type": "decision", "formula": "a"}
    spill = {"event": "spill", "items": [{**a, "formula": "!a"}]}
    report = audit(append(a), spill, put({"id": "k", "kind": "claim", "formula": "a"}))
    assert report.findings == ()
    assert report.rewrites[0].verdict == "undecided"
    assert report.exit_code == 3


# -- supersession ----------------------------------------------------------------------------


def test_a_passing_run_after_a_failing_one_never_contradicts_it() -> None:
    fail = {**O1, "shows": "!t", "modality": "failed", "exit_code": 1}
    ok = {**O1, "id": "o2", "exit_code": 0}
    report = audit(append(fail), append(ok))
    assert report.findings == ()


def test_a_run_supersedes_the_earlier_ones_from_its_place_in_the_append_on() -> None:
    """An append's items are asked in order: an item before a new run of a source is
    asked beside the earlier run, wherever that one stands (an earlier append, or this
    one); an item after it, beside the new run only."""
    against = {"id": "c3", "kind": "commitment", "type": "obligation", "formula": "!t"}
    rerun = {**O1, "id": "o4", "shows": "u"}
    earlier = audit(append(O1), append(against, rerun))
    same = audit(append(O1, against, rerun))
    assert found(earlier) == [("CP004", 0, ("c3", "o1"))]
    assert found(same) == [("CP004", 0, ("o1", "c3"))]
    assert audit(append(O1), append(rerun, against)).findings == ()
    assert audit(append(O1, rerun, against)).findings == ()


def test_a_claim_from_the_failing_run_goes_stale() -> None:
    fail = {**O1, "shows": "!t", "modality": "failed", "exit_code": 1}
    k1 = {"id": "k1", "kind": "claim", "formula": "!t", "witnesses": ["o1"], "modality": "failed"}
    ok = {**O1, "id": "o2", "exit_code": 0}
    new = {"id": "n", "kind": "claim", "formula": "t", "witnesses": ["o2"], "modality": "verified"}
    report = audit(append(fail, k1), append(ok), put(new))
    assert found(report) == [("CP004", 0, ("o2", "k1"))]
    assert report.rewrites[0].verdict == "accept"


def test_an_appended_item_excluded_with_the_stale_claim_is_named_in_the_message() -> None:
    """The claim goes stale; the content is still unsatisfiable, so the appended
    observation is no premise either, and the message says so (a later claim that
    agrees with it contradicts the earlier observation, not it)."""
    o1 = {"id": "o1", "kind": "observation", "shows": "p", "source": "s1"}
    c = {"id": "c", "kind": "claim", "formula": "p"}
    o2 = {"id": "o2", "kind": "observation", "shows": "!p", "source": "s2"}
    r = {"id": "r", "kind": "claim", "formula": "!p"}
    report = audit(append(o1, c), append(o2), append(r))
    assert found(report) == [("CP004", 0, ("o2", "c")), ("CP004", 0, ("r", "o1"))]
    first, second = (f.message for f in report.findings)
    assert "'c' is stale" in first and "'o2' is no premise either" in first
    assert "no premise either" not in second


# -- CP001, WR005 ----------------------------------------------------------------------------


def test_cp001_sees_a_use_in_the_same_append_once_per_pair() -> None:
    c2 = {"id": "c2", "kind": "claim", "formula": "q", "modality": "verified"}
    user = {"id": "u", "kind": "claim", "formula": "q", "derived_from": ["c2"]}
    commit = {"id": "d", "kind": "commitment", "type": "decision", "rationale": ["c2"]}
    report = audit(append(c2, user, commit))
    cp001 = [f for f in found(report) if f[0] == "CP001"]
    assert cp001 == [("CP001", 0, ("c2", "u")), ("CP001", 0, ("c2", "d"))]


def test_a_witness_held_only_in_the_store_is_retained() -> None:
    report = audit(append(O1), {"event": "spill", "items": [O1]}, window(), append(C1))
    assert report.findings == ()


def test_a_digest_whose_evidence_is_gone_fires_wr005() -> None:
    digest = {**C1, "id": "dg"}
    report = audit(append(O1), window(), put(digest))
    assert ("WR005", 2, ("dg",)) in found(report)


def test_wr005_does_not_repeat_a_witness_cp001_names() -> None:
    report = audit(append(O1), window(), append(C1))
    assert [f[0] for f in found(report)] == ["CP001"]


# -- retention by version, restores, text-only edits -----------------------------------------


def test_a_stub_keeps_the_spilled_versions_citations() -> None:
    stub = {"id": "c1", "kind": "stub", "ref": ref_of(C1)}
    user = {"id": "u", "kind": "claim", "formula": "t", "derived_from": ["c1"]}
    spill = {"event": "spill", "items": [C1]}
    report = audit(append(O1, C1), spill, window(O1, stub), append(user))
    assert report.findings == ()


def test_a_reused_observation_id_does_not_back_earlier_citers() -> None:
    user = {"id": "u", "kind": "claim", "formula": "t", "derived_from": ["c1"]}
    again = {**O1, "shows": "t", "content": "second run"}
    report = audit(append(O1, C1), window(C1), append(again), append(user))
    assert ("CP001", 1, ("c1", "u")) in found(report)


def test_a_text_only_edit_changes_nothing() -> None:
    edited = [{**O1, "text": "run", "score": 40}, {**C1, "tokens": 3, "text": "ok"}]
    again = {**window(*edited), "claimed_preserved": ["o1", "c1"]}
    report = audit(append(O1, C1), window(*edited), again)
    assert report.findings == ()


def test_putting_an_item_back_restores_it() -> None:
    claim = {"id": "k", "kind": "claim", "formula": "zz"}
    user = {"id": "u", "kind": "claim", "formula": "t", "derived_from": ["c1"]}
    report = audit(append(O1, C1, claim), window(), window(O1, C1, claim), append(user))
    assert report.findings == ()  # no CF005, no WR007, and c1 backed again


def test_an_item_put_back_written_otherwise_restores_it() -> None:
    """Other spaces, parentheses, keyword operators or a default written out: the same
    version as parsed, so putting it back restores it (no CF005, no WR007)."""
    obs = {**O1, "id": "o2", "shows": "a&!b", "modality": "verified"}
    com = {**D1, "formula": "p and not q"}
    again: list[Obj] = [
        {**obs, "shows": "(a & (!b))"},
        {**com, "formula": "(p  &  !q)", "load_bearing": True},
        {**C1, "formula": "(t)", "load_bearing": False},
        {**O1, "shows": " t "},
    ]
    report = audit(append(O1, C1, obs, com), window(), window(*again))
    assert found(report) == [("CF001", 1, ("d1",))]
    spelled_as_first = audit(append(O1, C1, obs, com), window(), window(O1, C1, obs, com))
    assert found(spelled_as_first) == found(report)
    user = {"id": "u", "kind": "claim", "formula": "a", "witnesses": ["o2"], "modality": "verified"}
    text = "\n".join(
        json.dumps(e)
        for e in (
            {"event": "header", "format": "ctxproof-trace/1"},
            append(obs),
            window(),
            window(again[0]),
            append(user),
        )
    )
    graph = JustificationGraph()
    audit_trace(parse_trace_text(text, "t"), graph=graph)
    assert why(graph, "u").chain == ["u@2", "o2@0"]  # the version appended, put back


def test_a_weakened_commitment_whose_original_is_stored_written_otherwise_is_no_cf003() -> None:
    com = {**D1, "formula": "p & q"}
    spill = {"event": "spill", "items": [com]}
    respelled = {**com, "formula": "(p  &  q)", "load_bearing": True}
    report = audit(append(com), spill, window(respelled), window({**com, "formula": "p"}))
    assert found(report) == []
    unstored = audit(append(com), window(respelled), window({**com, "formula": "p"}))
    assert found(unstored) == [("CF003", 2, ("d1",))]


def test_a_restored_observation_is_backed_again_in_the_graph() -> None:
    text = "\n".join(
        json.dumps(e)
        for e in (
            {"event": "header", "format": "ctxproof-trace/1"},
            append(O1, C1),
            window(C1),
            window(O1, C1),
        )
    )
    graph = JustificationGraph()
    audit_trace(parse_trace_text(text, "t"), graph=graph)
    assert why(graph, "c1").chain == ["c1@0", "o1@0"]


# -- covers on claims --------------------------------------------------------------------------


def test_claims_merge_with_covers() -> None:
    a = {"id": "a", "kind": "claim", "formula": "x", "load_bearing": True}
    b = {"id": "b", "kind": "claim", "formula": "y", "load_bearing": True}
    merged = {"id": "m", "kind": "claim", "formula": "x & y", "covers": ["a", "b"]}
    res = check_rewrite([item_from_json(a), item_from_json(b)], [item_from_json(merged)])
    codes = [f.code for f in res.findings]
    assert "CF001" not in codes and "CF007" not in codes


def test_a_merge_of_another_kind_is_cf007_and_covers_nothing() -> None:
    c = {"id": "c", "kind": "commitment", "type": "decision", "formula": "x"}
    merged = {"id": "m", "kind": "claim", "formula": "x", "covers": ["c"]}
    res = check_rewrite([item_from_json(c)], [item_from_json(merged)])
    shown = [(f.code, f.items) for f in res.findings]
    assert ("CF007", ("m", "c")) in shown and ("CF001", ("c",)) in shown


# -- tool pairing ------------------------------------------------------------------------------

CALL = {"id": "call1", "kind": "prose", "text": "run the tests"}
RESULT = {**O1, "id": "r1", "call": "call1"}


def test_tp001_a_result_kept_without_its_call() -> None:
    report = audit(append(CALL, RESULT), put(remove=("call1",)))
    assert found(report) == [("TP001", 1, ("r1", "call1"))]


def test_tp002_a_call_kept_without_its_results() -> None:
    report = audit(append(CALL, RESULT), put(remove=("r1",)))
    assert found(report) == [("TP002", 1, ("call1", "r1"))]


def test_a_placeholder_keeps_the_pairing() -> None:
    placeholder = {"id": "r1:cleared", "kind": "prose", "call": "call1", "text": "[cleared]"}
    report = audit(append(CALL, RESULT), put(placeholder, remove=("r1",)))
    assert report.findings == ()


def test_an_orphan_is_charged_once_to_the_rewrite_that_made_it() -> None:
    report = audit(append(RESULT, CALL), put(remove=("call1",)), window(RESULT))
    assert found(report) == [("TP001", 1, ("r1", "call1"))]  # the first rewrite only


def test_an_orphan_an_append_made_is_not_charged() -> None:
    report = audit(append(CALL), window(), append(RESULT), window(RESULT))
    assert found(report) == []


def test_the_repair_restores_the_partner() -> None:
    before = [item_from_json(CALL), item_from_json(RESULT)]
    res = check_rewrite(before, [item_from_json(RESULT)])
    assert res.verdict == "refuse" and res.repair is not None
    assert [it.id for it in res.repair.window] == ["call1", "r1"]
    assert res.repair.verdict == "accept"


def test_the_repair_never_leaves_a_citation_of_what_it_removed() -> None:
    bogus = {"id": "x", "kind": "claim", "formula": "q"}
    before = [item_from_json({"id": "c", "kind": "commitment", "type": "decision"})]
    after = [
        item_from_json({"id": "c", "kind": "commitment", "type": "decision", "rationale": ["x"]}),
        item_from_json({"id": "x", "kind": "stub", "ref": ref_of(bogus)}),
    ]
    res = check_rewrite(before, after)
    assert res.repair is not None
    assert [it.raw for it in res.repair.window] == [before[0].raw]
    assert res.repair.verdict == "accept"


def test_cp004_excludes_a_claim_appended_as_its_stub() -> None:
    # k1 is spilled and dropped; an append brings c2 and a stub of k1: the core is c2, k1
    # (the claim the stub stands for) and k3, and both claims are stale, as when k1 is
    # appended in full: k9 = k1's formula then rests on nothing (CF005)
    k1 = {"id": "k1", "kind": "claim", "formula": "a -> b"}
    k3 = {"id": "k3", "kind": "claim", "formula": "a"}
    c2 = {"id": "c2", "kind": "commitment", "type": "decision", "formula": "!b"}
    k9 = {**k1, "id": "k9"}
    stub = {"id": "k1", "kind": "stub", "ref": ref_of(k1)}
    for again in (stub, k1):
        report = audit(
            append(k1, k3),
            {"event": "spill", "items": [k1]},
            window(k3),
            append(c2, again),
            window(k3, c2, again, k9),
        )
        cp004 = next(f for f in report.findings if f.code == "CP004")
        assert "the claims 'k1', 'k3' are stale" in cp004.message
        assert ("CF005", 2, ("k9",)) in found(report)
        assert report.rewrites[1].verdict == "refuse"


def test_cp003_names_an_id_once_when_it_contradicts_its_own_stored_version() -> None:
    c1 = {"id": "c1", "kind": "commitment", "type": "decision", "formula": "p"}
    report = audit(
        append(c1),
        {"event": "spill", "items": [c1]},
        window(),
        append({**c1, "formula": "!p"}),
    )
    assert found(report) == [("CP003", 1, ("c1",))]
