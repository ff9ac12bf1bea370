"""Items built by the builder of their object's shape (kind and keys) are the items the
full check builds, and a builder takes nothing the full check refuses."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, fields
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import verifier.io as reader
from verifier.errors import InputError
from verifier.io import item_from_json
from verifier.strategies import item_dicts
from verifier.window import _SLOTS, Item, canonical_json, content_ref, item_slots

CITED: list[dict[str, Any]] = [
    {"id": "o0", "kind": "observation", "shows": "t.ok", "modality": "verified", "exit_code": 0},
    {"id": "c0", "kind": "commitment", "type": "decision"},
]
REF = "sha256:" + "0" * 64
EDGES: dict[str, list[Any]] = {
    "id": ["i1", "", "x" * 300, 3, None],
    "kind": ["commitment", "claim", "observation", "prose", "stub", "bogus", 3],
    "text": ["", "x", None, 3, ["x"]],
    "tokens": [-1, 0, 5, True, 1.0, "3", None],
    "score": [-1, 0, 100, 101, False, 50.0, None],
    "type": ["decision", "obligation", "x", None, 3],
    "formula": ["a", "a & b", "!o0", "a &", "", "  ", 3, None],
    "shows": ["t.ok", "a | b", "a &", "", 3, None],
    "modality": ["verified", "failed", "unverified", "unwitnessed", "bogus", 1, None],
    "load_bearing": [True, False, None, 1, "true"],
    "rationale": [[], ["c0"], ["c0", "c0"], [1], "c0", None],
    "covers": [[], ["c0"], ["c0", "o0"], [True], None],
    "witnesses": [[], ["o0"], ["o0", "o0"], [0], None],
    "derived_from": [[], ["c0"], [None], "c0", None],
    "content": ["out", "", None, 3],
    "digest": [REF, "sha256:" + "A" * 64, "x", None, 3],
    "source": ["make", None, 3],
    "exit_code": [0, 1, -2, True, 1.5, "0", None],
    "at": [1, 1.5, "t", True, None, [1]],
    "call": ["o0", "", "x" * 300, 3, None],
    "ref": [REF, "x", None, 3],
    "extra": [1],
}
CHANGES = st.lists(
    st.sampled_from(sorted(EDGES)).flatmap(
        lambda key: st.tuples(st.just(key), st.sampled_from(EDGES[key]))
    ),
    max_size=3,
)


def _fields(item: Item) -> list[tuple[str, type, Any]]:
    out = [(f.name, type(getattr(item, f.name)), getattr(item, f.name)) for f in fields(Item)]
    return [*out, ("formula", type(item.formula), item.formula)]


def _full(obj: dict[str, Any], raw: str) -> Item | None:
    try:
        return reader._item_from_json(obj, reader._Ctx("w.json", None), raw)
    except InputError:
        return None


@settings(max_examples=1000, deadline=None)
@given(
    obj=item_dicts("i1", CITED),
    changes=CHANGES,
    drop=st.sets(st.sampled_from(sorted(EDGES)), max_size=2),
)
def test_a_shaped_item_is_the_item_the_full_check_builds(
    obj: dict[str, Any], changes: list[tuple[str, Any]], drop: set[str]
) -> None:
    valid_before = _full(obj, canonical_json(obj))
    assert valid_before is not None
    shaped = reader._shaped(obj, canonical_json(obj), None)
    assert shaped is not None and _fields(shaped) == _fields(valid_before)  # valid: taken
    for key, value in changes:
        obj[key] = value
    for key in drop:
        obj.pop(key, None)
    try:
        raw = canonical_json(obj)
    except ValueError:
        return
    shaped = reader._shaped(obj, raw, None)
    full = _full(obj, raw)
    if shaped is not None:
        assert full is not None, obj  # nothing the full check refuses
        assert _fields(shaped) == _fields(full)


BASES: list[dict[str, Any]] = [
    {"id": "c1", "kind": "commitment", "type": "decision", "formula": "a", "rationale": ["c0"]},
    {"id": "k1", "kind": "claim", "formula": "a & b", "witnesses": ["o0"], "derived_from": []},
    {"id": "o1", "kind": "observation", "shows": "t.ok", "content": "out", "exit_code": 0},
    {"id": "p1", "kind": "prose", "text": "x", "call": "o0"},
    {"id": "s1", "kind": "stub", "ref": REF},
]


@pytest.mark.parametrize("base", BASES, ids=[b["kind"] for b in BASES])
def test_every_field_at_every_edge_value(base: dict[str, Any]) -> None:
    """Each key of every kind set to each of its edge values, one at a time, and with
    every other key of the kind present too."""
    full_base = {**base}
    for key in sorted(reader._FIELDS[base["kind"]]):
        full_base.setdefault(key, EDGES[key][0])
    if "content" in full_base:
        full_base["digest"] = content_ref(full_base["content"])
    for start in (base, full_base):
        for key, values in EDGES.items():
            for value in values:
                obj = {**start, key: value}
                raw = canonical_json(obj)
                shaped = reader._shaped(obj, raw, None)
                full = _full(obj, raw)
                if shaped is not None:
                    assert full is not None and _fields(shaped) == _fields(full), obj
                if full is not None:
                    assert shaped is not None, obj  # a valid object is taken


def _filler(blank: bool) -> Any:
    lines, scope = item_slots({f.name: f"values[{f.name!r}]" for f in fields(Item)}, blank=blank)
    source = ["def fill(values):", *(f"    {line}" for line in lines), "    return item"]
    exec("\n".join(source), scope)
    return scope["fill"]


FILLERS = {blank: _filler(blank) for blank in (True, False)}


@settings(max_examples=300, deadline=None)
@given(obj=item_dicts("i1", CITED))
def test_an_item_filled_in_as_a_blank_is_the_item_its_setters_make(obj: dict[str, Any]) -> None:
    """A new item is filled in as a blank of the same slots that then becomes an Item:
    every slot holds what the slots' setters (and Item's own constructor) put there."""
    model = item_from_json(obj)
    values = {f.name: _SLOTS[f.name].__get__(model) for f in fields(Item)}
    values["_formula"] = model.formula
    by_blank, by_setters = FILLERS[True](values), FILLERS[False](values)
    made = Item(**{f.name: values[f.name] for f in fields(Item) if f.init})
    object.__setattr__(made, "_formula", values["_formula"])
    for item in (by_blank, by_setters):
        assert type(item) is Item
        slots = [(f.name, type(v), v) for f in fields(Item) for v in [_SLOTS[f.name].__get__(item)]]
        assert slots == [
            (f.name, type(v), v) for f in fields(Item) for v in [_SLOTS[f.name].__get__(made)]
        ]
        assert item == made and repr(item) == repr(made) and hash(item) == hash(made)
    with pytest.raises(FrozenInstanceError):
        by_blank.text = "changed"  # type: ignore[misc,unused-ignore]
