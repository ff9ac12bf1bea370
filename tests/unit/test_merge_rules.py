"""Merges (``covers``) judged by CF007: what a merge may cover, and an undecided merge."""

from __future__ import annotations

from typing import Any

from verifier.check import check_rewrite
from verifier.io import item_from_json
from verifier.window import Item

Obj = dict[str, Any]


def its(*objs: Obj) -> list[Item]:
    return [item_from_json(o) for o in objs]


def commitment(cid: str, formula: str, **extra: Any) -> Obj:
    return {"id": cid, "kind": "commitment", "type": "invariant", "formula": formula, **extra}


NOTE: Obj = {"id": "p1", "kind": "prose", "text": "notes"}


def test_a_merge_covering_an_id_found_nowhere_is_cf007() -> None:
    merged = commitment("m1", "a", covers=["ghost"])
    res = check_rewrite(its(NOTE), its(NOTE, merged))
    cf007 = [f for f in res.findings if f.code == "CF007"]
    assert [f.items for f in cf007] == [("m1", "ghost")]  # the merge, then what it names
    assert "covers 'ghost', which is neither in the window before nor in the store" in (
        cf007[0].message
    )
    assert res.verdict == "refuse"


def test_a_merge_covering_what_the_window_held_is_valid() -> None:
    a, b = commitment("c1", "a"), commitment("c2", "b")
    merged = commitment("m1", "a & b", covers=["c1", "c2"])
    res = check_rewrite(its(a, b, NOTE), its(merged, NOTE))
    assert res.findings == ()
    assert res.verdict == "accept"


def test_a_contradictory_merge_asserts_more_than_what_it_covers() -> None:
    # the merge's own formula is unsatisfiable: that it entails what it covers holds only
    # vacuously, but the covered commitments are consistent and do not entail it, a
    # definite answer: it asserts more than their conjunction (CF007), and carries nothing
    a, b = commitment("c1", "a"), commitment("c2", "b")
    merged = commitment("m1", "a & b & !a", covers=["c1", "c2"])
    res = check_rewrite(its(a, b, NOTE), its(merged, NOTE))
    cf007 = [f for f in res.findings if f.code == "CF007"]
    assert [f.items for f in cf007] == [("m1", "c1", "c2")]
    assert "asserts more than the conjunction of 'c1', 'c2'" in cf007[0].message
    assert not [r for r in res.undecided if r.startswith("merge 'm1'")]
    assert {f.items for f in res.findings if f.code == "CF001"} == {("c1",), ("c2",)}
    assert res.verdict == "refuse"


def test_a_merge_of_contradicting_commitments_is_left_undecided() -> None:
    # both directions are vacuous (the covered items contradict each other, and so does
    # the merge): no answer, never CF007 on a guess
    a, b = commitment("c1", "a"), commitment("c2", "!a")
    merged = commitment("m1", "a & !a", covers=["c1", "c2"])
    res = check_rewrite(its(a, b, NOTE), its(merged, NOTE))
    assert not any(f.code == "CF007" for f in res.findings)
    assert [r for r in res.undecided if r.startswith("merge 'm1'")]
