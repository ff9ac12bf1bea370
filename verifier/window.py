"""The data model (docs/formats.md): items, windows and trace events.

Everything here is a frozen, slotted dataclass holding tuples, so windows hash
and compare by value. Validation of raw JSON lives in :mod:`verifier.io`; the
constructors here trust their arguments.
"""

from __future__ import annotations

import hashlib
import json
import operator
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields
from functools import lru_cache
from typing import Any, Literal

from verifier.formula import TRUE, Formula, atom_formula
from verifier.parser import parse_formula

__all__ = [
    "KINDS",
    "MODALITIES",
    "TYPES",
    "Append",
    "Event",
    "Header",
    "Item",
    "Rewrite",
    "Spill",
    "Trace",
    "Window",
    "canonical_json",
    "content_ref",
]

Kind = Literal["commitment", "claim", "observation", "prose", "stub"]
KINDS: tuple[str, ...] = ("commitment", "claim", "observation", "prose", "stub")
TYPES: tuple[str, ...] = ("decision", "rejection", "invariant", "obligation")
MODALITIES: tuple[str, ...] = ("verified", "failed", "unverified", "unwitnessed")
WITNESSED = frozenset({"verified", "failed"})


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)

_SAMPLE = {"b": [1, -2.5, 1e300, True, None, '\u00e9\n"\U0001f600'], "a": {"z": [], "y": {}}}


def _one_shot_encoder() -> Callable[[Any, int], list[str]] | None:
    """The C encoder ``_CANONICAL.encode`` builds at every call, built once; None where
    the interpreter's has another signature or writes anything else for a sample."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    try:
        # markers, default, string encoder, indent, separators, sort_keys, skipkeys, allow_nan
        built: Any = make(
            None, None, json.encoder.encode_basestring, None, ":", ",", True, False, True
        )
        if "".join(built(_SAMPLE, 0)) != _CANONICAL.encode(_SAMPLE):
            return None
    except Exception:  # another interpreter's encoder: use the public one
        return None
    encode: Callable[[Any, int], list[str]] = built
    return encode


_ONE_SHOT = _one_shot_encoder()


def canonical_json(obj: Mapping[str, Any]) -> str:
    """The canonical JSON text of an object: sorted keys, no spaces, UTF-8 as is."""
    if _ONE_SHOT is not None:
        try:
            return "".join(_ONE_SHOT(obj, 0))
        except Exception:  # the public encoder raises what it would say
            pass
    return _CANONICAL.encode(obj)


def content_ref(text: str | bytes) -> str:
    """``sha256:<hex>`` of the UTF-8 bytes of text."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return "sha256:" + hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=1 << 17)
def _ref_of_raw(raw: str) -> str:
    return content_ref(raw)


UNREAD_FIELDS = frozenset({"text", "score", "tokens"})
"""Fields no rule reads: a rewrite that changes only these changes nothing."""


@lru_cache(maxsize=1 << 17)
def _key_of_raw(raw: str) -> str:
    """The key of the item whose canonical JSON is raw (computed when first asked: only
    items whose raw differs between two versions ever need it)."""
    cut = _key_unparsed(raw)
    return cut if cut is not None else _key_parsed(raw)


def _key_parsed(raw: str) -> str:
    """:func:`_key_of_raw` the long way: parse raw, drop the unread fields, write it anew."""
    obj = json.loads(raw)
    if not UNREAD_FIELDS.intersection(obj):
        return raw
    return canonical_json({k: v for k, v in obj.items() if k not in UNREAD_FIELDS})


_UNREAD_MEMBERS = tuple(f'"{name}":' for name in sorted(UNREAD_FIELDS))
_SCALAR_END = re.compile(
    r"(?:null|true|false|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)(?=[,}])"
).match
"""A JSON scalar other than a string, followed by what ends an object's member."""
_scan_string: Callable[[str, int], tuple[str, int]] = vars(json.decoder)["scanstring"]


def _key_unparsed(raw: str) -> str | None:
    """:func:`_key_parsed` without parsing, for an object with no object inside it (every
    valid item's): its unread members cut out of the text. None where that is not plain.

    In canonical JSON with no object nested, ``"text":`` right after a comma can only be
    a member of the outer object (a quote inside a string is escaped, and a string's
    closing quote is never followed by a letter); removing whole members from canonical
    JSON leaves the canonical JSON of the rest, the order of the keys kept.
    """
    if raw.find("{", 1) >= 0:
        return None  # an object inside (or a brace in a string): parse it
    for member in _UNREAD_MEMBERS:
        at = raw.find(member)
        if at < 0:
            continue
        if raw[at - 1] != "," or raw.find(member, at + 1) >= 0:
            return None
        value = at + len(member)
        if raw[value : value + 1] == '"':
            try:
                end = _scan_string(raw, value + 1)[1]
            except ValueError:
                return None
            if raw[end : end + 1] not in (",", "}"):
                return None
        else:
            scalar = _SCALAR_END(raw, value)
            if scalar is None:
                return None
            end = scalar.end()
        raw = raw[: at - 1] + raw[end:]
    return raw


@lru_cache(maxsize=1 << 16)
def _raw_problem(raw: Any, item_id: Any, kind: Any) -> str | None:
    """Why raw is not the canonical JSON of an item with this id and kind (None: it is)."""
    if not isinstance(raw, str) or not raw:
        return "'raw' must be the item's canonical JSON, and it is empty"
    try:
        obj = json.loads(raw)
    except ValueError:
        return "'raw' is not JSON"
    if not isinstance(obj, dict):
        return "'raw' is not a JSON object"
    if obj.get("id") != item_id or obj.get("kind") != kind:
        return "'raw' holds another id or kind than the item"
    if canonical_json(obj) != raw:
        return "'raw' is not canonical JSON (sorted keys, no spaces, UTF-8 as is)"
    return None


@dataclass(frozen=True, slots=True)
class Item:
    """One item of a window. Fields not used by the item's kind stay at their defaults.

    ``raw`` is the canonical JSON of the item exactly as it was written; the
    store keys spilled items by its hash (:attr:`ref`). Build items with
    :func:`verifier.item_from_json` (or :func:`verifier.window_from_dicts`), which
    validate every field and fill ``raw`` in; an ``Item`` whose ``raw`` is not the
    canonical JSON of an object with its ``id`` and ``kind`` is refused
    (``ValueError``), so no item can hash to a ref the store never got.
    """

    id: str
    kind: str
    raw: str = field(repr=False)
    text: str | None = None
    tokens: int | None = None
    score: int | None = None
    type: str | None = None
    formula_text: str | None = None
    rationale: tuple[str, ...] = ()
    witnesses: tuple[str, ...] = ()
    modality: str = "unverified"
    load_bearing_field: bool | None = None
    covers: tuple[str, ...] = ()
    derived_from: tuple[str, ...] = ()
    shows_text: str | None = None
    digest: str | None = None
    content: str | None = None
    source: str | None = None
    exit_code: int | None = None
    at: str | int | float | None = None
    call: str | None = None
    stub_ref: str | None = None
    _formula: Formula | None = field(default=None, init=False, repr=False, compare=False)
    """What :attr:`formula` returns, kept once known (the reader sets it as it validates)."""

    def __post_init__(self) -> None:
        problem = _raw_problem(self.raw, self.id, self.kind)
        if problem is not None:
            raise ValueError(
                f"Item {self.id!r}: {problem}; build items with verifier.item_from_json(obj),"
                " which fills 'raw' in"
            )

    @property
    def ref(self) -> str:
        """``sha256:`` of this item's canonical JSON: its key in the durable store."""
        return _ref_of_raw(self.raw)

    @property
    def key(self) -> str:
        """What the rules read of this item: its canonical JSON without text, score, tokens.

        Two items with the same key are the same version of an item.
        """
        return _key_of_raw(self.raw)

    def same_version(self, other: Item | None) -> bool:
        """Same id and the same fields the rules read (text, score, tokens aside), as
        parsed: a formula written with other spaces or parentheses, or a default written
        out, is the same version (docs/formats.md, "Versions")."""
        if other is None:
            return False
        if other is self:
            return True
        if _unwritten_and_differ(other, self):
            return _parsed_alike(other, self)  # their keys differ: no need to write either
        if _unwritten_and_alike(other, self):
            return True  # their keys are equal: no need to write either
        return other.raw == self.raw or other.key == self.key or _parsed_alike(other, self)

    @property
    def formula(self) -> Formula:
        """What the item asserts: its formula, its ``shows``, or ``true``.

        A stub asserts nothing by itself; the store resolves it.
        """
        known = self._formula
        if known is None:
            known = self._read_formula()
            object.__setattr__(self, "_formula", known)  # a cache, not a field anyone reads
        return known

    def _read_formula(self) -> Formula:
        if self.kind in ("commitment", "claim"):
            if self.formula_text is None:
                return atom_formula(self.id)
            return parse_formula(self.formula_text)
        if self.kind == "observation" and self.shows_text is not None:
            return parse_formula(self.shows_text)
        return TRUE

    @property
    def load_bearing(self) -> bool:
        """The ``load_bearing`` field with its default: true for commitments only."""
        if self.load_bearing_field is not None:
            return self.load_bearing_field
        return self.kind == "commitment"

    @property
    def witnessed_modality(self) -> bool:
        return self.modality in WITNESSED

    @property
    def citations(self) -> tuple[tuple[str, str], ...]:
        """Every (relation, id) this item cites: rationale, witness, derived_from, covers, call."""
        out: list[tuple[str, str]] = []
        out.extend(("rationale", r) for r in self.rationale)
        out.extend(("witness", w) for w in self.witnesses)
        out.extend(("derived_from", d) for d in self.derived_from)
        out.extend(("covers", c) for c in self.covers)
        if self.call is not None:
            out.append(("call", self.call))
        return tuple(out)

    def as_json(self) -> dict[str, Any]:
        obj: dict[str, Any] = json.loads(self.raw)
        return obj

    def estimated_tokens(self) -> int:
        """Declared tokens, or an estimate of four characters a token of its JSON."""
        if self.tokens is not None:
            return self.tokens
        return max(1, len(self.raw) // 4)


_READ_FIELDS = operator.attrgetter(
    *(f.name for f in fields(Item) if f.compare and f.name not in UNREAD_FIELDS | {"raw"})
)
"""The fields of an item the rules read, as a tuple."""


_WRITTEN_FIELDS = frozenset({"raw", "formula_text", "shows_text", "load_bearing_field"})
"""The fields that hold an item as written (its formula's text, a default left out)."""
_PARSED_FIELDS = operator.attrgetter(
    *(f.name for f in fields(Item) if f.compare and f.name not in UNREAD_FIELDS | _WRITTEN_FIELDS)
)
"""The fields the rules read that parsing leaves as written (formulas and the defaulted
``load_bearing`` are compared as parsed)."""


def _parsed_alike(a: Item, b: Item) -> bool:
    """Do two items differ only in how they are written: a formula with other spaces or
    parentheses (equal as parsed, not up to equivalence), a default written out or left out
    (``modality``, ``load_bearing``; a ``digest`` is its content's either way)?"""
    if _PARSED_FIELDS(a) != _PARSED_FIELDS(b) or a.load_bearing != b.load_bearing:
        return False
    if (a.formula_text, a.shows_text) == (b.formula_text, b.shows_text):
        return True
    return a.formula == b.formula


def _unwritten_and_differ(a: Item, b: Item) -> bool:
    """Two items a reader built (their canonical JSON still :class:`Unwritten`) that
    differ in a field the rules read. Their keys differ: each such field of an item a
    reader built is a function of its object without the unread members, and values
    that differ in Python (finite JSON values) are written differently in JSON. (Equal
    fields do not make equal keys: a default may be written out or left out.)"""
    raw_of = _RAW_SLOT.__get__
    return (
        type(raw_of(a)) is Unwritten
        and type(raw_of(b)) is Unwritten
        and bool(_READ_FIELDS(a) != _READ_FIELDS(b))
    )


def _unwritten_and_alike(a: Item, b: Item) -> bool:
    """Two items a reader built (their canonical JSON still :class:`Unwritten`) from
    objects with the same keys, the unread ones aside, whose fields the rules read are
    equal, of the same types, a float written alike. Their keys are equal: each of
    those members of such an object is a function of the item's fields (a key present
    with ``null`` and one left out are told apart by the keys), and equal values of the
    same type are written alike in canonical JSON (but for a float's zero sign, which
    ``repr`` keeps). Only ``at`` holds a float, or a value of more than one type."""
    raw_of = _RAW_SLOT.__get__
    ra, rb = raw_of(a), raw_of(b)
    if type(ra) is not Unwritten or type(rb) is not Unwritten:
        return False
    keys = ra.read_keys
    if keys is None or keys != rb.read_keys or _READ_FIELDS(a) != _READ_FIELDS(b):
        return False
    at_a, at_b = a.at, b.at
    return type(at_a) is type(at_b) and (type(at_a) is not float or repr(at_a) == repr(at_b))


_SLOTS: dict[str, Any] = {f.name: Item.__dict__[f.name] for f in fields(Item)}
_RAW_SLOT = _SLOTS["raw"]
"""Each field's slot (its member descriptor), as the class made it."""

RAW_SLOT = _RAW_SLOT
"""The slot under :attr:`Item.raw` (for the package's readers: its value may still be
:class:`Unwritten`, which the field's getter writes first)."""

_SCAN_OBJECT: Callable[[str, int], tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]


class Unwritten:
    """The canonical JSON of an item, not written yet: the item's object stands at
    ``start`` of ``text``, a JSON text the reader has read and validated whole.

    A window reader puts one in an item's ``raw`` slot; the first read of
    :attr:`Item.raw` writes the canonical JSON and keeps it. A check reads the
    ``raw`` of the items a rewrite changed, rarely of the others. ``read_keys``: the
    keys of the object but the unread ones (None: not known), which the reader sets.
    """

    __slots__ = ("read_keys", "start", "text")

    def __init__(self, text: str, start: int) -> None:
        self.text = text
        self.start = start
        self.read_keys: frozenset[str] | None = None

    def written(self) -> str:
        obj = _SCAN_OBJECT(self.text, self.start)[0]
        return canonical_json(obj)


class _Raw:
    """:attr:`Item.raw`: the slot's text, written first where it is :class:`Unwritten`."""

    __slots__ = ("slot",)

    def __init__(self, slot: Any) -> None:
        self.slot = slot

    def __get__(self, item: Item | None, owner: type | None = None) -> Any:
        if item is None:
            return self
        value = self.slot.__get__(item, owner)
        if type(value) is not Unwritten:
            return value
        text = value.written()
        self.slot.__set__(item, text)
        return text

    def __set__(self, item: Item, value: Any) -> None:
        self.slot.__set__(item, value)

    def __delete__(self, item: Item) -> None:
        self.slot.__delete__(item)


setattr(Item, "raw", _Raw(_SLOTS["raw"]))  # noqa: B010 - a field's slot, wrapped after the class is made


class _Blank:
    """An Item's slots, in its order, in a class of no behaviour of its own: a new item is
    filled in as one of these (a plain attribute store each, where an Item's frozen
    ``__setattr__`` forbids them and a call of each slot's setter costs twice the time)
    and then becomes an Item (``__class__``), the layout being the same."""

    __slots__ = Item.__slots__


def _blank_fits() -> bool:
    """Can a :class:`_Blank` become an Item? (An interpreter that tells the layouts apart
    says no: the slots' setters are called instead.)"""
    probe: Any = object.__new__(_Blank)
    try:
        probe.__class__ = Item
    except TypeError:
        return False
    return type(probe) is Item


_BLANK_FITS = _blank_fits()


def item_slots(
    exprs: Mapping[str, str], *, blank: bool | None = None
) -> tuple[list[str], dict[str, Any]]:
    """Python statements that make a new Item named ``item`` and set each of its fields
    through its slot (as dataclasses writes ``__init__``, without the check of ``raw``):
    to the expression ``exprs`` gives for it, else to its default. Also the names the
    statements use. ``id``, ``kind`` and ``raw`` must have an expression.

    The item is filled in as a :class:`_Blank` that becomes an Item once every slot is
    set (``blank``, the default where the interpreter allows it), else through the
    setter of each slot; either way every slot of the Item holds the same value."""
    if blank is None:
        blank = _BLANK_FITS
    scope: dict[str, Any] = {"new": object.__new__, "Item": Item, "Blank": _Blank}
    lines = ["item = new(Blank)" if blank else "item = new(Item)"]
    for f in fields(Item):
        expr = exprs.get(f.name)
        if expr is None:
            if f.default is MISSING:
                raise ValueError(f"no value for the field {f.name!r}")
            scope[f"default_{f.name}"] = f.default
            expr = f"default_{f.name}"
        if blank:
            lines.append(f"item.{f.name} = {expr}")
        else:
            scope[f"set_{f.name}"] = _SLOTS[f.name].__set__
            lines.append(f"set_{f.name}(item, {expr})")
    if blank:
        lines.append("item.__class__ = Item")
    return lines, scope


def _slot_filler() -> Any:
    """A function setting every field of a new Item from a dict (fields left out take
    their defaults)."""
    names = [f.name for f in fields(Item)]
    exprs = {
        name: f"values[{name!r}]" if name in ("id", "kind", "raw") else f"get({name!r}, _{name})"
        for name in names
    }
    lines, scope = item_slots(exprs)
    scope.update({f"_{f.name}": f.default for f in fields(Item) if f.default is not MISSING})
    source = ["def fill(values):", "    get = values.get", *(f"    {x}" for x in lines)]
    exec("\n".join([*source, "    return item"]), scope)  # our own field names only
    return scope["fill"]


_fill = _slot_filler()


def built_item(values: dict[str, Any]) -> Item:
    """An Item whose ``raw`` the caller made with :func:`canonical_json` from the very
    object its fields were validated from (the reader in :mod:`verifier.io`).

    The fields are set through their slots: ``__init__`` and its check of
    ``raw`` are skipped (that check would parse the raw the caller just made).
    Fields missing from ``values`` take their defaults; ``id``, ``kind`` and
    ``raw`` must be there.
    """
    item: Item = _fill(values)
    return item


@dataclass(frozen=True, slots=True)
class Window:
    """An ordered list of items with unique ids."""

    items: tuple[Item, ...] = ()
    background: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def by_id(self) -> dict[str, Item]:
        return {it.id: it for it in self.items}

    def ids(self) -> list[str]:
        return [it.id for it in self.items]


@dataclass(frozen=True, slots=True)
class Header:
    line: int
    background: tuple[str, ...] = ()
    budget: int | None = None
    store: str | None = None


@dataclass(frozen=True, slots=True)
class Append:
    line: int
    items: tuple[Item, ...]


@dataclass(frozen=True, slots=True)
class Spill:
    line: int
    items: tuple[Item, ...]


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A rewrite event: a full new window, or a diff against the current one."""

    line: int
    policy: str | None
    window: tuple[Item, ...] | None
    remove: tuple[str, ...] = ()
    put: tuple[Item, ...] = ()
    claimed_preserved: tuple[str, ...] | None = None
    pressure: float | None = None

    def apply(self, current: tuple[Item, ...]) -> tuple[Item, ...]:
        """The window after this rewrite, given the window before it."""
        if self.window is not None:
            return self.window
        removed = set(self.remove)
        puts = {it.id: it for it in self.put}
        out: list[Item] = []
        for it in current:
            if it.id in removed:
                continue
            out.append(puts.pop(it.id, it))
        out.extend(it for it in self.put if it.id in puts)
        return tuple(out)


Event = Append | Spill | Rewrite


@dataclass(frozen=True, slots=True)
class Trace:
    """A parsed trace: its header and its events in order."""

    name: str
    header: Header
    events: tuple[Event, ...]
