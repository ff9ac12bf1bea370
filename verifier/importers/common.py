"""What every importer shares: messages, snapshots, and the one snapshots -> trace function.

A format parser reads its own shape into :class:`Message` values and groups
them into :class:`Snapshot` values (the list of messages the model saw at one
moment, and whether a compaction the format records produced it).
:func:`build_trace` turns the snapshots into ctxproof trace events: it gives
every message its items and ids, and writes an ``append`` when a snapshot
extends the one before it and a ``rewrite`` otherwise. The rules it follows
are those of ``docs/importers.md``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import struct
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import IO, Any, overload

from verifier.errors import InputError, InternalError
from verifier.importers.coverage import Coverage
from verifier.importers.writer import TraceWriter, split_append
from verifier.io import MAX_ID_LENGTH, _Ctx, item_from_json, parse_trace_text
from verifier.window import canonical_json

__all__ = [
    "CHAT_FIELDS",
    "Annotation",
    "Diverged",
    "Extractor",
    "Message",
    "Snapshot",
    "ToolCall",
    "ToolResult",
    "build_trace",
    "canonical",
    "command_of",
    "exit_code_in",
    "fit_id",
    "gives_items",
    "is_placeholder",
    "kept_text",
    "matching",
    "message_count",
    "metadata_annotations",
    "one_line",
    "split_at_markers",
    "stream_trace",
]

TRACE_FORMAT = "ctxproof-trace/1"

_PLACEHOLDERS = (
    re.compile(r"\[cleared\]", re.IGNORECASE),
    re.compile(r"\(tool result removed\)", re.IGNORECASE),
    re.compile(r"\[tool result cleared\]", re.IGNORECASE),
    re.compile(r"\[old tool result content cleared\]", re.IGNORECASE),
    re.compile(r"\[trimmed:.*\]", re.IGNORECASE | re.DOTALL),
    # the OpenAI Agents SDK's trimmer: a header line, then a preview of what was there
    re.compile(r"\[trimmed(?::[^\]\n]*)?\]\n.*", re.IGNORECASE | re.DOTALL),
    re.compile(r"skipped \d+ messages\.", re.IGNORECASE),
    re.compile(r"old environment output: \(\d+ lines omitted\)", re.IGNORECASE),
)
_EXIT_CODE = re.compile(
    r"^(?:exit code:? ?(-?\d+)|<returncode>\s*(-?\d+)\s*</returncode>)",
    re.IGNORECASE | re.MULTILINE,
)


def canonical(value: Any) -> str:
    """Canonical JSON of any JSON value: sorted keys, no spaces, UTF-8 as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def is_placeholder(content: str) -> bool:
    """Is this tool result content a placeholder left where a result was removed?

    The recognised placeholders are listed in ``docs/importers.md``
    ("Placeholders"); the whole content (trimmed) must be one of them.

    >>> is_placeholder("[cleared]"), is_placeholder("Skipped 12 messages."), is_placeholder("ok")
    (True, True, False)
    >>> is_placeholder("[Trimmed: search output - 1560 chars -> 200 char preview]\\nResult 1...")
    True
    """
    text = content.strip()
    return any(p.fullmatch(text) for p in _PLACEHOLDERS)


_TRUNCATION = re.compile(
    r"\s*(?:\u2026\s*[\d,]+\s+\w+\s+truncated\s*\u2026"  # Codex's "…N tokens truncated…"
    r"|\.\.\.|\u2026|\[truncated\]|\(truncated\)|\[output truncated\]"
    r"|\[\.\.\.\s*[\d,]+\s+\w+\s+truncated\s*\.?\]|\[[\d,]+\s+\w+\s+truncated\s*\.?\]"
    r"|<truncated[^<>\n]*>|\.\.\.\s*\[?truncated\]?)\s*",
    re.IGNORECASE,
)


def kept_text(old: str, new: str) -> str | None:
    """The part of ``old`` that ``new`` keeps when ``new`` is ``old`` cut, else None.

    ``new`` is a cut of ``old`` when, less one truncation marker (``...``,
    ``[truncated]``, ``[... N characters truncated]``, ...) or a run of them
    (``... [truncated]``), it is a strict
    prefix of ``old``, a strict suffix, or ``old`` with a middle part cut
    (``docs/importers.md``, "Truncation"). The kept text is ``new`` as it is.

    >>> kept_text("1 passed; FAILED test_x", "1 passed; [... 15 characters truncated]")
    '1 passed; [... 15 characters truncated]'
    >>> kept_text("abc", "abd") is None, kept_text("abc", "abc") is None
    (True, True)
    >>> kept_text("1 passed; FAILED test_x", "[truncated]")
    '[truncated]'
    """
    if new == old or not new.strip():
        return None
    if len(new) < len(old) and old.startswith(new):
        return new
    for start, end in _marker_runs(new):
        head, tail = new[:start], new[end:]
        # a bare marker is a cut too: less the marker, nothing is left, a strict prefix
        if len(head) + len(tail) >= len(old.strip()):
            continue
        if old.startswith(head) and old.endswith(tail):
            return new
        if old.lstrip().startswith(head.lstrip()) and old.rstrip().endswith(tail.rstrip()):
            return new
    return None


def call_arguments(raw: Any) -> Any:
    """A call's arguments: a JSON string is decoded; text that is not JSON stays text."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack
            return raw
    return raw


def _marker_runs(text: str) -> Iterator[tuple[int, int]]:
    """Where truncation markers stand in ``text``: each marker, and each run of markers
    that follow one another (``... [truncated]``), as (start, end).

    >>> [(a, b) for a, b in _marker_runs("ab... [truncated]")]
    [(2, 6), (2, 17), (6, 17)]
    """
    one = [(m.start(), m.end()) for m in _TRUNCATION.finditer(text)]
    for i, (start, end) in enumerate(one):
        yield start, end
        for later_start, later_end in one[i + 1 :]:
            if later_start != end:  # a marker's match takes the white space around it
                break
            end = later_end
            yield start, end


_DECLINED = re.compile(
    r"(?:doesn['\u2019]t|does not|didn['\u2019]t|did not) want to (?:proceed|take this action)"
    r"|\[Request interrupted by user for tool use\]",
    re.IGNORECASE,
)


def declined(is_error: object, content: str) -> bool:
    """Is a tool result the user's refusal of the call (``is_error``, and its text says
    the user did not want to proceed), not a failed command?"""
    return is_error is True and _DECLINED.search(content) is not None


def exit_code_in(content: str) -> int | None:
    """The exit code a tool result states by the text conventions, or None.

    ``Exit code: N``, ``Exit code N`` or ``<returncode>N</returncode>`` at the
    start of a line; the first match counts (``docs/importers.md``, "Tool results").

    >>> exit_code_in("Exit code 2\\nmake: *** [all] Error 2"), exit_code_in("fine")
    (2, None)
    """
    match = _EXIT_CODE.search(content)
    if match is None:
        return None
    return int(match.group(1) if match.group(1) is not None else match.group(2))


CHAT_FIELDS = ("role", "content", "tool_calls", "tool_call_id")
"""What tells a message across snapshots (docs/importers.md, "Ids")."""


def matching(obj: Mapping[str, Any], fields: Iterable[str]) -> str | None:
    """The canonical JSON of a message's ``fields`` that are not null, where it holds other
    fields too or a null one; None where it holds those alone (its key tells it then).

    >>> matching({"role": "user", "content": "hi"}, CHAT_FIELDS) is None
    True
    >>> matching({"role": "user", "content": "hi", "refusal": None}, CHAT_FIELDS)
    '{"content":"hi","role":"user"}'
    """
    if all(k in fields and v is not None for k, v in obj.items()):
        return None
    return canonical({k: obj[k] for k in fields if obj.get(k) is not None})


def fit_id(raw: str) -> str:
    """An item id of at most 256 characters: ids that are longer become ``id-`` + a hash.

    The replacement is ``id-`` and the first 40 hex digits of the sha256 of the
    long id, so it is stable and every reference to it agrees.
    """
    if len(raw) <= MAX_ID_LENGTH:
        return raw
    return "id-" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:40]


def command_of(arguments: Any) -> str:
    """COMMAND of a tool call's source: its ``command`` argument, else its arguments.

    A ``command`` string is used as it is and a list of strings is joined as a
    shell would quote it; any other arguments are written as canonical JSON (a
    ``cmd`` argument too: ``{"cmd":"make"}``), and a plain string argument as it is.

    >>> command_of({"command": "ls -la"}), command_of({"command": ["bash", "-lc", "ls -la"]})
    ('ls -la', "bash -lc 'ls -la'")
    >>> command_of({"cmd": "pytest -q"}), command_of({"path": "a.py"})
    ('{"cmd":"pytest -q"}', '{"path":"a.py"}')
    """
    if isinstance(arguments, Mapping):
        command = arguments.get("command")
        if isinstance(command, str):
            return command
        if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
            return shlex.join(command)
    if isinstance(arguments, str):
        return arguments
    return canonical(arguments)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call in an assistant message: a prose item of its own, and nothing else
    (commitments and claims are never guessed from it: ``docs/importers.md``)."""

    id: str
    name: str
    arguments: Any = None

    @property
    def source(self) -> str:
        """``NAME: COMMAND``, the ``source`` of this call's results."""
        return f"{self.name}: {command_of(self.arguments)}"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool result: the text the model saw, and what the format says of its outcome.

    ``exit_code`` is set when the format records it exactly; otherwise the text
    conventions of :func:`exit_code_in` apply. ``cleared`` is set when the
    format marks the result as cleared whatever its text. ``declined`` is set
    when the result is the user's refusal of the call (nothing ran): it is what
    the user said, an observation with ``source: "user"``.
    """

    call_id: str
    content: str
    name: str | None = None
    error: bool = False
    exit_code: int | None = None
    cleared: bool = False
    declined: bool = False


@dataclass(frozen=True, slots=True)
class Message:
    """One message the model saw, read from its format.

    ``key`` is the canonical JSON of the message as the format wrote it.
    ``match`` is the canonical JSON of the fields that tell it across snapshots
    (role, content, tool calls, ``tool_call_id``), where the message holds more
    than those: two messages without an id of their own are the same message
    when their :attr:`same` keys are equal. ``where`` names the message in its
    file for error messages ("message 3", "line 12"). ``raw`` is the message as
    the format holds it and ``record`` the record that carries it (a Claude Code
    line; else the message itself): what an extractor is given
    (``docs/importers.md``, "Extractors").
    """

    role: str
    key: str
    file: str
    where: str
    id: str | None = None
    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    results: tuple[ToolResult, ...] = ()
    summary: bool = False
    at: str | None = None
    annotations: tuple[Any, ...] = ()
    raw: Any = field(default=None, compare=False, repr=False)
    record: Any = field(default=None, compare=False, repr=False)
    match: str | None = None
    part: tuple[str, str, str | None] | None = None
    """A part of a message cut at a compaction block: (the whole message's key, ``before``,
    ``compaction`` or ``after``, the whole's own id). The parts are one message: one K,
    and the ``after`` part has the whole's name, the others it with ``:LABEL``."""

    @property
    def same(self) -> str:
        """What tells this message across snapshots: ``match``, else ``key``."""
        return self.key if self.match is None else self.match

    def error(self, message: str, fix: str | None = None) -> InputError:
        """Bad input in this message: names the file and the message."""
        return InputError(f"{self.where}: {message}", file=self.file, fix=fix)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The messages the model saw at one moment.

    ``policy`` names the compaction the format records as having produced this
    window (``None``: a plain snapshot); a snapshot with a policy is always a
    rewrite, even when it only extends the one before. ``whole``: the snapshot is
    the compaction's window and nothing else (the format gives what arrived later
    as snapshots of their own), so none of its messages is a later arrival.
    """

    messages: tuple[Message, ...]
    policy: str | None = None
    whole: bool = False


@dataclass(frozen=True, slots=True)
class Annotation:
    """Items to put right after the item ``after`` (``--annotations``, one line)."""

    after: str
    items: tuple[Mapping[str, Any], ...]
    file: str
    line: int


def metadata_annotations(metadata: Any, message_file: str, where: str) -> tuple[Any, ...]:
    """The items under the ``ctxproof`` key of a message's metadata, if any.

    The value is a list of item objects, or an object with such a list under
    ``items`` (``docs/importers.md``, "Annotations").
    """
    if not isinstance(metadata, Mapping) or "ctxproof" not in metadata:
        return ()
    value = metadata["ctxproof"]
    if isinstance(value, Mapping):
        value = value.get("items")
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise InputError(
            f"{where}: the 'ctxproof' metadata must be a list of item objects",
            file=message_file,
            fix='write "ctxproof": [{"id": ..., "kind": ...}]',
        )
    return tuple(value)


def split_at_markers(
    messages: Sequence[Message],
    is_marker: Sequence[bool],
    seen: set[str],
    policy: str,
    *,
    kept: Callable[[Message], bool] | None = None,
    previous: Sequence[Message] = (),
) -> list[Snapshot]:
    """Snapshots of one message list in which some messages mark a compaction.

    The model sees a list from its last marker on. Markers already met in an
    earlier list (``seen``, by key and position among equal keys) are not
    compactions again; each new marker starts a snapshot with ``policy``.
    ``kept`` tells the messages a compaction keeps when they come right before
    its marker (a Responses compact output is all user messages, then the
    compaction item): the run of them directly before a marker opens its window,
    and belongs to the window before it only where that window extends
    ``previous``, the snapshot before this list (else the list is the compact
    output, and the run was never seen apart from it).
    """
    marks = [i for i, m in enumerate(is_marker) if m]
    keys = _occurrence_keys(messages)

    def opening(i: int) -> int:
        while kept is not None and i > 0 and not is_marker[i - 1] and kept(messages[i - 1]):
            i -= 1
        return i

    last = max((i for i in marks if keys[i] in seen), default=-1)
    start = opening(last) if last >= 0 else 0
    bounds = [i for i in marks if i > last]
    out = []
    if not bounds:
        out.append(Snapshot(tuple(messages[start:])))
    else:
        before = messages[start : bounds[0]]
        if before and not _extends(before, previous):
            before = messages[start : opening(bounds[0])]
        if before:
            out.append(Snapshot(tuple(before)))
    for n, i in enumerate(bounds):
        end = bounds[n + 1] if n + 1 < len(bounds) else len(messages)
        out.append(Snapshot(tuple(messages[opening(i) : end]), policy))
        seen.add(keys[i])
    return out


def _extends(messages: Sequence[Message], previous: Sequence[Message]) -> bool:
    """Whether ``messages`` begin with ``previous`` (by :attr:`Message.same`)."""
    n = len(previous)
    return n <= len(messages) and all(
        a.same == b.same for a, b in zip(messages[:n], previous, strict=True)
    )


def _occurrence_keys(messages: Sequence[Message]) -> list[str]:
    counts: dict[str, int] = {}
    out = []
    for m in messages:
        j = counts.get(m.same, 0)
        counts[m.same] = j + 1
        out.append(f"{j}:{m.same}")
    return out


Ident = str | tuple[str, str, int]
"""A message's identity: its own id, else ``("key", stable key, rank among equal keys)``."""

Extractor = Callable[[Any, Mapping[str, Any]], Any]
"""``extract(message, context)``: commitments and claims a message gives (``--extract``)."""

_EXTRACTED_KINDS = ("commitment", "claim")


class _Spill:
    """Texts kept in an anonymous temporary file instead of memory (a streamed import's
    first results and long call sources), read back only when they are needed.

    A text kept is known by a 32-byte handle: its offset, its size in bytes and
    a digest, which tells a text equal to it without reading it back.
    """

    __slots__ = ("_end", "_file")

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self._end = 0

    def put(self, text: str) -> bytes:
        data = text.encode("utf-8", "surrogatepass")
        self._file.seek(self._end)
        self._file.write(data)
        offset, self._end = self._end, self._end + len(data)
        return _PLACE.pack(offset, len(data)) + _digest(data)

    def read(self, handle: bytes) -> str:
        offset, size = _PLACE.unpack_from(handle)
        self._file.seek(offset)
        return self._file.read(size).decode("utf-8", "surrogatepass")

    def close(self) -> None:
        self._file.close()


_PLACE = struct.Struct("<QQ")


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _same(handle: bytes, text: str) -> bool:
    """Is ``text`` the text a :class:`_Spill` handle names?"""
    data = text.encode("utf-8", "surrogatepass")
    return _PLACE.unpack_from(handle)[1] == len(data) and handle[16:] == _digest(data)


_Held = str | bytes
"""A text as a store holds it: itself, or the handle of its place in a :class:`_Spill`."""


def _by(base: str, key: str, as_summary: bool, rank: int) -> bytes:
    """Which computation of items meets a result: the message (its name and key), whether
    it is read as a summary, and the result's rank in the message."""
    return _digest(f"{base}\0{as_summary:d}\0{rank}\0{key}".encode("utf-8", "surrogatepass"))


class _Firsts:
    """call id -> the content its result had when it was first an observation.

    Each content is kept with the computation that met it first (:func:`_by`):
    the items of that same message computed again read it as the first time,
    so a streamed import may drop the items of messages that left the window
    and compute them again. With a spill, contents are kept on disk.
    """

    __slots__ = ("_got", "_spill")

    def __init__(self, spill: _Spill | None = None) -> None:
        self._got: dict[str, tuple[bytes, str] | bytes] = {}
        """call id -> (by, content), or with a spill ``by`` + the content's handle."""
        self._spill = spill

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._got

    def first(self, call_id: str, by: bytes) -> _Held | None:
        """The first content of ``call_id``'s result, unless ``by`` met it first."""
        got = self._got.get(call_id)
        if got is None:
            return None
        if isinstance(got, bytes):
            return None if got[: len(by)] == by else got[len(by) :]
        return None if got[0] == by else got[1]

    def note(self, call_id: str, content: str, by: bytes) -> None:
        if call_id not in self._got:
            if self._spill is not None:
                self._got[call_id] = by + self._spill.put(content)
            else:
                self._got[call_id] = (by, content)

    def kept(self, first: _Held | None, content: str) -> str | None:
        """:func:`kept_text` of a first content, read back only when it differs."""
        if first is None:
            return None
        if isinstance(first, str):
            return kept_text(first, content)
        if _same(first, content):
            return None
        assert self._spill is not None
        return kept_text(self._spill.read(first), content)


_LONG_SOURCE = 1024
"""A call's source longer than this (a file written by a tool) is spilled."""


class _Calls:
    """call id -> (its item id, its source) for the first tool call of each id."""

    __slots__ = ("_got", "_spill")

    def __init__(self, spill: _Spill | None = None) -> None:
        self._got: dict[str, _Held | tuple[str, _Held]] = {}
        """call id -> its source, or (item id, source) when the id was too long."""
        self._spill = spill

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._got

    def add(self, call: ToolCall) -> None:
        if call.id in self._got:
            return
        source = call.source
        held: _Held = source
        if self._spill is not None and len(source) > _LONG_SOURCE:
            held = self._spill.put(source)
        item_id = fit_id(call.id)
        self._got[call.id] = held if item_id == call.id else (item_id, held)

    def get(self, call_id: str) -> tuple[str, str] | None:
        got = self._got.get(call_id)
        if got is None:
            return None
        item_id, source = got if isinstance(got, tuple) else (call_id, got)
        if isinstance(source, str):
            return item_id, source
        assert self._spill is not None
        return item_id, self._spill.read(source)


@dataclass
class _State:
    """What :func:`build_trace` remembers between snapshots.

    ``window`` holds the ids of the window so far; ``emit`` is given every event
    as it is made (by default it is kept in ``events``). ``callless`` are the
    call ids of results computed before any call of that id was known.
    """

    names: dict[Ident, str] = field(default_factory=dict)
    calls: _Calls = field(default_factory=_Calls)
    window: list[str] = field(default_factory=list)
    last: list[tuple[Ident, str]] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    emit: Callable[[dict[str, Any]], object] | None = None
    anchors: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    item_cache: dict[tuple[Ident, str], list[dict[str, Any]]] = field(default_factory=dict)
    seen: set[Ident] | None = field(default_factory=set)
    """The messages whose items were computed; None: those registered before the
    snapshot being taken (a streamed import registers each snapshot as it comes)."""
    fresh: set[Ident] = field(default_factory=set)
    """When ``seen`` is None: the messages the snapshot being taken registered."""
    originals: _Firsts = field(default_factory=_Firsts)
    """call id -> the content its result had when it was first an observation."""
    wholes: dict[str, str] = field(default_factory=dict)
    """A message cut in parts (its key) -> its name: its parts share it."""
    counted: int = 0
    """The distinct messages named so far: the K of the next ``msg-K``."""
    extracted: dict[Ident, list[dict[str, Any]]] = field(default_factory=dict)
    follows: dict[Ident, str | None] = field(default_factory=dict)
    """A message's extracted items -> the id of the own item they follow (None: the message
    gave no item, and nothing came before it)."""
    callless: set[str] = field(default_factory=set)
    fmt: str = "import"

    def put(self, event: dict[str, Any]) -> None:
        if self.emit is not None:
            self.emit(event)
        else:
            self.events.append(event)

    def known(self, ident: Ident) -> bool:
        """Were the message's items computed for an earlier snapshot?"""
        if self.seen is not None:
            return ident in self.seen
        return ident in self.names and ident not in self.fresh


def message_count(snapshots: Sequence[Snapshot]) -> int:
    """How many distinct messages the snapshots hold (as ``msg-K`` counts them: the parts
    of a message cut at a compaction block are one)."""
    return len(
        {
            ("part", m.part[0]) if m.part is not None else ident
            for snap in snapshots
            for ident, m in zip(_idents(snap.messages), snap.messages, strict=True)
        }
    )


def gives_items(snapshots: Sequence[Snapshot]) -> bool:
    """Does any message of the snapshots give an item (text, a tool call or a result)?"""
    return any(
        m.text.strip() or m.calls or m.results or m.annotations
        for snap in snapshots
        for m in snap.messages
    )


def build_trace(
    snapshots: Sequence[Snapshot],
    annotations: Sequence[Annotation] = (),
    *,
    fmt: str = "import",
    name: str = "<import>",
    extract: Extractor | None = None,
    extract_name: str = "the extractor",
) -> str:
    """The trace (JSONL text) of a history given as snapshots.

    Every message gets its items and ids (``docs/importers.md``, "Items" and
    "Ids"); a snapshot that extends the one before appends its new messages,
    any other one is a ``rewrite`` whose window is what the model then saw,
    followed by an ``append`` of the messages that arrived after it.
    ``extract`` is called once per message, at its first appearance, and the
    items it returns follow the message's own (``docs/importers.md``,
    "Extractors"). The trace is validated before it is returned.

    Raises:
        InputError: the history gives no item, or two items the same id in one
            window, or the annotations or the extractor's items do not fit it,
            or the extractor raised.
    """
    state = _State(fmt=fmt)
    _register(snapshots, state)
    if extract is not None:
        _extract_all(snapshots, state, extract, extract_name, annotations)
    if annotations:
        _anchor(annotations, _history_ids(snapshots, state), state)
    for snap in snapshots:
        _take(snap, state)
    if not any(ev.get("items") or ev.get("window") for ev in state.events):
        raise InputError(
            "the history gives no item: no message has text, a tool call or a tool result",
            file=name,
            fix="check that the file is a session of the format named (or use FORMAT auto)",
        )
    lines = [canonical_json({"event": "header", "format": TRACE_FORMAT})]
    for ev in state.events:
        parts = split_append(ev) if ev["event"] == "append" else [ev]
        lines.extend(canonical_json(part) for part in parts)
    text = "\n".join(lines) + "\n"
    try:
        parse_trace_text(text, name)
    except InputError as exc:
        if any(m.annotations for snap in snapshots for m in snap.messages):
            # items from a message's 'ctxproof' metadata are the user's: say which one
            raise InputError(
                f"the 'ctxproof' metadata annotations do not fit the history: {exc.message}",
                file=name,
                item=exc.item,
                fix=exc.fix,
            ) from None
        raise InternalError(f"the import produced an invalid trace: {exc.render()}") from None
    return text


class Diverged(Exception):
    """A streamed import cannot tell that it writes what :func:`build_trace` gives: the
    history is refused by the whole-text import, or needs the whole of it at once."""


def stream_trace(
    snapshots: Iterable[Snapshot],
    write: Callable[[str], object],
    annotations: Sequence[Annotation] = (),
    *,
    fmt: str = "import",
    name: str = "<import>",
) -> Coverage:
    """:func:`build_trace`'s trace written to ``write`` as the snapshots come, and its coverage.

    The text written is the one :func:`build_trace` returns for the same
    snapshots. Each event is checked as it is written
    (:class:`~verifier.importers.writer.TraceWriter`) and nothing is held of the
    events written: only the items of the latest snapshot's messages are kept
    (a message that comes back has its items computed again, and they are the
    same), and the first content of every tool result and the long sources of
    calls go to a temporary file, read back when a result shows other content.

    An error reading the history (raised by the snapshots' iterator) is raised
    as it is. Whatever else the whole-text import would refuse, or where it
    could give another trace (a tool result before its call, which it pairs
    with the call read later), raises :class:`Diverged`: what was written is
    then no trace, and :func:`build_trace` of the whole history is the answer.

    Raises:
        Diverged: import the history whole instead.
    """
    spill = _Spill()
    each = iter(snapshots)
    try:
        s = _State(fmt=fmt, calls=_Calls(spill), originals=_Firsts(spill), seen=None)
        try:
            writer = TraceWriter(write, name)
            s.emit = writer.event
            for ann in annotations:
                for raw in ann.items:
                    item_from_json(raw, _Ctx(ann.file, ann.line))
                    s.anchors.setdefault(ann.after, []).append(dict(raw))
        except InputError as exc:
            raise Diverged(one_line(exc)) from None
        history = _History(s) if annotations else None
        gives = False
        for snap in each:  # an error reading the history is raised by the iterator itself
            try:
                for m in snap.messages:
                    for call in m.calls:
                        if call.id in s.callless and call.id not in s.calls:
                            raise Diverged(f"a result of call {call.id!r} comes before the call")
                    gives = gives or bool(m.text.strip() or m.calls or m.results or m.annotations)
                s.fresh = {i for i in _idents(snap.messages) if i not in s.names}
                _register((snap,), s)
                if history is not None:
                    history.add(snap)
                _take(snap, s)
                keep = set(_idents(snap.messages))
                s.item_cache = {k: v for k, v in s.item_cache.items() if k[0] in keep}
            except InputError as exc:
                raise Diverged(one_line(exc)) from None
        try:
            if not gives or not writer.gave:
                raise Diverged("the history gives no item")
            if history is not None:
                _anchor(annotations, history.ids, _State(fmt=fmt))  # its checks, as build_trace's
            writer.close()
        except InputError as exc:
            raise Diverged(one_line(exc)) from None
        return writer.coverage(s.counted)
    finally:
        spill.close()
        close = getattr(each, "close", None)
        if close is not None:
            close()  # a generator reading a file closes it


def stable_key(m: Message) -> str:
    """What identifies a message without an id of its own across snapshots.

    Its JSON, except for a message that carries tool results: a result is the
    same item as long as its call id is, so such a message is its role, text,
    result call ids and call ids (a cleared or cut result does not make it new).
    """
    if not m.results:
        return m.same
    return canonical(
        [m.role, m.text, [r.call_id for r in m.results], [c.id for c in m.calls], m.summary]
    )


def _idents(messages: Sequence[Message]) -> list[Ident]:
    """Identity of each message: its own id, else its stable key and rank among equal ones."""
    counts: dict[str, int] = {}
    out: list[Ident] = []
    for m in messages:
        if m.id is not None:
            out.append(m.id)
            continue
        key = stable_key(m)
        j = counts.get(key, 0)
        counts[key] = j + 1
        out.append(("key", key, j))
    return out


def _register(snapshots: Iterable[Snapshot], state: _State) -> None:
    """Name every distinct message (own id, else ``msg-K``) and index every tool call."""
    for snap in snapshots:
        for ident, m in zip(_idents(snap.messages), snap.messages, strict=True):
            if ident not in state.names:
                state.names[ident] = fit_id(_name(m, state))
            for call in m.calls:
                state.calls.add(call)


def _name(m: Message, state: _State) -> str:
    """A new message's name: its own id, else ``msg-K`` (K counting distinct messages);
    a part of a message cut at a compaction block is named after the whole."""
    if m.part is None:
        state.counted += 1
        return m.id if m.id is not None else f"msg-{state.counted - 1}"
    whole, label, own = m.part
    base = state.wholes.get(whole)
    if base is None:
        state.counted += 1
        base = state.wholes[whole] = own if own is not None else f"msg-{state.counted - 1}"
    return base if label == "after" else f"{base}:{label}"


class _SoFar(Sequence[Mapping[str, Any]]):
    """A read-only view of the first ``n`` items of a growing list."""

    __slots__ = ("_items", "_n")

    def __init__(self, items: list[Mapping[str, Any]], n: int) -> None:
        self._items, self._n = items, n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> Mapping[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Mapping[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return tuple(self._items[: self._n][index])
        if not -self._n <= index < self._n:
            raise IndexError("item index out of range")
        return self._items[index % self._n]


def _extract_all(
    snapshots: Sequence[Snapshot],
    s: _State,
    extract: Extractor,
    extract_name: str,
    annotations: Sequence[Annotation],
) -> None:
    """Call the extractor once per message, in order of first appearance."""
    history = _history_ids(snapshots, s)
    scratch = _scratch(s)
    noted = {str(raw.get("id")) for ann in annotations for raw in ann.items}
    following: dict[str, list[Mapping[str, Any]]] = {}  # the --annotations by the id they follow
    for ann in annotations:
        following.setdefault(ann.after, []).extend(ann.items)
    so_far: list[Mapping[str, Any]] = []
    taken: dict[str, Message] = {}
    done: set[Ident] = set()
    last_own: str | None = None  # the last item a message gave, in order of first appearance
    for snap in snapshots:
        for ident, m in zip(_idents(snap.messages), snap.messages, strict=True):
            if ident in done:
                continue
            done.add(ident)
            own = _own_items(m, s.names[ident], scratch)
            # every item so far as the trace holds them: each own item, the annotations that
            # follow it, then the message's metadata items
            for it in own:
                so_far.append(MappingProxyType(dict(it)))
                so_far.extend(MappingProxyType(dict(raw)) for raw in following.get(it["id"], ()))
            so_far.extend(MappingProxyType(dict(raw)) for raw in m.annotations)
            # the message as the format holds it: its object (the key is its canonical JSON
            # where the format did not keep it)
            held = m.raw if m.raw is not None else json.loads(m.key)
            context = MappingProxyType(
                {
                    "format": s.fmt,
                    "ids": tuple(it["id"] for it in own),
                    "items": _SoFar(so_far, len(so_far)),
                    "record": m.record if m.record is not None else held,
                }
            )
            try:
                got = extract(held, context)
            except (Exception, SystemExit) as exc:  # sys.exit() in it ends no import
                raise m.error(
                    f"{extract_name} raised {one_line(exc)}",
                    fix="fix the extractor so that it returns a list of item objects",
                ) from None
            items = _extracted_items(got, m, extract_name)
            for it in items:
                iid = it["id"]
                if iid in history or iid in taken or iid in noted:
                    raise m.error(
                        f"{extract_name} gave item {iid!r}, whose id is already used",
                        fix="give every extracted item an id of its own",
                    )
                taken[iid] = m
            # they belong to the item they follow: the message's last, else the one before it
            # (then they go where it goes, as an annotation after it would)
            after = own[-1]["id"] if own else last_own
            s.extracted[ident] = items
            s.follows[ident] = after
            if not own and after is not None:
                s.anchors.setdefault(after, []).extend(dict(it) for it in items)
            last_own = after
            so_far.extend(MappingProxyType(dict(it)) for it in items)
    defined = history | set(taken) | noted
    for items in s.extracted.values():
        for raw in items:
            m = taken[raw["id"]]
            for rel, ref in item_from_json(raw, _Ctx(m.file, None)).citations:
                if ref not in defined:
                    raise m.error(
                        f"{extract_name} gave item {raw['id']!r}, which cites {rel} {ref!r},"
                        " an id that neither the history nor the extractor gives",
                        fix="cite an item id of the imported history (context['items'])",
                    )


def _extracted_items(got: Any, m: Message, extract_name: str) -> list[dict[str, Any]]:
    """The extractor's answer for one message, checked: commitments and claims."""
    if got is None:
        return []
    if isinstance(got, Mapping | str | bytes) or not isinstance(got, Iterable):
        raise m.error(
            f"{extract_name} returned a {type(got).__name__}, not a list of item objects",
            fix="return a list of item dicts (or None for none)",
        )
    out: list[dict[str, Any]] = []
    for raw in got:
        if not isinstance(raw, Mapping):
            raise m.error(
                f"{extract_name} returned a {type(raw).__name__} in its list, not an item object",
                fix="return a list of item dicts",
            )
        try:
            item = item_from_json(dict(raw), _Ctx(m.file, None))
        except InputError as exc:
            raise m.error(
                f"{extract_name} gave an invalid item: {exc.message}", fix=exc.fix
            ) from None
        if item.kind not in _EXTRACTED_KINDS:
            raise m.error(
                f"{extract_name} gave {item.kind} item {item.id!r}: an extractor gives"
                " commitments and claims (observations and prose come from the history)",
                fix="return commitment and claim items only",
            )
        out.append(json.loads(canonical(dict(raw))))
    return out


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and message, white space collapsed, bounded."""
    text = " ".join(str(exc).split())
    out = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return out if len(out) <= 300 else out[:297] + "..."


def _anchor(annotations: Sequence[Annotation], history: set[str], s: _State) -> None:
    """Check the ``--annotations`` against the history's ids and file them by the item
    they follow."""
    extracted = {it["id"] for items in s.extracted.values() for it in items}
    given: set[str] = set()
    for ann in annotations:
        if ann.after not in history:
            raise InputError(
                f"'after' names {ann.after!r}, which the history does not give",
                file=ann.file,
                line=ann.line,
                fix="name the id of an item of the imported history",
            )
        for raw in ann.items:
            item = item_from_json(raw, _Ctx(ann.file, ann.line))
            if item.id in history or item.id in given or item.id in extracted:
                raise InputError(
                    "annotation id is already used",
                    file=ann.file,
                    line=ann.line,
                    item=item.id,
                    fix="give every annotation item an id of its own",
                )
            given.add(item.id)
            s.anchors.setdefault(ann.after, []).append(dict(raw))
    _check_citations(annotations, history | given | extracted)


def _check_citations(annotations: Sequence[Annotation], defined: set[str]) -> None:
    for ann in annotations:
        for raw in ann.items:
            item = item_from_json(raw, _Ctx(ann.file, ann.line))
            for rel, ref in item.citations:
                if ref not in defined:
                    raise InputError(
                        f"cites {rel} {ref!r}, which neither the history nor the annotations give",
                        file=ann.file,
                        line=ann.line,
                        item=item.id,
                        fix="cite an item id of the imported history",
                    )


def _scratch(s: _State) -> _State:
    """A state to compute items on before the trace is built: the names and calls of
    ``s``, and first contents of its own, so that ``s`` is left as it was."""
    return _State(names=s.names, calls=s.calls, fmt=s.fmt)


class _History:
    """The ids of the history's own items, met snapshot by snapshot (each distinct
    message once, its items computed on a scratch state)."""

    def __init__(self, s: _State) -> None:
        self.ids: set[str] = set()
        self._done: set[tuple[Ident, str]] = set()
        self._names = s.names
        self._scratch = _scratch(s)

    def add(self, snap: Snapshot) -> None:
        for ident, m in zip(_idents(snap.messages), snap.messages, strict=True):
            if (ident, m.key) not in self._done:
                self._done.add((ident, m.key))
                own = _own_items(m, self._names[ident], self._scratch)
                self.ids.update(it["id"] for it in own)


def _history_ids(snapshots: Sequence[Snapshot], s: _State) -> set[str]:
    history = _History(s)
    for snap in snapshots:
        history.add(snap)
    return history.ids


def _take(snap: Snapshot, s: _State) -> None:
    """Turn one snapshot into an append (it extends the last one) or a rewrite."""
    idents = _idents(snap.messages)
    marks = list(zip(idents, (m.same for m in snap.messages), strict=True))
    last = s.last
    if snap.policy is None and last is not None and marks[: len(last)] == last:
        _append(snap.messages[len(last) :], idents[len(last) :], s)
    elif last is None and snap.policy is None:
        _append(snap.messages, idents, s)
    else:
        _rewrite(snap, idents, s)
    s.last = marks


def _append(messages: Sequence[Message], idents: Sequence[Ident], s: _State) -> None:
    items: list[dict[str, Any]] = []
    present = set(s.window)
    for m, ident in zip(messages, idents, strict=True):
        for it in _items(m, ident, s):
            if it["id"] in present:
                raise m.error(
                    f"its item {it['id']!r} is already in the window: two messages give that id",
                    fix="give every message, tool call and tool result an id of its own",
                )
            present.add(it["id"])
            items.append(it)
    if items:
        s.put({"event": "append", "items": items})
        s.window.extend(it["id"] for it in items)


def _rewrite(snap: Snapshot, idents: Sequence[Ident], s: _State) -> None:
    """A rewrite to the window the snapshot shows, then an append of what arrived after.

    The window runs up to the last message an earlier snapshot held (by identity:
    a tool result by its call id, whatever its content now) or that is a summary;
    a ``whole`` snapshot is the window, every message of it.
    """
    known = [s.known(ident) for ident in idents]  # before this window's items are computed
    cut = 0
    for i, m in enumerate(snap.messages):
        if known[i] or m.summary or any(r.call_id in s.originals for r in m.results):
            cut = i + 1
    if snap.whole:
        cut = len(snap.messages)
    window: list[dict[str, Any]] = []
    ids: set[str] = set()
    for i, (m, ident) in enumerate(zip(snap.messages[:cut], idents[:cut], strict=True)):
        as_output = snap.policy is not None and not known[i]
        for it in _items(m, ident, s, as_summary=as_output):
            if it["id"] in ids:
                raise m.error(
                    f"its item {it['id']!r} appears twice in one window",
                    fix="give every message, tool call and tool result an id of its own",
                )
            ids.add(it["id"])
            window.append(it)
    policy = snap.policy or f"{s.fmt}:snapshot"
    s.put({"event": "rewrite", "policy": policy, "window": window})
    s.window = [it["id"] for it in window]
    _append(snap.messages[cut:], idents[cut:], s)


def _items(
    m: Message, ident: Ident, s: _State, *, as_summary: bool = False
) -> list[dict[str, Any]]:
    """A message's items with the annotations and extracted items that follow them."""
    cache_key = (ident, m.key + ("#summary" if as_summary else ""))
    cached = s.item_cache.get(cache_key)
    if cached is None:
        cached = []
        own = _own_items(m, s.names[ident], s, as_summary=as_summary)
        for it in own:
            cached.append(it)
            cached.extend(s.anchors.get(it["id"], ()))
        cached.extend(_message_annotations(m, own))
        after = s.follows.get(ident)
        if after is None or any(it["id"] == after for it in own):
            # items extracted from the message as first seen follow its last item: a later
            # version that holds a placeholder instead (CALLID:cleared) holds none of them
            cached.extend(s.extracted.get(ident, ()))
        s.item_cache[cache_key] = cached
    if s.seen is not None:
        s.seen.add(ident)
    return [dict(it) for it in cached]


def _message_annotations(m: Message, own: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    if not m.annotations:
        return []
    if not own:
        raise m.error(
            "it carries 'ctxproof' annotations but gives no item for them to follow",
            fix="move the annotations to a message with text, a tool call or a result",
        )
    out = []
    for raw in m.annotations:
        try:
            item_from_json(raw, _Ctx(m.file, None))
        except InputError as exc:  # named where it is: this message's metadata
            item = f"item {exc.item!r}: " if exc.item is not None else ""
            raise m.error(f"its 'ctxproof' metadata: {item}{exc.message}", exc.fix) from None
        out.append(dict(raw))
    return out


def _own_items(
    m: Message, base: str, s: _State, *, as_summary: bool = False
) -> list[dict[str, Any]]:
    """Results first, then the text, then the calls (``docs/importers.md``, "Items")."""
    out = [_result_item(r, s, _by(base, m.key, as_summary, k)) for k, r in enumerate(m.results)]
    text = _text_item(m, base, summary=m.summary or as_summary)
    if text is not None:
        out.append(text)
    for call in m.calls:
        out.append({"id": fit_id(call.id), "kind": "prose", "text": call.source})
    return out


def _text_item(m: Message, base: str, *, summary: bool) -> dict[str, Any] | None:
    if not m.text.strip():
        return None
    if summary or m.role in ("assistant", "tool"):
        return {"id": base, "kind": "prose", "text": m.text}
    item: dict[str, Any] = {"id": base, "kind": "observation", "source": m.role, "content": m.text}
    if m.at is not None:
        item["at"] = m.at
    return item


def _result_item(r: ToolResult, s: _State, by: bytes) -> dict[str, Any]:
    """A tool result: an observation ``CALLID:result``, or a placeholder where it was.

    The placeholder is ``CALLID:cleared`` (its content is a placeholder, or gone)
    or ``CALLID:truncated`` (its content is the first observation's, cut); its
    text ends in `` (error)`` when the format still shows the error flag.
    """
    call = s.calls.get(r.call_id)
    if call is None:
        s.callless.add(r.call_id)
    original = s.originals.first(r.call_id, by)
    item: dict[str, Any]
    if r.declined:
        item = {"id": fit_id(f"{r.call_id}:result"), "kind": "observation", "source": "user"}
        item["content"] = r.content
    elif r.cleared or is_placeholder(r.content) or (original is not None and not r.content.strip()):
        item = {"id": fit_id(f"{r.call_id}:cleared"), "kind": "prose"}
        item["text"] = (r.content.strip() or "[cleared]") + (" (error)" if r.error else "")
    elif (kept := s.originals.kept(original, r.content)) is not None:
        item = {"id": fit_id(f"{r.call_id}:truncated"), "kind": "prose"}
        item["text"] = kept + (" (error)" if r.error else "")
    else:
        exit_code = r.exit_code if r.exit_code is not None else exit_code_in(r.content)
        failed = r.error or (exit_code is not None and exit_code != 0)
        item = {
            "id": fit_id(f"{r.call_id}:result"),
            "kind": "observation",
            "content": r.content,
            "modality": "failed" if failed else "verified",
        }
        source = call[1] if call is not None else r.name
        if source is not None:
            item["source"] = source
        if exit_code is not None:
            item["exit_code"] = exit_code
        s.originals.note(r.call_id, r.content, by)
    if call is not None:
        item["call"] = call[0]
    return item
