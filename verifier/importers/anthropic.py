"""Anthropic Messages API histories: message lists of content blocks.

A file holds one message list (a JSON array, or a request body with
``messages`` and an optional ``system``) or a JSON array of such lists. A
``compaction`` block marks a server-side compaction: the model sees the list
from the last one on, after the system prompt. See ``docs/importers.md`` ("anthropic").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verifier.errors import InputError
from verifier.importers.common import (
    Message,
    Snapshot,
    ToolCall,
    ToolResult,
    canonical,
    declined,
    gives_items,
    metadata_annotations,
    split_at_markers,
)
from verifier.importers.detect import foreign_message, no_items
from verifier.importers.sources import Source, read_json, texts

__all__ = ["snapshots"]

FORMAT = "anthropic"
COMPACTION = "anthropic:compaction"
_CALLS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_RESULTS = frozenset({"tool_result", "mcp_tool_result", "web_search_tool_result"})


def snapshots(sources: Sequence[Source]) -> list[Snapshot]:
    """The snapshots of the given files, in order."""
    seen: set[str] = set()
    out: list[Snapshot] = []
    for src in sources:
        got: list[Snapshot] = []
        for where, raw in _lists(src):
            messages: list[Message] = []
            for i, obj in enumerate(raw):
                messages.extend(_messages(obj, src.name, f"{where}message {i}"))
            # the system prompt is no message block: a compaction leaves it in the model's view
            lead = 0
            while lead < len(messages) and messages[lead].role == "system":
                lead += 1
            rest = messages[lead:]
            marks = [m.role == "compaction" for m in rest]
            for snap in split_at_markers(rest, marks, seen, COMPACTION):
                got.append(Snapshot((*messages[:lead], *snap.messages), snap.policy))
        if not gives_items(got):
            raise no_items(FORMAT, src)  # each file, not only the first: never an empty window
        out.extend(got)
    return out


def _lists(src: Source) -> list[tuple[str, list[Any]]]:
    value = read_json(src)
    if _is_body(value):
        return [("", _body_messages(value))]
    if not isinstance(value, list):
        raise InputError(
            "the file must hold a JSON array of messages or a request body with 'messages'",
            file=src.name,
            line=1,
        )
    if value and all(isinstance(v, list) for v in value):
        return [(f"snapshot {k} ", v) for k, v in enumerate(value)]
    if value and all(_is_body(v) for v in value):
        # request bodies as recorded, one per call: each one a snapshot
        return [(f"snapshot {k} ", _body_messages(v)) for k, v in enumerate(value)]
    return [("", value)]


def _is_body(value: Any) -> bool:
    """Is this a request body (``messages``, and ``system`` beside them), not a message?"""
    return (
        isinstance(value, dict) and "role" not in value and isinstance(value.get("messages"), list)
    )


def _body_messages(body: Mapping[str, Any]) -> list[Any]:
    """A request body's messages, its ``system`` prompt first as a system message."""
    system = body.get("system")
    head = [{"role": "system", "content": system}] if system else []
    return head + list(body["messages"])


def _messages(obj: Any, file: str, where: str) -> list[Message]:
    """One message; an assistant message with a compaction block is cut in three."""
    if not isinstance(obj, dict):
        raise InputError(f"{where}: a message must be a JSON object", file=file)
    foreign_message(obj, FORMAT, file, where)
    role = obj.get("role")
    base = Message(str(role), _key(obj), file, where, match=_match(obj))
    if role not in ("user", "assistant", "system"):
        raise base.error(f"unknown role {role!r}", fix="use 'user' or 'assistant'")
    content = obj.get("content")
    if isinstance(content, str) or content is None:
        return [_message(obj, [{"type": "text", "text": texts(content)}], base, raw=obj)]
    if not isinstance(content, list):
        raise base.error("'content' must be a string or a list of blocks")
    # a compaction block without content is a compaction that failed: the API reads it
    # as nothing, so the model still sees the whole history
    cut = [
        k
        for k, b in enumerate(content)
        if isinstance(b, dict) and b.get("type") == "compaction" and b.get("content") is not None
    ]
    if not cut:
        return [_message(obj, content, base, raw=obj)]
    k = cut[-1]
    own = obj.get("id") if isinstance(obj.get("id"), str) and obj.get("id") else None
    out = []
    if content[:k]:
        before = _part(base, content[:k], "before", own)
        out.append(_message(obj, content[:k], before, part=True))
    out.append(_compaction(content[k], _part(base, [content[k]], "compaction", own)))
    if content[k + 1 :]:
        after = _part(base, content[k + 1 :], "after", own)
        out.append(_message(obj, content[k + 1 :], after, part=True))
    return out


def _key(obj: Mapping[str, Any]) -> str:
    """A message's key (what tells it again in a later request): its JSON, with its content
    as blocks and without ``cache_control``. Clients move the cache breakpoint to the newest
    message at every request, and write a text as a string or as one text block: the API
    reads both alike, and the message is the same.

    >>> _key({"role": "user", "content": "hi"}) == _key(
    ...     {"role": "user", "content": [{"type": "text", "text": "hi",
    ...                                   "cache_control": {"type": "ephemeral"}}]})
    True
    """
    return canonical({**obj, "content": _content(obj)})


def _match(obj: Mapping[str, Any]) -> str | None:
    """What tells a message across snapshots where it holds more than its role and content
    (a message kept as the API returned it: ``id``, ``type``, ``model``, ``usage``...): its
    role and content, as :func:`_key` reads them."""
    if all(k in ("role", "content") for k in obj):
        return None
    return canonical({"role": obj.get("role"), "content": _content(obj)})


def _content(obj: Mapping[str, Any]) -> Any:
    content = obj.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return _blocks(content)
    return content


def _blocks(blocks: list[Any]) -> list[Any]:
    """Content blocks without their cache breakpoints (a string is a text block)."""
    out: list[Any] = []
    for b in blocks:
        if isinstance(b, str):
            out.append({"type": "text", "text": b})
        elif isinstance(b, dict) and "cache_control" in b:
            out.append({k: v for k, v in b.items() if k != "cache_control"})
        else:
            out.append(b)
    return out


def _part(base: Message, blocks: list[Any], label: str, own: str | None) -> Message:
    """A part of a message cut at its compaction block: one message with the others (one
    K of ``msg-K``; the ``after`` part has the message's name, the others it with
    ``:before`` or ``:compaction``)."""
    key = canonical({"role": base.role, "content": _blocks(blocks), "part": label})
    where = f"{base.where} ({label} its compaction block)"
    return Message(base.role, key, base.file, where, part=(base.key, label, own))


def _compaction(block: Mapping[str, Any], base: Message) -> Message:
    summary = block.get("content")
    text = summary if isinstance(summary, str) and summary else "(compacted history)"
    return Message(
        "compaction", base.key, base.file, base.where, text=text, summary=True, part=base.part
    )


def _message(
    obj: Mapping[str, Any],
    blocks: list[Any],
    base: Message,
    *,
    part: bool = False,
    raw: Mapping[str, Any] | None = None,
) -> Message:
    """A message (or a part of one cut at its compaction block); ``raw``: the message as
    the file holds it, what an extractor is given."""
    text = texts([b for b in blocks if isinstance(b, dict) and b.get("type") == "text"])
    calls = tuple(_call(b, base) for b in blocks if _kind(b) in _CALLS)
    results = tuple(_result(b, base) for b in blocks if _is_result(b))
    own = obj.get("id") if isinstance(obj.get("id"), str) and obj.get("id") else None
    if part:
        own = None  # a part of a message cut at its compaction block: its id is the whole's
    notes = metadata_annotations(obj.get("metadata"), base.file, base.where)
    return Message(
        base.role,
        base.key,
        base.file,
        base.where,
        own,
        text,
        calls,
        results,
        annotations=notes,
        raw=raw,
        match=base.match,
        part=base.part,
    )


def _kind(block: Any) -> str | None:
    kind = block.get("type") if isinstance(block, dict) else None
    return kind if isinstance(kind, str) else None


def _call(block: Mapping[str, Any], base: Message) -> ToolCall:
    call_id, name = block.get("id"), block.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
        raise base.error(f"a {block.get('type')} block needs an 'id' and a 'name'")
    return ToolCall(call_id, name, block.get("input"))


def _is_result(block: Any) -> bool:
    """A tool's result: a ``tool_result`` or ``mcp_tool_result`` block, or a server tool's
    (``web_search_tool_result``, ``web_fetch_tool_result``, ``bash_code_execution_tool_result``
    and the other ``*_tool_result`` blocks that answer a ``tool_use_id``)."""
    kind = _kind(block)
    if kind is None:
        return False
    return kind in _RESULTS or (kind.endswith("_tool_result") and "tool_use_id" in block)


def _result(block: Mapping[str, Any], base: Message) -> ToolResult:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise base.error(f"a {block.get('type')} block needs a 'tool_use_id'")
    content = block.get("content")
    if content is None or isinstance(content, str):
        text = texts(content)
    elif block.get("type") in ("tool_result", "mcp_tool_result") and isinstance(content, list):
        text = texts(content)  # text blocks: what a client tool gave
    else:
        text = canonical(content)  # a server tool's result object (or list), as it is
    exit_code = None
    if isinstance(content, dict):
        code = content.get("return_code")
        if isinstance(code, int) and not isinstance(code, bool):
            exit_code = code  # code execution: the command's own exit code
    error = block.get("is_error") is True or (
        isinstance(content, dict) and str(content.get("type", "")).endswith("_error")
    )
    refused = declined(block.get("is_error"), text)
    return ToolResult(
        call_id, text, error=error and not refused, exit_code=exit_code, declined=refused
    )
