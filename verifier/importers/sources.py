"""Reading the files an importer is given: JSON, JSONL, and what they name.

The JSON reader is the one traces use, so malformed JSON, duplicate keys,
``NaN`` and over-deep input are refused with the same messages
(``docs/importers.md``, "Bad input").

A file is not read into memory when it is named: a JSONL file is read line by
line (:func:`read_jsonl`), so that a long session is never held whole, and a
format that reads one JSON document reads the file's bytes when it needs them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from verifier.errors import InputError
from verifier.io import (
    MAX_INPUT_BYTES,
    _Ctx,
    _loads,
    _regular_file,
    bad_utf8_message,
    decode_input,
    read_input,
)

__all__ = [
    "Source",
    "is_jsonl",
    "load_sources",
    "read_json",
    "read_jsonl",
    "read_jsonl_at",
    "texts",
]

Input = str | bytes | os.PathLike[str]

_CHUNK = 1 << 20
_BOM = "\ufeff"


class Source:
    """One input: the name errors use, and its bytes.

    A source made from bytes holds them; a source made from a file
    (:meth:`file`) reads it when asked, up to the size the file had when it was
    named: :attr:`data` reads it whole (once), :meth:`lines` line by line.
    """

    __slots__ = ("_data", "_path", "_size", "_utf8", "name")

    def __init__(self, name: str, data: bytes) -> None:
        self.name = name
        self._data: bytes | None = data
        self._path: Path | None = None
        self._size = len(data)
        self._utf8 = False

    @classmethod
    def file(cls, name: str, path: Path, size: int) -> Source:
        """A regular file of ``size`` bytes, read when its content is asked for."""
        src = cls(name, b"")
        src._data, src._path, src._size = None, path, size
        return src

    def __repr__(self) -> str:
        return f"Source({self.name!r}, {self._size} bytes)"

    @property
    def data(self) -> bytes:
        """The input's bytes (a file is read the first time, then kept)."""
        if self._data is None:
            with self._open() as fh:
                self._data = fh.read(self._size)
        return self._data

    @property
    def text(self) -> str:
        """The input as text (UTF-8; a byte order mark is dropped)."""
        return decode_input(self.data, self.name)

    def head(self, size: int) -> bytes:
        """The first ``size`` bytes, without reading the rest of a file."""
        if self._data is not None:
            return self._data[:size]
        with self._open() as fh:
            return fh.read(min(size, self._size))

    def check_utf8(self) -> None:
        """Refuse bytes that are not UTF-8 as :func:`~verifier.io.decode_input` does
        (the first bad byte, located by line); a file is read in chunks, not kept."""
        if self._utf8:
            return
        if self._data is not None:
            decode_input(self._data, self.name)
        else:
            lines = 0
            for offset, block in self._blocks():
                try:
                    block.decode("utf-8")
                except UnicodeDecodeError as exc:
                    line = lines + block.count(b"\n", 0, exc.start) + 1
                    column = exc.start - block.rfind(b"\n", 0, exc.start)  # blocks start lines
                    raise InputError(
                        bad_utf8_message(block[exc.start : exc.end], column, offset + exc.start),
                        file=self.name,
                        line=line,
                        fix="re-encode as UTF-8",
                    ) from None
                lines += block.count(b"\n")
        self._utf8 = True

    def lines(self) -> Iterator[tuple[int, int, int, str]]:
        """``(line number, offset, size in bytes, text)`` of every line, split at ``\\n``
        as ``text.split("\\n")`` splits it; bytes that are not UTF-8 are refused first."""
        self.check_utf8()
        for lineno, (offset, raw) in enumerate(self._raw_lines(), start=1):
            yield lineno, offset, len(raw), self._decoded(raw, offset, lineno)

    def line_at(self, offset: int, size: int, lineno: int) -> str:
        """The text of the line that :meth:`lines` gave at ``offset`` (read again)."""
        if self._data is not None:
            raw = self._data[offset : offset + size]
        else:
            with self._open() as fh:
                fh.seek(offset)
                raw = fh.read(size)
        return self._decoded(raw, offset, lineno)

    def _decoded(self, raw: bytes, offset: int, lineno: int) -> str:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:  # the file changed since it was checked
            raise InputError(
                bad_utf8_message(raw[exc.start : exc.end], exc.start + 1, offset + exc.start),
                file=self.name,
                line=lineno,
                fix="re-encode as UTF-8",
            ) from None
        return text[1:] if offset == 0 and text.startswith(_BOM) else text

    def _open(self) -> IO[bytes]:
        assert self._path is not None
        return _open_regular(self._path, self.name)  # the caller closes it

    def _blocks(self) -> Iterator[tuple[int, bytes]]:
        """(offset, bytes) of consecutive blocks that end at a newline (the last one
        at the end of the input), each at most about a chunk unless a line is longer."""
        if self._data is not None:
            yield 0, self._data
            return
        offset = 0
        pieces: list[bytes] = []  # a line longer than a chunk, so far
        with self._open() as fh:
            left = self._size
            while left > 0:
                chunk = fh.read(min(_CHUNK, left))
                if not chunk:
                    break
                left -= len(chunk)
                cut = chunk.rfind(b"\n") + 1
                if cut == 0:
                    pieces.append(chunk)
                    continue
                block = b"".join([*pieces, chunk[:cut]]) if pieces else chunk[:cut]
                yield offset, block
                offset += len(block)
                pieces = [chunk[cut:]] if cut < len(chunk) else []
        if pieces:
            yield offset, b"".join(pieces)

    def _raw_lines(self) -> Iterator[tuple[int, bytes]]:
        """(offset, bytes) of every line, without its newline."""
        last_end = 0
        for offset, block in self._blocks():
            start = 0
            while True:
                end = block.find(b"\n", start)
                if end < 0:
                    if start < len(block):
                        yield offset + start, block[start:]
                        last_end = -1
                    break
                yield offset + start, block[start:end]
                start = end + 1
                last_end = offset + start
        if last_end >= 0:
            yield last_end, b""  # what follows the last newline (or an empty input)


def _unreadable(name: str, exc: OSError) -> InputError:
    return InputError(f"cannot read: {exc.strerror}", file=name, fix="check the path")


def _source_of(path: Path) -> Source:
    """A named file: a regular file is checked now and read when needed; anything else
    (a pipe, a device) is read now, up to the bound."""
    try:
        st = path.stat()
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > MAX_INPUT_BYTES:
        return Source(str(path), read_input(path))  # read, or the error it words
    with _open_regular(path, str(path)):
        pass
    return Source.file(str(path), path, st.st_size)


def _open_regular(path: Path, name: str) -> IO[bytes]:
    """The file at ``path`` opened to read, if it is a regular file. It is opened without
    waiting (a pipe put in the file's place since it was named is refused, never waited
    on) and checked on what was opened."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise _unreadable(name, exc) from None
    try:
        _regular_file(os.fstat(fd).st_mode, name)
    except BaseException:
        os.close(fd)
        raise
    return open(fd, "rb", closefd=True)


def load_sources(inputs: Sequence[Input]) -> list[Source]:
    """Read each input: a path names a file, a text is the content itself.

    A ``str`` that starts (after white space) with ``[`` or ``{`` is content,
    as are ``bytes``; any other ``str`` and any ``os.PathLike`` is a path.
    """
    out = []
    for n, given in enumerate(inputs, start=1):
        if isinstance(given, bytes):
            out.append(Source(f"<input {n}>", given))
        elif isinstance(given, str) and given.lstrip()[:1] in ("[", "{"):
            out.append(Source(f"<input {n}>", given.encode("utf-8")))
        else:
            out.append(_source_of(Path(os.fspath(given))))
    if not out:
        raise InputError("no input given", fix="name at least one history file")
    return out


def read_json(src: Source) -> Any:
    """The one JSON value a file holds."""
    return _loads(src.text, _Ctx(src.name, 1))


def read_jsonl(src: Source) -> Iterator[tuple[int, Any]]:
    """(line number, value) for every non-blank line of a JSONL file."""
    for lineno, _offset, _size, value in read_jsonl_at(src):
        yield lineno, value


def read_jsonl_at(src: Source) -> Iterator[tuple[int, int, int, Any]]:
    """(line number, offset, size, value) for every non-blank line of a JSONL file:
    where each value stands, so that it can be read again (:meth:`Source.line_at`)."""
    for lineno, offset, size, line in src.lines():
        if line.strip():
            yield lineno, offset, size, _loads(line, _Ctx(src.name, lineno))


def is_jsonl(src: Source) -> bool:
    """Does the file hold more than one JSON value, one a line?"""
    first: str | None = None
    for _lineno, _offset, _size, line in src.lines():
        if not line.strip():
            continue
        if first is not None:
            return first.startswith("{") and first.endswith("}")
        first = line.strip()
    return False


def texts(value: Any) -> str:
    """The text of a content value: a string, or the text parts of a list of parts.

    Parts are strings or objects with ``text`` (types ``text``, ``input_text``,
    ``output_text``) or ``refusal``; other parts (images, reasoning) carry no
    text. Parts are joined with a newline.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                if part.get("type") in (None, "text", "input_text", "output_text") and isinstance(
                    part.get("text"), str
                ):
                    parts.append(part["text"])
                elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                    parts.append(part["refusal"])
        return "\n".join(parts)
    return ""
