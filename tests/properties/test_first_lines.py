"""The line a window check's finding points at: found in one pass over the file, and
the line of the first occurrence of its item's id (as a JSON string), as a search
for each finding on its own would give."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.cli.check import _first_lines

IDS = st.sampled_from(["c1", "c10", "k", ": ", '"', 'a"b', "a\\b", "x\ny", "é", ",", " "])


def _one_at_a_time(text: str, needle: str) -> int | None:
    pos = text.find(needle)
    return text.count("\n", 0, pos) + 1 if pos >= 0 else None


@st.composite
def files(draw: st.DrawFn) -> str:
    """JSON of items that cite each other, laid out one way or another, sometimes cut."""
    items: list[dict[str, Any]] = []
    for iid in draw(st.lists(IDS, max_size=6)):
        obj: dict[str, Any] = {"id": iid, "kind": "prose"}
        if draw(st.booleans()):
            obj["text"] = draw(st.sampled_from(['say "c1"', "c1", "", ":", '"k"']))
        if draw(st.booleans()):
            obj["rationale"] = draw(st.lists(IDS, max_size=3))
        items.append(obj)
    indent = draw(st.sampled_from([None, 0, 2]))
    text = json.dumps({"items": items}, indent=indent, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return text


@settings(max_examples=500, deadline=None)
@given(files(), st.lists(IDS, max_size=6))
def test_each_needle_is_at_the_line_of_its_first_occurrence(text: str, ids: list[str]) -> None:
    needles = {json.dumps(i, ensure_ascii=False) for i in ids}
    found = _first_lines(text, needles)
    for needle in needles:
        assert found.get(needle) == _one_at_a_time(text, needle), (needle, text)
