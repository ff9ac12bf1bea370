"""Claude Code session files (JSONL, one record a line).

Records with ``type`` ``user`` or ``assistant`` and a ``message`` are
messages. The conversation is the ``parentUuid`` chain where records have one
and the file's order where they do not: a record without ``parentUuid`` or
without ``uuid`` continues the session, and the branches a rewind left are no
part of it (:func:`_abandoned`). A ``compact_boundary`` system record
followed by an ``isCompactSummary`` user record is a compaction, and the
session goes on after it. Titles (``type: "summary"``), progress, sidechain
records and other system records are no messages. Records of another
``sessionId`` are another session. See ``docs/importers.md`` ("claude-code").

The file is read line by line and the snapshots are given as they are made
(:func:`iter_snapshots`): a message that leaves the chain the model sees is
kept as its place in the file and read again if a later chain holds it, so a
long session is never held whole.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verifier.errors import InputError
from verifier.importers.common import (
    Message,
    Snapshot,
    ToolCall,
    ToolResult,
    canonical,
    declined,
    metadata_annotations,
)
from verifier.importers.detect import describe, foreign_line
from verifier.importers.sources import Source, texts
from verifier.io import _Ctx, _loads

__all__ = ["iter_snapshots", "record_message", "snapshots"]

COMPACTION = "claude-code:compact_boundary"
MICROCOMPACTION = "claude-code:microcompact_boundary"
CLEARED = "[Old tool result content cleared]"
"""What the model sees of a tool result a microcompaction cleared."""
_HARNESS_ERROR = "<tool_use_error>"


def _place(index: int, offset: int, size: int, lineno: int) -> int:
    """Where a record stands (source index, offset, size in bytes, line number), as one int."""
    return (((index << 40 | offset) << 32 | size) << 32) | lineno


def _unplace(place: int) -> tuple[int, int, int, int]:
    mask = (1 << 32) - 1
    return place >> 104, (place >> 64) & ((1 << 40) - 1), (place >> 32) & mask, place & mask


@dataclass
class _Session:
    """The tree read so far and the chain the model sees now.

    Keys are record uuids; a message without one has the key ``#FILE:LINE``.
    ``messages`` gives every message's place in its file; ``live`` holds the
    messages of the chain the model sees (the others are read again when a
    later chain holds them). ``windows`` maps a compaction's boundary, its
    summary and the last message it kept to the window the compaction left.
    """

    sources: Sequence[Source] = ()
    parents: dict[str, str | None] = field(default_factory=dict)
    messages: dict[str, int] = field(default_factory=dict)
    live: dict[str, Message] = field(default_factory=dict)
    boundaries: set[str] = field(default_factory=set)
    windows: dict[str, list[str]] = field(default_factory=dict)
    current: list[str] = field(default_factory=list)
    out: list[Snapshot] = field(default_factory=list)
    pending: tuple[list[str], str] | None = None
    session: tuple[str, str, int] | None = None
    """(sessionId, file, line) of the first record that named one."""
    sidechain: tuple[str, int] | None = None
    """(file, line) of the first sidechain message, if any."""
    keep: bool = True
    """Keep each message's record and body (for an extractor)."""
    abandoned: frozenset[str] = frozenset()
    """Messages of branches the session left (:func:`_abandoned`): read as no message."""
    cleared: set[str] = field(default_factory=set)
    """Call ids whose results a microcompaction cleared: the model sees a placeholder."""
    loose: set[str] = field(default_factory=set)
    """Messages that continued the chain without being the child of its end: by the file's
    order (no uuid or no parentUuid), past such messages, or as results of parallel tool
    calls; a message whose parent they follow continues the chain too."""
    relinked: dict[str, str] = field(default_factory=dict)
    """The ``parentUuid`` a loose message names, where ``parents`` chains it to the message
    before it instead (a compaction's segment is read along the parents as written)."""

    def snapshot(self, policy: str | None = None) -> None:
        shown = [self.message(u) for u in self.current]
        if self.cleared:
            shown = [_cleared(m, self.cleared) for m in shown]
        self.out.append(Snapshot(tuple(shown), policy))

    def message(self, key: str) -> Message:
        """The message ``key``: held while it is in the chain, else read again."""
        held = self.live.get(key)
        if held is None:
            index, offset, size, lineno = _unplace(self.messages[key])
            src = self.sources[index]
            record = _loads(src.line_at(offset, size, lineno), _Ctx(src.name, lineno))
            held = record_message(record, src.name, f"line {lineno}", keep=self.keep)
            self.live[key] = held
        return held

    def move(self, chain: list[str]) -> None:
        """The model now sees ``chain``: the messages out of it are no longer held."""
        keep = set(chain)
        for key in [k for k in self.live if k not in keep]:
            del self.live[key]
        self.current = chain


def snapshots(sources: Sequence[Source], *, keep_records: bool = True) -> list[Snapshot]:
    """The snapshots of one or more session files, read in order (one session).

    ``keep_records`` keeps each message's record (what an extractor is given);
    without it a long session's parsed records are not held in memory.
    """
    return list(iter_snapshots(sources, keep_records=keep_records))


def iter_snapshots(sources: Sequence[Source], *, keep_records: bool = True) -> Iterator[Snapshot]:
    """:func:`snapshots`, each given as soon as it is made (the file read line by line)."""
    for src in sources:
        _refuse_json_document(src)
    sources = _chain_order(sources)
    session = _Session(sources, keep=keep_records, abandoned=_abandoned(sources))
    for index, src in enumerate(sources):
        for lineno, offset, size, record, part in _records_at(src):
            _read(record, src.name, lineno, session, _place(index, offset, size, lineno), part)
            if session.out:
                yield from session.out
                session.out.clear()
    if session.pending is not None:
        _compact(session, None)
    if not session.messages and session.sidechain is not None:
        file, line = session.sidechain
        raise InputError(
            "every message of the file is a sidechain record (isSidechain: true): it holds a"
            " subagent's session, not the main one",
            file=file,
            line=line,
            fix="import the main session's file (the subagent's work is in it as a Task call"
            " and its result)",
        )
    session.snapshot()
    yield from session.out


def _chain_order(sources: Sequence[Source]) -> Sequence[Source]:
    """The files of one session in the order its ``parentUuid`` chain runs through them:
    a file whose records continue records of another file comes after it, whatever the
    order they were given in (a shell glob's); files the chain does not order keep theirs.
    """
    if len(sources) < 2:
        return sources
    defined: dict[str, int] = {}
    named: list[set[str]] = []  # per file: the parents its records name that it had not
    for index, src in enumerate(sources):
        own: set[str] = set()
        names: set[str] = set()
        for _, _, record in _plain_records(src):
            if not isinstance(record, dict):
                continue  # refused when the session is read
            for key in ("parentUuid", "logicalParentUuid"):
                parent = record.get(key)
                if isinstance(parent, str) and parent and parent not in own:
                    names.add(parent)
            uuid = record.get("uuid")
            if isinstance(uuid, str) and uuid:
                own.add(uuid)
                defined.setdefault(uuid, index)
        named.append(names)
    needs = [{defined[p] for p in names if defined.get(p, i) != i} for i, names in enumerate(named)]
    order: list[int] = []
    ready = [i for i, need in enumerate(needs) if not need]
    while ready:
        i = min(ready)
        ready.remove(i)
        order.append(i)
        for j, need in enumerate(needs):
            if i in need:
                need.discard(i)
                if not need and j not in order and j not in ready:
                    ready.append(j)
    order += [i for i in range(len(sources)) if i not in order]  # a cycle: as given
    return [sources[i] for i in order]


def _refuse_json_document(src: Source) -> None:
    """A JSON document (not JSONL) given as a session file is named as what it is."""
    head = src.head(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head.startswith(b"[") and (not head.startswith(b"{") or _first_line_is_object(src)):
        return
    shape = describe(src)
    raise InputError(
        f"this is {shape.what}, not a Claude Code session file (JSONL: one record a line)",
        file=src.name,
        line=1,
        fix=shape.fix_for("claude-code"),
    )


def _first_line_is_object(src: Source) -> bool:
    """Does the first non-blank line hold a whole JSON object (as JSONL does)?"""
    head = src.head(65536).decode("utf-8", "replace").removeprefix("\ufeff")
    for line in head.split("\n", 64)[:64]:
        if line.strip():
            text = line.strip()
            return text.startswith("{") and text.endswith("}")
    return False


def _records_at(src: Source) -> Iterator[tuple[int, int, int, Any, int]]:
    """(line number, offset, size, record, part) for every record of a session file.

    A line holds one record (part 0), or several written one after another with no
    newline between them (``...}{"type":...``: Claude Code's writer has been seen to
    leave one out). Such a line is read as its records, each placed at its own bytes
    (part 0, 1, ...); a line that does not split so is refused as the JSON it is.
    """
    bom = len(_BOM) if src.head(len(_BOM)) == _BOM else 0
    for lineno, offset, size, line in src.lines():
        if not line.strip():
            continue
        ctx = _Ctx(src.name, lineno)
        try:
            record = _loads(line, ctx)
        except InputError:
            spans = _glued(line)
            if spans is None:
                raise
            skipped = bom if offset == 0 else 0
            for part, (start, end) in enumerate(spans):
                at = offset + skipped + len(line[:start].encode("utf-8"))
                piece = line[start:end]
                yield lineno, at, len(piece.encode("utf-8")), _loads(piece, ctx), part
            continue
        yield lineno, offset, size, record, 0


_BOM = b"\xef\xbb\xbf"
_DECODER = json.JSONDecoder()


def _glued(line: str) -> list[tuple[int, int]] | None:
    """Where each of two or more JSON objects written one after another on one line
    stands, or None when the line is no such run (bad JSON of another kind)."""
    spans: list[tuple[int, int]] = []
    i, stop = len(line) - len(line.lstrip()), len(line.rstrip())
    while i < stop:
        if line[i] != "{":
            return None
        try:
            _, end = _DECODER.raw_decode(line, i)
        except (ValueError, RecursionError):
            return None
        spans.append((i, end))
        i = len(line) - len(line[end:].lstrip()) if end < stop else end
    return spans if len(spans) > 1 else None


def _read(record: Any, file: str, lineno: int, s: _Session, place: int, part: int = 0) -> None:
    if not isinstance(record, dict):
        raise InputError("each line must be a JSON object", file=file, line=lineno)
    other = foreign_line(record, "claude-code")
    if other is not None:
        raise InputError(
            f"this line is {other}, not a Claude Code record: a file holds one history of"
            " one format",
            file=file,
            line=lineno,
            fix="import each format's history on its own",
        )
    uuid = record.get("uuid")
    has_uuid = isinstance(uuid, str) and bool(uuid)
    if isinstance(uuid, str):
        uuid = sys.intern(uuid)  # one string for the uuid wherever it is kept
    kind = record.get("type")
    is_message = kind in ("user", "assistant") and "message" in record
    boundary = kind == "system" and record.get("subtype") == "compact_boundary"
    if boundary:
        _check_kept(record.get("compactMetadata"), file, lineno)
    if has_uuid and uuid in s.parents:
        if boundary or (is_message and not record.get("isSidechain")):
            _same_session(record, file, lineno, s)  # another session's copy is refused too
        return  # a record written again (a replay): the first counts
    if is_message and record.get("isSidechain"):
        if s.sidechain is None:
            s.sidechain = (file, lineno)
        return
    if is_message or boundary:
        _same_session(record, file, lineno, s)
    if kind == "system" and record.get("subtype") == "microcompact_boundary":
        _microcompact(record.get("microcompactMetadata"), s)
    key = str(uuid) if has_uuid else f"#{file}:{lineno}" + (f"+{part}" if part else "")
    parent = record.get("parentUuid")
    if has_uuid:
        s.parents[key] = sys.intern(parent) if isinstance(parent, str) and parent else None
    if key in s.abandoned:
        return  # off the conversation: walked through, as a record that is no message
    if boundary:
        _boundary(record, key, s)
    elif is_message:
        message = record_message(record, file, f"line {lineno}", keep=s.keep)
        if not has_uuid:
            s.parents[key] = None
        s.messages[key] = place
        s.live[key] = message
        if s.pending is not None:
            _compact(s, key if message.summary else None)
            if message.summary:
                return
            s.live[key] = message  # not in the window the compaction left: it follows it
        _extend(key, s)


@dataclass(slots=True)
class _Node:
    """A record as :func:`_abandoned` reads it: what it names as its parent, and whether
    it is a message, one that continues by the file's order (``loose``), a summary, one
    of a turn's tool calls or results only (``turn``), or a compaction boundary (its
    ``logicalParentUuid``: ``logical``)."""

    parent: str | None
    message: bool = False
    loose: bool = False
    summary: bool = False
    turn: bool = False
    boundary: bool = False
    logical: str | None = None


def _abandoned(sources: Sequence[Source]) -> frozenset[str]:
    """The messages of branches the session left (a rewind, an edited prompt): the
    conversation is the ``parentUuid`` chain that ends at the last message, walked back
    through each compaction's ``logicalParentUuid``, and the messages off it are none of
    its items.

    Read before the session is, the records' uuids and parents only. Never left: a
    message that continues by the file's order (no ``uuid`` or no ``parentUuid``), a
    compaction's summary, a message a compaction keeps or whose chain its window before
    ends at, and the records of a turn's parallel tool calls and results that hang off
    the chain (each result is the child of its own call's record). An empty set where
    the session never branched.
    """
    nodes: dict[str, _Node] = {}
    order: list[str] = []  # messages and boundaries, in the file's order
    roots: list[str] = []
    for index, src in enumerate(sources):
        for lineno, part, record in _plain_records(src):
            if not isinstance(record, dict):
                continue  # refused when the session is read
            uuid, kind = record.get("uuid"), record.get("type")
            has_uuid = isinstance(uuid, str) and bool(uuid)
            if has_uuid and uuid in nodes:
                continue  # a replay: the first counts
            is_message = kind in ("user", "assistant") and "message" in record
            boundary = kind == "system" and record.get("subtype") == "compact_boundary"
            if (is_message and record.get("isSidechain")) or not (
                has_uuid or is_message or boundary
            ):
                continue
            named = record.get("parentUuid")
            parent = named if isinstance(named, str) and named else None
            node = _Node(parent, is_message, boundary=boundary)
            if is_message:
                node.loose = not has_uuid or parent is None
                # a compaction's summary is the window it left, wherever the chain goes on
                node.summary = bool(record.get("isCompactSummary"))
                node.turn = _is_turn(record.get("message"))
            if boundary:
                logical = record.get("logicalParentUuid")
                node.logical = logical if isinstance(logical, str) else None
                roots.extend(_named_kept(record.get("compactMetadata")))
            key = str(uuid) if has_uuid else f"#{index}:{lineno}+{part}"
            nodes[key] = node
            if is_message or boundary:
                order.append(key)
    before = dict(zip(order[1:], order, strict=False))

    def up(key: str) -> str | None:
        """The message or boundary the record continues: its parent, else the one before."""
        node = nodes[key]
        start = node.logical if node.boundary else None if node.loose else node.parent
        seen: set[str] = set()
        while start is not None and start in nodes and start not in seen:
            seen.add(start)
            if nodes[start].message or nodes[start].boundary:
                return start
            start = nodes[start].parent
        return before.get(key)  # no known parent: it continues the session

    last = next((k for k in reversed(order) if nodes[k].message), None)
    roots.extend(n.logical for n in nodes.values() if n.boundary and n.logical)
    held: set[str] = set()
    for root in [last, *roots]:
        node_key = root if root in nodes else None
        while node_key is not None and node_key not in held:
            held.add(node_key)
            node_key = up(node_key)
    out: set[str] = set()
    for key in order:
        node = nodes[key]
        if key in held or not node.message or node.loose or node.summary:
            continue
        if node.turn and up(key) in held:
            held.add(key)  # a parallel call or result hanging off the chain
        else:
            out.add(key)
    return frozenset(out)


def _plain_records(src: Source) -> Iterator[tuple[int, int, Any]]:
    """(line number, part, record) as :func:`_records_at` gives them, parsed without its
    checks: what is not JSON is left out here, and refused when the session is read."""
    for lineno, _offset, _size, line in src.lines():
        text = line.lstrip("\ufeff") if lineno == 1 else line
        if not text.strip():
            continue
        try:
            yield lineno, 0, json.loads(text)
        except (ValueError, RecursionError):
            for part, (start, end) in enumerate(_glued(text) or ()):
                try:
                    yield lineno, part, json.loads(text[start:end])
                except (ValueError, RecursionError):
                    continue


def _is_turn(body: Any) -> bool:
    """Does a message hold tool calls or results, and no text that came without a result?"""
    content = body.get("content") if isinstance(body, dict) else None
    if not isinstance(content, list):
        return False
    kinds = {b.get("type") for b in content if isinstance(b, dict)}
    said = any(_is(b, "text") and b.get("text") for b in content)
    return bool(kinds & {"tool_use", "tool_result"}) and not (said and "tool_result" not in kinds)


def _check_kept(meta: Any, file: str, lineno: int) -> None:
    """A compaction's metadata, where it names what the compaction kept, names it as
    Claude Code writes it: read otherwise, the kept messages would silently be dropped."""

    def bad(where: str, what: str) -> InputError:
        return InputError(
            f"compactMetadata{where} must be {what}",
            file=file,
            line=lineno,
            fix="write it as Claude Code does, or leave it out",
        )

    if meta is None:
        return
    if not isinstance(meta, dict):
        raise bad("", "an object")
    kept = meta.get("preservedMessages")
    if kept is not None:
        if not isinstance(kept, dict):
            raise bad(".preservedMessages", "an object")
        uuids = kept.get("uuids")
        if uuids is not None and not (
            isinstance(uuids, list) and all(isinstance(u, str) and u for u in uuids)
        ):
            raise bad(".preservedMessages.uuids", "a list of uuids")
    segment = meta.get("preservedSegment")
    if segment is not None:
        if not isinstance(segment, dict):
            raise bad(".preservedSegment", "an object")
        for end in ("headUuid", "tailUuid"):
            value = segment.get(end)
            if value is not None and not (isinstance(value, str) and value):
                raise bad(f".preservedSegment.{end}", "a uuid")


def _named_kept(meta: Any) -> list[str]:
    """The uuids a compaction's metadata names as kept (listed, and a segment's ends)."""
    listed, segment = _kept_by(meta)
    return [*(listed or ()), *(segment or ())]


def _kept_by(meta: Any) -> tuple[list[str] | None, tuple[str, str] | None]:
    """What a compaction's metadata names as kept: ``preservedMessages.uuids`` (None where
    it lists none) and ``preservedSegment``'s (``headUuid``, ``tailUuid``), if any."""
    if not isinstance(meta, dict):
        return None, None
    found = meta.get("preservedMessages")
    uuids = found.get("uuids") if isinstance(found, dict) else None
    listed = [u for u in uuids if isinstance(u, str)] if isinstance(uuids, list) else None
    segment = meta.get("preservedSegment")
    if not isinstance(segment, dict):
        return listed, None
    head, tail = segment.get("headUuid"), segment.get("tailUuid")
    return listed, (head, tail) if isinstance(head, str) and isinstance(tail, str) else None


def _same_session(record: Mapping[str, Any], file: str, lineno: int, s: _Session) -> None:
    """Records of another ``sessionId`` are another session: refused, naming both."""
    sid = record.get("sessionId")
    if not isinstance(sid, str) or not sid:
        return
    if s.session is None:
        s.session = (sid, file, lineno)
        return
    first, first_file, first_line = s.session
    if sid != first:
        where = f"line {first_line}" if first_file == file else f"{first_file}:{first_line}"
        raise InputError(
            f"sessionId {sid!r} is another session than {first!r} ({where}): a trace holds"
            " one session",
            file=file,
            line=lineno,
            fix="import each session on its own (one file, or the files of one session)",
        )


def _boundary(record: Mapping[str, Any], uuid: str, s: _Session) -> None:
    """A compaction: the window before ends at ``logicalParentUuid``.

    Claude Code may name there a record it never wrote: the window before is then the
    chain the model saw up to the boundary (read as empty, it made up a rewrite that
    dropped everything before the compaction)."""
    if s.pending is not None:
        _compact(s, None)  # a boundary with no summary after it: it left its kept messages
    s.boundaries.add(uuid)
    logical = record.get("logicalParentUuid")
    last = logical if isinstance(logical, str) and logical in s.parents else None
    before = list(s.current) if last is None or _continues(last, s) else _chain(last, s)
    if before != s.current:
        s.snapshot()
        s.move(before)
    s.snapshot()
    s.pending = (_preserved(record.get("compactMetadata"), s), uuid)


def _microcompact(meta: Any, s: _Session) -> None:
    """A microcompaction: the results of the calls ``compactedToolIds`` names are cleared
    from the window (a rewrite), and stay cleared in every window after it."""
    named = meta.get("compactedToolIds") if isinstance(meta, dict) else None
    ids = {i for i in named if isinstance(i, str)} if isinstance(named, list) else set()
    shown = {r.call_id for u in s.current for r in s.message(u).results}
    if not (ids & shown) - s.cleared:
        return  # nothing the model sees changes
    s.snapshot()
    s.cleared |= ids
    s.snapshot(MICROCOMPACTION)


def _cleared(m: Message, ids: set[str]) -> Message:
    """The message as the model sees it once the results of ``ids`` were cleared."""
    if not any(r.call_id in ids for r in m.results):
        return m
    results = tuple(
        dataclasses.replace(r, content=CLEARED, cleared=True) if r.call_id in ids else r
        for r in m.results
    )
    # another key: the items of the message as it was shown are not these
    cleared = ",".join(r.call_id for r in results if r.cleared)
    return dataclasses.replace(m, key=f"{m.key}#cleared:{cleared}", results=results)


def _preserved(meta: Any, s: _Session) -> list[str]:
    """The messages a compaction keeps: ``preservedMessages.uuids``, or a segment."""
    listed, segment = _kept_by(meta)
    if listed is not None:
        return [u for u in listed if u in s.messages]
    if segment is not None:
        return _segment(*segment, s)
    return []


def _segment(head: str, tail: str, s: _Session) -> list[str]:
    """Messages from head to tail along ``parentUuid`` as written (a record that names no
    parent follows the message before it); else, where head is no ancestor of tail that
    way (a segment that runs across an earlier compaction), the window's messages from
    head to tail."""
    out: list[str] = []
    node: str | None = tail
    seen: set[str] = set()
    while node is not None and node not in seen:
        seen.add(node)
        if node in s.messages:
            out.append(node)
        if node == head:
            return out[::-1]
        node = s.relinked.get(node) or s.parents.get(node)
    window = s.current
    if head in window and tail in window and window.index(head) <= window.index(tail):
        return window[window.index(head) : window.index(tail) + 1]
    return []


def _compact(s: _Session, summary: str | None) -> None:
    """The window after a compaction: its summary, then the messages it kept."""
    assert s.pending is not None
    kept, boundary = s.pending
    s.pending = None
    s.move(([summary] if summary is not None else []) + [u for u in kept if u != summary])
    s.snapshot(COMPACTION)
    for anchor in (boundary, summary, s.current[-1] if s.current else None):
        if anchor is not None:
            s.windows[anchor] = list(s.current)


def _extend(key: str, s: _Session) -> None:
    """A new message continues the chain the model sees, or starts another branch.

    It continues it when its parent (the nearest message or boundary up its
    ``parentUuid``) ends the chain, or is the anchor of the window the chain is
    (a compaction's boundary, summary or last kept message), or when it names
    no parent at all (the file's order). Any other parent is a branch: a rewind
    or an edited prompt.
    """
    parent = _message_parent(key, s)
    if _continues(parent, s) or _parallel_result(key, parent, s):
        if not s.current or parent != s.current[-1]:
            s.loose.add(key)  # the chain's end may be its parent's child: skipped over
            if s.current:
                written = s.parents.get(key)
                if written is not None:
                    s.relinked[key] = written
                s.parents[key] = s.current[-1]  # what follows it chains through the session
        s.current.append(key)
        return
    s.snapshot()
    s.move(_chain(key, s))


def _parallel_result(key: str, parent: str | None, s: _Session) -> bool:
    """Is the message the result of one of several parallel tool calls, hanging off the
    record of its own call while the chain went on through the other calls and results?

    Claude Code writes each call of one assistant turn as a record of its own (each
    the parent of the next) and each result as a record whose parent is its call's:
    the model saw every call and every result, in one request. A message is such a
    result when it holds tool results, each answering a call of the chain from its
    parent on, and the chain after its parent holds tool calls and results only. A
    record of results may hold text too: what the user typed while the tools ran,
    which Claude Code writes into the record of the result it came with.
    """
    if parent is None or parent not in s.current:
        return False
    message = s.live[key]
    if message.calls or not message.results:
        return False
    after = s.current[s.current.index(parent) :]
    if any(_went_on(s.message(k)) for k in after[1:]):
        return False  # the conversation went on past the call: a branch
    calls = {c.id for k in after for c in s.message(k).calls}
    return all(r.call_id in calls for r in message.results)


def _went_on(message: Message) -> bool:
    """Is this message of the chain the conversation going on (text that came with no
    tool result), rather than one of a turn's calls or results?"""
    return bool(message.text) and not message.results


def _continues(parent: str | None, s: _Session) -> bool:
    """Does a message whose parent is ``parent`` continue the chain the model sees?

    It does when ``parent`` is None, ends the chain, is the anchor of the window
    the chain is, or is followed in the chain only by messages that continued
    it by the file's order.
    """
    if parent is None or s.windows.get(parent) == s.current:
        return True
    for node in reversed(s.current):
        if node == parent:
            return True
        if node not in s.loose:
            return False
    return False


def _message_parent(key: str, s: _Session) -> str | None:
    """The nearest ancestor that is a message or a compaction boundary."""
    node = s.parents.get(key)
    seen = {key}
    while node is not None and node not in seen:
        if node in s.messages or node in s.boundaries:
            return node
        seen.add(node)
        node = s.parents.get(node)
    return None


def _chain(key: str, s: _Session) -> list[str]:
    """The messages the model sees when ``key`` is the latest one."""
    collected: list[str] = []
    node: str | None = key
    seen: set[str] = set()
    while node is not None and node not in seen:
        seen.add(node)
        if node in s.windows:
            return s.windows[node] + collected[::-1]
        if node in s.boundaries:
            break
        if node in s.messages:
            collected.append(node)
        node = s.parents.get(node)
    return collected[::-1]


def record_message(
    record: Mapping[str, Any], file: str, where: str, *, keep: bool = True
) -> Message:
    """One user or assistant record as a :class:`Message` (its ``uuid`` is its id).

    A tool result the user declined (``is_error``, and its text says the user did
    not want to proceed) is the user's decision, not a failed command.
    """
    body = record.get("message")
    uuid = record.get("uuid")
    has_uuid = isinstance(uuid, str) and bool(uuid)
    # a record's content is fixed by its uuid (the first record with it counts): the uuid
    # is its key; a record without one is known by its JSON
    key = f"uuid:{uuid}" if has_uuid else canonical(body)
    base = Message(str(record.get("type")), key, file, where)
    if not isinstance(body, dict):
        raise base.error("'message' must be an object", fix="write the message as an object")
    role = body.get("role", record.get("type"))
    content = body.get("content")
    text, calls, results = _blocks(content, base)
    at = record.get("timestamp") if isinstance(record.get("timestamp"), str) else None
    # the message's own metadata (the line's ``message``), or the record's
    notes = metadata_annotations(body.get("metadata"), file, where) + metadata_annotations(
        record.get("metadata"), file, where
    )
    return Message(
        str(role),
        base.key,
        file,
        where,
        sys.intern(uuid) if isinstance(uuid, str) and uuid else None,
        text,
        calls,
        results,
        summary=bool(record.get("isCompactSummary")),
        at=at,
        annotations=notes,
        raw=body if keep else None,
        record=record if keep else None,
    )


def _blocks(
    content: Any, base: Message
) -> tuple[str, tuple[ToolCall, ...], tuple[ToolResult, ...]]:
    """Text, tool calls and tool results of a message's content."""
    if isinstance(content, str) or content is None:
        return texts(content), (), ()
    if not isinstance(content, list):
        raise base.error("'content' must be a string or a list of blocks")
    text = texts([b for b in content if isinstance(b, dict) and b.get("type") == "text"])
    calls = tuple(_call(b, base) for b in content if _is(b, "tool_use"))
    results = tuple(_result(b, base) for b in content if _is(b, "tool_result"))
    return text, calls, results


def _is(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def _call(block: Mapping[str, Any], base: Message) -> ToolCall:
    call_id, name = block.get("id"), block.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
        raise base.error("a tool_use block needs an 'id' and a 'name'")
    arguments = block.get("input")
    return ToolCall(call_id, name, arguments)


def _result(block: Mapping[str, Any], base: Message) -> ToolResult:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise base.error("a tool_result block needs a 'tool_use_id'")
    content = texts(block.get("content"))
    error = block.get("is_error") is True or content.lstrip().startswith(_HARNESS_ERROR)
    refused = declined(block.get("is_error"), content)
    return ToolResult(call_id, content, error=error and not refused, declined=refused)
