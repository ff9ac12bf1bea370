"""inspect_ai eval logs: ``.json`` logs, and ``.eval`` (zip) logs.

A file may also hold inspect_ai messages themselves: a JSON array of
``ChatMessage`` objects, an ``AgentState`` (``{"messages": [...]}``), or a
JSON array of such lists, one snapshot each.

A sample's history is read from its events: the input of each call to the
model (``model`` events) and the message it answered with is one snapshot,
and a ``compaction`` event marks the next snapshot as a compaction; calls
made aside from the agent's conversation (a scorer's, a grader's prompt; a
subagent's, run as a tool) are left out. A sample without model
events is read from its ``messages``. ``.eval`` members compressed with zstd
need the ``zstandard`` package (``pip install 'ctxproof[inspect]'``). See
``docs/importers.md`` ("inspect").
"""

from __future__ import annotations

import dataclasses
import io
import re
import zipfile
from collections.abc import Mapping, Sequence
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
from verifier.importers.sources import Source, read_json, texts
from verifier.io import MAX_INPUT_BYTES, _Ctx, _loads

__all__ = ["snapshots"]

_ZSTD = 93
MAX_UNPACKED_BYTES = MAX_INPUT_BYTES
"""What the sample members of one ``.eval`` archive may unpack to, in all: the bound of
an input file, counted after decompression (each member's header is read first)."""
_ATTACHMENT = re.compile(r"attachment://([0-9a-f]+)")


def snapshots(sources: Sequence[Source], *, sample: str | None = None) -> list[Snapshot]:
    """The snapshots of one sample of each log, in order."""
    out: list[Snapshot] = []
    for src in sources:
        listed = _message_lists(src)
        if listed is not None:
            if sample is not None:
                raise InputError(
                    "--sample picks a sample of an eval log, and this file is a message list",
                    file=src.name,
                    fix="drop --sample",
                )
            for where, raw in listed:
                messages = [_message(m, src.name, f"{where}message {i}") for i, m in enumerate(raw)]
                out.append(Snapshot(tuple(messages)))
            continue
        chosen = _pick(_samples(src), sample, src.name)
        out.extend(_sample_snapshots(chosen, src.name))
    return out


def _message_lists(src: Source) -> list[tuple[str, list[Any]]] | None:
    """The message lists of a file that holds ChatMessages, not a log, else None.

    A JSON array of ChatMessages (a sample's ``messages``), an object with a
    ``messages`` list and no ``samples`` (an ``AgentState``), or a JSON array of
    such lists (one snapshot each).
    """
    if src.data[:4] == b"PK\x03\x04":
        return None
    head = src.data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head.startswith((b"[", b"{")):
        return None
    value = read_json(src)
    if (
        isinstance(value, dict)
        and "samples" not in value
        and isinstance(value.get("messages"), list)
    ):
        return [("", value["messages"])]
    if not isinstance(value, list):
        return None
    if value and all(isinstance(v, list) for v in value):
        return [(f"snapshot {k} ", v) for k, v in enumerate(value)]
    return [("", value)]


def _samples(src: Source) -> list[Any]:
    """The samples of a log: the ``samples`` of a JSON log, the sample members of a zip."""
    if src.data[:4] == b"PK\x03\x04":
        return _zip_samples(src)
    log = read_json(src)
    if not isinstance(log, dict) or not isinstance(log.get("samples"), list):
        raise InputError(
            "not an inspect eval log: no 'samples' list",
            file=src.name,
            line=1,
            fix="give a log written with samples (a .json or .eval log)",
        )
    samples: list[Any] = log["samples"]
    return samples


def _zip_samples(src: Source) -> list[Any]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(src.data))
    except (zipfile.BadZipFile, NotImplementedError, ValueError, OSError, EOFError) as exc:
        raise InputError(f"not a readable .eval archive: {exc}", file=src.name) from None
    names = sorted(
        n for n in archive.namelist() if n.startswith("samples/") and n.endswith(".json")
    )
    out = []
    left = MAX_UNPACKED_BYTES
    for name in names:
        info = archive.getinfo(name)
        if info.file_size > left:
            raise InputError(
                f"{name} unpacks to {info.file_size} bytes: the samples of an archive may"
                f" unpack to {MAX_UNPACKED_BYTES} bytes at most, as an input file may hold",
                file=src.name,
                fix="import a smaller log",
            )
        data = _member(archive, info, src.name)
        left -= len(data)
        text = data.decode("utf-8", "replace")
        out.append(_loads(text, _Ctx(f"{src.name}:{name}", 1)))
    return out


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, file: str) -> bytes:
    """A member's bytes, no more than its header says (zstd members are decompressed with
    ``zstandard``); a member that does not unpack to what its header says is bad input."""
    try:
        data = _unpack(archive, info, file)
    except InputError:
        raise
    except Exception as exc:  # a damaged member: zlib, zstd and zipfile each raise their own
        raise InputError(
            f"{info.filename} cannot be unpacked: {type(exc).__name__}: {exc}",
            file=file,
            fix="give an undamaged .eval archive",
        ) from None
    if len(data) != info.file_size:
        raise InputError(
            f"{info.filename} does not unpack to the {info.file_size} bytes its header says",
            file=file,
            fix="give an undamaged .eval archive",
        )
    return data


def _unpack(archive: zipfile.ZipFile, info: zipfile.ZipInfo, file: str) -> bytes:
    if info.compress_type != _ZSTD:
        return archive.read(info)  # zipfile reads no more than the header's size
    try:
        import zstandard
    except ImportError:
        raise InputError(
            f"{info.filename} is compressed with zstd, which needs the zstandard package",
            file=file,
            fix="pip install 'ctxproof[inspect]'",
        ) from None
    raw = _raw_member(archive, info)
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw))
    data: bytes = reader.read(info.file_size + 1)
    return data


def _raw_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The stored (compressed) bytes of a member, read past its local header."""
    fp = archive.fp
    assert fp is not None
    fp.seek(info.header_offset)
    header = fp.read(30)
    name_len = int.from_bytes(header[26:28], "little")
    extra_len = int.from_bytes(header[28:30], "little")
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    return fp.read(info.compress_size)


def _pick(samples: list[Any], wanted: str | None, file: str) -> Mapping[str, Any]:
    """The sample ``wanted`` (``ID`` or ``ID:EPOCH``), or the only one."""
    named = [(f"{s.get('id')}:{s.get('epoch', 1)}", s) for s in samples if isinstance(s, dict)]
    if wanted is None:
        if len(named) == 1:
            return named[0][1]
        listed = ", ".join(n for n, _ in named[:10]) or "none"
        raise InputError(
            f"the log has {len(named)} samples ({listed})",
            file=file,
            fix="pick one with --sample ID or ID:EPOCH",
        )
    for name, s in named:
        if wanted in (name, str(s.get("id"))):  # an id may hold a colon itself
            return s
    raise InputError(f"no sample {wanted!r} in the log", file=file, fix="see the sample ids")


def _sample_snapshots(sample: Mapping[str, Any], file: str) -> list[Snapshot]:
    pool = _pool(sample)
    found = sample.get("attachments")
    attachments: Mapping[str, Any] = found if isinstance(found, dict) else {}
    given = sample.get("events")
    events: list[Any] = given if isinstance(given, list) else []
    raw_messages = sample.get("messages")
    out: list[Snapshot] = []
    policy: str | None = None
    aside = _Aside()
    for n, event in enumerate(events):
        if not isinstance(event, dict):
            continue
        aside.see(event)
        if event.get("event") == "compaction":
            if event.get("role") is None and not aside.within(event):
                policy = f"inspect:compaction:{event.get('type', 'summary')}"
                if out and _summarizer_call(
                    out[-1], events[n + 1 :], pool, attachments, raw_messages
                ):
                    out.pop()  # the compaction's own call to the model: not the agent's
                if out and isinstance(raw_messages, list):
                    # inspect compacts before the next call: the results of the last
                    # call's tool calls were in the window the compaction rewrote
                    out.extend(
                        _after_the_last_call(
                            out[-1], raw_messages, attachments, file, results_only=True
                        )
                    )
            # else: another conversation's (a model role's, a subagent's): not the agent's
        elif event.get("event") == "model" and event.get("role") is None:
            if aside.within(event):
                continue  # a grader's or a subagent's call: not the agent's context
            raw = _model_messages(event, pool, file, n)
            messages = [
                _message(_resolve(m, attachments), file, f"event {n} message {i}")
                for i, m in enumerate(raw)
            ]
            out.append(Snapshot(_pooled_apart(messages), policy))
            policy = None
    if out and isinstance(raw_messages, list):
        out.extend(_after_the_last_call(out[-1], raw_messages, attachments, file))
    if not out:
        if not isinstance(raw_messages, list):
            raise InputError("the sample has neither model events nor messages", file=file)
        out.append(
            Snapshot(
                tuple(
                    _message(_resolve(m, attachments), file, f"message {i}")
                    for i, m in enumerate(raw_messages)
                )
            )
        )
    return out


def _summarizer_call(
    last: Snapshot,
    later: Sequence[Any],
    pool: list[Any],
    attachments: Mapping[str, Any],
    raw_messages: Any,
) -> bool:
    """Is the snapshot before a compaction the compaction's own call to the model?

    ``CompactionSummary`` calls the model on the conversation and a prompt of its
    own (a user message the sample's messages never hold), and the summary that
    enters the window quotes its answer: the next call of the agent holds a summary
    message (``metadata.summary``) that ends with that answer's last words."""
    if len(last.messages) < 2:
        return False
    answer, prompt = last.messages[-1], last.messages[-2]
    if answer.role != "assistant" or answer.calls or not answer.text.strip():
        return False
    if prompt.role != "user" or prompt.summary:
        return False
    if (
        isinstance(raw_messages, list)
        and prompt.id is not None
        and any(isinstance(m, dict) and m.get("id") == prompt.id for m in raw_messages)
    ):
        return False  # the user's own message (or the agent's nudge): an agent's call
    tail = answer.text.strip()[-200:]
    for k, event in enumerate(later):
        if not isinstance(event, dict) or event.get("event") != "model" or event.get("role"):
            continue
        try:
            raw = _model_messages(event, pool, "", k)
        except InputError:
            return False  # the next call is read (and refused) as itself
        for m in raw:
            m = _resolve(m, attachments)
            meta = m.get("metadata") if isinstance(m, dict) else None
            if (
                isinstance(meta, dict)
                and meta.get("summary") is True
                and tail in texts(m.get("content"))
            ):
                return True
        return False
    return False


def _after_the_last_call(
    last: Snapshot,
    raw_messages: list[Any],
    attachments: Mapping[str, Any],
    file: str,
    *,
    results_only: bool = False,
) -> list[Snapshot]:
    """The sample's messages that came after the last model call's output (the results of
    the calls it made, when the sample ended before the model was called again): one more
    snapshot, the last one and those; none when there are none, or the output is not among
    the sample's messages (by its id). ``results_only``: only the tool messages right
    after the output (what arrived before a compaction)."""
    output = last.messages[-1].id if last.messages else None
    ids = [m.get("id") if isinstance(m, dict) else None for m in raw_messages]
    if output is None or output not in ids:
        return []
    start = end = len(ids) - ids[::-1].index(output)
    if not results_only:
        end = len(raw_messages)
    while end < len(raw_messages) and _is_tool(raw_messages[end]):
        end += 1
    if start == end:
        return []
    later = tuple(
        _message(_resolve(raw_messages[i], attachments), file, f"message {i}")
        for i in range(start, end)
    )
    return [Snapshot(last.messages + later)]


def _pooled_apart(messages: Sequence[Message]) -> tuple[Message, ...]:
    """A model call's input with each repeated message id dropped after its first use.

    inspect pools a sample's messages by their content, leaving out their ids, so a
    message sent again with equal content (``react()``'s nudge to go on, two tool calls
    an edit cleared alike) reads back under the first one's id: the repeat is another
    message, told by its content and rank among equal ones (``msg-K``)."""
    seen: set[str] = set()
    out = []
    for m in messages:
        if m.id is not None and m.id in seen:
            m = dataclasses.replace(m, id=None)
        elif m.id is not None:
            seen.add(m.id)
        out.append(m)
    return tuple(out)


def _is_tool(raw: Any) -> bool:
    return isinstance(raw, dict) and raw.get("role") == "tool"


_SCORING = frozenset({"scorer", "scorers"})
"""The types of the spans (and of the older logs' steps) a sample is scored in."""
_ASIDE = _SCORING | {"tool"}
"""The types of the spans whose model calls are no part of the agent's own conversation."""


class _Aside:
    """Which of a sample's events were made aside from the agent's own conversation, read
    in order: the events of a ``scorer`` or a ``tool`` span (by ``span_id``, through the
    spans' ``parent_id``) or, in logs written before spans, those between a ``scorer``
    step's ``begin`` and ``end``.

    A scorer may call the model the agent runs on (``model_graded_fact`` does, with
    no ``role``): what it sends is the grader's prompt, not the agent's context. So may
    a tool: a subagent run as a tool or handed off to (``as_tool``, ``handoff``) talks
    to the same model in a conversation of its own, and compacts that one.
    """

    def __init__(self) -> None:
        self.spans: dict[str, tuple[Any, Any]] = {}
        """span id -> (its type, its parent's id)."""
        self.open_steps = 0

    def see(self, event: Mapping[str, Any]) -> None:
        kind = event.get("event")
        if kind == "span_begin" and isinstance(event.get("id"), str):
            self.spans[event["id"]] = (event.get("type"), event.get("parent_id"))
        elif kind == "step" and event.get("type") in _SCORING:
            if event.get("action") == "begin":
                self.open_steps += 1
            elif event.get("action") == "end" and self.open_steps:
                self.open_steps -= 1

    def within(self, event: Mapping[str, Any]) -> bool:
        if self.open_steps:
            return True
        span = event.get("span_id")
        seen: set[Any] = set()
        while isinstance(span, str) and span in self.spans and span not in seen:
            seen.add(span)
            kind, span = self.spans[span]
            if kind in _ASIDE:
                return True
        return False


def _pool(sample: Mapping[str, Any]) -> list[Any]:
    """The message pool that condensed model inputs refer to, if the log has one."""
    data = sample.get("events_data")
    pool = data.get("messages") if isinstance(data, dict) else sample.get("message_pool")
    return list(pool) if isinstance(pool, list) else []


def _model_messages(event: Mapping[str, Any], pool: list[Any], file: str, n: int) -> list[Any]:
    """A model event's input (inline, or ranges into the pool) and the message it gave."""
    given = event.get("input")
    messages = list(given) if isinstance(given, list) else []
    refs = event.get("input_refs")
    if not messages and isinstance(refs, list):
        for ref in refs:
            if not (
                isinstance(ref, list) and len(ref) == 2 and all(isinstance(x, int) for x in ref)
            ):
                raise InputError(f"event {n}: input_refs must be [start, end] ranges", file=file)
            if ref[1] > len(pool):
                raise InputError(f"event {n}: input_refs point past the message pool", file=file)
            messages.extend(pool[ref[0] : ref[1]])
    output = event.get("output")
    choices = output.get("choices") if isinstance(output, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        answer = choices[0].get("message")
        if isinstance(answer, dict):
            messages.append(answer)
    return messages


def _resolve(value: Any, attachments: Mapping[str, Any]) -> Any:
    """Put attachment contents back where the log wrote ``attachment://HASH``."""
    if not attachments:
        return value
    if isinstance(value, str):
        whole = _ATTACHMENT.fullmatch(value)
        if whole and isinstance(attachments.get(whole.group(1)), str):
            return attachments[whole.group(1)]
        return value
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


def _message(obj: Any, file: str, where: str) -> Message:
    """One ChatMessage (system, user, assistant or tool)."""
    if not isinstance(obj, dict):
        raise InputError(f"{where}: a message must be a JSON object", file=file)
    role = obj.get("role")
    base = Message(str(role), canonical(obj), file, where)
    if role not in ("system", "user", "assistant", "tool"):
        raise base.error(f"unknown role {role!r}", fix="use system, user, assistant or tool")
    own = obj.get("id") if isinstance(obj.get("id"), str) and obj.get("id") else None
    found = obj.get("metadata")
    meta: Mapping[str, Any] = found if isinstance(found, dict) else {}
    notes = metadata_annotations(meta, file, where)
    text = texts(obj.get("content"))
    if role == "tool":
        return Message(
            "tool",
            base.key,
            file,
            where,
            own,
            results=(_result(obj, text, base),),
            annotations=notes,
        )
    calls = tuple(_call(c, base, k) for k, c in enumerate(obj.get("tool_calls") or []))
    summary = meta.get("summary") is True
    if not text and _native_compaction(obj.get("content")):
        # a provider's own compaction (an OpenAI compact item), which inspect shows as a
        # data block of a user message: the compaction's output, opaque
        text, summary = "(compacted history)", True
    return Message(
        str(role), base.key, file, where, own, text, calls, summary=summary, annotations=notes
    )


def _native_compaction(content: Any) -> bool:
    """Does a message's content hold a ``data`` block with ``compaction_metadata``?"""
    return isinstance(content, list) and any(
        isinstance(b, dict)
        and b.get("type") == "data"
        and isinstance(b.get("data"), dict)
        and "compaction_metadata" in b["data"]
        for b in content
    )


def _call(call: Any, base: Message, k: int) -> ToolCall:
    if not isinstance(call, dict):
        raise base.error(f"tool_calls[{k}] must be an object")
    call_id, name = call.get("id"), call.get("function")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
        raise base.error(f"tool_calls[{k}] needs an 'id' and a 'function'")
    return ToolCall(call_id, name, call.get("arguments"))


def _result(obj: Mapping[str, Any], text: str, base: Message) -> ToolResult:
    """A ChatMessageTool: an ``error`` (a ToolCallError) makes it failed."""
    call_id = obj.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise base.error("a tool message needs a 'tool_call_id'")
    error = obj.get("error")
    legacy = obj.get("tool_error")  # logs of schema 1: the error's message alone
    if error is None and isinstance(legacy, str) and legacy:
        error = {"message": legacy}
    if isinstance(error, dict) and isinstance(error.get("message"), str) and not text:
        text = error["message"]
    name = obj.get("function") if isinstance(obj.get("function"), str) else None
    return ToolResult(call_id, text, name, error is not None)
