"""OpenAI histories: Chat Completions messages, Responses items, Codex rollouts.

How each shape becomes items is in ``docs/importers.md`` ("openai"). A file
holds one message list (a JSON array, a request body with ``messages`` or
``input``, or JSONL one message a line), a JSON array of such lists (one
snapshot each), or a Codex rollout (JSONL of ``{"type", "payload"}`` records).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from verifier.errors import InputError
from verifier.importers.common import (
    CHAT_FIELDS,
    Message,
    Snapshot,
    ToolCall,
    ToolResult,
    call_arguments,
    canonical,
    gives_items,
    matching,
    metadata_annotations,
    split_at_markers,
)
from verifier.importers.detect import foreign_line, foreign_message, no_items
from verifier.importers.sources import Source, is_jsonl, read_json, read_jsonl, texts

__all__ = ["item_message", "snapshots"]

FORMAT = "openai"
COMPACTION = "openai:compaction"
CODEX_COMPACTED = "codex:compacted"
_CODEX_RECORDS = frozenset(
    {"session_meta", "response_item", "compacted", "turn_context", "event_msg"}
)
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_PROCESS_EXIT = re.compile(r"^Process exited with code (-?\d+)\s*$", re.MULTILINE)


def snapshots(sources: Sequence[Source]) -> list[Snapshot]:
    """The snapshots of the given files, in order (``docs/importers.md``, "openai")."""
    seen: set[str] = set()
    out: list[Snapshot] = []
    for src in sources:
        got = _file_snapshots(src, seen, out[-1].messages if out else ())
        if not gives_items(got):
            raise no_items(FORMAT, src)  # each file, not only the first: never an empty window
        out.extend(got)
    return out


def _file_snapshots(src: Source, seen: set[str], previous: Sequence[Message]) -> list[Snapshot]:
    if is_jsonl(src):
        records = list(read_jsonl(src))
        if any(_is_codex_record(obj) for _, obj in records):
            return _codex(src, records)
        messages = [
            item_message(obj, src.name, f"line {n}") for n, obj in records if not _is_meta_line(obj)
        ]
        return _marked(messages, seen, previous)
    value = read_json(src)
    if _is_codex_record(value):
        # a rollout of one record: one line, which no JSONL reading of its lines tells
        first = next(n for n, _o, _s, line in src.lines() if line.strip())
        return _codex(src, [(first, value)])
    out: list[Snapshot] = []
    for where, items in _lists(src, value):
        messages = [
            item_message(obj, src.name, f"{where}message {i}") for i, obj in enumerate(items)
        ]
        out.extend(_marked(messages, seen, out[-1].messages if out else previous))
    return out


def _marked(
    messages: Sequence[Message], seen: set[str], previous: Sequence[Message]
) -> list[Snapshot]:
    marks = [m.summary and m.role == "compaction" for m in messages]
    return split_at_markers(
        messages, marks, seen, COMPACTION, kept=_kept_by_compaction, previous=previous
    )


def _kept_by_compaction(m: Message) -> bool:
    """A message a Responses compact output keeps before its compaction item: a user's."""
    return m.role == "user" and not m.summary


def _lists(src: Source, value: Any) -> list[tuple[str, list[Any]]]:
    """The message lists of a JSON file (its value): one list, a request body, or a list of
    lists."""
    if isinstance(value, dict):
        if "role" in value or "type" in value:
            return [("", [value])]
        if isinstance(value.get("messages"), list):
            return [("", value["messages"])]
        if "input" in value:
            # a Responses request's instructions are a system message before its input
            told = value.get("instructions")
            head: list[Any] = []
            if isinstance(told, str) and told:
                head = [{"role": "system", "content": told}]
            elif isinstance(told, list):
                head = told
            given = value["input"]
            if isinstance(given, str):
                return [("", [*head, {"role": "user", "content": given}])]
            if isinstance(given, list):
                return [("", [*head, *given])]
        raise InputError(
            "the file is a JSON object without a 'messages' or 'input' list",
            file=src.name,
            line=1,
            fix="give a message list, a request body, or a list of message lists",
        )
    if not isinstance(value, list):
        raise InputError(
            "the file must hold a JSON array of messages", file=src.name, line=1, fix="see docs"
        )
    if value and all(isinstance(v, list) for v in value):
        return [(f"snapshot {k} ", v) for k, v in enumerate(value)]
    if value and all(_is_body(v) for v in value):
        # request bodies as recorded, one per call: each one a snapshot
        return [(f"snapshot {k} ", _lists(src, v)[0][1]) for k, v in enumerate(value)]
    return [("", value)]


def _is_body(value: Any) -> bool:
    """Is this a request body (Chat ``messages`` or Responses ``input``), not a message?"""
    return (
        isinstance(value, dict)
        and "role" not in value
        and "type" not in value
        and (isinstance(value.get("messages"), list) or isinstance(value.get("input"), (str, list)))
    )


def _is_codex_record(obj: Any) -> bool:
    kind = obj.get("type") if isinstance(obj, dict) else None
    return isinstance(kind, str) and kind in _CODEX_RECORDS and "payload" in obj


def _is_meta_line(obj: Any) -> bool:
    """Lines of older rollouts that are not items: session meta and state records."""
    if not isinstance(obj, dict):
        return False
    return "record_type" in obj or ("type" not in obj and "role" not in obj)


def _codex(src: Source, records: Sequence[tuple[int, Any]]) -> list[Snapshot]:
    """A Codex rollout: response items, with each ``compacted`` record a rewrite."""
    out: list[Snapshot] = []
    current: list[Message] = []
    stamps: dict[str, str] = {}  # a message (by what tells it) -> when its record was written
    for n, obj in records:
        if not isinstance(obj, dict):
            raise InputError("each rollout line must be a JSON object", file=src.name, line=n)
        other = foreign_line(obj, "codex")
        if other is not None:
            raise InputError(
                f"this line is {other}, not a Codex rollout record: a file holds one history"
                " of one format",
                file=src.name,
                line=n,
                fix="import each format's history on its own",
            )
        kind, payload = obj.get("type"), obj.get("payload")
        at = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
        if kind == "response_item":
            m = item_message(payload, src.name, f"line {n}", at=at)
            if m.summary and m.role == "compaction":
                # a Responses compaction item: the model sees the rollout from it on
                out.append(Snapshot(tuple(current)))
                current = [m]
                out.append(Snapshot(tuple(current), COMPACTION))
            else:
                current.append(m)
                if m.at is not None:
                    stamps.setdefault(m.same, m.at)
        elif kind == "compacted":
            out.append(Snapshot(tuple(current)))
            current = _compacted(payload, src.name, n, current, stamps)
            # the replacement history is the window: what came later has records of its own
            out.append(Snapshot(tuple(current), CODEX_COMPACTED, whole=True))
    out.append(Snapshot(tuple(current)))
    return out


def _compacted(
    payload: Any, file: str, n: int, before: Sequence[Message], stamps: Mapping[str, str]
) -> list[Message]:
    """The window after a ``compacted`` record: its replacement history, else its summary.

    A message of the replacement history that the rollout recorded before is that
    message, as it was appended (its time with it), and one an earlier compaction made
    its summary stays a summary."""
    if not isinstance(payload, dict):
        raise InputError(f"line {n}: a compacted record needs a payload object", file=file, line=n)
    summary = payload.get("message") if isinstance(payload.get("message"), str) else ""
    history = payload.get("replacement_history")
    if not isinstance(history, list):
        # Codex's own compaction (the record gives its summary alone) rebuilds the history
        # as the user's messages so far, then the summary
        text = summary or "(compacted)"
        key = canonical({"compacted": payload})
        kept = [m for m in before if m.role == "user" and not m.summary]
        return [*kept, Message("user", key, file, f"line {n}", text=text, summary=True)]
    known = {m.same for m in before}
    summaries = {m.same for m in before if m.summary}
    out = []
    for i, obj in enumerate(history):
        m = item_message(obj, file, f"line {n} replacement_history {i}")
        if m.same in summaries or (summary and m.same not in known and summary.strip() in m.text):
            m = _as_summary(m)
        if m.at is None and m.same in stamps:
            m = dataclasses.replace(m, at=stamps[m.same])
        out.append(m)
    return out


def _as_summary(m: Message) -> Message:
    return dataclasses.replace(m, summary=True)


def item_message(obj: Any, file: str, where: str, *, at: str | None = None) -> Message:
    """One Chat Completions message or Responses item as a :class:`Message`."""
    if not isinstance(obj, dict):
        raise InputError(f"{where}: a message must be a JSON object", file=file)
    foreign_message(obj, FORMAT, file, where)
    kind = obj.get("type")
    if kind in (None, "message"):
        return _chat(obj, file, where, at)
    reader = _ITEMS.get(kind) if isinstance(kind, str) else None
    key = canonical(obj)
    own = obj.get("id") if isinstance(obj.get("id"), str) and obj.get("id") else None
    # an item's status ("in_progress", "completed") does not make it another item
    match = matching(obj, [k for k in obj if k != "status"])
    if reader is None:
        return Message("assistant", key, file, where, own, match=match)
    return reader(obj, Message("assistant", key, file, where, own, at=at, match=match))


def _chat(obj: dict[str, Any], file: str, where: str, at: str | None) -> Message:
    role = obj.get("role")
    key = canonical(obj)
    match = matching(obj, CHAT_FIELDS)
    base = Message(str(role), key, file, where, match=match)
    # the SDK's model_dump() writes "function_call": null on every assistant message
    if role == "function" or obj.get("function_call") is not None:
        raise base.error(
            "legacy function messages have no call id", fix="use tool_calls and role 'tool'"
        )
    if not isinstance(role, str) or role not in _ROLES:
        raise base.error(f"unknown role {role!r}", fix=f"use one of {', '.join(sorted(_ROLES))}")
    own = obj.get("id") if isinstance(obj.get("id"), str) and obj.get("id") else None
    notes = metadata_annotations(obj.get("metadata"), file, where)
    if role == "tool":
        content = texts(obj.get("content"))
        result = ToolResult(
            _str(obj, "tool_call_id", base), content, _name(obj), _sdk_error(content)
        )
        return Message(
            "tool", key, file, where, own, results=(result,), annotations=notes, match=match
        )
    calls = tuple(_chat_call(c, base, k) for k, c in enumerate(_list(obj, "tool_calls", base)))
    text = texts(obj.get("content"))
    return Message(
        role, key, file, where, own, text, calls, at=at, annotations=notes, match=match
    )


def _chat_call(call: Any, base: Message, k: int) -> ToolCall:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        raise base.error(f"tool_calls[{k}] must be an object with 'function'")
    fn = call["function"]
    args = call_arguments(fn.get("arguments"))
    return ToolCall(_str(call, "id", base), _str(fn, "name", base), args)


def _function_call(obj: dict[str, Any], base: Message) -> Message:
    args = call_arguments(obj.get("arguments"))
    call = ToolCall(_call_id(obj, base), _str(obj, "name", base), args)
    return _with(base, calls=(call,))


def _custom_call(obj: dict[str, Any], base: Message) -> Message:
    call = ToolCall(_call_id(obj, base), _str(obj, "name", base), obj.get("input"))
    return _with(base, calls=(call,))


def _local_shell_call(obj: dict[str, Any], base: Message) -> Message:
    call = ToolCall(_call_id(obj, base), "local_shell", obj.get("action"))
    return _with(base, calls=(call,))


def _shell_call(obj: dict[str, Any], base: Message) -> Message:
    action = obj.get("action")
    if not isinstance(action, dict):
        action = {}
    commands = action.get("commands")
    if isinstance(commands, list) and all(isinstance(c, str) for c in commands):
        arguments: Any = {"command": "; ".join(commands)}
    else:
        arguments = action
    return _with(base, calls=(ToolCall(_call_id(obj, base), "shell", arguments),))


def _output(obj: dict[str, Any], base: Message) -> Message:
    """``function_call_output`` and its kin: the output text, by ``call_id``.

    Codex writes some outputs as ``{"content", "success"}`` objects, older
    rollouts as a JSON text with ``metadata.exit_code``, and ``exec_command``
    outputs with a ``Process exited with code N`` header line: all are read.
    """
    raw = obj.get("output")
    error, exit_code = False, None
    if isinstance(raw, dict):
        error = raw.get("success") is False
        raw = raw.get("content")
    content = texts(raw)
    error = error or _sdk_error(content)
    exit_code = _metadata_exit_code(content)
    if exit_code is None:
        found = _PROCESS_EXIT.search(content)
        exit_code = int(found.group(1)) if found is not None else None
    result = ToolResult(_call_id(obj, base), content, None, error, exit_code)
    return _with(base, role="tool", results=(result,))


_SDK_ERROR = "An error occurred while running the tool."
"""How the Agents SDK's default ``failure_error_function`` opens the output it gives the
model for a tool that raised (the Responses and Chat formats have no error flag)."""


def _sdk_error(content: str) -> bool:
    """Is this the Agents SDK's output for a tool that raised?"""
    return content.startswith(_SDK_ERROR)


def _metadata_exit_code(content: str) -> int | None:
    """``metadata.exit_code`` of an output written as JSON text, if it is one."""
    if not content.startswith("{"):
        return None
    try:
        value = json.loads(content)
    except (ValueError, RecursionError):
        return None
    meta = value.get("metadata") if isinstance(value, dict) else None
    code = meta.get("exit_code") if isinstance(meta, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _shell_output(obj: dict[str, Any], base: Message) -> Message:
    """``shell_call_output``: stdout and stderr of each command, with its exact exit code."""
    chunks = obj.get("output")
    parts: list[str] = []
    codes: list[int] = []
    timed_out = False
    for chunk in chunks if isinstance(chunks, list) else []:
        if not isinstance(chunk, dict):
            continue
        streams = (chunk.get("stdout"), chunk.get("stderr"))
        parts.extend(s for s in streams if isinstance(s, str) and s)
        outcome = chunk.get("outcome")
        if not isinstance(outcome, dict):
            outcome = {}
        if outcome.get("type") == "timeout":
            timed_out = True
        code = outcome.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool):
            codes.append(code)
    failing = [c for c in codes if c != 0]
    exit_code = failing[0] if failing else (codes[-1] if codes else None)
    result = ToolResult(_call_id(obj, base), "\n".join(parts), None, timed_out, exit_code)
    return _with(base, role="tool", results=(result,))


def _mcp_call(obj: dict[str, Any], base: Message) -> Message:
    """``mcp_call``: a call to a remote MCP server's tool and its result in one item
    (``output``, or ``error``: failed)."""
    call_id = _call_id(obj, base)
    call = ToolCall(call_id, _str(obj, "name", base), call_arguments(obj.get("arguments")))
    error = obj.get("error")
    failed = error not in (None, "", {}) or obj.get("status") == "failed"
    output = obj.get("output")
    content = texts(output) if output is not None else _error_text(error)
    result = ToolResult(call_id, content, call.name, failed)
    return _with(base, calls=(call,), results=(result,))


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        message = error.get("message")
        return message if isinstance(message, str) else canonical(error)
    return error if isinstance(error, str) else ""


def _apply_patch_call(obj: dict[str, Any], base: Message) -> Message:
    """``apply_patch_call``: the patch ``operation`` (file, diff) is the call's arguments."""
    return _with(base, calls=(ToolCall(_call_id(obj, base), "apply_patch", obj.get("operation")),))


def _apply_patch_output(obj: dict[str, Any], base: Message) -> Message:
    """``apply_patch_call_output``: failed when its ``status`` is ``failed``."""
    output = obj.get("output")
    content = texts(output) if output is not None else ""
    result = ToolResult(_call_id(obj, base), content, None, obj.get("status") == "failed")
    return _with(base, role="tool", results=(result,))


def _compaction(obj: dict[str, Any], base: Message) -> Message:
    """A ``compaction`` item: the summary the service keeps (opaque) marks a boundary."""
    text = obj.get("summary") if isinstance(obj.get("summary"), str) else ""
    return _with(base, role="compaction", text=text or "(compacted history)", summary=True)


_ITEMS = {
    "function_call": _function_call,
    "custom_tool_call": _custom_call,
    "local_shell_call": _local_shell_call,
    "shell_call": _shell_call,
    "function_call_output": _output,
    "custom_tool_call_output": _output,
    "local_shell_call_output": _output,
    "shell_call_output": _shell_output,
    "mcp_call": _mcp_call,
    "apply_patch_call": _apply_patch_call,
    "apply_patch_call_output": _apply_patch_output,
    "compaction": _compaction,
}


def _with(base: Message, **changes: Any) -> Message:
    return dataclasses.replace(base, **changes)


def _call_id(obj: Mapping[str, Any], base: Message) -> str:
    value = obj.get("call_id", obj.get("id"))
    if not isinstance(value, str) or not value:
        raise base.error("it has no 'call_id'", fix="give every call and output its call_id")
    return value


def _str(obj: Mapping[str, Any], field: str, base: Message) -> str:
    value = obj.get(field)
    if not isinstance(value, str) or not value:
        raise base.error(f"'{field}' must be a non-empty string", fix=f"give it a '{field}'")
    return value


def _name(obj: Mapping[str, Any]) -> str | None:
    name = obj.get("name")
    return name if isinstance(name, str) and name else None


def _list(obj: Mapping[str, Any], field: str, base: Message) -> list[Any]:
    value = obj.get(field)
    if value is None:
        return []
    if not isinstance(value, list):
        raise base.error(f"'{field}' must be a list")
    return value
