"""LangChain histories: ``messages_to_dict`` output.

A file holds one list of ``{"type": ..., "data": {...}}`` messages or a JSON
array of such lists; each list is one snapshot. A summary message (a
``HumanMessage`` with ``additional_kwargs.lc_source == "summarization"``) and
tool messages cleared by context editing (``response_metadata.context_editing``)
mark the snapshot that shows them first as a rewrite. See ``docs/importers.md``
("langchain").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from verifier.errors import InputError
from verifier.importers.common import (
    Message,
    Snapshot,
    ToolCall,
    ToolResult,
    call_arguments,
    canonical,
    gives_items,
    metadata_annotations,
    split_at_markers,
    stable_key,
)
from verifier.importers.detect import LANGCHAIN_CHUNKS, LANGCHAIN_TYPES, no_items
from verifier.importers.sources import Source, read_json, texts

__all__ = ["snapshots"]

FORMAT = "langchain"
SUMMARIZATION = "langchain:summarization"
CONTEXT_EDITING = "langchain:context_editing"
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
_SUMMARY_PREFIX = "Here is a summary of the conversation to date:"
_SYSTEM_SUMMARY_PREFIX = "Summary of the conversation so far:"
"""How langmem's ``summarize_messages`` opens the system message that holds its summary."""


def snapshots(sources: Sequence[Source]) -> list[Snapshot]:
    """One snapshot per message list, each marked by what produced it; a list that holds a
    summary after other messages is the list before it, then a compaction: the model sees
    the list from its summary on (after the leading system messages)."""
    out: list[Snapshot] = []
    before: set[str] = set()
    seen: set[str] = set()  # the summaries met in earlier lists
    for src in sources:
        got: list[Snapshot] = []
        for where, raw in _lists(src):
            messages = [_message(obj, src.name, f"{where}message {i}") for i, obj in enumerate(raw)]
            lead = 0
            while lead < len(messages) and messages[lead].role == "system":
                if messages[lead].summary:
                    break
                lead += 1
            rest = messages[lead:]
            marks = [m.summary for m in rest]
            for snap in split_at_markers(rest, marks, seen, SUMMARIZATION):
                window = (*messages[:lead], *snap.messages)
                policy = snap.policy
                if policy is None:
                    policy = _editing(window, before)
                got.append(Snapshot(window, policy))
            before = {m.key for m in messages}
        if not gives_items(got):
            raise no_items(FORMAT, src)  # each file, not only the first: never an empty window
        out.extend(got)
    return _ids_given_later(out)


def _ids_given_later(snaps: Sequence[Snapshot]) -> list[Snapshot]:
    """The snapshots, where a message that shows an id of its own only from some
    snapshot on is the message it was without one.

    SummarizationMiddleware gives every message without an id a fresh uuid before
    it summarizes, so the messages it keeps come back under ids never seen. A
    message with a new id takes the place of an equal message (:func:`stable_key`)
    the snapshot before held without an id and this one holds no more: that id is
    dropped wherever it appears, and the message keeps its identity and its ``msg-K``.
    """
    known: set[str] = set()
    gained: set[str] = set()
    previous: Sequence[Message] = ()
    out: list[Snapshot] = []
    for snap in snaps:
        left = Counter(stable_key(m) for m in previous if m.id is None)
        left.subtract(stable_key(m) for m in snap.messages if m.id is None)
        messages = []
        for m in snap.messages:
            if m.id is not None and m.id not in known and left[key := stable_key(m)] > 0:
                left[key] -= 1
                gained.add(m.id)
            known.update(() if m.id is None else (m.id,))
            messages.append(replace(m, id=None) if m.id in gained else m)
        previous = tuple(messages)
        out.append(replace(snap, messages=previous))
    return out


def _editing(messages: Sequence[Message], before: set[str]) -> str | None:
    """The context-editing marker a snapshot shows for the first time, if any."""
    new = [m for m in messages if m.key not in before]
    if before and any(r.cleared for m in new for r in m.results):
        return CONTEXT_EDITING
    return None


def _lists(src: Source) -> list[tuple[str, list[Any]]]:
    value = read_json(src)
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if not isinstance(value, list):
        raise InputError(
            "the file must hold a JSON array of messages_to_dict output", file=src.name, line=1
        )
    if value and all(isinstance(v, list) for v in value):
        return [(f"snapshot {k} ", v) for k, v in enumerate(value)]
    return [("", value)]


def as_dict_form(obj: Any) -> Any:
    """A message in ``messages_to_dict`` form, from the other forms LangChain writes it in:
    ``dumpd`` (``{"lc": 1, "type": "constructor", "id": [..., "HumanMessage"], "kwargs":
    {...}}``) and a flat ``model_dump`` (``{"type": "human", "content": ...}``). Anything
    else is returned as it is.

    >>> as_dict_form({"type": "human", "content": "hi"})
    {'type': 'human', 'data': {'type': 'human', 'content': 'hi'}}
    >>> as_dict_form({"lc": 1, "type": "constructor", "kwargs": {"content": "hi"},
    ...               "id": ["langchain", "schema", "messages", "AIMessage"]})["type"]
    'ai'
    """
    if not isinstance(obj, dict) or isinstance(obj.get("data"), dict):
        return obj
    path, kwargs = obj.get("id"), obj.get("kwargs")
    if obj.get("lc") == 1 and isinstance(kwargs, dict) and isinstance(path, list) and path:
        name = path[-1] if isinstance(path[-1], str) else ""
        if name in LANGCHAIN_CHUNKS:
            return {"type": name, "data": kwargs}
        if name.endswith("Message"):
            return {"type": name.removesuffix("Message").lower(), "data": kwargs}
        return obj
    kind = obj.get("type")
    if not isinstance(kind, str):
        return obj
    if (kind in LANGCHAIN_TYPES or kind in LANGCHAIN_CHUNKS) and "content" in obj:
        return {"type": kind, "data": obj}
    return obj


def _message(obj: Any, file: str, where: str) -> Message:
    obj = as_dict_form(obj)
    if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict):
        raise InputError(
            f"{where}: a message must be an object with 'type' and 'data'",
            file=file,
            fix="give messages_to_dict output",
        )
    kind, data = obj.get("type"), obj["data"]
    role = _role(kind, data)
    # what tells it across snapshots: role, content, tool calls and tool_call_id, not the
    # metadata a later dump fills in (usage, response metadata)
    told = {"role": role, **{k: data.get(k) for k in ("content", "tool_calls", "tool_call_id")}}
    match = canonical({k: v for k, v in told.items() if v not in (None, [])})
    base = Message(str(kind), canonical(obj), file, where, match=match)
    if role not in ("user", "assistant", "system", "tool", "developer"):
        if kind in ("chat", "ChatMessageChunk"):
            raise base.error(
                f"a chat message of unknown role {data.get('role')!r}",
                fix="use the role human, ai, user, assistant, system or tool",
            )
        raise base.error(f"unknown message type {kind!r}", fix="use human, ai, system or tool")
    own = data.get("id") if isinstance(data.get("id"), str) and data.get("id") else None
    extra = data.get("additional_kwargs") if isinstance(data.get("additional_kwargs"), dict) else {}
    meta = data.get("response_metadata") if isinstance(data.get("response_metadata"), dict) else {}
    notes = metadata_annotations(extra, file, where) + metadata_annotations(meta, file, where)
    text = texts(data.get("content"))
    if role == "tool":
        result = _tool_result(data, text, meta, base)
        return Message(
            "tool", base.key, file, where, own, results=(result,), annotations=notes, match=match
        )
    summary = (
        role == "user"
        and (extra.get("lc_source") == "summarization" or text.startswith(_SUMMARY_PREFIX))
    ) or (role == "system" and text.startswith(_SYSTEM_SUMMARY_PREFIX))
    calls = tuple(_call(c, base, k) for k, c in enumerate(_tool_calls(data, base)))
    calls += tuple(_invalid_call(c) for c in _listed(data, "invalid_tool_calls"))
    if not calls:
        calls = tuple(_legacy_call(c) for c in _listed(extra, "tool_calls"))
    return Message(
        role,
        base.key,
        file,
        where,
        own,
        text,
        calls,
        summary=summary,
        annotations=notes,
        match=match,
    )


def _role(kind: Any, data: Mapping[str, Any]) -> Any:
    """The role of a message type (``human``, ``ai``, ... and their ``...MessageChunk`` forms)."""
    if kind in ("chat", "ChatMessageChunk"):
        role = data.get("role")  # any string: LangChain's names (human, ai) or the API's
        return _ROLES.get(role, role) if isinstance(role, str) else None
    name = str(kind)
    chunks = {
        "HumanMessageChunk": "human",
        "AIMessageChunk": "ai",
        "SystemMessageChunk": "system",
        "ToolMessageChunk": "tool",
    }
    if not isinstance(name, str):
        return None
    role = chunks.get(name, name)
    return _ROLES.get(role) if isinstance(role, str) else None


def _tool_calls(data: Mapping[str, Any], base: Message) -> list[Any]:
    calls = data.get("tool_calls")
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise base.error("'tool_calls' must be a list")
    return calls


def _listed(obj: Mapping[str, Any], field: str) -> list[Mapping[str, Any]]:
    """The objects of a list field that carry a call id (what pairs a result with them)."""
    value = obj.get(field)
    if not isinstance(value, list):
        return []
    return [c for c in value if isinstance(c, dict) and isinstance(c.get("id"), str) and c["id"]]


def _invalid_call(call: Mapping[str, Any]) -> ToolCall:
    """An ``invalid_tool_calls`` entry: a call the model made whose arguments did not parse
    (``args`` the raw string); a result may still answer it."""
    name = call.get("name")
    return ToolCall(
        call["id"], name if isinstance(name, str) else "invalid_tool_call", call.get("args")
    )


def _legacy_call(call: Mapping[str, Any]) -> ToolCall:
    """A call as langchain-core 0.1 kept it, in ``additional_kwargs.tool_calls`` (the OpenAI
    form: ``function.name`` and ``function.arguments``, a JSON string)."""
    function = call.get("function")
    if not isinstance(function, dict):
        function = {}
    name = function.get("name")
    args = call_arguments(function.get("arguments"))
    return ToolCall(call["id"], name if isinstance(name, str) else "function", args)


def _call(call: Any, base: Message, k: int) -> ToolCall:
    if not isinstance(call, dict):
        raise base.error(f"tool_calls[{k}] must be an object")
    call_id, name = call.get("id"), call.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
        raise base.error(f"tool_calls[{k}] needs an 'id' and a 'name'")
    return ToolCall(call_id, name, call.get("args"))


def _tool_result(
    data: Mapping[str, Any], text: str, meta: Mapping[str, Any], base: Message
) -> ToolResult:
    """A ToolMessage: ``status`` says an error, ``artifact.exit_code`` the exact exit code."""
    call_id = data.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise base.error("a tool message needs a 'tool_call_id'")
    artifact = data.get("artifact")
    code = artifact.get("exit_code") if isinstance(artifact, dict) else None
    exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
    editing = meta.get("context_editing")
    cleared = isinstance(editing, dict) and editing.get("cleared") is True
    name = data.get("name") if isinstance(data.get("name"), str) else None
    return ToolResult(call_id, text, name, data.get("status") == "error", exit_code, cleared)
