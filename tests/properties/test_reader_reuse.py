"""The window reader reuses the item it built from an equal object read earlier
(:func:`verifier.io._same_json`): what it returns must be what a first read returns,
item or error, also when Python's equality and JSON's differ (``1 == 1.0 == True``,
``0.0 == -0.0``)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import verifier.io as reader
from verifier.errors import InputError
from verifier.strategies import item_dicts
from verifier.window import canonical_json

# items the generated item may cite (so that it has lists of ids)
CITED: list[dict[str, Any]] = [
    {"id": "o0", "kind": "observation", "shows": "t.ok", "modality": "verified", "exit_code": 0},
    {"id": "c0", "kind": "commitment", "type": "decision"},
]

# values that are equal in Python and different in JSON
LOOKALIKES: list[Any] = [0, 0.0, -0.0, False, 1, 1.0, True, 7, 7.0]


def _window(obj: dict[str, Any]) -> str:
    return json.dumps({"format": "ctxproof-window/1", "items": [obj]})


def _read(text: str) -> object:
    """The item read, or the error's text."""
    try:
        return reader.parse_window_text(text, "w.json").items[0]
    except InputError as exc:
        return str(exc)


@settings(max_examples=300, deadline=None)
@given(
    obj=item_dicts("i1"),
    field=st.sampled_from(["tokens", "score", "exit_code", "at", "load_bearing"]),
    first=st.sampled_from(LOOKALIKES),
    second=st.sampled_from(LOOKALIKES),
)
def test_a_reread_object_reads_as_it_would_the_first_time(
    obj: dict[str, Any], field: str, first: Any, second: Any
) -> None:
    a, b = {**obj, field: first}, {**obj, field: second}
    reader.forget_reads()
    fresh = _read(_window(b))
    reader.forget_reads()
    _read(_window(a))  # read first: remembered when valid
    again = _read(_window(b))
    assert again == fresh
    if isinstance(again, str):
        return
    assert again.raw == canonical_json(b)  # type: ignore[attr-defined]


@settings(max_examples=300, deadline=None)
@given(
    obj=item_dicts("i1", CITED),
    extra=st.sampled_from(
        [
            {},
            {"modality": "unverified"},
            {"text": None},
            {"tokens": None},
            {"load_bearing": True},
            {"rationale": []},
            {"covers": []},
        ]
    ),
    drop=st.sampled_from([None, "text", "modality", "formula", "rationale", "witnesses"]),
    relist=st.booleans(),
)
def test_a_reread_object_with_other_keys_reads_as_it_would_the_first_time(
    obj: dict[str, Any], extra: dict[str, Any], drop: str | None, relist: bool
) -> None:
    """Explicit defaults, fields left out, lists of other ids: other JSON."""
    b = {k: v for k, v in {**obj, **extra}.items() if k != drop}
    if relist:
        b = {k: [*v, "zz"] if isinstance(v, list) else v for k, v in b.items()}
    reader.forget_reads()
    fresh = _read(_window(b))
    reader.forget_reads()
    _read(_window(obj))
    again = _read(_window(b))
    assert again == fresh
    if not isinstance(again, str):
        assert again.raw == canonical_json(b)  # type: ignore[attr-defined]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(LOOKALIKES), st.sampled_from(LOOKALIKES))
def test_same_json_only_for_the_same_canonical_json(first: Any, second: Any) -> None:
    a = {"id": "o1", "kind": "observation", "exit_code": 0, "at": first, "source": "make"}
    b = {"id": "o1", "kind": "observation", "exit_code": 0, "at": second, "source": "make"}
    if isinstance(first, bool):  # not a valid 'at': compare the item of b instead
        a, b = b, a
    if isinstance(a["at"], bool):
        return
    item = reader.item_from_json(a)
    same = reader._same_json(item, frozenset(a), b)
    assert same == (canonical_json(a) == canonical_json(b))
