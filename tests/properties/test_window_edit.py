"""The repair's window edits (:class:`verifier.check.WindowEdit`) against the plain list
edits they replace: the same window, in the same order, after any run of puts and
removals."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.check import WindowEdit
from verifier.io import item_from_json
from verifier.window import Item


def _item(iid: str, version: int) -> Item:
    return item_from_json({"id": iid, "kind": "prose", "text": f"v{version}"})


class ListEdit:
    """The reference: a list, searched and re-indexed on every edit."""

    def __init__(self, window: list[Item], before_ids: list[str]) -> None:
        self.window = list(window)
        self.order = before_ids

    def put(self, item: Item) -> None:
        pos = {it.id: i for i, it in enumerate(self.window)}
        if item.id in pos:
            self.window[pos[item.id]] = item
            return
        idx = len(self.window)
        if item.id in self.order:
            for prev in reversed(self.order[: self.order.index(item.id)]):
                if prev in pos:
                    idx = pos[prev] + 1
                    break
            else:
                idx = 0
        self.window.insert(idx, item)

    def remove(self, item_id: str) -> None:
        self.window = [it for it in self.window if it.id != item_id]


IDS = [f"i{n}" for n in range(12)]


@settings(max_examples=400, deadline=None)
@given(
    before=st.lists(st.sampled_from(IDS), unique=True, max_size=10),
    start=st.lists(st.sampled_from(IDS), unique=True, max_size=10),
    ops=st.lists(
        st.tuples(st.sampled_from(["put", "remove"]), st.sampled_from(IDS), st.integers(0, 3)),
        max_size=25,
    ),
)
def test_edits_give_the_window_the_list_edits_give(
    before: list[str], start: list[str], ops: list[tuple[str, str, int]]
) -> None:
    window = [_item(i, 0) for i in start]
    fast, slow = WindowEdit(window, before), ListEdit(window, before)
    for op, iid, version in ops:
        if op == "put":
            fast.put(_item(iid, version))
            slow.put(_item(iid, version))
        else:
            fast.remove(iid)
            slow.remove(iid)
        assert (iid in fast) == any(it.id == iid for it in slow.window)
        held = fast.get(iid)
        assert held == next((it for it in slow.window if it.id == iid), None)
    assert fast.items() == slow.window
