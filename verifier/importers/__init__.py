"""Importers: real agent session histories as ctxproof traces.

One module per format reads its own shape into snapshots (the lists of
messages the model saw); :func:`verifier.importers.common.build_trace` turns
them into trace events. The formats, and what becomes which item, are
described in ``docs/importers.md``.

>>> text = import_history("openai", ['[{"role": "user", "content": "hi"}]'])
>>> text.splitlines()[1]
'{"event":"append","items":[{"content":"hi","id":"msg-0","kind":"observation","source":"user"}]}'
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verifier.errors import InputError
from verifier.importers.common import (
    Annotation,
    Extractor,
    Snapshot,
    build_trace,
    gives_items,
    message_count,
)
from verifier.importers.coverage import Coverage, coverage
from verifier.importers.detect import describe, detect_format, mismatch
from verifier.importers.extract import load_extractor
from verifier.importers.sources import Input, Source, load_sources, read_jsonl

__all__ = [
    "FORMATS",
    "Coverage",
    "Imported",
    "coverage",
    "detect_format",
    "import_history",
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


def _snapshots(
    fmt: str, sources: Sequence[Source], sample: str | None, *, keep_records: bool = True
) -> tuple[str, list[Snapshot]]:
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
    module = importlib.import_module(f"verifier.importers.{_MODULES[fmt]}")
    if fmt == "inspect":
        snaps: list[Snapshot] = module.snapshots(sources, sample=sample)
    elif fmt == "claude-code":
        snaps = module.snapshots(sources, keep_records=keep_records)
    else:
        snaps = module.snapshots(sources)
    if not gives_items(snaps):
        shape = describe(sources[0])
        raise InputError(
            f"no message of the {fmt} format gives an item (text, a tool call or a result):"
            f" this is {shape.what}",
            file=sources[0].name,
            fix=shape.fix_for(fmt)
            if not shape.fits(fmt)
            else "check that the file holds a session with messages",
        )
    return fmt, snaps


@dataclass(frozen=True, slots=True)
class Imported:
    """An imported history: the trace (JSONL text), the FORMAT read, and its coverage."""

    trace: str
    format: str
    coverage: Coverage


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
    sources = load_sources(paths_or_texts)
    function, name = _extractor(extract)
    fmt, snaps = _snapshots(fmt, sources, sample, keep_records=function is not None)
    notes = read_annotations(annotations) if annotations is not None else []
    text = build_trace(
        snaps, notes, fmt=fmt, name=f"<import {fmt}>", extract=function, extract_name=name
    )
    return Imported(text, fmt, coverage(text, messages=message_count(snaps)))


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
