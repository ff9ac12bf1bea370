"""An item's key (its canonical JSON without text, score and tokens) cut out of its
text without parsing it is the key parsing and writing it anew gives.

The shortcut (:func:`verifier.window._key_unparsed`) handles objects with no object
inside (every valid item); for anything else it must step aside (None), never give
another key. The values drawn put the unread keys where they would confuse a text
search: inside strings, inside keys, in nested objects, twice over.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.io import item_from_json
from verifier.strategies import windows
from verifier.window import UNREAD_FIELDS, _key_parsed, _key_unparsed, canonical_json

TRICKY = st.sampled_from(
    ["text", "score", "tokens", '"text":', ',"text":"', 'a"text', "text\\", "{", "}", ","]
)
KEYS = TRICKY | st.text(max_size=6)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | TRICKY
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=1000, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=6), st.text(max_size=4))
def test_the_key_cut_out_is_the_key_written_anew(obj: dict[str, Any], iid: str) -> None:
    obj = {"id": iid, "kind": "prose", **obj}
    raw = canonical_json(obj)
    cut = _key_unparsed(raw)
    if cut is not None:
        assert cut == _key_parsed(raw)


@settings(max_examples=300, deadline=None)
@given(windows(max_size=6), st.data())
def test_every_valid_item_takes_the_shortcut(window: list[dict[str, Any]], data: Any) -> None:
    """Not vacuous: valid items, with their unread fields or not, are cut, not parsed."""
    for obj in window:
        extra = data.draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "text": st.text(max_size=6) | TRICKY,
                    "score": st.integers(0, 100),
                    "tokens": st.integers(0, 10**6),
                },
            )
        )
        raw = item_from_json({**obj, **extra}).raw
        if "{" in raw[1:]:
            continue  # a brace in a string: the long way, by design
        cut = _key_unparsed(raw)
        assert cut == _key_parsed(raw)
        assert set(json.loads(cut)) == set(json.loads(raw)) - UNREAD_FIELDS


def test_the_shortcut_steps_aside_where_the_text_is_not_plain() -> None:
    plain = canonical_json({"id": "a", "kind": "prose", "score": 3, "text": 'x,"text":"y'})
    assert _key_unparsed(plain) == '{"id":"a","kind":"prose"}'
    nested = canonical_json({"id": "a", "kind": "prose", "m": {"text": 1}})
    assert _key_unparsed(nested) is None and _key_parsed(nested) == nested
    odd_key = canonical_json({"id": "a", "kind": "prose", 'a"text': 1})
    assert _key_unparsed(odd_key) in (None, odd_key)
    listed = canonical_json({"id": "a", "kind": "prose", "text": [1, 2]})
    assert _key_unparsed(listed) is None and _key_parsed(listed) == '{"id":"a","kind":"prose"}'
