"""Laws of the third reading on generated windows (docs/rules.md, "Stubs the store cannot
resolve").

A stub the store cannot resolve is still an entry with its id, and is charged with
WR006 and nothing else: against the same rewrite with a stub that resolves (and a
store that holds the item), the findings about every other item are the same, those
about the stubbed item give way to its WR006 -- as long as no item cites the stubbed
item as a witness (a witness that survives only behind such a stub is lost, which
WR001/WR002 rightly report) and it is no merge (what it covers cannot be read).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import assume, given, note
from hypothesis import strategies as st
from test_rewrite_props import items, stub_obj, windows

from verifier.check import RewriteResult, check_rewrite
from verifier.store import MemoryStore

Obj = dict[str, Any]
MISSING = "sha256:" + "0" * 64


def found(res: RewriteResult) -> Counter[tuple[str, tuple[str, ...]]]:
    return Counter((f.code, tuple(f.items)) for f in res.findings)


@given(windows(min_size=2), st.data())
def test_an_unresolvable_stub_changes_nothing_but_wr006(
    before: list[Obj], data: st.DataObject
) -> None:
    cited = {w for o in before for w in o.get("witnesses", ())}
    # a merge behind such a stub covers nothing that can be read: not asked here
    candidates = [o for o in before if o["id"] not in cited and not o.get("covers")]
    assume(candidates)
    x = data.draw(st.sampled_from(candidates), label="stubbed")
    others = [o for o in before if o is not x]
    kept_ids = set(data.draw(st.sets(st.sampled_from([o["id"] for o in others])), label="kept"))
    stored = data.draw(st.sets(st.sampled_from([o["id"] for o in others])), label="stored")
    store = MemoryStore()
    store.spill(items([x, *(o for o in others if o["id"] in stored)]))

    def after(stub: Obj) -> list[Obj]:
        return [stub if o is x else o for o in before if o is x or o["id"] in kept_ids]

    resolving = stub_obj(x)
    broken = {**resolving, "ref": MISSING}
    note(f"after: {after(broken)}")
    a = check_rewrite(items(before), items(after(resolving)), store=store, with_repair=False)
    b = check_rewrite(items(before), items(after(broken)), store=store, with_repair=False)
    # what concerned the stubbed item itself is not charged, but for TP002 (a call is known
    # by its id alone); everything else is the same
    others_found = Counter(
        {k: v for k, v in found(a).items() if k[1][0] != x["id"] or k[0] == "TP002"}
    )
    assert found(b) == others_found + Counter({("WR006", (x["id"],)): 1})
    assert b.verdict == "refuse"
    assert b.demoted == a.demoted


@given(windows(min_size=2), st.data())
def test_a_stub_naming_another_stored_item_is_as_unresolvable_as_a_missing_one(
    before: list[Obj], data: st.DataObject
) -> None:
    x, other = data.draw(st.permutations(before), label="stubbed, named")[:2]
    store = MemoryStore()
    store.spill(items([x, other]))
    missing = {"id": x["id"], "kind": "stub", "ref": MISSING}
    naming = {**stub_obj(other), "id": x["id"]}
    after_missing = [missing if o is x else o for o in before]
    after_naming = [naming if o is x else o for o in before]
    a = check_rewrite(items(before), items(after_missing), store=store, with_repair=False)
    b = check_rewrite(items(before), items(after_naming), store=store, with_repair=False)
    # the same findings, WR006 worded for what the stub names
    assert found(a) == found(b)
    assert a.verdict == b.verdict == "refuse"
