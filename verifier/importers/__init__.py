"""Importers: real agent session histories as ctxproof traces.

One module per format reads its own shape into snapshots (the lists of
messages the model saw); :func:`verifier.importers.common.build_trace` turns
them into trace events. The formats, and what becomes which item, are
described in ``docs/importers.md``.

An import is streamed (:func:`import_into`): the trace is written as the
history is read, each event checked as it is written, so that a long session
is never held whole. A history the streamed import cannot vouch for (bad
input, a tool result read before its call, an extractor, which is given every
item so far) is imported whole, by the same rules: the trace, and the error
for bad input, are the same either way.

>>> text = import_history("openai", ['[{"role": "user", "content": "hi"}]'])
>>> text.splitlines()[1]
'{"event":"append","items":[{"content":"hi","id":"msg-0","kind":"observation","source":"user"}]}'
"""

from __future__ import annotations

import importlib
import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from verifier.errors import InputError
from verifier.importers.common import (
    Annotation,
    Diverged,
    Extractor,
    Snapshot,
    build_trace,
    gives_items,
    message_count,
    stream_trace,
)
from verifier.importers.coverage import Coverage, coverage
from verifier.importers.detect import detect_format, mismatch, no_items
from verifier.importers.extract import load_extractor
from verifier.importers.sources import Input, Source, load_sources, read_jsonl

__all__ = [
    "FORMATS",
    "Coverage",
    "Imported",
    "coverage",
    "detect_format",
    "import_history",
    "import_into",
    "import_session",
    "load_extractor",
    "read_annotations",
    "snapshots_of",
]

FORMATS: tuple[str, ...] = ("claude-code", "openai", "anthropic", "langchain", "inspect")
"""The formats ``ctxproof import`` reads (and ``auto``, which picks one of them)."""

_MODULES = {
    "claude-code": "claude_code",
    "openai": "openai",
    "anthropic": "anthropic",
    "langchain": "langchain",
    "inspect": "inspect",
}


def snapshots_of(fmt: str, inputs: Sequence[Input], *, sample: str | None = None) -> list[Snapshot]:
    """The snapshots a history gives, before they become trace events.

    ``fmt`` is a FORMAT or ``auto`` (picked from the content, see
    :func:`detect_format`). A file that the named format cannot read by its
    shape (another format's messages, JSON where it reads JSONL) is refused
    naming what it is.
    """
    return _snapshots(fmt, load_sources(inputs), sample)[1]


def _reader(fmt: str, sources: Sequence[Source], sample: str | None) -> tuple[str, ModuleType]:
    """The FORMAT (``auto`` told from the content) and its module, once the files are
    known to be of that format's shape."""
    if fmt == "auto":
        fmt = detect_format(sources)
    if fmt not in _MODULES:
        raise InputError(f"unknown format {fmt!r}", fix=f"use one of {', '.join(FORMATS)}, auto")
    if sample is not None and fmt != "inspect":
        raise InputError("--sample applies to the inspect format only", fix="drop --sample")
    for src in sources:
        wrong = mismatch(fmt, src)
        if wrong is not None:
            raise wrong
    return fmt, importlib.import_module(f"verifier.importers.{_MODULES[fmt]}")


def _read(
    fmt: str,
    module: ModuleType,
    sources: Sequence[Source],
    sample: str | None,
    *,
    keep_records: bool = True,
) -> Iterable[Snapshot]:
    """The snapshots of the files: a Claude Code session as they are read, the others
    once their files are read."""
    if fmt == "inspect":
        snaps: list[Snapshot] = module.snapshots(sources, sample=sample)
        return snaps
    if fmt == "claude-code":
        streamed: Iterable[Snapshot] = module.iter_snapshots(sources, keep_records=keep_records)
        return streamed
    whole: list[Snapshot] = module.snapshots(sources)
    return whole


def _snapshots(
    fmt: str, sources: Sequence[Source], sample: str | None, *, keep_records: bool = True
) -> tuple[str, list[Snapshot]]:
    fmt, module = _reader(fmt, sources, sample)
    snaps = list(_read(fmt, module, sources, sample, keep_records=keep_records))
    if not gives_items(snaps):
        raise no_items(fmt, sources[0])
    return fmt, snaps


@dataclass(frozen=True, slots=True)
class Imported:
    """An imported history: the trace (JSONL text), the FORMAT read, and its coverage."""

    trace: str
    format: str
    coverage: Coverage


class TextOut(Protocol):
    """Where :func:`import_into` writes: a text stream it can go back in (a file, a
    :class:`io.StringIO`)."""

    def write(self, text: str, /) -> int: ...

    def tell(self) -> int: ...

    def seek(self, offset: int, whence: int = 0, /) -> int: ...

    def truncate(self, size: int | None = None, /) -> int: ...


def import_into(
    fmt: str,
    paths_or_texts: Sequence[Input],
    out: TextOut,
    annotations: Input | Sequence[Mapping[str, Any]] | None = None,
    *,
    sample: str | None = None,
    extract: Extractor | str | None = None,
) -> tuple[str, Coverage]:
    """Import a history as :func:`import_session` does, writing the trace to ``out``.

    The trace is written as the history is read; when the streamed import
    cannot vouch for it (see the module's doc), what it wrote is taken back
    and the trace of the whole history is written instead: the text is the
    same either way. Returns the FORMAT read and the trace's coverage.

    Raises:
        InputError: as :func:`import_history`; ``out`` may then hold part of a
            trace (write to a staged file, and drop it).
    """
    sources = load_sources(paths_or_texts)
    function, name = _extractor(extract)
    if function is None:
        start = out.tell()
        streamed = _streamed(fmt, sources, sample, annotations, out.write)
        if streamed is not None:
            return streamed
        out.seek(start)
        out.truncate()
    imported = _whole(fmt, sources, sample, annotations, function, name)
    out.write(imported.trace)
    return imported.format, imported.coverage


def _streamed(
    fmt: str,
    sources: Sequence[Source],
    sample: str | None,
    annotations: Input | Sequence[Mapping[str, Any]] | None,
    write: Callable[[str], object],
) -> tuple[str, Coverage] | None:
    """The streamed import: the FORMAT read and the coverage, or None where the whole
    history must be imported at once (the whole-text import also words any error)."""
    fmt, module = _reader(fmt, sources, sample)
    try:
        notes = read_annotations(annotations) if annotations is not None else []
    except InputError:
        return None  # the whole import says so, after any error in the history itself
    snaps = _read(fmt, module, sources, sample, keep_records=False)
    try:
        return fmt, stream_trace(snaps, write, notes, fmt=fmt, name=f"<import {fmt}>")
    except Diverged:
        return None


def _whole(
    fmt: str,
    sources: Sequence[Source],
    sample: str | None,
    annotations: Input | Sequence[Mapping[str, Any]] | None,
    function: Extractor | None,
    name: str,
) -> Imported:
    """The import of the whole history at once, its trace validated whole."""
    fmt, snaps = _snapshots(fmt, sources, sample, keep_records=function is not None)
    notes = read_annotations(annotations) if annotations is not None else []
    text = build_trace(
        snaps, notes, fmt=fmt, name=f"<import {fmt}>", extract=function, extract_name=name
    )
    return Imported(text, fmt, coverage(text, messages=message_count(snaps)))


def import_session(
    fmt: str,
    paths_or_texts: Sequence[Input],
    annotations: Input | Sequence[Mapping[str, Any]] | None = None,
    *,
    sample: str | None = None,
    extract: Extractor | str | None = None,
) -> Imported:
    """Import a history (as :func:`import_history`) and count what it gives the checks.

    The :class:`Coverage` counts items by kind and says when the history gives
    no commitment or claim (docs/importers.md, "Coverage").
    """
    out = io.StringIO()
    fmt_read, counted = import_into(
        fmt, paths_or_texts, out, annotations, sample=sample, extract=extract
    )
    return Imported(out.getvalue(), fmt_read, counted)


def import_history(
    fmt: str,
    paths_or_texts: Sequence[Input],
    annotations: Input | Sequence[Mapping[str, Any]] | None = None,
    *,
    sample: str | None = None,
    extract: Extractor | str | None = None,
) -> str:
    """The trace (JSONL text) of a history in format ``fmt`` (a FORMAT, or ``auto``).

    ``paths_or_texts`` are files (paths) or their contents (a ``str`` that
    starts with ``[`` or ``{``, or ``bytes``), in order; ``annotations`` a JSONL
    file or text of ``{"after": ID, "items": [...]}`` lines, or those objects
    themselves. ``sample`` picks one sample of an inspect log. ``extract`` is
    an extractor, ``extract(message, context)``, or its name
    (``MODULE:FUNCTION`` or ``path.py:function``): the commitments and claims
    it returns for a message follow that message's items (docs/importers.md,
    "Extractors").

    Raises:
        InputError: a file is not valid for the format (or is another format's),
            the history gives no item, an annotation or an extracted item does
            not fit the history, or the extractor cannot be loaded or raised.
    """
    return import_session(fmt, paths_or_texts, annotations, sample=sample, extract=extract).trace


def _extractor(extract: Extractor | str | None) -> tuple[Extractor | None, str]:
    if extract is None:
        return None, "the extractor"
    if isinstance(extract, str):
        return load_extractor(extract), f"extractor {extract!r}"
    if not callable(extract):
        raise InputError(
            f"the extractor is a {type(extract).__name__}, not a function",
            fix="pass a function extract(message, context), or its name",
        )
    name = getattr(extract, "__qualname__", None) or repr(extract)
    return extract, f"extractor {name!r}"


def read_annotations(given: Input | Sequence[Mapping[str, Any]]) -> list[Annotation]:
    """Annotation lines: ``{"after": ID, "items": [item, ...]}``, one a line."""
    if isinstance(given, Sequence) and not isinstance(given, str | bytes):
        lines: list[tuple[int, Any]] = list(enumerate(given, start=1))
        name = "<annotations>"
    else:
        src: Source = load_sources([given])[0]
        lines = list(read_jsonl(src))
        name = src.name
    out = []
    for lineno, obj in lines:
        if not isinstance(obj, Mapping) or set(obj) != {"after", "items"}:
            raise InputError(
                "an annotation must be an object with exactly 'after' and 'items'",
                file=name,
                line=lineno,
                fix='write {"after": "ID", "items": [...]}',
            )
        after, items = obj["after"], obj["items"]
        if not isinstance(after, str) or not isinstance(items, list):
            raise InputError(
                "'after' must be an id and 'items' a list of items", file=name, line=lineno
            )
        out.append(Annotation(after, tuple(items), name, lineno))
    return out
