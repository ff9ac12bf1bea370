"""Claude Code session files (JSONL, one record a line).

Records with ``type`` ``user`` or ``assistant`` and a ``message`` are
messages; they form a tree by ``parentUuid`` and the model sees the chain
that ends at the latest one. A ``compact_boundary`` system record followed
by an ``isCompactSummary`` user record is a compaction. Titles
(``type: "summary"``), progress, sidechain records and other system records
are no messages. See ``docs/importers.md`` ("claude-code").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verifier.errors import InputError
from verifier.importers.common import (
    Message,
    Snapshot,
    ToolCall,
    ToolResult,
    canonical,
    metadata_annotations,
)
from verifier.importers.sources import Source, read_jsonl, texts

__all__ = ["record_message", "snapshots"]

COMPACTION = "claude-code:compact_boundary"
_HARNESS_ERROR = "<tool_use_error>"


@dataclass
class _Session:
    """The tree read so far and the chain the model sees now."""

    parents: dict[str, str | None] = field(default_factory=dict)
    messages: dict[str, Message] = field(default_factory=dict)
    boundaries: set[str] = field(default_factory=set)
    windows: dict[str, list[str]] = field(default_factory=dict)
    current: list[str] = field(default_factory=list)
    out: list[Snapshot] = field(default_factory=list)
    pending: tuple[list[str], str] | None = None

    def snapshot(self, policy: str | None = None) -> None:
        self.out.append(Snapshot(tuple(self.messages[u] for u in self.current), policy))


def snapshots(sources: Sequence[Source]) -> list[Snapshot]:
    """The snapshots of one or more session files, read in order."""
    session = _Session()
    for src in sources:
        for lineno, record in read_jsonl(src):
            _read(record, src.name, lineno, session)
    if session.pending is not None:
        _compact(session, None)
    session.snapshot()
    return session.out


def _read(record: Any, file: str, lineno: int, s: _Session) -> None:
    if not isinstance(record, dict):
        raise InputError("each line must be a JSON object", file=file, line=lineno)
    uuid = record.get("uuid")
    if not isinstance(uuid, str) or not uuid or uuid in s.parents:
        return  # no place in the tree, or a record written again (a replay): the first counts
    parent = record.get("parentUuid")
    s.parents[uuid] = parent if isinstance(parent, str) else None
    kind = record.get("type")
    if kind == "system" and record.get("subtype") == "compact_boundary":
        _boundary(record, uuid, s)
    elif kind in ("user", "assistant") and "message" in record and not record.get("isSidechain"):
        message = record_message(record, file, f"line {lineno}")
        s.messages[uuid] = message
        if s.pending is not None:
            _compact(s, uuid if message.summary else None)
            if message.summary:
                return
        _extend(uuid, s)


def _boundary(record: Mapping[str, Any], uuid: str, s: _Session) -> None:
    """A compaction: the window before ends at ``logicalParentUuid``."""
    s.boundaries.add(uuid)
    logical = record.get("logicalParentUuid")
    last = logical if isinstance(logical, str) else (s.current[-1] if s.current else None)
    before = _chain(last, s) if last is not None else []
    if before != s.current:
        s.snapshot()
        s.current = before
    s.snapshot()
    s.pending = (_preserved(record.get("compactMetadata"), s), uuid)


def _preserved(meta: Any, s: _Session) -> list[str]:
    """The messages a compaction keeps: ``preservedMessages.uuids``, or a segment."""
    if not isinstance(meta, dict):
        return []
    listed = meta.get("preservedMessages")
    if isinstance(listed, dict) and isinstance(listed.get("uuids"), list):
        return [u for u in listed["uuids"] if isinstance(u, str) and u in s.messages]
    segment = meta.get("preservedSegment")
    if isinstance(segment, dict):
        head, tail = segment.get("headUuid"), segment.get("tailUuid")
        if isinstance(head, str) and isinstance(tail, str):
            return _segment(head, tail, s)
    return []


def _segment(head: str, tail: str, s: _Session) -> list[str]:
    """Messages from head to tail along ``parentUuid``."""
    out: list[str] = []
    node: str | None = tail
    seen: set[str] = set()
    while node is not None and node not in seen:
        seen.add(node)
        if node in s.messages:
            out.append(node)
        if node == head:
            return out[::-1]
        node = s.parents.get(node)
    return []


def _compact(s: _Session, summary: str | None) -> None:
    """The window after a compaction: its summary, then the messages it kept."""
    assert s.pending is not None
    kept, boundary = s.pending
    s.pending = None
    s.current = ([summary] if summary is not None else []) + [u for u in kept if u != summary]
    s.snapshot(COMPACTION)
    s.windows[boundary] = list(s.current)
    if s.current:
        s.windows[s.current[-1]] = list(s.current)


def _extend(uuid: str, s: _Session) -> None:
    """A new message continues the chain the model sees, or starts another branch."""
    parent = _message_parent(uuid, s)
    extends = parent == s.current[-1] if s.current else parent is None
    if extends or (parent is not None and s.windows.get(parent) == s.current):
        s.current.append(uuid)
        return
    s.snapshot()
    s.current = _chain(uuid, s)


def _message_parent(uuid: str, s: _Session) -> str | None:
    """The nearest ancestor that is a message or a compaction boundary."""
    node = s.parents.get(uuid)
    seen = {uuid}
    while node is not None and node not in seen:
        if node in s.messages or node in s.boundaries:
            return node
        seen.add(node)
        node = s.parents.get(node)
    return None


def _chain(uuid: str, s: _Session) -> list[str]:
    """The messages the model sees when ``uuid`` is the latest one."""
    collected: list[str] = []
    node: str | None = uuid
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


def record_message(record: Mapping[str, Any], file: str, where: str) -> Message:
    """One user or assistant record as a :class:`Message` (its ``uuid`` is its id)."""
    body = record.get("message")
    base = Message(str(record.get("type")), canonical(body), file, where)
    if not isinstance(body, dict):
        raise base.error("'message' must be an object", fix="write the message as an object")
    role = body.get("role", record.get("type"))
    content = body.get("content")
    text, calls, results = _blocks(content, base)
    at = record.get("timestamp") if isinstance(record.get("timestamp"), str) else None
    notes = metadata_annotations(record.get("metadata"), file, where)
    return Message(
        str(role),
        base.key,
        file,
        where,
        str(record["uuid"]),
        text,
        calls,
        results,
        summary=bool(record.get("isCompactSummary")),
        at=at,
        annotations=notes,
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
    return ToolCall(call_id, name, arguments, _todos(call_id, name, arguments))


def _todos(call_id: str, name: str, arguments: Any) -> tuple[dict[str, Any], ...]:
    """TodoWrite's open todos as ``obligation`` commitments (``docs/importers.md``)."""
    if name != "TodoWrite" or not isinstance(arguments, dict):
        return ()
    todos = arguments.get("todos")
    out = []
    for k, todo in enumerate(todos if isinstance(todos, list) else []):
        if not isinstance(todo, dict) or todo.get("status") == "completed":
            continue
        own = todo.get("id")
        suffix = own if isinstance(own, str) and own else str(k)
        item: dict[str, Any] = {
            "id": f"{call_id}:todo:{suffix}",
            "kind": "commitment",
            "type": "obligation",
        }
        if isinstance(todo.get("content"), str):
            item["text"] = todo["content"]
        out.append(item)
    return tuple(out)


def _result(block: Mapping[str, Any], base: Message) -> ToolResult:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise base.error("a tool_result block needs a 'tool_use_id'")
    content = texts(block.get("content"))
    error = block.get("is_error") is True or content.lstrip().startswith(_HARNESS_ERROR)
    return ToolResult(call_id, content, error=error)
