"""Reading the files an importer is given: JSON, JSONL, and what they name.

The JSON reader is the one traces use, so malformed JSON, duplicate keys,
``NaN`` and over-deep input are refused with the same messages
(``docs/importers.md``, "Bad input").
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifier.errors import InputError
from verifier.io import _Ctx, _loads, decode_input, read_input

__all__ = ["Source", "is_jsonl", "load_sources", "read_json", "read_jsonl", "texts"]

Input = str | bytes | os.PathLike[str]


@dataclass(frozen=True, slots=True)
class Source:
    """One input: the name errors use, and its bytes."""

    name: str
    data: bytes

    @property
    def text(self) -> str:
        """The input as text (UTF-8; a byte order mark is dropped)."""
        return decode_input(self.data, self.name)


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
            path = os.fspath(given)
            out.append(Source(str(path), read_input(Path(path))))
    if not out:
        raise InputError("no input given", fix="name at least one history file")
    return out


def read_json(src: Source) -> Any:
    """The one JSON value a file holds."""
    return _loads(src.text, _Ctx(src.name, 1))


def read_jsonl(src: Source) -> Iterator[tuple[int, Any]]:
    """(line number, value) for every non-blank line of a JSONL file."""
    for lineno, line in enumerate(src.text.split("\n"), start=1):
        if line.strip():
            yield lineno, _loads(line, _Ctx(src.name, lineno))


def is_jsonl(src: Source) -> bool:
    """Does the file hold more than one JSON value, one a line?"""
    lines = [ln for ln in src.text.split("\n") if ln.strip()]
    if len(lines) < 2:
        return False
    first = lines[0].strip()
    return first.startswith("{") and first.endswith("}")


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
