"""The item fields of the second reading: score, call, covers on claims; versions; stubs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier import item_from_json, ref_of, stub_for
from verifier.errors import InputError
from verifier.io import parse_trace_text
from verifier.window import canonical_json, content_ref


def _trace(*events: dict[str, Any]) -> str:
    head = {"event": "header", "format": "ctxproof-trace/1"}
    return "\n".join(json.dumps(e) for e in (head, *events)) + "\n"


def test_score_is_an_integer_from_0_to_100() -> None:
    ok = item_from_json({"id": "p", "kind": "prose", "score": 100})
    assert ok.score == 100
    for bad in (-1, 101, 2.5, True, "7"):
        with pytest.raises(InputError, match="'score' must be an integer from 0 to 100"):
            item_from_json({"id": "p", "kind": "prose", "score": bad})


def test_call_is_taken_by_observations_and_prose_only() -> None:
    obs = item_from_json({"id": "r", "kind": "observation", "call": "c"})
    prose = item_from_json({"id": "r", "kind": "prose", "call": "c"})
    assert obs.call == prose.call == "c"
    assert ("call", "c") in obs.citations
    with pytest.raises(InputError, match="unknown field 'call' for a claim"):
        item_from_json({"id": "r", "kind": "claim", "call": "c"})
    with pytest.raises(InputError, match="'call' must be the id"):
        item_from_json({"id": "r", "kind": "prose", "call": 3})


def test_a_call_to_an_id_the_trace_never_defines_is_bad_input() -> None:
    text = _trace({"event": "append", "items": [{"id": "r", "kind": "prose", "call": "nowhere"}]})
    with pytest.raises(InputError, match="cites call 'nowhere'") as err:
        parse_trace_text(text, "t.jsonl")
    assert err.value.line == 2


def test_claims_take_covers() -> None:
    it = item_from_json({"id": "d", "kind": "claim", "covers": ["a", "b"]})
    assert it.covers == ("a", "b")
    assert ("covers", "a") in it.citations


def test_text_score_and_tokens_are_not_part_of_the_version() -> None:
    a = item_from_json({"id": "c", "kind": "claim", "formula": "x", "text": "one"})
    b = item_from_json(
        {"id": "c", "kind": "claim", "formula": "x", "text": "two", "score": 3, "tokens": 9}
    )
    c = item_from_json({"id": "c", "kind": "claim", "formula": "y"})
    assert a.ref != b.ref  # the store keys the exact bytes
    assert a.key == b.key and a.same_version(b)
    assert not a.same_version(c)
    assert not a.same_version(None)


def test_ref_of_is_the_sha256_of_canonical_json() -> None:
    obj = {"kind": "commitment", "id": "ü", "type": "decision", "formula": "a & b"}
    expected = content_ref(
        json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    )
    assert ref_of(obj) == expected == item_from_json(obj).ref
    # the common mistake: default separators give another ref
    assert ref_of(obj) != content_ref(json.dumps(obj, sort_keys=True))
    assert canonical_json(obj).encode("utf-8") == item_from_json(obj).raw.encode("utf-8")


def test_stub_for_takes_a_dict_or_an_item() -> None:
    obj = {"id": "c1", "kind": "commitment", "type": "decision"}
    stub = stub_for(obj)
    assert stub == {"id": "c1", "kind": "stub", "ref": ref_of(obj)}
    as_item = stub_for(item_from_json(obj))
    assert as_item.kind == "stub" and as_item.stub_ref == ref_of(obj)
    with pytest.raises(InputError):
        stub_for({"kind": "prose"})


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_an_items_key_is_its_canonical_json_without_the_unread_fields(
    data: st.DataObject,
) -> None:
    """The key, computed when first asked, is the item's canonical JSON with text, score
    and tokens left out; a version differing only in those has the same key."""
    from verifier.strategies import item_dicts

    obj = data.draw(item_dicts("i1"))
    obj["text"] = data.draw(st.text(max_size=8))
    if data.draw(st.booleans()):
        obj["tokens"] = data.draw(st.integers(0, 50))
    item = item_from_json(obj)
    read = {k: v for k, v in obj.items() if k not in ("text", "score", "tokens")}
    expected = json.dumps(read, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert item.key == expected
    other = item_from_json({**obj, "text": obj["text"] + "!"})
    assert other.raw != item.raw and other.key == item.key and other.same_version(item)
