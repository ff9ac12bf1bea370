"""The window reader's fast path (items read one object at a time) against reading the
file whole: the same window for every valid file however it is laid out, and for
anything else the same error, which the whole read words. A window read after another
(whose items it takes again where their text is the same) reads as it does first."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import verifier.io as reader
import verifier.window as window_module
from verifier.errors import InputError
from verifier.strategies import background_texts, windows
from verifier.window import canonical_json


def _whole(text: str) -> object:
    """What reading the file whole gives: the window, or the error's text."""
    ctx = reader._Ctx("w.json", 1)
    try:
        obj = reader._loads(text, ctx, flat_when_valid=True)
        return reader._validated(obj, ctx, lambda o, c: reader._window(o, c, text))
    except InputError as exc:
        return str(exc)


def _read(text: str) -> object:
    try:
        return reader.parse_window_text(text, "w.json")
    except InputError as exc:
        return str(exc)


def _layout(draw: st.DrawFn, window: dict[str, Any]) -> str:
    keys = draw(st.permutations(list(window)))
    ordered = {k: window[k] for k in keys}
    indent = draw(st.sampled_from([None, 0, 1, 2, "\t"]))
    if indent is None:
        sep = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\n ", " : ")]))
        text = json.dumps(ordered, separators=sep, ensure_ascii=draw(st.booleans()))
    else:
        text = json.dumps(ordered, indent=indent, ensure_ascii=False)
    return draw(st.sampled_from(["", " ", "\n", "\r\n\t"])) + text + draw(
        st.sampled_from(["", "\n", "  \n "])
    )


@st.composite
def window_files(draw: st.DrawFn) -> str:
    window: dict[str, Any] = {"format": "ctxproof-window/1", "items": draw(windows())}
    if draw(st.booleans()):
        window["background"] = draw(st.lists(background_texts(), max_size=1))
    return _layout(draw, window)


@settings(max_examples=300, deadline=None)
@given(window_files())
def test_a_valid_file_reads_as_it_does_whole(text: str) -> None:
    reader.forget_reads()
    streamed = reader._streamed_window(text, reader._Ctx("w.json", 1))
    reader.forget_reads()
    whole = _whole(text)
    assert streamed == whole
    assert streamed is not None


# what breaks a file: a character put in, a piece cut out, a key written twice
@settings(max_examples=500, deadline=None)
@given(
    window_files(),
    st.sampled_from(["insert", "cut", "twice", "junk"]),
    st.integers(min_value=0),
    st.sampled_from([*',:[]{}"x1 \\', "\u00e9", "NaN", "1e999", '"id"']),
)
def test_any_file_reads_as_it_does_whole(text: str, how: str, at: int, piece: str) -> None:
    at %= len(text) + 1
    if how == "insert":
        text = text[:at] + piece + text[at:]
    elif how == "cut":
        text = text[:at] + text[at + len(piece) :]
    elif how == "twice":
        text = text.replace('"format"', '"format": "x", "format"', 1)
    else:
        text = text + piece
    reader.forget_reads()
    got = _read(text)
    reader.forget_reads()
    assert got == _whole(text)


def _dumps(window: dict[str, Any], indent: int | None, sep: tuple[str, str]) -> str:
    if indent is None:
        return json.dumps(window, separators=sep, ensure_ascii=False)
    return json.dumps(window, indent=indent, ensure_ascii=False)


@st.composite
def window_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """A window file and a rewrite of it: items dropped, moved, changed, repeated or new,
    most written as before (the same characters), the whole sometimes laid out anew."""
    items = draw(windows(min_size=1))
    after: list[dict[str, Any]] = []
    for n, obj in enumerate(items):
        what = draw(st.sampled_from(["keep", "keep", "keep", "drop", "change", "twice", "new"]))
        if what == "drop":
            continue
        if what == "change":
            obj = {**obj, "text": draw(st.text(max_size=3)), "tokens": n}
        after.append(obj)
        if what == "twice":
            after.append(obj)  # an id twice: bad input, however it is read
        if what == "new":
            after.append({"id": f"new{n}", "kind": "prose", "text": "added"})
    if draw(st.booleans()):
        after = draw(st.permutations(after))
    indent = draw(st.sampled_from([None, None, 0, 2]))
    sep = draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    text_before = _dumps({"format": "ctxproof-window/1", "items": items}, indent, sep)
    if draw(st.booleans()):  # laid out anew: no item is the same characters
        indent = draw(st.sampled_from([None, 1]))
        sep = (" , ", " : ")
    text_after = _dumps({"format": "ctxproof-window/1", "items": after}, indent, sep)
    return text_before, text_after


@settings(max_examples=400, deadline=None)
@given(window_pairs())
def test_a_window_read_after_another_reads_as_it_does_first(pair: tuple[str, str]) -> None:
    before, after = pair
    reader.forget_reads()
    first = _read(after)
    whole = _whole(before)
    reader.forget_reads()
    assert _read(before) == whole  # the reader keeps this window's items and text
    again = _read(after)
    assert again == first
    if not isinstance(again, str):  # read from the text the window after left behind
        assert _read(before) == whole
    if not isinstance(again, str):
        assert [it.raw for it in again.items] == [  # type: ignore[attr-defined]
            canonical_json(obj) for obj in json.loads(after)["items"]
        ]


def test_runs_of_kept_items_are_taken_whole_and_their_places_kept() -> None:
    """Not vacuous: the items of a run written as before are the very items of the
    window before, found in runs, and the places kept for the next read are where the
    items stand in the text read last."""
    items = [{"id": f"p{n}", "kind": "prose", "text": f"t{n}"} for n in range(40)]
    before = _dumps({"format": "ctxproof-window/1", "items": items}, 1, (",", ": "))
    items[17] = {"id": "p17", "kind": "prose", "text": "changed"}
    items.insert(30, {"id": "new", "kind": "prose", "text": "added"})
    after = _dumps({"format": "ctxproof-window/1", "items": items}, 1, (",", ": "))
    reader.forget_reads()
    first = reader.parse_window_text(before, "w.json")
    runs: list[int] = []
    run = reader._SameText.run

    def counted(self: reader._SameText, text: str, i: int, spans: reader._Spans) -> int:
        k = len(spans.items)
        end = run(self, text, i, spans)
        if end >= 0:
            runs.append(len(spans.items) - k)
        return end

    reader._SameText.run = counted  # type: ignore[method-assign]
    try:
        second = reader.parse_window_text(after, "w.json")
    finally:
        reader._SameText.run = run  # type: ignore[method-assign]
    assert runs == [17, 12, 10]  # p0-p16, p18-p29, p30-p39
    kept = {it.id: it for it in first.items}
    assert [it is kept.get(it.id) for it in second.items] == [
        it["id"] not in ("p17", "new") for it in items
    ]
    spans = reader._TEXT[0]
    assert spans is not None and spans.items == list(second.items)
    for it, start, end in zip(spans.items, spans.starts, spans.ends, strict=True):
        assert json.loads(after[start:end])["id"] == it.id
    reader.forget_reads()


@settings(max_examples=200, deadline=None)
@given(window_files())
def test_an_item_writes_its_canonical_json_when_first_asked(text: str) -> None:
    """A streamed read leaves each valid item's canonical JSON to be written from the
    file's text; what is written is that of the item's object, kept once written."""
    reader.forget_reads()
    streamed = reader._streamed_window(text, reader._Ctx("w.json", 1))
    assert streamed is not None
    objects = json.loads(text)["items"]
    slot = window_module._SLOTS["raw"]
    for item, obj in zip(streamed.items, objects, strict=True):
        assert type(slot.__get__(item)) is window_module.Unwritten
        raw = item.raw
        assert raw == canonical_json(obj)
        assert slot.__get__(item) is raw  # written once, then kept
        assert item.raw is raw


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="\\u\"xé", max_size=40), st.integers(min_value=0, max_value=5))
def test_the_escape_search_finds_what_a_plain_search_finds(text: str, limit: int) -> None:
    """Whether a file has a ``\\u`` escape, found backslash by backslash (a small limit on
    how many are looked at sends the rest to the plain search)."""
    saved = reader._BACKSLASHES_LOOKED_AT
    reader._BACKSLASHES_LOOKED_AT = limit
    try:
        assert reader._has_u_escape(text) == ("\\u" in text)
    finally:
        reader._BACKSLASHES_LOOKED_AT = saved
    assert reader._has_u_escape(text) == ("\\u" in text)
