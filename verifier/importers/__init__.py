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
from typing import Any

from verifier.errors import InputError
from verifier.importers.common import Annotation, Snapshot, build_trace
from verifier.importers.sources import Input, Source, load_sources, read_jsonl

__all__ = ["FORMATS", "import_history", "read_annotations", "snapshots_of"]

FORMATS: tuple[str, ...] = ("claude-code", "openai", "anthropic", "langchain", "inspect")
"""The formats ``ctxproof import`` reads."""

_MODULES = {
    "claude-code": "claude_code",
    "openai": "openai",
    "anthropic": "anthropic",
    "langchain": "langchain",
    "inspect": "inspect",
}


def snapshots_of(fmt: str, inputs: Sequence[Input], *, sample: str | None = None) -> list[Snapshot]:
    """The snapshots a history gives, before they become trace events."""
    if fmt not in _MODULES:
        raise InputError(f"unknown format {fmt!r}", fix=f"use one of {', '.join(FORMATS)}")
    module = importlib.import_module(f"verifier.importers.{_MODULES[fmt]}")
    sources = load_sources(inputs)
    if fmt == "inspect":
        snaps: list[Snapshot] = module.snapshots(sources, sample=sample)
        return snaps
    if sample is not None:
        raise InputError("--sample applies to the inspect format only", fix="drop --sample")
    snaps = module.snapshots(sources)
    return snaps


def import_history(
    fmt: str,
    paths_or_texts: Sequence[Input],
    annotations: Input | Sequence[Mapping[str, Any]] | None = None,
    *,
    sample: str | None = None,
) -> str:
    """The trace (JSONL text) of a history in format ``fmt``.

    ``paths_or_texts`` are files (paths) or their contents (a ``str`` that
    starts with ``[`` or ``{``, or ``bytes``), in order; ``annotations`` a JSONL
    file or text of ``{"after": ID, "items": [...]}`` lines, or those objects
    themselves. ``sample`` picks one sample of an inspect log.

    Raises:
        InputError: a file is not valid for the format, or an annotation does
            not fit the history.
    """
    snaps = snapshots_of(fmt, paths_or_texts, sample=sample)
    notes = read_annotations(annotations) if annotations is not None else []
    return build_trace(snaps, notes, fmt=fmt, name=f"<import {fmt}>")


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
