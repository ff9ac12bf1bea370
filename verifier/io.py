"""Reading windows and traces, and their validation (docs/formats.md, "Bad input").

Every problem becomes an :class:`InputError` naming the file, the line, the
item and the fix. Nothing is half-loaded: a trace is read and validated whole
before any check runs.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import reprlib
import stat
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from verifier.errors import (
    FormulaError,
    InputError,
    bad_argument,
    did_you_mean,
    suggestion,
    want_callable,
    want_path,
    want_strings,
    want_text,
    wrong_type,
)
from verifier.formula import Formula
from verifier.parser import parse_formula
from verifier.window import (
    KINDS,
    MODALITIES,
    TYPES,
    UNREAD_FIELDS,
    Append,
    Event,
    Header,
    Item,
    Rewrite,
    Spill,
    Trace,
    Unwritten,
    Window,
    built_item,
    canonical_json,
    content_ref,
    item_slots,
)

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_LINE_BYTES",
    "SNIFF_BYTES",
    "TRACE_FORMAT",
    "WINDOW_FORMAT",
    "background_argument",
    "bad_utf8_message",
    "collector_paused",
    "decode_input",
    "forget_reads",
    "item_from_canonical",
    "item_from_json",
    "items_argument",
    "load_trace",
    "load_window",
    "parse_trace_text",
    "parse_window_text",
    "ref_of",
    "sniff_kind",
    "stub_for",
    "trace_from_dicts",
    "utf8_length",
    "window_from_dicts",
    "window_to_json",
]

TRACE_FORMAT = "ctxproof-trace/1"
WINDOW_FORMAT = "ctxproof-window/1"
MAX_LINE_BYTES = 64 * 1024 * 1024
MAX_INPUT_BYTES = 1024 * 1024 * 1024
MAX_JSON_DEPTH = 64
MAX_ID_LENGTH = 256

_COMMON = {"id", "kind", "text", "tokens", "score"}
_FIELDS: dict[str, set[str]] = {
    "commitment": _COMMON
    | {"type", "formula", "rationale", "witnesses", "modality", "load_bearing", "covers"},
    "claim": _COMMON
    | {"formula", "modality", "witnesses", "derived_from", "load_bearing", "covers"},
    "observation": _COMMON
    | {"shows", "modality", "digest", "content", "source", "exit_code", "at", "call"},
    "prose": _COMMON | {"call"},
    "stub": _COMMON | {"ref"},
}
_EVENT_FIELDS: dict[str, set[str]] = {
    "header": {"event", "format", "background", "budget", "store"},
    "append": {"event", "items"},
    "spill": {"event", "items"},
    "rewrite": {"event", "policy", "window", "diff", "claimed_preserved", "pressure"},
}
_REF_RE = re.compile(r"sha256:[0-9a-f]{64}")


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxdict = 4
_REPR.maxlevel = 2


def _shown(value: Any) -> str:
    """A value as a message quotes it: its repr, cut short (input values can be huge)."""
    return _REPR.repr(value)


class _Ctx:
    """Where we are while reading: the file and line, for messages."""

    def __init__(self, file: str, line: int | None) -> None:
        self.file = file
        self.line = line

    def error(self, message: str, *, item: str | None = None, fix: str | None = None) -> InputError:
        return InputError(message, file=self.file, line=self.line, item=item, fix=fix)


_T = TypeVar("_T")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class _DuplicateKey(ValueError):
    """A key written twice in one JSON object; ``item`` the object's id, when it has one."""

    def __init__(self, message: str, item: str | None) -> None:
        super().__init__(message)
        self.item = item


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out  # no key twice (the usual case, settled by dict itself)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            # the object's id: its first one when the key written twice is "id" itself
            iid = out.get("id") if key != "id" else next(v for k, v in pairs if k == "id")
            raise _DuplicateKey(
                f"duplicate key {_shown(key)}", iid if isinstance(iid, str) else None
            )
        seen.add(key)
    raise AssertionError("unreachable: fewer keys than pairs means a key twice")


def _too_deep(obj: Any, depth: int = 1) -> bool:
    """Does obj nest deeper than MAX_JSON_DEPTH? (Stops at the bound: no deep recursion.)"""
    if depth > MAX_JSON_DEPTH:
        return True
    if isinstance(obj, dict):
        return any(_too_deep(v, depth + 1) for v in obj.values() if isinstance(v, dict | list))
    if isinstance(obj, list):
        return any(_too_deep(v, depth + 1) for v in obj if isinstance(v, dict | list))
    return False


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range (it would read as {value})")
    return value


def _loads(text: str, ctx: _Ctx, *, flat_when_valid: bool = False) -> Any:
    """Parse one JSON text; bad JSON, and JSON nesting deeper than MAX_JSON_DEPTH, are
    bad input. With ``flat_when_valid`` the caller validates the value with
    :func:`_validated`, which measures the nesting only on the way to an error.

    A value JSON has no place for (``NaN``, a number out of range) or nesting too
    deep names the item it stands in, where it stands in one (:func:`_item_around`)."""
    try:
        obj = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_reject_constant,
            parse_float=_finite,
        )
    except json.JSONDecodeError as exc:
        where = _Ctx(ctx.file, (ctx.line or 1) + exc.lineno - 1)
        if exc.msg.startswith("Unexpected UTF-8 BOM"):
            raise where.error(
                "a byte order mark (U+FEFF) stands before the JSON value",
                fix="remove it (only the file's first line may start with one)",
            ) from None
        raise where.error(
            f"malformed JSON: {exc.msg} (column {exc.colno})", fix="write one valid JSON value"
        ) from None
    except RecursionError:
        raise ctx.error(
            f"JSON nests deeper than {MAX_JSON_DEPTH} levels",
            item=_item_around(_flattened(text), _is_marker),
            fix="flatten the input",
        ) from None
    except ValueError as exc:
        text_exc = str(exc)
        if isinstance(exc, _DuplicateKey):
            raise ctx.error(
                f"{text_exc} in one JSON object", item=exc.item, fix="write each key once"
            ) from None
        item = _item_around(_lenient(text), _is_marker)
        if "integer string conversion" in text_exc:
            raise ctx.error(
                f"an integer has more than {_MAX_DIGITS} digits",
                item=item,
                fix=f"write integers of at most {_MAX_DIGITS} digits",
            ) from None
        if "is not valid JSON" in text_exc:
            raise ctx.error(
                text_exc, item=item, fix="write numbers as finite JSON numbers"
            ) from None
        raise ctx.error(
            f"malformed JSON: {exc}", item=item, fix="write one valid JSON value"
        ) from None
    if not flat_when_valid:
        deep = _too_deep_error(obj, ctx)
        if deep is not None:
            raise deep
    if "\\u" in text:
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise _too_deep_error(obj, ctx) or ctx.error(
                "a string holds a lone surrogate escape (such as \\ud800), which is not Unicode",
                item=_item_around(obj, _has_surrogate),
                fix="escape characters outside the BMP as a surrogate pair, or write them as is",
            ) from None
    return obj


def _too_deep_error(obj: Any, ctx: _Ctx) -> InputError | None:
    if _too_deep(obj):
        return ctx.error(
            f"JSON nests deeper than {MAX_JSON_DEPTH} levels",
            item=_item_around(obj, None),
            fix="flatten the input",
        )
    return None


_MARKER = "\x00ctxproof: the value in error\x00"
"""What :func:`_lenient` and :func:`_flattened` read in place of a value in error."""
_ITEM_LISTS = frozenset({"items", "window", "put"})
"""The keys whose lists hold items: of a window file, and of trace events and diffs."""


def _is_marker(value: Any) -> bool:
    return value is _MARKER or value == _MARKER


def _lenient_float(text: str) -> Any:
    value = float(text)
    return value if math.isfinite(value) else _MARKER


_MAX_DIGITS = 4300
"""The most digits an integer of the input may have (Python's own bound on reading one)."""


def _lenient_int(text: str) -> Any:
    return _MARKER if len(text.lstrip("-")) > _MAX_DIGITS else int(text)


def _lenient(text: str) -> Any:
    """The JSON text read with ``NaN``, infinities, numbers out of range and integers of
    too many digits as :data:`_MARKER` (None when it does not read even so)."""
    try:
        return json.loads(
            text,
            parse_constant=lambda _name: _MARKER,
            parse_float=_lenient_float,
            parse_int=_lenient_int,
        )
    except (ValueError, RecursionError):
        return None


def _flattened(text: str) -> Any:
    """The JSON text read with the first value nesting deeper than MAX_JSON_DEPTH
    replaced by :data:`_MARKER` (None when it does not read even so, or when the text
    is longer than :data:`_FLATTEN_MAX`: the message then names no item)."""
    if len(text) > _FLATTEN_MAX:
        return None
    depth, start = 0, -1
    for m in _BRACKETS(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            if depth == MAX_JSON_DEPTH + 1:
                start = m.start()
        elif ch in "]}":
            depth -= 1
            if depth == MAX_JSON_DEPTH and start >= 0:
                return _lenient(text[:start] + json.dumps(_MARKER) + text[m.end() :])
    return None


_BRACKETS: Callable[[str], Iterator[re.Match[str]]] = re.compile(
    r'"(?:[^"\\]|\\.)*"|[\[\]{}]'
).finditer
"""The brackets of a JSON text, and its strings whole (brackets in them are no brackets)."""
_FLATTEN_MAX = 1 << 22
"""The longest text :func:`_flattened` reads (4 MiB: under a second however it nests)."""


def _item_around(obj: Any, hit: Callable[[Any], bool] | None) -> str | None:
    """The item (an element of a list under ``items``, ``window`` or ``put``) that holds
    the first value ``hit`` accepts, or, with ``hit`` None, the first value nesting
    deeper than MAX_JSON_DEPTH: named by its id, or by its place (``items[3]``) when
    its id is not a string; None when no item holds it."""
    stack: list[tuple[Any, int, str | None]] = [(obj, 1, None)]
    while stack:
        node, depth, item = stack.pop()
        if hit is not None and hit(node):
            return item
        if hit is None and depth > MAX_JSON_DEPTH and isinstance(node, dict | list):
            return item
        if isinstance(node, dict):
            children: list[tuple[Any, int, str | None]] = []
            for key, value in node.items():
                if key in _ITEM_LISTS and isinstance(value, list):
                    for k, element in enumerate(value):
                        iid = element.get("id") if isinstance(element, dict) else None
                        named = isinstance(iid, str) and iid and not _is_marker(iid)
                        name = iid if named else f"{key}[{k}]"
                        children.append((element, depth + 2, name))
                else:
                    children.append((value, depth + 1, item))
            stack.extend(reversed(children))
        elif isinstance(node, list):
            stack.extend(reversed([(v, depth + 1, item) for v in node]))
    return None


def _validated(obj: Any, ctx: _Ctx, build: Callable[[Any, _Ctx], _T]) -> _T:
    """``build(obj, ctx)``; when it refuses obj and obj nests too deep, that is the error.

    Every field the reader accepts holds flat values (strings, numbers, lists of
    strings), so accepted input never nests deep: the nesting is measured only
    on the way to an error, not on every read.
    """
    try:
        return build(obj, ctx)
    except InputError:
        deep = _too_deep_error(obj, ctx)
        if deep is not None:
            raise deep from None
        raise


def decode_input(data: bytes, file: str) -> str:
    """The text of an input file's bytes (UTF-8, a byte order mark allowed); bytes that
    are not UTF-8 are bad input, located by line."""
    try:
        text = data.decode("utf-8")
        return text[1:] if text.startswith("\ufeff") else text  # a byte order mark is allowed
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise InputError(
            bad_utf8_message(data[exc.start : exc.end], column, exc.start),
            file=file,
            line=line,
            item=_item_with_bad_bytes(data, exc.start),
            fix="re-encode as UTF-8",
        ) from None


def bad_utf8_message(bad: bytes, column: int, at: int) -> str:
    """How every reader names bytes that are not UTF-8: their column on the line (in
    bytes, from 1), their offset in the file, and the bytes."""
    return f"invalid UTF-8 at column {column} (byte {at} of the file): {bad!r}"


def _has_surrogate(value: Any) -> bool:
    """A string holding a lone surrogate (what bytes that are no UTF-8 read as with
    ``surrogateescape``, or a ``\\udXXX`` escape left unpaired)."""
    return isinstance(value, str) and any("\ud800" <= c <= "\udfff" for c in value)


def _item_with_bad_bytes(data: bytes, at: int) -> str | None:
    """The item whose text holds the bytes at ``at`` that are no UTF-8: read from the line
    they stand on (a trace's event) or, when that line names none, from the whole text
    (a window file); None when no item holds them."""
    start = data.rfind(b"\n", 0, at) + 1
    end = data.find(b"\n", at)
    for chunk in (data[start : end if end >= 0 else len(data)], data):
        if len(chunk) > _FLATTEN_MAX:
            return None
        obj = _lenient(chunk.decode("utf-8", "surrogateescape"))
        item = None if obj is None else _item_around(obj, _has_surrogate)
        if item is not None:  # its bad bytes shown as U+FFFD, as a text editor shows them
            return item.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return None


def _str_list(value: Any, name: str, ctx: _Ctx, item: str | None) -> tuple[str, ...]:
    """A list of ids (a field left out is read as ``()``: the empty list)."""
    if value == () or value == []:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ctx.error(f"{name!r} must be a list of ids", item=item, fix=f'write "{name}": [...]')
    if len(set(value)) != len(value):
        raise ctx.error(f"{name!r} lists an id twice", item=item, fix="list each id once")
    return tuple(value)


def _formula_field(value: Any, name: str, ctx: _Ctx, item: str) -> Formula:
    if not isinstance(value, str):
        raise ctx.error(
            f"{name!r} must be a formula string",
            item=item,
            fix=f'write "{name}": "a & b -> c", or leave the field out',
        )
    try:
        return parse_formula(value)
    except FormulaError as exc:
        raise ctx.error(
            exc.message if name == "formula" else f"{name}: {exc.message}",
            item=item,
            fix=exc.fix or "fix the formula",
        ) from None


def _constants(names: tuple[str, ...]) -> dict[str, str]:
    """Each name by itself: a valid value read is replaced by the one constant string."""
    return {name: name for name in names}


_KIND, _TYPE, _MODALITY = _constants(KINDS), _constants(TYPES), _constants(MODALITIES)

_VALID: dict[str, Item] = {}
"""Items already validated, by their canonical JSON: an item seen again is not checked again."""
_VALID_MAX = 1 << 16


def item_from_json(obj: Any, ctx: _Ctx | None = None) -> Item:
    """Validate one item object and build the :class:`Item`.

    ``obj`` is a dict (or another mapping) of JSON values, as a window file holds it.

    Raises:
        TypeError: ``obj`` is not a mapping.
        InputError: it is not a valid item (its message names the field and the fix).
    """
    if ctx is None:
        if not isinstance(obj, dict):
            if not isinstance(obj, Mapping):
                raise wrong_type(
                    "item_from_json", "obj", obj, "an item dict", 'write {"id": ..., "kind": ...}'
                )
            obj = dict(obj)
        ctx = _Ctx("<input>", None)
    elif not isinstance(ctx, _Ctx):
        raise wrong_type("item_from_json", "ctx", ctx, "None (it is the reader's own)")
    return _item_from_object(obj, ctx, None)


def _not_plain(obj: Any) -> str | None:
    """Why an object is not plain JSON (NaN, infinities, sets, objects), or None."""
    try:
        json.dumps(obj, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        return str(exc) if not isinstance(exc, RecursionError) else "it nests too deep"
    return None


def _item_from_object(
    obj: Any, ctx: _Ctx, keys: frozenset[str] | None, at: Unwritten | None = None
) -> Item:
    """:func:`item_from_json`, given the object's keys where the caller has them.

    ``at``: where the object stands in the JSON text the reader scanned it from
    (then it holds nothing JSON cannot: no NaN, no infinity); a valid object's
    item gets its canonical JSON from there when it is first asked for.
    """
    if not isinstance(obj, dict):
        raise ctx.error("an item must be a JSON object", fix='write {"id": ..., "kind": ...}')
    if at is not None:
        early = _shaped(obj, at, keys)
        if early is not None:
            return early
    try:
        raw = canonical_json(obj)
    except (TypeError, ValueError, RecursionError):
        raw = None  # not plain JSON: the checks below say what is wrong
    if raw is not None and ("NaN" in raw or "Infinity" in raw):
        # a reader never gets these (JSON has none); a dict built in Python may
        problem = _not_plain(obj)
        if problem is not None:
            raise _not_plain_error(obj, ctx, problem)
    if raw is not None:
        hit = _VALID.get(raw)
        if hit is not None:
            return hit
    built = None if raw is None else _shaped(obj, raw, keys)
    item = built if built is not None else _item_from_json(obj, ctx, raw)
    if raw is not None and item.raw == raw:
        if len(_VALID) >= _VALID_MAX:
            _VALID.clear()
        _VALID[raw] = item
    return item


_Builder = Callable[[dict[str, Any], "str | Unwritten"], "Item | None"]
_BUILDERS: dict[tuple[str, frozenset[str]], _Builder | None] = {}
"""A builder for each shape of item object met (its kind and its keys); None for a
shape that is bad input (the full check words why)."""
_BUILDERS_MAX = 1 << 12


def _shaped(obj: dict[str, Any], raw: str | Unwritten, keys: frozenset[str] | None) -> Item | None:
    """The item of a valid object, built by the builder of its shape; None for an
    object that is not valid, or not plainly so (then :func:`_item_from_json` decides)."""
    kind = obj.get("kind")
    if type(kind) is not str:
        return None
    shape = (kind, frozenset(obj) if keys is None else keys)
    try:
        builder = _BUILDERS[shape]
    except KeyError:
        if len(_BUILDERS) >= _BUILDERS_MAX:
            _BUILDERS.clear()
        builder = _BUILDERS[shape] = _build_shape(*shape)
    return None if builder is None else builder(obj, raw)


def _build_shape(kind: str, keys: frozenset[str]) -> _Builder | None:
    """The builder of one shape, None for a shape that is bad input: a function that
    reads each key of the shape and checks it as :func:`_item_from_json` does, but
    with exact types (a subclass of str or int is left to the full check), then sets
    the item's fields through their slots, the absent ones to their defaults. Its
    source is written from our own field names and checks only."""
    if kind not in KINDS or "id" not in keys or not _FIELDS[kind].issuperset(keys):
        return None
    if (kind == "commitment" and "type" not in keys) or (kind == "stub" and "ref" not in keys):
        return None
    body: list[str] = []
    value: dict[str, str] = {"kind": "KIND", "raw": "raw"}

    def read(key: str, *checks: str) -> str:
        body.append(f"v_{key} = obj[{key!r}]")
        body.extend(f"if {check.format(v=f'v_{key}')}: return None" for check in checks)
        return f"v_{key}"

    def optional(key: str, field: str, *checks: str) -> None:
        if key in keys:
            value[field] = read(key, *(f"{{v}} is not None and ({c})" for c in checks))

    def ids(key: str, field: str) -> None:
        if key in keys:
            v = read(key, "type({v}) is not list")
            body.append(
                f"if {v} and (not all(type(x) is str for x in {v}) or len(set({v})) != len({v})):"
                " return None"
            )
            value[field] = f"tuple({v})"

    def formula(key: str, field: str) -> None:
        if key in keys:
            v = read(key, "type({v}) is not str")
            body.append(f"f_{key} = formula_or_none({v})")
            body.append(f"if f_{key} is None: return None")
            value[field], value["_formula"] = v, f"f_{key}"

    value["id"] = read("id", "type({v}) is not str", "not 1 <= len({v}) <= MAX_ID")
    optional("text", "text", "type({v}) is not str")
    optional("tokens", "tokens", "type({v}) is not int or {v} < 0")
    optional("score", "score", "type({v}) is not int or not 0 <= {v} <= 100")
    if kind in ("commitment", "claim", "observation") and "modality" in keys:
        v = read("modality", "type({v}) is not str or {v} not in MODALITY")
        value["modality"] = f"MODALITY[{v}]"
    if kind == "commitment":
        v = read("type", "type({v}) is not str or {v} not in TYPE")
        value["type"] = f"TYPE[{v}]"
        ids("rationale", "rationale")
    if kind in ("commitment", "claim"):
        ids("covers", "covers")
        formula("formula", "formula_text")
        ids("witnesses", "witnesses")
        optional("load_bearing", "load_bearing_field", "type({v}) is not bool")
    if kind == "claim":
        ids("derived_from", "derived_from")
    if kind == "observation":
        formula("shows", "shows_text")
        optional("content", "content", "type({v}) is not str")
        optional("digest", "digest", "type({v}) is not str or REF({v}) is None")
        if "content" in keys:
            if "digest" not in keys:
                body.append("v_digest = None")
            body.append("if v_content is not None:")
            body.append("    actual = content_ref(v_content)")
            if "digest" in keys:
                body.append("    if v_digest is not None and v_digest != actual: return None")
            body.append("    v_digest = actual")
            value["digest"] = "v_digest"
        optional("source", "source", "type({v}) is not str")
        optional("exit_code", "exit_code", "type({v}) is not int")
        optional(
            "at", "at", "type({v}) is not str and type({v}) is not int and type({v}) is not float"
        )
    if kind in ("observation", "prose") and "call" in keys:
        value["call"] = read("call", "type({v}) is not str", "not 1 <= len({v}) <= MAX_ID")
    if kind == "stub":
        value["stub_ref"] = read("ref", "type({v}) is not str or REF({v}) is None")
    made, scope = item_slots(value)
    scope.update(
        KIND=_KIND[kind],
        MAX_ID=MAX_ID_LENGTH,
        MODALITY=_MODALITY,
        TYPE=_TYPE,
        REF=_REF_RE.fullmatch,
        content_ref=content_ref,
        formula_or_none=_formula_or_none,
    )
    lines = ["def build(obj, raw):", *(f"    {line}" for line in [*body, *made, "return item"])]
    exec("\n".join(lines), scope)  # our own field names and checks: nothing from input
    built: _Builder = scope["build"]
    return built


def _formula_or_none(text: str) -> Formula | None:
    try:
        return parse_formula(text)
    except FormulaError:
        return None


_READ: list[dict[str, tuple[frozenset[str], Item]]] = [{}]
"""The items of the last window read, by id, each with the keys of its object.

An item object of the next window with those keys and the same values as the
item's fields (:func:`_same_json`) is that item, found without writing its
canonical JSON. One window is kept, whatever its size: a check reads the
window before, then the one after."""


class _Spans:
    """Where each item of the last window read item by item stood in its text.

    An item object of the next window whose text is the same characters as one
    of these is that item: it is neither parsed nor compared field by field.
    """

    __slots__ = ("ends", "items", "starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = array("q")
        self.ends = array("q")
        self.items: list[Item] = []


_TEXT: list[_Spans | None] = [None]
"""The spans of the last window read item by item (None after any other read)."""


def forget_reads() -> None:
    """Drop what the reader keeps of the windows read so far (their items and text):
    the next read starts cold. ``ctxproof check`` calls it once both windows are read."""
    _VALID.clear()
    _READ[0] = {}
    _TEXT[0] = None


_SHAPES: dict[frozenset[str], frozenset[str]] = {}
"""The key sets of item objects, kept once each (a window holds a handful of them)."""

_FIELD_OF = {
    "id": "id",
    "kind": "kind",
    "text": "text",
    "tokens": "tokens",
    "score": "score",
    "type": "type",
    "formula": "formula_text",
    "rationale": "rationale",
    "witnesses": "witnesses",
    "modality": "modality",
    "load_bearing": "load_bearing_field",
    "covers": "covers",
    "derived_from": "derived_from",
    "shows": "shows_text",
    "digest": "digest",
    "content": "content",
    "source": "source",
    "exit_code": "exit_code",
    "at": "at",
    "call": "call",
    "ref": "stub_ref",
}
"""The Item field each JSON field of an item is read into, as it was written."""


def _same_json(item: Item, keys: frozenset[str], obj: dict[str, Any]) -> bool:
    """Is obj the JSON the valid item was read from, an object with these keys?

    Each field of a valid item holds its JSON value as written (lists as tuples
    of strings). Python's equality is not JSON's (``1 == 1.0 == True``,
    ``0.0 == -0.0``), so values must also be of one type and floats written alike.
    """
    if obj.keys() != keys:
        return False
    for key, value in obj.items():
        known = getattr(item, _FIELD_OF[key])
        if type(value) is list:
            if type(known) is not tuple or tuple(value) != known:
                return False  # a tuple of strings equals only a list of strings
        elif (
            type(value) is not type(known)
            or value != known
            or (type(value) is float and repr(value) != repr(known))
        ):
            return False
    return True


def item_from_canonical(raw: str) -> Item:
    """The item whose canonical JSON is ``raw`` (an :attr:`Item.raw` that crossed a process
    boundary): validated like any item object, unless it was validated already."""
    hit = _VALID.get(raw)
    if hit is not None:
        return hit
    return item_from_json(json.loads(raw))


def item_from_plain(obj: Any) -> Item:
    """An item from an object that must be plain JSON (what a policy returns).

    Raises ValueError or TypeError when it is not plain JSON (NaN, a set, an
    object, a lone surrogate), :class:`InputError` when it is not a valid item.
    """
    text = json.dumps(
        obj, allow_nan=False, ensure_ascii=False, sort_keys=True, separators=(",", ":")
    )
    hit = _VALID.get(text)
    if hit is not None:
        return hit
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            "a string holds a lone surrogate (such as '\\udc80'), which is not Unicode:"
            " no trace can hold it"
        ) from None
    return item_from_json(json.loads(text))


def _bad_id(obj: dict[str, Any]) -> str:
    """What is wrong with an item's id, in words."""
    if "id" not in obj:
        return 'an item has no "id"'
    iid = obj["id"]
    if not isinstance(iid, str):
        return f"item id {_shown(iid)} is not a string"
    if not iid:
        return "an item's id is empty"
    return f"item id {_shown(iid[:40])}... is {len(iid)} characters long, over {MAX_ID_LENGTH}"


def _bad_id_fix(obj: dict[str, Any]) -> str:
    if "id" not in obj:
        return 'give every item an "id"'
    return f'write "id" as a string of 1 to {MAX_ID_LENGTH} characters'


def _a(word: str) -> str:
    """``word`` with its indefinite article."""
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def _missing_or(obj: dict[str, Any], key: str, what: str) -> str:
    """``what`` followed by the value of ``key``, or saying it has none."""
    if key not in obj:
        return f'{what} has no "{key}"'
    return f"{what} {key} is {_value(obj[key])}"


def _value(value: Any) -> str:
    """A JSON value as a message quotes it: ``null`` for None, else as :func:`_shown`."""
    return "null" if value is None else _shown(value)


def _item_from_json(obj: dict[str, Any], ctx: _Ctx, raw: str | None) -> Item:
    iid = obj.get("id")
    if not isinstance(iid, str) or not 1 <= len(iid) <= MAX_ID_LENGTH:
        raise ctx.error(_bad_id(obj), fix=_bad_id_fix(obj))
    kind = obj.get("kind")
    kind = _KIND.get(kind, kind) if isinstance(kind, str) else kind  # one str per kind
    if kind not in KINDS:
        raise ctx.error(
            f"unknown kind {_value(kind)}" if "kind" in obj else 'the item has no "kind"',
            item=iid,
            fix=suggestion(kind, KINDS) or f"use one of {', '.join(KINDS)}",
        )
    if not _FIELDS[kind].issuperset(obj):
        unknown = sorted(set(obj) - _FIELDS[kind])
        raise ctx.error(
            f"unknown field {_shown(unknown[0])} for {_a(kind)}",
            item=iid,
            fix=_field_fix(unknown[0], kind),
        )
    text = obj.get("text")
    if text is not None and not isinstance(text, str):
        raise ctx.error("'text' must be a string", item=iid, fix='write "text": "..."')
    tokens = obj.get("tokens")
    if tokens is not None and (
        isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0
    ):
        raise ctx.error(
            "'tokens' must be an integer >= 0",
            item=iid,
            fix="give a whole number of tokens, or leave it out for the default",
        )
    score = obj.get("score")
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, int) or not 0 <= score <= 100
    ):
        raise ctx.error(
            "'score' must be an integer from 0 to 100",
            item=iid,
            fix="give a whole number from 0 to 100, or leave it out",
        )
    modality = obj.get("modality", "unverified")
    modality = _MODALITY.get(modality, modality) if isinstance(modality, str) else modality
    if modality not in MODALITIES:
        raise ctx.error(
            f"unknown modality {_shown(modality)}",
            item=iid,
            fix=suggestion(modality, MODALITIES) or f"use one of {', '.join(MODALITIES)}",
        )
    load_bearing = obj.get("load_bearing")
    if load_bearing is not None and not isinstance(load_bearing, bool):
        raise ctx.error(
            "'load_bearing' must be true or false",
            item=iid,
            fix='write "load_bearing": true or false (JSON booleans, unquoted)',
        )
    fields: dict[str, Any] = {
        "id": iid,
        "kind": kind,
        "raw": raw,
        "text": text,
        "tokens": tokens,
        "score": score,
    }
    if kind in ("commitment", "claim", "observation"):
        fields["modality"] = modality
    if kind == "commitment":
        ctype = obj.get("type")
        if ctype is None:
            raise ctx.error(
                "commitment has no 'type'", item=iid, fix=f'add "type": one of {", ".join(TYPES)}'
            )
        ctype = _TYPE.get(ctype, ctype) if isinstance(ctype, str) else ctype
        if ctype not in TYPES:
            raise ctx.error(
                f"unknown commitment type {_shown(ctype)}",
                item=iid,
                fix=suggestion(ctype, TYPES) or f"use one of {', '.join(TYPES)}",
            )
        fields["type"] = ctype
        fields["rationale"] = _str_list(obj.get("rationale", ()), "rationale", ctx, iid)
    if kind in ("commitment", "claim"):
        fields["covers"] = _str_list(obj.get("covers", ()), "covers", ctx, iid)
        if "formula" in obj:
            fields["_formula"] = _formula_field(obj["formula"], "formula", ctx, iid)
            fields["formula_text"] = obj["formula"]
        fields["witnesses"] = _str_list(obj.get("witnesses", ()), "witnesses", ctx, iid)
        fields["load_bearing_field"] = load_bearing
    if kind == "claim":
        fields["derived_from"] = _str_list(obj.get("derived_from", ()), "derived_from", ctx, iid)
    if kind == "observation":
        if "shows" in obj:
            fields["_formula"] = _formula_field(obj["shows"], "shows", ctx, iid)
            fields["shows_text"] = obj["shows"]
        content = obj.get("content")
        if content is not None and not isinstance(content, str):
            raise ctx.error(
                "'content' must be a string", item=iid, fix="give the raw output as one string"
            )
        digest = obj.get("digest")
        if digest is not None and (not isinstance(digest, str) or not _REF_RE.fullmatch(digest)):
            raise ctx.error(
                "'digest' must be sha256:<64 lowercase hex digits>",
                item=iid,
                fix="write the sha256 of the raw output, or give 'content' and leave it out",
            )
        if content is not None:
            actual = content_ref(content)
            if digest is not None and digest != actual:
                raise ctx.error(
                    f"digest {digest} does not match content (its sha256 is {actual})",
                    item=iid,
                    fix="fix the digest or the content, or drop the digest",
                )
            digest = actual
        fields["content"] = content
        fields["digest"] = digest
        source = obj.get("source")
        if source is not None and not isinstance(source, str):
            raise ctx.error(
                "'source' must be a string",
                item=iid,
                fix='name the command or tool: "source": "..."',
            )
        fields["source"] = source
        exit_code = obj.get("exit_code")
        if exit_code is not None and (
            isinstance(exit_code, bool) or not isinstance(exit_code, int)
        ):
            raise ctx.error(
                "'exit_code' must be an integer",
                item=iid,
                fix='write the exit status as a number ("exit_code": 1), or leave it out',
            )
        fields["exit_code"] = exit_code
        at = obj.get("at")
        if at is not None and (isinstance(at, bool) or not isinstance(at, str | int | float)):
            raise ctx.error(
                "'at' must be a turn number, a time or a commit string",
                item=iid,
                fix='write a number or a string ("at": 12 or "at": "2026-01-01T00:00:00Z")',
            )
        fields["at"] = at
    if kind in ("observation", "prose") and "call" in obj:
        call = obj["call"]
        if not isinstance(call, str) or not 1 <= len(call) <= MAX_ID_LENGTH:
            raise ctx.error(
                f"'call' must be the id of the item that requested this output"
                f" (a string of 1 to {MAX_ID_LENGTH} characters)",
                item=iid,
                fix='write "call": "<id of the tool call item>", or leave it out',
            )
        fields["call"] = call
    if kind == "stub":
        ref = obj.get("ref")
        if not isinstance(ref, str) or not _REF_RE.fullmatch(ref):
            raise ctx.error(
                "a stub needs 'ref': sha256:<64 lowercase hex digits> of the spilled item",
                item=iid,
                fix="write the sha256 of the spilled item's canonical JSON (stub_for() does)",
            )
        fields["stub_ref"] = ref
    if raw is None:  # every field is valid, and yet the object is not plain JSON
        raise _not_plain_error(obj, ctx, _not_plain(obj) or "it cannot be written as JSON")
    return built_item(fields)


def _not_plain_error(obj: dict[str, Any], ctx: _Ctx, problem: str) -> InputError:
    iid = obj.get("id")
    return ctx.error(
        f"the item is not plain JSON: {problem}",
        item=iid if isinstance(iid, str) and len(iid) <= 40 else None,
        fix="give JSON values only: strings, finite numbers, booleans, null, lists, objects",
    )


def _field_fix(field: str, kind: str) -> str:
    """The remedy for an unknown field of an item of this kind: the field it likely
    meant, else the kinds the field belongs to, else the fields the kind takes."""
    meant = did_you_mean(field, _FIELDS[kind])
    if meant is not None:
        return f"did you mean {meant!r}?"
    owners = [k for k in KINDS if field in _FIELDS[k]]
    if owners:
        kinds = " and ".join(owners)
        return f"{field!r} is a field of {kinds} items; remove it, or change the kind"
    return f"remove it; a {kind} takes {', '.join(sorted(_FIELDS[kind]))}"


def ref_of(item: Item | Mapping[str, Any]) -> str:
    """The store key of an item: ``sha256:`` of its canonical JSON.

    Canonical JSON is the item object with keys sorted, no whitespace
    (separators ``,`` and ``:``), non-ASCII characters written as UTF-8 (not
    escaped). A stub's ``ref`` must be exactly this.

    >>> ref_of({"id": "c1", "kind": "commitment", "type": "decision"})[:15]
    'sha256:d1d35408'
    """
    if isinstance(item, Item):
        return item.ref
    return content_ref(_plain_text(item, "ref_of"))


def _plain_text(item: Any, func: str) -> str:
    """The canonical JSON of an item dict given to ``func``: a mapping of plain JSON values."""
    if not isinstance(item, Mapping):
        raise wrong_type(func, "item", item, "an item dict or an Item")
    obj = item if isinstance(item, dict) else dict(item)
    try:
        raw = canonical_json(obj)
    except (TypeError, ValueError, RecursionError):
        raw = None
    if raw is None or "NaN" in raw or "Infinity" in raw:
        problem = _not_plain(obj)
        if problem is not None or raw is None:
            raise bad_argument(
                func,
                f"the item is not plain JSON: {problem}",
                fix="give JSON values only: strings, finite numbers, booleans, null, lists,"
                " objects",
            )
    assert raw is not None
    return raw


def stub_for(item: Item | Mapping[str, Any]) -> Any:
    """The stub that stands for item once it is spilled: same id, ``ref`` of the item.

    Takes and returns a plain dict (as policies see items) or an :class:`Item`.

    >>> stub_for({"id": "c1", "kind": "commitment", "type": "decision"})["kind"]
    'stub'
    """
    if isinstance(item, Item):
        return item_from_json({"id": item.id, "kind": "stub", "ref": item.ref})
    raw = _plain_text(item, "stub_for")
    if not isinstance(item.get("id"), str):
        raise bad_argument(
            "stub_for", "the item has no string 'id'", fix="pass one item object, with its id"
        )
    return {"id": item["id"], "kind": "stub", "ref": content_ref(raw)}


def items_argument(value: Any, *, func: str, arg: str, unique: bool = True) -> tuple[Item, ...]:
    """The items of a window given to the API function ``func`` as ``arg``: a
    :class:`Window`, or a list (any iterable) of :class:`Item` objects and plain item dicts,
    each dict validated as a window file's item; with ``unique``, no id twice.

    Raises:
        TypeError: ``value`` is not such a list (a string, a number, one item dict, a
            window file's object), or one of its entries is neither a dict nor an Item.
        InputError: an item dict is not a valid item, or an id appears twice.
    """
    if isinstance(value, Window):
        return value.items
    if isinstance(value, Mapping):
        if "items" in value and "format" in value:
            fix = "pass its 'items', or read the file with load_window(path)"
        else:
            fix = "wrap one item in a list: [item]"
        raise wrong_type(func, arg, value, "a list of items", fix)
    if isinstance(value, str | bytes | bytearray) or not _iterable(value):
        fix = "read a window file with load_window(path)" if isinstance(value, str) else ""
        raise wrong_type(func, arg, value, "a list of items (item dicts or Items)", fix)
    out = []
    for i, it in enumerate(value):
        if isinstance(it, Item):
            out.append(it)
        elif isinstance(it, Mapping):
            where = _Ctx(f"{func}(): {arg}[{i}]", None)
            out.append(_item_from_object(it if isinstance(it, dict) else dict(it), where, None))
        else:
            raise wrong_type(func, f"{arg}[{i}]", it, "an item dict or an Item")
    items = tuple(out)
    if unique and len({it.id for it in items}) != len(items):
        seen: set[str] = set()
        for i, it in enumerate(items):
            if it.id in seen:
                raise InputError(
                    "id appears twice in the window",
                    file=f"{func}(): {arg}[{i}]",
                    item=it.id,
                    fix="ids are unique within a window",
                )
            seen.add(it.id)
    return items


def _iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


def _items(value: Any, ctx: _Ctx, where: str, *, unique: bool = True) -> tuple[Item, ...]:
    if not isinstance(value, list):
        raise ctx.error(f"{where} must be a list of items", fix=f'write "{where}": [...]')
    built: list[Item] = []
    for k, v in enumerate(value):
        try:
            built.append(item_from_json(v, ctx))
        except InputError as exc:
            raise _placed(exc, f"{where}[{k}]") from None
    items = tuple(built)
    if unique:
        seen: set[str] = set()
        for it in items:
            if it.id in seen:
                raise ctx.error(
                    f"id appears twice in {where}", item=it.id, fix="ids are unique within a window"
                )
            seen.add(it.id)
    return items


def _placed(exc: InputError, place: str) -> InputError:
    """The error of an item named by no id (none, or not a string) named by its place."""
    if exc.item is not None:
        return exc
    return InputError(exc.message, file=exc.file, line=exc.line, item=place, fix=exc.fix)


def _background(value: Any, ctx: _Ctx) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ctx.error(
            "'background' must be a list of formula strings",
            fix='write "background": ["a -> b", ...]',
        )
    for i, text in enumerate(value):
        try:
            parse_formula(text)
        except FormulaError as exc:
            raise ctx.error(
                f"background[{i}]: {exc.message}", fix=exc.fix or "fix the formula"
            ) from None
    check_background(value, ctx.file, ctx.line)
    return tuple(value)


def check_background(texts: Iterable[str], file: str, line: int | None = 1) -> None:
    """A background that is unsatisfiable on its own is bad input."""
    formulas = [parse_formula(t) for t in texts]
    if not formulas:
        return
    from verifier.solver import Session, greedy_model

    if greedy_model(formulas) is not None:
        return  # a model found in Python: satisfiable, no solver needed

    try:
        Session(formulas)
    except InputError as exc:
        raise exc.located(file=file, line=line) from None


def _check_fields(obj: dict[str, Any], allowed: set[str], ctx: _Ctx, what: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        meant = suggestion(unknown[0], allowed)
        raise ctx.error(
            f"unknown field {_shown(unknown[0])} in {what}",
            fix=meant or f"remove it; {what} takes {', '.join(sorted(allowed))}",
        )


def _event(obj: Any, ctx: _Ctx) -> Event | Header:
    if not isinstance(obj, dict):
        raise ctx.error("each line must be a JSON object", fix='write {"event": ...}')
    kind = obj.get("event")
    if not isinstance(kind, str) or kind not in _EVENT_FIELDS:  # a list or object is no name
        raise ctx.error(
            f"unknown event {_value(kind)}" if "event" in obj else 'the line has no "event"',
            fix=suggestion(kind, _EVENT_FIELDS) or "use header, append, spill or rewrite",
        )
    _check_fields(obj, _EVENT_FIELDS[kind], ctx, f"{_a(kind)} event")
    line = ctx.line or 0
    if kind == "header":
        if obj.get("format") != TRACE_FORMAT:
            raise ctx.error(
                _missing_or(obj, "format", "the header"),
                fix=f'write "format": "{TRACE_FORMAT}"',
            )
        budget = obj.get("budget")
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget < 0
        ):
            raise ctx.error(
                "'budget' must be an integer >= 0",
                fix="give a whole number of tokens, or leave it out",
            )
        store = obj.get("store")
        if store is not None and not isinstance(store, str):
            raise ctx.error(
                "'store' must be a path string", fix='write "store": "path/to/store.sqlite"'
            )
        return Header(line, _background(obj.get("background", []), ctx), budget, store)
    if kind == "append":
        return Append(line, _items(obj.get("items"), ctx, "items"))
    if kind == "spill":
        return Spill(line, _items(obj.get("items"), ctx, "items"))
    policy = obj.get("policy")
    if policy is not None and not isinstance(policy, str):
        raise ctx.error("'policy' must be a string", fix='name it: "policy": "summarize-v2"')
    pressure = obj.get("pressure")
    if pressure is not None and (
        isinstance(pressure, bool) or not isinstance(pressure, int | float)
    ):
        raise ctx.error("'pressure' must be a number", fix='write a JSON number ("pressure": 0.93)')
    claimed = obj.get("claimed_preserved")
    claimed_t = None if claimed is None else _str_list(claimed, "claimed_preserved", ctx, None)
    if ("window" in obj) == ("diff" in obj):
        raise ctx.error(
            "a rewrite needs exactly one of 'window' and 'diff'",
            fix='give the new window, or "diff": {"remove": [...], "put": [...]}',
        )
    if "window" in obj:
        window = _items(obj["window"], ctx, "window")
        return Rewrite(line, policy, window, claimed_preserved=claimed_t, pressure=pressure)
    diff = obj["diff"]
    if not isinstance(diff, dict):
        raise ctx.error(
            "'diff' must be an object with 'remove' and 'put'",
            fix='write "diff": {"remove": [ids], "put": [items]}',
        )
    _check_fields(diff, {"remove", "put"}, ctx, "a diff")
    remove = _str_list(diff.get("remove", []), "remove", ctx, None)
    put = _items(diff.get("put", []), ctx, "put")
    return Rewrite(line, policy, None, remove, put, claimed_t, pressure)


def parse_trace_text(
    data: bytes | str,
    name: str = "<trace>",
    *,
    known_ids: Callable[[str], bool] | None = None,
) -> Trace:
    """Parse and validate a whole JSONL trace.

    ``known_ids`` answers whether an external store holds an id; references to
    ids that appear nowhere in the trace or the store are bad input.
    """
    data, name = _text_arguments(data, name, "parse_trace_text")
    want_callable(known_ids, func="parse_trace_text", arg="known_ids", what="a function")
    text = data if isinstance(data, str) else decode_input(data, name)
    with collector_paused():
        trace = _trace(text, name)
    _check_trace(trace, known_ids or (lambda _i: False))
    return trace


def utf8_length(text: str) -> int:
    """The bytes of ``text`` in UTF-8 (a lone surrogate counted as its three bytes)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _trace(text: str, name: str) -> Trace:
    header: Header | None = None
    events: list[Event] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        ctx = _Ctx(name, lineno)
        if len(line) * 4 > MAX_LINE_BYTES and utf8_length(line) > MAX_LINE_BYTES:
            raise ctx.error(f"line is longer than {MAX_LINE_BYTES} bytes", fix="split the event")
        if not line.strip():
            continue
        ev = _validated(_loads(line, ctx, flat_when_valid=True), ctx, _event)
        if isinstance(ev, Header):
            if header is not None or events:
                raise ctx.error("a header may only be the first event", fix="move or drop it")
            header = ev
        else:
            if header is None:
                raise ctx.error(
                    "the first event must be the header",
                    fix=f'start with {{"event": "header", "format": "{TRACE_FORMAT}"}}',
                )
            events.append(ev)
    if header is None:
        raise InputError("trace is empty", file=name, line=1, fix="start with a header event")
    return Trace(name, header, tuple(events))


def _check_trace(trace: Trace, known: Callable[[str], bool]) -> None:
    """Cross-event checks: appends of present ids, and references to unknown ids."""
    defined: set[str] = set()
    for ev in trace.events:
        if isinstance(ev, Rewrite):
            defined.update(it.id for it in (ev.window or ()))
            defined.update(it.id for it in ev.put)
        else:
            defined.update(it.id for it in ev.items)
    current: list[Item] = []
    present: set[str] = set()  # the ids of current, kept along (an append costs its items)
    for ev in trace.events:
        ctx = _Ctx(trace.name, ev.line)
        if isinstance(ev, Append):
            for it in ev.items:
                if it.id in present:
                    raise ctx.error(
                        "append of an id already in the window",
                        item=it.id,
                        fix="give the new item a fresh id, or change it with a rewrite",
                    )
            current.extend(ev.items)
            present.update(it.id for it in ev.items)
            items: Iterable[Item] = ev.items
        elif isinstance(ev, Spill):
            items = ev.items
        else:
            for rid in ev.remove:
                if rid not in defined and not known(rid):
                    raise ctx.error(
                        f"diff removes {_shown(rid)}, which no event defines",
                        fix="remove only ids of the window",
                    )
            current = list(ev.apply(tuple(current)))
            present = {it.id for it in current}
            items = current if ev.window is not None else ev.put
            for cid in ev.claimed_preserved or ():
                if cid not in defined and not known(cid):
                    raise ctx.error(
                        f"claimed_preserved names {_shown(cid)}, which no event defines",
                        fix="claim only ids of the trace",
                    )
        for it in items:
            for rel, ref in it.citations:
                if ref not in defined and not known(ref):
                    raise ctx.error(
                        f"cites {rel} {_shown(ref)}, which no event defines"
                        " and the store does not hold",
                        item=it.id,
                        fix="add the item or drop the reference",
                    )


_FILE_TYPES = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _regular_file(mode: int, path: str) -> None:
    """Refuse what is not a regular file: a pipe or a device may never end, or block."""
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _FILE_TYPES if test(mode)), "not a regular file")
    raise InputError(
        f"is {kind}, not a regular file",
        file=path,
        fix="give the path of a file (save a stream to a file first)",
    )


def read_input(path: str | Path) -> bytes:
    """The bytes of an input file; an unreadable or oversized file is bad input.

    Only a regular file is read: a FIFO, a device or a folder is refused before
    anything is read from it (a pipe with no writer would block, ``/dev/zero``
    never ends).
    """
    name = str(path)

    def too_large(size: int) -> InputError:
        return InputError(
            f"input is {size} bytes, more than the bound of {MAX_INPUT_BYTES}",
            file=name,
            fix="split the trace into several files",
        )

    try:
        _regular_file(os.stat(path).st_mode, name)
        # non-blocking: a FIFO put in the file's place since is not waited on
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        with open(fd, "rb", closefd=True) as fh:
            st = os.fstat(fd)
            _regular_file(st.st_mode, name)
            if st.st_size > MAX_INPUT_BYTES:
                raise too_large(st.st_size)
            data = fh.read(st.st_size + 1)  # one buffer of the file's size, as read_bytes
            if len(data) > st.st_size:  # the file grew since: read on, up to the bound
                chunks = [data]
                total = len(data)
                while total <= MAX_INPUT_BYTES and (chunk := fh.read(1 << 20)):
                    chunks.append(chunk)
                    total += len(chunk)
                data = b"".join(chunks)
        if len(data) > MAX_INPUT_BYTES:
            raise too_large(len(data))
        return data
    except OSError as exc:
        near = _near_name(path) if isinstance(exc, FileNotFoundError) else None
        raise InputError(
            f"cannot read: {exc.strerror}",
            file=name,
            fix=f"did you mean {near!r}?" if near else "check the path",
        ) from None


def _near_name(path: str | Path) -> str | None:
    """The file beside a missing ``path`` whose name is most like its name (a typo of a
    rule code in ``cex-CF01.jsonl``, of an extension), as the path would be written."""
    given = Path(path)
    try:
        names = [e.name for _, e in zip(range(2000), os.scandir(given.parent or "."), strict=False)]
    except (OSError, ValueError):
        return None
    # a typo is an edit or two (one for a short name): a name that merely shares letters
    # and an extension with the one given is no suggestion
    limit = max(1, min(2, len(given.name) // 5))
    scored = sorted(
        (d, name)
        for name in names
        if name != given.name and (d := _edits(given.name, name, limit)) <= limit
    )
    if not scored or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    return str(given.with_name(scored[0][1]))


def _edits(a: str, b: str, limit: int) -> int:
    """The edits (insert, delete, replace, swap of neighbours) from ``a`` to ``b``, or
    ``limit + 1`` when more than ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        if min(current) > limit:
            return limit + 1
        before, row = row, current
    return min(row[-1], limit + 1)


def load_trace(path: str | Path, *, known_ids: Callable[[str], bool] | None = None) -> Trace:
    """Read and validate a trace file.

    Raises:
        TypeError: ``path`` is not a str or a path, ``known_ids`` not a function.
        InputError: the file cannot be read, or is not a valid trace.
    """
    path_argument(path, func="load_trace", arg="path")
    want_callable(known_ids, func="load_trace", arg="known_ids", what="a function")
    return parse_trace_text(read_input(path), str(path), known_ids=known_ids)


# the longest id, written with every character escaped (\uXXXX\uXXXX for one outside the BMP)
_MAX_ID_SOURCE = 12 * MAX_ID_LENGTH + 2
_JSON_SPACE = " \t\r\n"


def _string_end(text: str, start: int) -> int:
    """The index of the quote that closes the JSON string opening at text[start], or -1."""
    pos = start + 1
    while True:
        end = text.find('"', pos)
        if end < 0:
            return -1
        backslashes = 0
        while text[end - 1 - backslashes] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return end
        pos = end + 1


def _id_lines(text: str) -> dict[str, int]:
    """The line of the first ``"id": ...`` of each id in a JSON text, in one pass.

    Linear in the text and lean: strings are found with ``str.find`` and only a
    string short enough to be a valid id is decoded and kept (at most one entry
    of at most ``MAX_ID_LENGTH`` characters per ``"id"`` key).
    """
    out: dict[str, int] = {}
    line, last, pos = 1, 0, 0
    while True:
        key = text.find('"id"', pos)
        if key < 0:
            return out
        pos = key + 4
        while pos < len(text) and text[pos] in _JSON_SPACE:
            pos += 1
        if pos >= len(text) or text[pos] != ":":
            continue
        pos += 1
        while pos < len(text) and text[pos] in _JSON_SPACE:
            pos += 1
        if pos >= len(text) or text[pos] != '"':
            continue
        end = _string_end(text, pos)
        if end < 0:
            return out
        start, pos = pos, end + 1
        if end - start + 1 > _MAX_ID_SOURCE:
            continue  # too long to be a valid id: nothing to look up
        try:
            value = json.loads(text[start : end + 1])
        except ValueError:
            continue
        if isinstance(value, str) and value not in out:
            line += text.count("\n", last, key)
            last = key
            out[value] = line


def parse_window_text(data: bytes | str, name: str = "<window>") -> Window:
    """Parse and validate a window file (``ctxproof-window/1``).

    Raises:
        TypeError: ``data`` is not str or bytes, ``name`` not a str.
        InputError: the text is not a valid window file.
    """
    data, name = _text_arguments(data, name, "parse_window_text")
    text = data if isinstance(data, str) else decode_input(data, name)
    ctx = _Ctx(name, 1)
    with collector_paused():
        if not _has_u_escape(text):
            streamed = _streamed_window(text, ctx)
            if streamed is not None:
                return streamed
        try:
            obj = _loads(text, ctx, flat_when_valid=True)
            return _validated(obj, ctx, lambda obj, c: _window(obj, c, text))
        except InputError as exc:
            raise _at_item_line(exc, text) from None


def _at_item_line(exc: InputError, text: str) -> InputError:
    """A window file's error that names an item by its id but stands at the file's first
    line (the JSON itself in error: ``NaN``, a duplicate key, nesting too deep), moved to
    the line of that item's id."""
    if exc.line != 1 or not isinstance(exc.item, str):
        return exc
    line = _id_lines(text).get(exc.item)
    if line is None or line == 1:
        return exc
    return InputError(exc.message, file=exc.file, line=line, item=exc.item, fix=exc.fix)


def _has_u_escape(text: str) -> bool:
    """``"\\u" in text``, found from backslash to backslash: a search for one character
    runs at memory speed where one for two does not (a few ms over a 10k-item window),
    and a window holds few backslashes. One with many is searched the plain way."""
    find = text.find
    at = find("\\")
    for _ in range(_BACKSLASHES_LOOKED_AT):
        if at < 0:
            return False
        if text.startswith("u", at + 1):
            return True
        at = find("\\", at + 1)
    return at >= 0 and find("\\u", at) >= 0


_BACKSLASHES_LOOKED_AT = 4096


def _text_arguments(data: Any, name: Any, func: str) -> tuple[str | bytes, str]:
    """The text (str or bytes) and the name given to a parse function, checked."""
    if isinstance(data, bytearray | memoryview):
        data = bytes(data)
    if not isinstance(data, str | bytes):
        fix = (
            "read a file with load_trace(path) or load_window(path)"
            if isinstance(data, Path)
            else "give the file's text or bytes"
        )
        raise wrong_type(func, "data", data, "str or bytes (JSON text)", fix)
    want_text(name, func=func, arg="name")
    return data, name


def path_argument(value: Any, *, func: str, arg: str) -> None:
    """A path given to the API function ``func`` as ``arg`` (str or ``os.PathLike``)."""
    want_path(value, func=func, arg=arg)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector while a file is read or a rewrite checked.

    Both build hundreds of thousands of small objects, none of them in a cycle:
    the collector's passes find nothing and, as the heap grows, cost more and
    more of the work (a tenth of a 10k-item read; a quarter of a 100k-item
    check). It runs again afterwards if it ran before, with every object the
    process holds filed in its oldest generation (``gc.freeze()`` then
    ``gc.unfreeze()``, which walk nothing): otherwise its first pass would walk
    all the objects made in between at once.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


_READ_KEYS: dict[frozenset[str], frozenset[str]] = {}
"""The keys of each shape of item object met, the unread ones (text, score, tokens) aside."""


def _read_keys(keys: frozenset[str]) -> frozenset[str]:
    found = _READ_KEYS.get(keys)
    if found is None:
        if len(_READ_KEYS) >= _BUILDERS_MAX:
            _READ_KEYS.clear()
        found = _READ_KEYS[keys] = keys - UNREAD_FIELDS
    return found


class _ItemReader:
    """Builds a window's items one object at a time (reusing the last window's items)."""

    def __init__(self, name: str, text: str) -> None:
        self.text = text
        self.ctx = _Ctx(name, None)  # the line is looked up only for a message
        self.last_read = _READ[0]
        self.read: dict[str, tuple[frozenset[str], Item]] = {}
        """The items taken so far, by id, each with the keys of its object."""
        self.items: list[Item] = []

    def take(self, raw: Any, at: Unwritten | None = None) -> Item:
        """The item of one object of the window (``at``: where it stands in the text)."""
        try:
            iid = raw.get("id") if isinstance(raw, dict) else None
            last = self.last_read.get(iid) if isinstance(iid, str) else None
            if last is not None and _same_json(last[1], last[0], raw):
                entry = last
            else:
                keys = frozenset(raw) if isinstance(raw, dict) else frozenset()
                if at is not None:
                    at.read_keys = _read_keys(keys)
                item = _item_from_object(raw, self.ctx, keys, at)
                entry = (_SHAPES.setdefault(keys, keys), item)
        except InputError as exc:
            iid = raw.get("id") if isinstance(raw, dict) else None
            raise self._located(_placed(exc, f"items[{len(self.items)}]"), iid) from None
        it = entry[1]
        if it.id in self.read:
            twice = self.ctx.error(
                "id appears twice in the window", item=it.id, fix="ids are unique within a window"
            )
            raise self._located(twice, it.id)
        self.read[it.id] = entry
        self.items.append(it)
        return it

    def _located(self, exc: InputError, iid: Any) -> InputError:
        line = _id_lines(self.text).get(iid) if isinstance(iid, str) else None
        return exc.located(line=line or 1)

    def window(self, background: tuple[str, ...], spans: _Spans | None = None) -> Window:
        _READ[0] = self.read
        _TEXT[0] = spans
        return Window(tuple(self.items), background)


def _window(obj: Any, ctx: _Ctx, text: str) -> Window:
    if not isinstance(obj, dict):
        raise ctx.error(
            "a window file must be a JSON object",
            fix=f'write {{"format": "{WINDOW_FORMAT}", "items": [...]}}',
        )
    _check_fields(obj, {"format", "background", "items"}, ctx, "a window file")
    if obj.get("format") != WINDOW_FORMAT:
        raise ctx.error(
            _missing_or(obj, "format", "the window file"),
            fix=f'write "format": "{WINDOW_FORMAT}"',
        )
    background = _background(obj.get("background", []), ctx)
    raw_items = obj.get("items")
    if not isinstance(raw_items, list):
        raise ctx.error("'items' must be a list", fix='write "items": [...]')
    reader = _ItemReader(ctx.file, text)
    for raw in raw_items:
        reader.take(raw)
    return reader.window(background)


_SPACE: Callable[[str, int], Any] = re.compile(r"[ \t\n\r]*").match  # always matches
_SCAN_VALUE: Callable[[str, int], tuple[Any, int]] = vars(
    json.JSONDecoder(
        object_pairs_hook=_no_duplicates, parse_constant=_reject_constant, parse_float=_finite
    )
)["scan_once"]
"""The scanner ``json.loads`` runs in :func:`_loads`: one JSON value from a position."""
_SCAN_STRING: Callable[[str, int], tuple[str, int]] = vars(json.decoder)["scanstring"]
_AFTER_ITEM: Callable[[str, int], Any] = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*").match
"""What may follow an item in the list: a comma or the list's end, with white space."""


class _SameText:
    """Finds the last window's items in the next window's text, in the order they stood.

    The item expected next is the one after the last found; an item object that
    is the same characters as its object in the last window is that item.
    """

    def __init__(self, last: _Spans | None, reader: _ItemReader) -> None:
        self.last = last
        self.reader = reader
        self.next = 0
        self._position: dict[str, int] | None = None

    @property
    def idle(self) -> bool:
        """No window was read item by item before: :meth:`run` finds nothing, and
        :meth:`resync` does nothing (the reader's loop leaves them out)."""
        return self.last is None

    def run(self, text: str, i: int, spans: _Spans) -> int:
        """The last window's items from the one expected next, as many in a row as the
        text at i repeats with what stood between them, taken at once (their spans put in
        spans); where the last of them ends, or -1 when none is found.

        A run of the last window's text repeated at i holds its items at the same
        places, and the separators between them were read there already: the items
        are those an item-by-item match would find, in the same order.
        """
        last, k = self.last, self.next
        if last is None or k >= len(last.items):
            return -1
        lt, ls, le = last.text, last.starts, last.ends
        start = ls[k]

        def repeated(m: int) -> bool:  # items k .. k+m-1 and what is between them
            return text.startswith(lt[start : le[k + m - 1]], i)

        if not repeated(1):
            return -1
        # the longest run: doubling, then halving (a run repeated holds every shorter one)
        good, step, most = 1, 1, len(last.items) - k
        while good < most:
            trial = min(good + step, most)
            if not repeated(trial):
                most = trial - 1
                break
            good, step = trial, step * 2
        while good < most:
            mid = (good + most + 1) // 2
            if repeated(mid):
                good = mid
            else:
                most = mid - 1
        reader = self.reader
        last_read, read = reader.last_read, reader.read
        items = last.items[k : k + good]
        taken = 0
        for item in items:
            entry = last_read.get(item.id)
            if entry is None or entry[1] is not item or item.id in read:
                break  # read the usual way (which reports an id read twice)
            read[item.id] = entry
            taken += 1
        if not taken:
            return -1
        if taken < good:
            items = items[:taken]
        reader.items.extend(items)
        spans.items.extend(items)
        shift = i - start
        spans.starts.extend([s + shift for s in ls[k : k + taken]])
        spans.ends.extend([e + shift for e in le[k : k + taken]])
        self.next = k + taken
        return le[k + taken - 1] + shift

    def resync(self, item: Item) -> None:
        """After an item found otherwise: expect the one that followed it last time."""
        last = self.last
        if last is None:
            return
        k = self._place(last.items, item.id)
        if k is not None:
            self.next = k + 1

    def _place(self, items: list[Item], item_id: str) -> int | None:
        """Where the last window held this id (None: nowhere). Ids are unique there, so
        the place first found is the only one: the item expected next (one changed where
        it stood), one of the few after it (an item before it was dropped), else the id
        looked up in a table of them all, made on first use."""
        if item_id not in self.reader.last_read:  # the last window's ids, read with it
            return None
        start = self.next
        for k in range(start, min(start + _LOOKAHEAD, len(items))):
            if items[k].id == item_id:
                return k
        if self._position is None:
            self._position = {it.id: k for k, it in enumerate(items)}
        return self._position.get(item_id)


_LOOKAHEAD = 8
"""How many places after the one expected :meth:`_SameText.resync` looks at first."""


def _unwritten(text: str, start: int) -> Unwritten | None:
    """What a streamed read gives an item for its canonical JSON (None: write it now)."""
    return Unwritten(text, start)


def _streamed_window(text: str, ctx: _Ctx) -> Window | None:
    """The window of a valid window file, read one item object at a time; None for
    anything else (:func:`parse_window_text` then reads it whole, and words the error).

    Reading the items one at a time never holds the parsed objects of the whole
    file at once: at 100k items they are about 70 MB.
    """
    space, scan, unwritten = _SPACE, _SCAN_VALUE, _unwritten
    reader = _ItemReader(ctx.file, text)
    members: dict[str, Any] = {}
    try:
        i = space(text, 0).end()
        if text[i : i + 1] != "{":
            return None
        i = space(text, i + 1).end()
        while True:
            if text[i : i + 1] != '"':
                return None
            key, i = _SCAN_STRING(text, i + 1)
            if key in members:
                return None
            i = space(text, i).end()
            if text[i : i + 1] != ":":
                return None
            i = space(text, i + 1).end()
            if key == "items" and text[i : i + 1] == "[":
                members[key] = reader
                i = space(text, i + 1).end()
                if text[i : i + 1] == "]":
                    i += 1
                else:
                    take, after = reader.take, _AFTER_ITEM
                    spans = _Spans(text)
                    starts, ends, placed = spans.starts.append, spans.ends.append, spans.items
                    same = _SameText(_TEXT[0], reader)
                    if same.idle:
                        # no window read before this one: no item of it to find here
                        while True:
                            starts(i)
                            raw, at = scan(text, i)
                            placed.append(take(raw, unwritten(text, i)))
                            i = at
                            ends(i)
                            mark = after(text, i)
                            if mark is None:
                                return None
                            i = mark.end()
                            if mark.group(1) == "]":
                                break
                    else:
                        while True:
                            end = same.run(text, i, spans)
                            if end >= 0:
                                i = end
                            else:
                                starts(i)
                                raw, at = scan(text, i)
                                it = take(raw, unwritten(text, i))
                                i = at
                                same.resync(it)
                                ends(i)
                                placed.append(it)
                            mark = after(text, i)
                            if mark is None:
                                return None
                            i = mark.end()
                            if mark.group(1) == "]":
                                break
            else:
                members[key], i = scan(text, i)
            i = space(text, i).end()
            mark = text[i : i + 1]
            if mark == "}":
                break
            if mark != ",":
                return None
            i = space(text, i + 1).end()
        if space(text, i + 1).end() != len(text) or members.get("items") is not reader:
            return None
        _check_fields(members, {"format", "background", "items"}, ctx, "a window file")
        if members.get("format") != WINDOW_FORMAT:
            return None
        background = _background(members.get("background", []), ctx)
        found: Window = reader.window(background, spans if reader.items else None)
        return found
    except (StopIteration, ValueError, RecursionError, InputError):
        return None


_SQLITE_MAGIC = b"SQLite format 3\x00"
SNIFF_BYTES = 1 << 20
"""How much of a file :func:`sniff_kind` reads."""


def sniff_kind(data: bytes | str) -> str | None:
    """What a file holds, judged from its start, for the message about a file of the wrong
    kind: ``"window"``, ``"trace"``, ``"store"`` (a SQLite file), ``"policy-spec"`` or None.

    >>> sniff_kind('{"format": "ctxproof-window/1", "items": []}')
    'window'
    >>> sniff_kind('{"event": "header", "format": "ctxproof-trace/1"}\\n')
    'trace'
    """
    if isinstance(data, bytes):
        if data.startswith(_SQLITE_MAGIC):
            return "store"
        text = data[:SNIFF_BYTES].decode("utf-8", errors="replace")
    else:
        text = data[:SNIFF_BYTES]
    text = text.lstrip("\ufeff")
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        whole = None
    first: Any = None
    for line in text.split("\n"):
        if line.strip():
            try:
                first = json.loads(line)
            except (ValueError, RecursionError):
                first = None
            break
    # a JSON document longer than what is read (a large window file) parses neither
    # whole nor by its first line: its leading members still say what it is
    lead = _leading_members(text) if whole is None and not isinstance(first, dict) else None
    for obj in (whole, first, lead):
        if not isinstance(obj, dict):
            continue
        fmt = obj.get("format")
        if "event" in obj or fmt == TRACE_FORMAT:
            return "trace"
        if fmt == WINDOW_FORMAT or ("items" in obj and "event" not in obj):
            return "window"
    if re.search(r'^\s*format\s*=\s*"ctxproof-policy/', text, re.MULTILINE):
        return "policy-spec"
    return None


def _leading_members(text: str) -> dict[str, Any] | None:
    """The members an object's text opens with, read one at a time up to the first one
    that does not read whole (its key is kept, with None): what a file's first bytes
    tell of a JSON object cut short. None when the text does not open an object.

    >>> _leading_members('{"format": "ctxproof-window/1", "items": [{"id": "a", "ki')
    {'format': 'ctxproof-window/1', 'items': None}
    """
    i = _SPACE(text, 0).end()
    if text[i : i + 1] != "{":
        return None
    out: dict[str, Any] = {}
    i = _SPACE(text, i + 1).end()
    try:
        while text[i : i + 1] == '"':
            key, i = _SCAN_STRING(text, i + 1)
            i = _SPACE(text, i).end()
            if text[i : i + 1] != ":":
                break
            i = _SPACE(text, i + 1).end()
            out[key] = None  # until its value reads whole
            out[key], i = _SCAN_VALUE(text, i)
            i = _SPACE(text, i).end()
            if text[i : i + 1] != ",":
                break
            i = _SPACE(text, i + 1).end()
    except (StopIteration, ValueError, RecursionError):
        pass  # the text ends, or is not JSON, here: what was read stands
    return out or None


def window_from_dicts(
    items: Iterable[Mapping[str, Any] | Item], background: Iterable[str] = ()
) -> Window:
    """A validated :class:`Window` from plain item dicts (as JSON holds them) and a background.

    Every item is validated as a window file's would be (kinds, fields, formulas,
    unique ids); the background must parse and be satisfiable. Items already built
    are taken as they are.

    >>> w = window_from_dicts([{"id": "d1", "kind": "commitment", "type": "decision",
    ...                         "formula": "db.postgres"}], ["db.postgres -> !db.mysql"])
    >>> [it.id for it in w], w.background
    (['d1'], ('db.postgres -> !db.mysql',))

    Raises:
        TypeError: ``items`` is not a list of item dicts or Items, or ``background``
            not a list of strings.
        InputError: an item or background formula is invalid, or an id appears twice.
    """
    out = items_argument(items, func="window_from_dicts", arg="items")
    return Window(out, background_argument(background, func="window_from_dicts"))


def background_argument(value: Any, *, func: str, arg: str = "background") -> tuple[str, ...]:
    """A background given to the API function ``func``: a list of formula strings that
    parse and are satisfiable together.

    Raises:
        TypeError: not a list of strings (one string is refused: wrap it in a list).
        InputError: a formula does not parse, or the background is unsatisfiable.
    """
    texts = want_strings(value, func=func, arg=arg, what="formula strings")
    if not texts:
        return ()
    return _background(list(texts), _Ctx(f"{func}(): {arg}", None))


def _plain(obj: Any) -> Any:
    """A mapping as a plain dict (the JSON it stands for); anything else as it is."""
    return dict(obj) if isinstance(obj, Mapping) else obj


def trace_from_dicts(
    events: Iterable[Mapping[str, Any]],
    name: str = "<trace>",
    *,
    known_ids: Callable[[str], bool] | None = None,
) -> Trace:
    """A validated :class:`Trace` from plain event dicts (the lines of a trace file, parsed).

    >>> t = trace_from_dicts([
    ...     {"event": "header", "format": "ctxproof-trace/1"},
    ...     {"event": "append", "items": [{"id": "n1", "kind": "prose", "text": "hi"}]},
    ... ])
    >>> len(t.events)
    1

    Raises:
        InputError: as for a trace file; the line of a message is the event's
        position, counting from 1.
    """
    if isinstance(events, str | bytes | bytearray | Mapping) or not _iterable(events):
        fix = (
            "read a trace file with load_trace(path), or its text with parse_trace_text(text)"
            if isinstance(events, str | bytes | bytearray)
            else "pass a list of event dicts, the header first"
        )
        raise wrong_type("trace_from_dicts", "events", events, "a list of event dicts", fix)
    want_text(name, func="trace_from_dicts", arg="name")
    want_callable(known_ids, func="trace_from_dicts", arg="known_ids", what="a function")
    lines = []
    for i, ev in enumerate(events, start=1):
        if not isinstance(ev, Mapping):
            raise wrong_type("trace_from_dicts", f"events[{i - 1}]", ev, "an event dict")
        try:
            lines.append(json.dumps(_plain(ev), ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError, RecursionError) as exc:
            raise InputError(
                f"event is not plain JSON: {exc}",
                file=name,
                line=i,
                fix="pass dicts of JSON values",
            ) from None
    return parse_trace_text("\n".join(lines), name, known_ids=known_ids)


def load_window(path: str | Path) -> Window:
    """Read and validate a window file.

    Raises:
        TypeError: ``path`` is not a str or a path.
        InputError: the file cannot be read, or is not a valid window file.
    """
    path_argument(path, func="load_window", arg="path")
    return parse_window_text(read_input(path), str(path))


def window_to_json(
    window: Window | Iterable[Item], background: Iterable[str] = ()
) -> dict[str, Any]:
    """The window file object for a window."""
    if isinstance(window, Window):
        background = window.background
        items: Iterable[Item] = window.items
    else:
        items = window
    return {
        "format": WINDOW_FORMAT,
        "background": list(background),
        "items": [it.as_json() for it in items],
    }


def check_references(
    items: Iterable[Item],
    defined: Mapping[str, object] | set[str],
    known: Callable[[str], bool],
    file: str,
    checked: Mapping[str, Item] | None = None,
) -> None:
    """References from window files must name an item of either window or the store.

    An item that is the very item ``checked`` holds under its id was checked already
    (with the same ``defined`` and ``known``): it is skipped, as is an item that cites
    nothing.
    """
    lines: dict[str, int] | None = None
    for it in items:
        lists = (it.rationale, it.witnesses, it.derived_from, it.covers)
        if not any(lists) and it.call is None:
            continue  # cites nothing (most items): no tuple of citations made
        if checked is not None and checked.get(it.id) is it:
            continue
        if (it.call is None or it.call in defined) and all(
            ref in defined for refs in lists for ref in refs
        ):
            continue  # every citation names an item of the windows: none asked of the store
        for rel, ref in it.citations:
            if ref not in defined and not known(ref):
                if lines is None:
                    lines = _id_lines(decode_input(read_input(file), file))
                raise InputError(
                    f"cites {rel} {_shown(ref)}, which neither window defines"
                    " and the store does not hold",
                    file=file,
                    line=lines.get(it.id),
                    item=it.id,
                    fix="add the item or drop the reference",
                )
