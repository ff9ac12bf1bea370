"""The window reader's fast path (items read one object at a time) against reading the
file whole: the same window for every valid file however it is laid out, and for
anything else the same error, which the whole read words."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import verifier.io as reader
from verifier.errors import InputError
from verifier.strategies import background_texts, windows


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
    reader._READ[0] = {}
    streamed = reader._streamed_window(text, reader._Ctx("w.json", 1))
    reader._READ[0] = {}
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
    reader._READ[0] = {}
    got = _read(text)
    reader._READ[0] = {}
    assert got == _whole(text)
