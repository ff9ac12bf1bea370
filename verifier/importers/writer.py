"""Writing an imported trace event by event, each checked as a trace reader checks it.

A streamed import hands every event to a :class:`TraceWriter` as soon as it is
made. The writer writes the event's line item by item, and checks each item
as :func:`verifier.io.parse_trace_text` checks the line that holds it: the
JSON text parsed back, the item validated, ids unique in the event and not
appended twice to the window, the line within the bound. Citations may name
an id that a later event gives, so they are checked when the trace ends
(:meth:`TraceWriter.close`). The writer counts what the trace holds as
:func:`verifier.importers.coverage.coverage` counts it.

Nothing is held but the ids: an event's items are written as they are
checked, and the reader's cache of items read is emptied as it goes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from verifier.errors import InputError
from verifier.importers.coverage import KINDS, Coverage
from verifier.io import (
    MAX_LINE_BYTES,
    TRACE_FORMAT,
    _Ctx,
    _event,
    _loads,
    _validated,
    forget_reads,
    item_from_json,
    utf8_length,
)
from verifier.window import canonical_json

__all__ = ["TraceWriter", "split_append"]

_LISTS = {"append": "items", "rewrite": "window"}
"""The list of items each event an import writes holds (the last key of its JSON)."""
_KIND = {kind: kind for kind in KINDS}
"""Each kind's one string (the reader's are copies, one per item)."""
_FORGET_EVERY = 256
"""Items read between two emptyings of the reader's cache."""


class TraceWriter:
    """A trace written to ``write`` piece by piece, checked as it is written.

    ``name`` is the name the checks' messages give the trace. The header is
    written at once; :meth:`event` writes one event (an append or a rewrite
    with a whole window); :meth:`close` checks what only the whole trace tells.

    Raises:
        InputError: (from :meth:`event` and :meth:`close`) the trace is not one
            that :func:`verifier.io.parse_trace_text` reads; what is written so
            far is then not a trace (the caller drops it).
    """

    def __init__(self, write: Callable[[str], object], name: str) -> None:
        self._write = write
        self.name = name
        self.line = 1
        self.appends = self.rewrites = 0
        self.gave = False
        """Some event holds an item."""
        self._window: set[str] = set()
        self._kinds: dict[str, str] = {}
        """Every id written so far, with the kind it was first written with."""
        self._cited: dict[str, tuple[int, str, str]] = {}
        """An id cited before any event gave it -> (line, citing item, relation)."""
        self._read = 0
        header = canonical_json({"event": "header", "format": TRACE_FORMAT})
        _validated(_loads(header, _Ctx(name, 1)), _Ctx(name, 1), _event)
        write(header + "\n")

    def event(self, event: Mapping[str, Any]) -> None:
        """Write one event (its line), checking each of its items."""
        self.line += 1
        ctx = _Ctx(self.name, self.line)
        kind = event.get("event")
        key = _LISTS.get(kind) if isinstance(kind, str) else None
        items = event.get(key) if key is not None else None
        if not isinstance(kind, str) or key is None or not isinstance(items, list):
            raise ctx.error(f"an import writes appends and rewrites, not {kind!r}")
        envelope = canonical_json({**event, key: []})
        if not envelope.endswith(f'"{key}":[]}}'):
            raise ctx.error(f"'{key}' must be the last field of the event")
        _validated(_loads(envelope, ctx, flat_when_valid=True), ctx, _event)
        head, tail = envelope[:-2], envelope[-2:]
        size = utf8_length(envelope)
        if kind == "rewrite":
            self._window = set()
        here: set[str] = set()
        self._write(head)
        n = 0  # items on this line
        for raw in items:
            text = canonical_json(raw)
            size += utf8_length(text) + (1 if n else 0)
            if size > MAX_LINE_BYTES:
                if kind != "append" or not n:
                    raise ctx.error(
                        f"line is longer than {MAX_LINE_BYTES} bytes", fix="split the event"
                    )
                # an append too long for one line goes on as the next append: the same
                # items in the same order, each line one a reader takes
                self._write(tail + "\n")
                self.appends += 1
                self.line += 1
                ctx = _Ctx(self.name, self.line)
                self._write(head)
                size, n = utf8_length(envelope) + utf8_length(text), 0
            self._check(raw, text, kind, here, ctx)
            if n:
                self._write(",")
            self._write(text)
            n += 1
        self._write(tail + "\n")
        if kind == "append":
            self.appends += 1
        else:
            self.rewrites += 1
        self.gave = self.gave or bool(items)

    def _check(
        self, raw: Mapping[str, Any], text: str, kind: str, here: set[str], ctx: _Ctx
    ) -> None:
        item = item_from_json(_loads(text, ctx, flat_when_valid=True), ctx)
        self._read += 1
        if self._read % _FORGET_EVERY == 0:
            forget_reads()
        iid: str = raw["id"]  # the item's own id object (the reader's copy is not kept)
        if iid in here:
            raise ctx.error(
                f"id appears twice in {_LISTS[kind]}",
                item=iid,
                fix="ids are unique within a window",
            )
        here.add(iid)
        if kind == "append" and iid in self._window:
            raise ctx.error(
                "append of an id already in the window",
                item=iid,
                fix="give the new item a fresh id, or change it with a rewrite",
            )
        self._window.add(iid)
        self._kinds.setdefault(iid, _KIND.get(item.kind, item.kind))
        for rel, ref in item.citations:
            if ref not in self._kinds and ref not in self._cited:
                self._cited[ref] = (self.line, iid, rel)

    def close(self) -> None:
        """Check the citations of the whole trace: each names an id some event gives."""
        forget_reads()
        for ref, (line, iid, rel) in self._cited.items():
            if ref not in self._kinds:
                raise InputError(
                    f"cites {rel} {ref!r}, which no event defines and the store does not hold",
                    file=self.name,
                    line=line,
                    item=iid,
                    fix="add the item or drop the reference",
                )

    def coverage(self, messages: int | None = None) -> Coverage:
        """What the trace written holds, counted as :func:`~verifier.importers.coverage` counts."""
        counts = dict.fromkeys(KINDS, 0)
        for kind in self._kinds.values():
            counts[kind] = counts.get(kind, 0) + 1
        return Coverage(self.appends, self.rewrites, len(self._kinds), counts, messages)


def split_append(event: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An append as the appends :class:`TraceWriter` writes for it: one, or, when its line
    would be longer than a trace line may be, several holding its items in order, each
    as full as a line allows (an item too long for any line stays alone)."""
    items = event["items"]
    size = utf8_length(canonical_json({**event, "items": []}))
    parts: list[list[Any]] = [[]]
    length = size
    for raw in items:
        grown = length + utf8_length(canonical_json(raw)) + (1 if parts[-1] else 0)
        if grown > MAX_LINE_BYTES and parts[-1]:
            parts.append([])
            grown = size + utf8_length(canonical_json(raw))
        parts[-1].append(raw)
        length = grown
    return [{**event, "items": part} for part in parts]
