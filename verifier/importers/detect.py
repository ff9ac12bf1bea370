"""What a history file is: the format that reads it, told from its content.

:func:`describe` looks at one file (a zip, a JSON document or JSONL, and the
shape of the messages or records in it) and says what it is in words a user
recognises, with the FORMAT that reads it. ``FORMAT auto`` uses it to pick the
format (:func:`detect_format`); a file given with the wrong FORMAT, or as JSON
where the format reads JSONL (or the other way round), is refused with its
words (``docs/importers.md``, "Choosing the format").

>>> from verifier.importers.sources import Source
>>> describe(Source("h.json", b'[{"role": "user", "content": "hi"}]')).format
'openai'
>>> describe(Source("s.jsonl", b'{"type": "user", "uuid": "u1", "message": {}}\\n')).what
'a Claude Code session (JSONL records)'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verifier.errors import InputError
from verifier.importers.sources import Source

__all__ = ["CONTAINERS", "Shape", "describe", "detect_format", "foreign_line", "mismatch"]

CONTAINERS: Mapping[str, frozenset[str]] = {
    "claude-code": frozenset({"jsonl"}),
    "openai": frozenset({"json", "jsonl"}),
    "anthropic": frozenset({"json"}),
    "langchain": frozenset({"json"}),
    "inspect": frozenset({"json", "zip"}),
}
"""What each FORMAT reads: one JSON document, JSONL (one value a line), a zip."""

_NAMES = {
    "claude-code": "a Claude Code session (JSONL records)",
    "openai": "OpenAI messages (Chat Completions, Responses items or a Codex rollout)",
    "anthropic": "Anthropic Messages API messages",
    "langchain": "LangChain messages (messages_to_dict output)",
    "inspect": "an inspect_ai eval log or inspect_ai messages",
}
_CC_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "progress",
    }
)
_CODEX_TYPES = frozenset(
    {"session_meta", "response_item", "compacted", "turn_context", "event_msg"}
)
_RESPONSES_TYPES = frozenset(
    {
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "compaction",
        "reasoning",
    }
)
_ANTHROPIC_BLOCKS = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "compaction",
        "server_tool_use",
        "mcp_tool_use",
        "mcp_tool_result",
        "web_search_tool_result",
    }
)
_OPENAI_PARTS = frozenset({"input_text", "output_text", "refusal", "image_url", "input_image"})
_SAMPLE = 200


@dataclass(frozen=True, slots=True)
class Shape:
    """What a file is: the FORMAT that reads it (None: none does), in words, and its container.

    ``container`` is ``json`` (one document), ``jsonl`` (one value a line),
    ``zip`` or ``other``; ``hint`` says how to make it readable when no FORMAT
    reads it as it is.
    """

    format: str | None
    what: str
    container: str
    hint: str | None = None
    sure: bool = True
    """False when other formats read the same content (plain role/content messages)."""

    def fits(self, fmt: str) -> bool:
        """Can FORMAT ``fmt`` read this file (as far as its shape tells)?"""
        if self.format is not None and self.format != fmt:
            return False
        return self.container in CONTAINERS.get(fmt, frozenset())

    def fix_for(self, fmt: str) -> str:
        """The remedy for a user who named FORMAT ``fmt`` for this file."""
        if self.format is not None and self.format != fmt and self.hint is None:
            return f"import it as `{self.format}` (ctxproof import {self.format} FILE), or use auto"
        if self.hint is not None:
            return self.hint
        wanted = " or ".join(sorted(CONTAINERS.get(fmt, frozenset())))
        return f"give {_NAMES.get(fmt, fmt)} as {wanted} (docs/importers.md)"


def describe(src: Source) -> Shape:
    """What ``src`` is, from its content (never raises for bad content: it says so).

    JSONL is told from its first lines, without reading the rest of the file
    into memory; a JSON document is read whole.
    """
    if src.head(4) == b"PK\x03\x04":
        return Shape("inspect", "a zip archive (an inspect_ai .eval log)", "zip")
    try:
        src.check_utf8()
    except InputError:
        return Shape(None, "not UTF-8 text", "other")
    head = _jsonl_head(src)
    if head == "":
        return Shape(None, "an empty file", "other")
    if head is not None:
        values = _jsonl_values(head)
        if values is None:  # its first values lie past the lines sampled
            return Shape(None, "neither JSON nor JSONL", "other")
        return _describe_jsonl(values)
    text = src.text
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack
        values = _jsonl_values(text)
        if values is None:
            return Shape(None, "neither JSON nor JSONL", "other")
        return _describe_jsonl(values)
    if isinstance(value, dict) and "\n" not in text.strip():
        one = _describe_jsonl([value])  # one line: a JSONL file of one record, too
        if one.format == "claude-code" or one.what.startswith("a Codex"):
            return one
    return _describe_document(value)


def _jsonl_head(src: Source) -> str | None:
    """The first lines of a file that is JSONL by its start, "" for a blank file, else None.

    The file is JSONL by its start when its first non-blank line is a JSON value
    and another non-blank line follows: the whole is then no JSON document
    (nothing but white space may follow a document's value). What is given is
    the first ``_SAMPLE + 1`` lines, which is all :func:`_jsonl_values` reads.
    """
    lines: list[str] = []
    first: str | None = None
    jsonl = False
    for _lineno, _offset, _size, line in src.lines():
        if len(lines) <= _SAMPLE:
            lines.append(line)
        elif jsonl:
            break
        if jsonl or not line.strip():
            continue
        if first is None:
            first = line
            continue
        try:
            json.loads(first)
        except (ValueError, RecursionError):
            return None
        jsonl = True
    if first is None:
        return ""
    return "\n".join(lines) if jsonl else None


def _jsonl_values(text: str) -> list[Any] | None:
    """The first values of a JSONL text, or None when its first lines are not JSON."""
    out: list[Any] = []
    for line in text.split("\n", _SAMPLE + 1)[:_SAMPLE]:
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except (ValueError, RecursionError):
            return out or None
    return out or None


def _describe_jsonl(values: list[Any]) -> Shape:
    objs = [v for v in values if isinstance(v, dict)]
    if any(_kind(o) in _CODEX_TYPES and "payload" in o for o in objs):
        return Shape("openai", "a Codex rollout (JSONL of type/payload records)", "jsonl")
    if any(_is_cc_record(o) for o in objs):
        return Shape("claude-code", _NAMES["claude-code"], "jsonl")
    fmt, what, sure = _classify(objs)
    if fmt is None:
        return Shape(None, f"JSONL of {what}", "jsonl")
    hint = None
    if "jsonl" not in CONTAINERS[fmt]:
        hint = f"write the {what} as one JSON array, which `{fmt}` reads"
    return Shape(fmt, f"JSONL of {what}, one a line", "jsonl", hint, sure)


def _describe_document(value: Any) -> Shape:
    if isinstance(value, dict):
        if isinstance(value.get("samples"), list) or isinstance(value.get("eval"), dict):
            return Shape("inspect", "an inspect_ai eval log (JSON)", "json")
        if isinstance(value.get("loglines"), list):
            return Shape(
                "claude-code",
                "a JSON document of Claude Code records under 'loglines' (an export)",
                "json",
                hint="write its records one a line, as Claude Code does:"
                " jq -c '.loglines[]' FILE > session.jsonl",
            )
        for key in ("messages", "input"):
            if isinstance(value.get(key), list):
                if not value[key]:
                    return Shape(None, f"a request body whose '{key}' is an empty list", "json")
                fmt, what, sure = _classify(value[key])
                if not sure and key == "messages" and "system" in value:
                    fmt, what, sure = "anthropic", "Anthropic Messages API messages", True
                return _document(fmt, f"a request body whose '{key}' holds {what}", sure)
        if "role" in value or "type" in value:
            fmt, what, sure = _classify([value])
            return _document(fmt, f"one message object ({what})", sure)
        keys = ", ".join(sorted(value)[:6]) or "none"
        return Shape(None, f"a JSON object with the keys {keys}", "json")
    if isinstance(value, list):
        if not value:
            return Shape(None, "an empty JSON array", "json")
        if all(isinstance(v, list) for v in value):
            inner = [m for v in value for m in v]
            fmt, what, sure = _classify(inner)
            return _document(fmt, f"a JSON array of snapshots of {what}", sure)
        if any(_is_cc_record(v) for v in value if isinstance(v, dict)):
            return Shape(
                "claude-code",
                "a JSON array of Claude Code records",
                "json",
                hint="write its records one a line, as Claude Code does:"
                " jq -c '.[]' FILE > session.jsonl",
            )
        fmt, what, sure = _classify(value)
        return _document(fmt, f"a JSON array of {what}", sure)
    return Shape(None, f"a JSON {type(value).__name__}", "json")


def _document(fmt: str | None, what: str, sure: bool = True) -> Shape:
    hint = None
    if fmt is not None and "json" not in CONTAINERS[fmt]:
        hint = f"`{fmt}` reads JSONL: write one value a line"
    return Shape(fmt, what, "json", hint, sure)


def _kind(obj: Mapping[str, Any], key: str = "type") -> str | None:
    """A string field of an object, or None (a mutated file may hold any value there)."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _is_cc_record(obj: Mapping[str, Any]) -> bool:
    if _kind(obj) not in _CC_TYPES:
        return False
    return any(k in obj for k in ("uuid", "sessionId", "parentUuid", "leafUuid")) or (
        isinstance(obj.get("message"), dict) and "role" not in obj
    )


def _classify(messages: Iterable[Any]) -> tuple[str | None, str, bool]:
    """(FORMAT, words, sure) for a list of messages; FORMAT None when nothing tells.

    Plain role/content messages are read by ``openai`` (and ``anthropic``): not sure.
    """
    votes: dict[str, int] = {}
    plain = 0
    for m in list(messages)[:_SAMPLE]:
        if not isinstance(m, dict):
            continue
        fmt = _message_format(m)
        if fmt is None:
            plain += "role" in m
            continue
        votes[fmt] = votes.get(fmt, 0) + 1
    words = {
        "langchain": "LangChain messages (messages_to_dict output)",
        "claude-code": "Claude Code records",
        "inspect": "inspect_ai ChatMessages",
        "anthropic": "Anthropic Messages API messages",
        "openai": "chat-completions messages",
        "responses": "Responses API items",
    }
    if len(votes) == 1:
        (fmt,) = votes
        return ("openai" if fmt == "responses" else fmt), words[fmt], True
    if not votes:
        if plain:
            return "openai", "chat messages (role and content)", False
        return None, "values that are no messages", True
    if set(votes) <= {"openai", "responses"}:
        return "openai", "chat-completions messages and Responses items", True
    return None, "messages of several formats (" + ", ".join(sorted(votes)) + ")", True


LANGCHAIN_TYPES = frozenset({"human", "ai", "system", "tool", "chat", "developer"})
"""The ``type`` of a LangChain message (``BaseMessage.type``)."""
LANGCHAIN_CHUNKS = frozenset(
    {"HumanMessageChunk", "AIMessageChunk", "SystemMessageChunk", "ToolMessageChunk",
     "ChatMessageChunk"}
)  # fmt: skip
"""The ``type`` of a LangChain message chunk."""


def _langchain_other_form(m: Mapping[str, Any]) -> bool:
    """A LangChain message written by ``dumpd`` (``lc``, ``id``, ``kwargs``) or as a flat
    ``model_dump`` (``type`` human, ai, tool or chat, with ``content`` and no ``role``)."""
    path = m.get("id")
    if m.get("lc") == 1 and isinstance(m.get("kwargs"), dict) and isinstance(path, list):
        last = path[-1] if path else None
        return isinstance(last, str) and (last.endswith("Message") or last in LANGCHAIN_CHUNKS)
    kind = _kind(m)  # a mutated file may hold any value there
    flat = kind in LANGCHAIN_TYPES - {"system", "developer"} or kind in LANGCHAIN_CHUNKS
    return flat and "content" in m and "role" not in m


def _anthropic_block(block: Mapping[str, Any]) -> bool:
    """A content block only the Messages API writes: an image or document with a ``source``
    object, or a server tool's ``*_tool_result``. (A cache breakpoint is no sign: gateways
    take ``cache_control`` in chat-completions parts too.)"""
    kind = _kind(block) or ""
    return (kind in ("image", "document") and isinstance(block.get("source"), dict)) or (
        kind.endswith("_tool_result") and "tool_use_id" in block
    )


def _anthropic_response(m: Mapping[str, Any]) -> bool:
    """A ``type: "message"`` object as the Messages API returns it (kept in a history as
    it came, with its ``id``), not a Responses message item: it has a ``stop_reason``, or
    its content holds Anthropic blocks (``text``, ``tool_use``...) and no Responses parts
    (``input_text``, ``output_text``...)."""
    if "stop_reason" in m:
        return True
    content = m.get("content")
    if not isinstance(content, list):
        return False
    blocks = [b for b in content if isinstance(b, dict)]
    kinds = {_kind(b) for b in blocks}
    if kinds & _OPENAI_PARTS:
        return False
    return bool(kinds & (_ANTHROPIC_BLOCKS | {"text"})) or any(_anthropic_block(b) for b in blocks)


def _message_format(m: Mapping[str, Any]) -> str | None:
    """The format a single message shows unmistakably, if any."""
    if isinstance(m.get("data"), dict) and isinstance(m.get("type"), str):
        return "langchain"
    if _langchain_other_form(m):
        return "langchain"
    if _is_cc_record(m):
        return "claude-code"
    calls = m.get("tool_calls")
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        if isinstance(calls[0].get("function"), str):
            return "inspect"
        if isinstance(calls[0].get("function"), dict):
            return "openai"
    if m.get("role") == "tool" and isinstance(m.get("function"), str):
        return "inspect"
    if _kind(m, "source") in ("input", "generate") and "role" in m:
        return "inspect"
    kind = _kind(m)
    if kind == "message" and "role" in m:
        return "anthropic" if _anthropic_response(m) else "responses"
    if kind in _RESPONSES_TYPES:
        return "responses"
    if m.get("role") == "tool" and "tool_call_id" in m:
        return "openai"
    if m.get("role") == "developer":
        return "openai"
    content = m.get("content")
    if isinstance(content, list):
        blocks = [b for b in content if isinstance(b, dict)]
        kinds = {_kind(b) for b in blocks}
        if kinds & _ANTHROPIC_BLOCKS or any(_anthropic_block(b) for b in blocks):
            return "anthropic"
        if kinds & _OPENAI_PARTS:
            return "openai"
        if "reasoning" in kinds:
            return "inspect"
    return None


_ONE_OF: dict[str, str] = {
    "langchain": "a LangChain message (messages_to_dict output)",
    "claude-code": "a Claude Code record",
    "inspect": "an inspect_ai ChatMessage",
    "anthropic": "an Anthropic Messages API message",
    "openai": "a chat-completions message",
    "responses": "a Responses API item",
}
_CC_KEYS = ("uuid", "sessionId", "parentUuid", "leafUuid")


def foreign_line(obj: Any, reading: str) -> str | None:
    """What one line of a JSONL history read as ``reading`` (``claude-code`` or
    ``codex``) is, when it is a message or record of another format; None for a line of
    that format, or one that is no message at all (a title, a meta record).

    A file holds one history of one format: such a line is refused, never skipped
    (a skipped message would leave the import quietly short of it).
    """
    if not isinstance(obj, dict):
        return None
    if reading == "claude-code":
        if any(k in obj for k in _CC_KEYS) or _kind(obj) in _CC_TYPES:
            return None  # a record of the session, whatever its type
        if "payload" in obj and _kind(obj) in _CODEX_TYPES:
            return "a Codex rollout record"
    elif _is_cc_record(obj):
        return _ONE_OF["claude-code"]
    elif "payload" in obj or "record_type" in obj:
        return None  # a rollout record, or its meta
    fmt = _message_format(obj)
    if fmt == "langchain" and "content" not in obj["data"]:
        return None  # a record with a data object, not a message (it has no content)
    if fmt is not None and fmt != reading:
        return _ONE_OF[fmt]
    if "role" in obj:
        return "a chat message (role and content)"
    return None


_READING = {
    "openai": "an OpenAI message (Chat Completions or Responses)",
    "anthropic": _ONE_OF["anthropic"],
}
_READ_AS: Mapping[str, frozenset[str]] = {
    "openai": frozenset({"openai", "responses"}),
    "anthropic": frozenset({"anthropic"}),
}


def foreign_message(obj: Mapping[str, Any], reading: str, file: str, where: str) -> None:
    """Refuse one message of a JSON history read as ``reading`` (``openai`` or
    ``anthropic``) that is unmistakably a message of another format: its reader would
    find no text, call or result of its own in it, and skipping it would leave the
    import quietly short of that message (what :func:`foreign_line` does for a line)."""
    fmt = _message_format(obj)
    if fmt is None or fmt in _READ_AS.get(reading, frozenset({reading})):
        return
    raise InputError(
        f"{where}: this message is {_ONE_OF[fmt]}, not {_READING.get(reading, reading)}: a"
        " file holds one history of one format",
        file=file,
        fix="import each format's history on its own",
    )


def no_items(fmt: str, src: Source) -> InputError:
    """The error for a file none of whose messages gives an item in FORMAT ``fmt``."""
    shape = describe(src)
    return InputError(
        f"no message of the {fmt} format gives an item (text, a tool call or a result):"
        f" this is {shape.what}",
        file=src.name,
        fix=shape.fix_for(fmt)
        if not shape.fits(fmt)
        else "check that the file holds a session with messages",
    )


def mismatch(fmt: str, src: Source, shape: Shape | None = None) -> InputError | None:
    """The error for a file that FORMAT ``fmt`` cannot read by its shape, or None."""
    shape = shape if shape is not None else describe(src)
    readable = shape.container in CONTAINERS[fmt]
    if shape.fits(fmt) or (readable and shape.format is None):
        return None
    if readable and not shape.sure and fmt in _PLAIN_READERS:
        return None  # plain role/content messages: this format reads them too
    if shape.format is None and shape.container == "other":
        return None  # the reader words what is wrong (malformed JSON, bad UTF-8, ...)
    return InputError(
        f"this is {shape.what}, which `{fmt}` does not read",
        file=src.name,
        fix=shape.fix_for(fmt),
    )


_PLAIN_READERS = frozenset({"openai", "anthropic", "inspect"})
"""The formats that read plain role/content messages as their own."""


def detect_format(sources: Sequence[Source]) -> str:
    """The FORMAT that reads every one of ``sources`` (``FORMAT auto``).

    A file that any of several formats reads (plain role/content messages) takes the
    format the other files show: a conversation whose first request holds plain text
    only is of the format its later requests show.

    Raises:
        InputError: a file's format cannot be told, or the files are of
            different formats.
    """
    shapes: list[tuple[Source, Shape]] = []
    for src in sources:
        shape = describe(src)
        if shape.format is None:
            raise InputError(
                f"cannot tell the format: this is {shape.what}",
                file=src.name,
                fix="name the FORMAT (claude-code, openai, anthropic, langchain, inspect)",
            )
        if not shape.fits(shape.format):
            raise InputError(
                f"this is {shape.what}, which `{shape.format}` reads only as"
                f" {' or '.join(sorted(CONTAINERS[shape.format]))}",
                file=src.name,
                fix=shape.fix_for(shape.format),
            )
        shapes.append((src, shape))
    if not shapes:
        raise InputError("no input given", fix="name at least one history file")
    first, shown = next(((src, sh) for src, sh in shapes if sh.sure), shapes[0])
    fmt = shown.format
    assert fmt is not None
    for src, shape in shapes:
        plain = not shape.sure and fmt in _PLAIN_READERS and shape.container in CONTAINERS[fmt]
        if shape.format == fmt or plain:
            continue
        raise InputError(
            f"this is {shape.what} ({shape.format}), but {first.name} is {fmt}:"
            " the files of one import are of one format",
            file=src.name,
            fix="import the files of each format on their own",
        )
    return fmt
