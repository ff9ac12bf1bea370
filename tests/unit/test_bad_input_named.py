"""Bad input inside an item names the item and the fix (docs/formats.md, "Bad input").

Every value of every item of the corpus traces and of a window file is swapped for
values of the wrong type or out of range, and for JSON that only a lenient reader
takes (``NaN``, infinities, numbers out of range, nesting past the bound): each
refusal names the item, by its id, or by its place (``items[2]``) when its id is no
string, and says what to write instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from verifier.errors import InputError
from verifier.io import MAX_JSON_DEPTH, parse_trace_text, parse_window_text

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"

# traces that between them hold every event and every field of every kind
RICH = [
    "cf001_diff_fires.jsonl",
    "cf004_fires.jsonl",
    "cf007_fires.jsonl",
    "cp001_fires.jsonl",
    "wr001_fires.jsonl",
    "wr006_fires.jsonl",
]

WRONG: list[Any] = [[], {}, [[]], [{}], 0, -1, 1.5, 101, True, None, "", "x" * 300, "nope"]
"""Values of every JSON type, out of range, or no name of anything."""

UNREADABLE = [
    "NaN",
    "-Infinity",
    "1e999",
    "[" * (MAX_JSON_DEPTH + 5) + "]" * (MAX_JSON_DEPTH + 5),
    "9" * 4301,  # an integer of more digits than Python reads
]
"""JSON texts a strict reader refuses: each stands where a value of an item stood."""

ITEM_LISTS = ("items", "window", "put")


def _item_paths(obj: Any) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Every path to a value inside an item of an event (or of a window file), with the
    id of that item."""

    def inside(node: Any, prefix: tuple[Any, ...], iid: str) -> Iterator[tuple[Any, ...]]:
        if isinstance(node, dict):
            for k, v in node.items():
                yield (*prefix, k)
                yield from inside(v, (*prefix, k), iid)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield (*prefix, i)
                yield from inside(v, (*prefix, i), iid)

    holders: list[tuple[tuple[Any, ...], Any]] = [((), obj)]
    if isinstance(obj.get("diff"), dict):
        holders.append((("diff",), obj["diff"]))
    for prefix, holder in holders:
        for key in ITEM_LISTS:
            for k, item in enumerate(holder.get(key) or []):
                for path in inside(item, (*prefix, key, k), item["id"]):
                    yield path, item["id"]


def _replaced(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    copy = json.loads(json.dumps(obj))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return copy


def _refusal(text: str, name: str, *, window: bool = False) -> InputError | None:
    try:
        if window:
            parse_window_text(text, name)
        else:
            parse_trace_text(text, name)
    except InputError as exc:
        return exc
    return None


def _named(exc: InputError, iid: str, path: tuple[Any, ...]) -> bool:
    """The error names the item of the path: by its id, or (its id swapped) by its place."""
    if exc.item == iid:
        return True
    place = next(i for i, step in enumerate(path) if step in ITEM_LISTS)
    return path[place + 2 :] == ("id",) and exc.item == f"{path[place]}[{path[place + 1]}]"


@pytest.mark.parametrize("name", RICH)
def test_every_wrong_value_in_an_item_names_the_item_and_the_fix(name: str) -> None:
    lines = (CORPUS / name).read_text("utf-8").splitlines()
    refused = 0
    for n, line in enumerate(lines):
        event = json.loads(line)
        for path, iid in _item_paths(event):
            for value in WRONG:
                if path[-1] == "id" and value == "nope":
                    continue  # a valid id: what cited the old one is named, rightly
                changed = list(lines)
                changed[n] = json.dumps(_replaced(event, path, value))
                exc = _refusal("\n".join(changed) + "\n", name)
                if exc is None or exc.line != n + 1:
                    continue  # a value that is valid there, or refused as a reference
                refused += 1
                assert _named(exc, iid, path), (path, value, exc.render())
                assert exc.fix, (path, value, exc.render())
    assert refused > 50


@pytest.mark.parametrize("name", RICH)
@pytest.mark.parametrize(
    "bad", UNREADABLE, ids=["nan", "infinity", "out-of-range", "deep", "many-digits"]
)
def test_json_no_strict_reader_takes_names_the_item_it_stands_in(name: str, bad: str) -> None:
    lines = (CORPUS / name).read_text("utf-8").splitlines()
    seen = 0
    for n, line in enumerate(lines):
        event = json.loads(line)
        for path, iid in _item_paths(event):
            marker = "\u0000here\u0000"
            changed = list(lines)
            changed[n] = json.dumps(_replaced(event, path, marker)).replace(json.dumps(marker), bad)
            exc = _refusal("\n".join(changed) + "\n", name)
            assert exc is not None and exc.line == n + 1, (path, bad)
            assert _named(exc, iid, path) and exc.fix, (path, bad, exc.render())
            seen += 1
    assert seen > 5


def test_nesting_past_what_the_parser_can_read_names_the_item() -> None:
    """Nesting so deep that the JSON parser itself gives up: the item is found in the
    text, with brackets inside strings left alone."""
    deep = "[" * 5000 + "]" * 5000
    line = (
        '{"event": "append", "items": [{"id": "p1", "kind": "prose", "text": "[[{"},'
        ' {"id": "o1", "kind": "observation", "text": "]]", "content": ' + deep + "}]}"
    )
    exc = _refusal('{"event": "header", "format": "ctxproof-trace/1"}\n' + line + "\n", "t")
    assert exc is not None and exc.line == 2
    assert exc.item == "o1" and "nests deeper" in exc.message


def test_a_window_file_names_the_item_by_id_or_place() -> None:
    items = [{"id": "a", "kind": "prose"}, {"id": "b", "kind": "prose", "tokens": 3}]
    window = {"format": "ctxproof-window/1", "items": items}
    text = json.dumps(window).replace("3}", "NaN}")
    exc = _refusal(text, "w.json", window=True)
    assert exc is not None and (exc.item, exc.line) == ("b", 1)
    exc = _refusal(json.dumps(_replaced(window, ("items", 1, "id"), 7)), "w.json", window=True)
    assert exc is not None and exc.item == "items[1]" and exc.fix
    exc = _refusal(json.dumps(_replaced(window, ("items", 1, "tokens"), -2)), "w", window=True)
    assert exc is not None and exc.item == "b" and exc.fix


WINDOW_OF_LINES = (
    '{"format": "ctxproof-window/1",\n'
    ' "items": [\n'
    '  {"id": "a", "kind": "prose"},\n'
    '  {"id": "b", "kind": "prose", "tokens": 3}\n'
    " ]\n"
    "}\n"
)


@pytest.mark.parametrize("bad", [*UNREADABLE, '3, "kind": "prose"'])
def test_a_window_file_of_many_lines_names_the_line_of_the_item(bad: str) -> None:
    """The JSON itself in error inside an item (NaN, a number out of range, nesting past
    the bound, a key written twice) stands at the line of that item, not the file's first."""
    exc = _refusal(WINDOW_OF_LINES.replace('"tokens": 3', f'"tokens": {bad}'), "w", window=True)
    assert exc is not None and (exc.item, exc.line) == ("b", 4), exc
    assert exc.fix


def test_bytes_that_are_no_utf8_name_the_item_they_stand_in() -> None:
    header = b'{"event": "header", "format": "ctxproof-trace/1"}\n'
    event = b'{"event": "append", "items": [{"id": "p0", "kind": "prose"}, '
    event += b'{"id": "p1", "kind": "prose", "text": "caf\xe9"}]}\n'
    with pytest.raises(InputError, match="invalid UTF-8") as err:
        parse_trace_text(header + event, "t.jsonl")
    assert (err.value.item, err.value.line) == ("p1", 2) and err.value.fix
    window = WINDOW_OF_LINES.encode().replace(b'"tokens": 3', b'"text": "\xff"')
    with pytest.raises(InputError, match="invalid UTF-8") as err:
        parse_window_text(window, "w.json")
    assert (err.value.item, err.value.line) == ("b", 4)
    # outside every item: no item
    with pytest.raises(InputError, match="invalid UTF-8") as err:
        parse_trace_text(b'{"event": "header", "format": "\xff"}\n', "t.jsonl")
    assert err.value.item is None and err.value.line == 1


def test_bytes_that_are_no_utf8_stand_at_their_column_and_show_in_the_id() -> None:
    """The column counts from the line's start (the byte of the file follows it), and an
    id holding the bytes names them as an editor shows them (U+FFFD), not escaped."""
    header = b'{"event": "header", "format": "ctxproof-trace/1"}\n'
    event = b'{"event": "append", "items": [{"id": "c\xff1", "kind": "prose"}]}\n'
    with pytest.raises(InputError) as err:
        parse_trace_text(header + event, "t.jsonl")
    column = event.index(b"\xff") + 1
    at = len(header) + column - 1
    assert f"invalid UTF-8 at column {column} (byte {at} of the file)" in err.value.message
    assert (err.value.item, err.value.line) == ("c\ufffd1", 2)


def test_a_byte_order_mark_past_the_first_line_is_named() -> None:
    header = '{"event": "header", "format": "ctxproof-trace/1"}\n'
    with pytest.raises(InputError) as err:
        parse_trace_text(header + '\ufeff{"event": "append", "items": []}\n', "t.jsonl")
    assert "byte order mark" in err.value.message and err.value.line == 2
    assert "utf-8-sig" not in str(err.value)
    assert parse_trace_text(("\ufeff" + header).encode(), "t.jsonl").events == ()


def test_a_lone_surrogate_names_the_item_it_stands_in() -> None:
    header = '{"event": "header", "format": "ctxproof-trace/1"}\n'
    event = '{"event": "append", "items": [{"id": "a", "kind": "prose", "text": "x\\udc00y"}]}\n'
    exc = _refusal(header + event, "t")
    assert exc is not None and "lone surrogate" in exc.message
    assert (exc.item, exc.line) == ("a", 2)


def test_json_outside_any_item_names_no_item() -> None:
    exc = _refusal('{"event": "header", "format": "ctxproof-trace/1", "budget": NaN}\n', "t")
    assert exc is not None and exc.item is None and exc.fix


def test_the_line_bound_counts_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line under the bound in characters but over it in UTF-8 bytes is refused."""
    import verifier.io as vio

    monkeypatch.setattr(vio, "MAX_LINE_BYTES", 400)
    header = '{"event": "header", "format": "ctxproof-trace/1"}\n'

    def append(text: str) -> str:
        item = {"id": "p1", "kind": "prose", "text": text}
        return json.dumps({"event": "append", "items": [item]}, ensure_ascii=False)

    assert _refusal(header + append("a" * 300) + "\n", "t") is None
    exc = _refusal(header + append("\u20ac" * 300) + "\n", "t")  # 900 bytes, 300 characters
    assert exc is not None and exc.line == 2 and "400 bytes" in exc.render()


def test_an_id_written_twice_names_the_item_by_its_first_id() -> None:
    header = '{"event": "header", "format": "ctxproof-trace/1"}\n'
    line = '{"event": "append", "items": [{"id": "a", "id": "b", "kind": "prose"}]}\n'
    exc = _refusal(header + line, "t")
    assert exc is not None and exc.line == 2
    assert "item 'a'" in exc.render() and "duplicate key 'id'" in exc.render()
