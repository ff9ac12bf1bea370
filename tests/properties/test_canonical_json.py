"""canonical_json writes what the standard library's encoder writes, errors included.

It calls the interpreter's C encoder built once instead of through
``json.JSONEncoder.encode`` (which builds it at every call); these tests hold
the two to the same text for any JSON value, and to the same exception for
values that are not JSON.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.window import canonical_json

REFERENCE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities included: the encoder writes them, as before
    | st.text()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(VALUES)
def test_same_text_as_the_standard_encoder(value: Any) -> None:
    assert canonical_json(value) == REFERENCE.encode(value)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), VALUES, max_size=6))
def test_an_item_like_object_keeps_its_keys_sorted(obj: dict[str, Any]) -> None:
    text = canonical_json(obj)
    assert text == REFERENCE.encode(obj)
    assert list(json.loads(text)) == sorted(obj)


def _error_of(call: Any) -> tuple[type[BaseException], str]:
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: {"a": {1, 2}},  # a set is not JSON
        lambda: {"a": object()},
        lambda: {("tuple", "key"): 1},
        lambda: _circular_dict(),
        lambda: _circular_list(),
    ],
    ids=["set", "object", "tuple-key", "circular-dict", "circular-list"],
)
def test_not_json_raises_what_the_standard_encoder_raises(make: Any) -> None:
    value = make()
    assert _error_of(lambda: canonical_json(value)) == _error_of(lambda: REFERENCE.encode(value))


def test_an_error_leaves_nothing_behind() -> None:
    """A value refused once does not change what the next one gives (no state kept)."""
    shared: dict[str, Any] = {"k": [1, 2]}
    circular = _circular_dict()
    circular["shared"] = shared
    with pytest.raises(ValueError):
        canonical_json(circular)
    assert canonical_json({"x": shared, "y": shared}) == '{"x":{"k":[1,2]},"y":{"k":[1,2]}}'


def _circular_dict() -> dict[str, Any]:
    out: dict[str, Any] = {"a": 1}
    out["self"] = out
    return out


def _circular_list() -> list[Any]:
    out: list[Any] = [1]
    out.append(out)
    return out
