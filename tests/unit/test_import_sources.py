"""Reading a history file line by line gives what reading it whole gives.

A file named to an importer is read when needed (:class:`Source`): its lines,
split at ``\\n`` as ``text.split("\\n")`` splits the decoded text, with the byte
order mark dropped and bytes that are not UTF-8 refused with the same message
as a whole read; a line read again at its place is the same text. ``describe``
tells JSONL from its first lines only where the whole text could not be one
JSON document.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.alarm import time_limit
from verifier.errors import InputError
from verifier.importers import detect
from verifier.importers import sources as sources_module
from verifier.importers.sources import Source, load_sources, read_jsonl
from verifier.io import decode_input

_PIECES = st.sampled_from(
    [b"a", b"\n", b"\xc3\xa9", b" ", b"\r", b"\xef\xbb\xbf", b"{", b"}", b"\xff", b"\xe2\x82"]
)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources_module, "_CHUNK", 7)


def _both(data: bytes, folder: Path) -> list[Source]:
    path = folder / "f.jsonl"
    path.write_bytes(data)
    return [Source("f.jsonl", data), Source.file("f.jsonl", path, len(data))]


@pytest.mark.usefixtures("small_chunks")
@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=40).map(b"".join))
def test_lines_are_the_split_of_the_whole_text(data: bytes) -> None:
    try:
        expected: list[str] | str = decode_input(data, "f.jsonl").split("\n")
    except InputError as exc:
        expected = exc.render()
    with tempfile.TemporaryDirectory() as folder:
        for src in _both(data, Path(folder)):
            try:
                got: list[str] | str = [text for _n, _o, _s, text in src.lines()]
            except InputError as exc:
                got = exc.render()
            assert got == expected
            if isinstance(got, list):
                for lineno, offset, size, text in src.lines():
                    assert src.line_at(offset, size, lineno) == text
                assert src.head(5) == data[:5] and src.data == data


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(['{"a": 1}', "[1]", "2", "", "  ", "\x0c", "nope", "[", '"s"', "{}"]),
        max_size=8,
    ),
    st.integers(0, 3),
)
def test_jsonl_is_told_from_its_start_only_where_no_document_is_possible(
    lines: list[str], blank: int
) -> None:
    text = "\n".join(lines[:1] + [""] * blank + lines[1:])
    head = detect._jsonl_head(Source("f", text.encode()))
    if head == "":
        assert not text.strip()
    elif head is not None:
        with pytest.raises(ValueError):
            json.loads(text)
        assert head.split("\n") == text.split("\n")[: detect._SAMPLE + 1]


def test_a_long_jsonl_file_is_described_from_its_first_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = {"type": "user", "uuid": "u", "sessionId": "s", "message": {"role": "user"}}
    path = tmp_path / "s.jsonl"
    path.write_text("\n" * 3 + "\n".join(json.dumps(record) for _ in range(5000)) + "\n")
    (src,) = load_sources([path])

    def whole(_self: Source) -> bytes:
        raise AssertionError("the file was read whole")

    monkeypatch.setattr(Source, "data", property(whole))
    shape = detect.describe(src)
    assert (shape.format, shape.container) == ("claude-code", "jsonl")


def test_a_file_is_read_when_needed_and_a_pipe_at_once(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"a": 1}\n\n{"b": 2}\n')
    (src,) = load_sources([path])
    path.write_text('{"a": 1}\n\n{"b": 3}\n')  # the same size: read as it is now
    assert list(read_jsonl(src)) == [(1, {"a": 1}), (3, {"b": 3})]
    assert "bytes" in repr(src)


def test_an_unreadable_file_is_named_when_it_is_given(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        load_sources([tmp_path / "missing.jsonl"])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="the system has no named pipes")
def test_a_pipe_put_in_a_named_files_place_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A file is checked when it is named and read later: a named pipe with no writer
    put in its place in between is bad input at the read, at once (opening it to read
    the ordinary way would wait for a writer for ever)."""
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"a": 1}\n')
    (src,) = load_sources([path])
    path.unlink()
    os.mkfifo(path)
    with time_limit(10, lambda: TimeoutError("the read waited for a writer")):
        # a read that waits fails the test instead of hanging the suite
        with pytest.raises(InputError, match="FIFO"):
            src.data  # noqa: B018 - the read is the point
        with pytest.raises(InputError, match="FIFO"):
            load_sources([path, path])
