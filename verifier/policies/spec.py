"""The ``ctxproof-policy/1`` spec language: a declarative rewrite policy and its interpreter.

A spec is a TOML file (docs/spec-language.md has the whole language)::

    format = "ctxproof-policy/1"
    name = "spill-first"
    order = ["position"]
    [[rule]]
    when = { tokens = { le = 8 } }
    do = "keep"
    [[rule]]
    do = "spill"

:func:`load_spec` reads and validates one strictly: an unknown key, a value of
the wrong type, an unknown action, kind, type or modality, a bad comparison or
order key is an :class:`~verifier.errors.InputError` that names the file and
the key path (``rule[2].when.age: expected a table like {ge = 2}``).
:class:`SpecPolicy` runs a :class:`Spec` as a policy ``(window, budget)``.

>>> spec = parse_spec('format = "ctxproof-policy/1"\\n[[rule]]\\ndo = "evict"')
>>> out = SpecPolicy(spec)([{"id": "p1", "kind": "prose", "tokens": 5},
...                         {"id": "p2", "kind": "prose", "tokens": 5}], 6)
>>> [it["id"] for it in out["window"]], out["claimed_preserved"]
(['p2'], ['p2'])
"""

from __future__ import annotations

import copy
import json
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifier.errors import InputError
from verifier.io import bad_utf8_message, item_from_json, read_input, sniff_kind, stub_for
from verifier.window import KINDS, MODALITIES, TYPES, Item

__all__ = [
    "ACTIONS",
    "COMPARISONS",
    "ORDER_KEYS",
    "SPEC_FORMAT",
    "Comparison",
    "Reading",
    "Rule",
    "Spec",
    "SpecPolicy",
    "When",
    "load_spec",
    "parse_spec",
    "spec_to_toml",
    "summary_id",
]

SPEC_FORMAT = "ctxproof-policy/1"
ACTIONS: tuple[str, ...] = ("keep", "evict", "spill", "summarize", "soften", "demote")
ORDER_KEYS: tuple[str, ...] = ("position", "age", "score", "tokens")
COMPARISONS: tuple[str, ...] = ("lt", "le", "gt", "ge", "eq")
STOPS: tuple[str, ...] = ("fits", "all")
DEFAULT_STUB_TOKENS = 8

_MODAL_KINDS = frozenset({"commitment", "claim", "observation"})
_LIST_CONDITIONS: dict[str, tuple[str, ...]] = {
    "kind": KINDS,
    "type": TYPES,
    "modality": MODALITIES,
}
_BOOL_CONDITIONS: tuple[str, ...] = ("load_bearing", "negative", "cited", "result", "stub")
_NUMBER_CONDITIONS: tuple[str, ...] = ("age", "score", "tokens", "pressure")
_TOP_KEYS: tuple[str, ...] = ("format", "name", "order", "stop", "stub_tokens", "demote_orphans")
_RULE_KEYS: tuple[str, ...] = ("when", "do")


@dataclass(frozen=True, slots=True)
class Comparison:
    """One comparison of a number condition, such as ``ge = 2``."""

    op: str
    value: float

    def holds(self, x: float) -> bool:
        if self.op == "lt":
            return x < self.value
        if self.op == "le":
            return x <= self.value
        if self.op == "gt":
            return x > self.value
        if self.op == "ge":
            return x >= self.value
        return x == self.value


@dataclass(frozen=True, slots=True)
class When:
    """The condition of a rule: every key given must hold (no key: every item matches)."""

    kind: tuple[str, ...] | None = None
    type: tuple[str, ...] | None = None
    modality: tuple[str, ...] | None = None
    load_bearing: bool | None = None
    negative: bool | None = None
    cited: bool | None = None
    result: bool | None = None
    stub: bool | None = None
    age: tuple[Comparison, ...] | None = None
    score: tuple[Comparison, ...] | None = None
    tokens: tuple[Comparison, ...] | None = None
    pressure: tuple[Comparison, ...] | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    """``do`` the action to items for which ``when`` holds."""

    do: str
    when: When = When()


@dataclass(frozen=True, slots=True)
class Spec:
    """A parsed, validated ``ctxproof-policy/1`` spec."""

    name: str
    rules: tuple[Rule, ...] = ()
    order: tuple[str, ...] = ("position",)
    stop: str = "fits"
    stub_tokens: int = DEFAULT_STUB_TOKENS
    demote_orphans: bool = False
    source: str | None = None
    """The file the spec was read from, for messages."""


# -- parsing -----------------------------------------------------------------------------


class _Where:
    """The file and its text, to put a line on errors that name a key path."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.lines = text.split("\n")

    def error(self, path: str, message: str, fix: str | None = None) -> InputError:
        return InputError(f"{path}: {message}", file=self.file, line=self.line_of(path), fix=fix)

    def line_of(self, path: str) -> int | None:
        """The line a key path is written on, found by a plain scan (None if not found)."""
        m = re.match(r"rule\[(\d+)\](.*)", path)
        if m is None:
            top = path.split(".")[0].split("[")[0]
            found = self._find_key(top, 0, len(self.lines))
            return found if found is not None else self._find_table(top)
        index, rest = int(m.group(1)), m.group(2)
        headers = [i for i, ln in enumerate(self.lines) if re.match(r"\s*\[\[\s*rule\s*\]\]", ln)]
        if index >= len(headers):
            return None
        start = headers[index]
        end = headers[index + 1] if index + 1 < len(headers) else len(self.lines)
        keys = [k for k in re.split(r"[.\[\]]+", rest) if k and not k.isdigit()]
        for key in reversed(keys):
            found = self._find_key(key, start, end, inline=True)
            if found is not None:
                return found
        return start + 1

    def _find_table(self, key: str) -> int | None:
        """The line of a table header ``[key]`` (or ``[[key]]``), None if there is none."""
        pattern = rf"\s*\[\[?\s*{re.escape(key)}\s*\]\]?\s*(#|$)"
        for i, line in enumerate(self.lines):
            if re.match(pattern, line):
                return i + 1
        return None

    def _find_key(self, key: str, start: int, end: int, *, inline: bool = False) -> int | None:
        pattern = rf"(^|[{{,\s.]){re.escape(key)}\s*=" if inline else rf"\s*{re.escape(key)}\s*="
        for i in range(start, end):
            line = self.lines[i].split("#", 1)[0]
            if (re.search if inline else re.match)(pattern, line):
                return i + 1
        return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _choices(values: Sequence[str]) -> str:
    return ", ".join(values)


def _str_list(
    value: Any, path: str, allowed: Sequence[str], what: str, at: _Where
) -> tuple[str, ...]:
    example = f'["{allowed[0]}"]'
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise at.error(
            path, f"expected a list of {what} names like {example}", fix=f"use {_choices(allowed)}"
        )
    if not value:
        raise at.error(path, "an empty list matches no item", fix=f"list {what}s, or drop the key")
    for i, v in enumerate(value):
        if v not in allowed:
            raise at.error(f"{path}[{i}]", f"unknown {what} {v!r}", fix=f"use {_choices(allowed)}")
    return tuple(value)


def _comparisons(value: Any, path: str, at: _Where) -> tuple[Comparison, ...]:
    if not isinstance(value, dict) or not value:
        raise at.error(
            path, "expected a table like {ge = 2}", fix=f"compare with {_choices(COMPARISONS)}"
        )
    out: list[Comparison] = []
    for op, number in value.items():
        if op not in COMPARISONS:
            raise at.error(f"{path}.{op}", "unknown comparison", fix=f"use {_choices(COMPARISONS)}")
        if not _is_number(number) or not math.isfinite(number):
            raise at.error(
                f"{path}.{op}",
                f"expected a finite number, not {number!r}",
                fix=f"write a number: {op} = 2",
            )
        out.append(Comparison(op, number))
    return tuple(out)


def _when(value: Any, path: str, at: _Where) -> When:
    known = (*_LIST_CONDITIONS, *_BOOL_CONDITIONS, *_NUMBER_CONDITIONS)
    if not isinstance(value, dict):
        raise at.error(
            path,
            'expected a table like { kind = ["prose"] }',
            fix=f"write when = {{ ... }} with {_choices(known)}",
        )
    fields: dict[str, Any] = {}
    for key, v in value.items():
        sub = f"{path}.{key}"
        if key in _LIST_CONDITIONS:
            fields[key] = _str_list(v, sub, _LIST_CONDITIONS[key], key, at)
        elif key in _BOOL_CONDITIONS:
            if not isinstance(v, bool):
                raise at.error(
                    sub, f"expected true or false, not {v!r}", fix=f"write {key} = true or false"
                )
            fields[key] = v
        elif key in _NUMBER_CONDITIONS:
            fields[key] = _comparisons(v, sub, at)
        else:
            raise at.error(sub, "unknown condition", fix=f"use {_choices(known)}")
    return When(**fields)


def _rule(value: Any, path: str, at: _Where) -> Rule:
    if not isinstance(value, dict):
        raise at.error(
            path,
            "expected a table",
            fix="write [[rule]] with do = ... and an optional when",
        )
    for key in value:
        if key not in _RULE_KEYS:
            raise at.error(f"{path}.{key}", "unknown key", fix="a rule takes when and do")
    if "do" not in value:
        raise at.error(f"{path}.do", "missing", fix=f"add do = one of {_choices(ACTIONS)}")
    do = value["do"]
    if not isinstance(do, str) or do not in ACTIONS:
        raise at.error(f"{path}.do", f"unknown action {do!r}", fix=f"use {_choices(ACTIONS)}")
    when = _when(value["when"], f"{path}.when", at) if "when" in value else When()
    return Rule(do, when)


def _order(value: Any, at: _Where) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise at.error(
            "order",
            'expected a list of keys like ["-score", "position"]',
            fix=f'use {_choices(ORDER_KEYS)}, each with an optional "-" for descending',
        )
    seen: set[str] = set()
    for i, key in enumerate(value):
        bare = key[1:] if key.startswith("-") else key
        if bare not in ORDER_KEYS:
            raise at.error(
                f"order[{i}]",
                f"unknown order key {key!r}",
                fix=f'use {_choices(ORDER_KEYS)}, each with an optional "-" for descending',
            )
        if bare in seen:
            raise at.error(f"order[{i}]", f"{bare!r} is listed twice", fix="list each key once")
        seen.add(bare)
    return tuple(value)


def spec_from_obj(obj: Mapping[str, Any], file: str = "<spec>", text: str = "") -> Spec:
    """Validate a spec given as a parsed TOML table."""
    at = _Where(file, text)
    for key in obj:
        if key not in (*_TOP_KEYS, "rule"):
            raise at.error(key, "unknown key", fix=f"a spec takes {_choices((*_TOP_KEYS, 'rule'))}")
    if "format" not in obj:
        raise at.error("format", "missing", fix=f'write format = "{SPEC_FORMAT}" first')
    if obj["format"] != SPEC_FORMAT:
        raise at.error(
            "format",
            f"{obj['format']!r} is not {SPEC_FORMAT!r}",
            fix=f'write format = "{SPEC_FORMAT}"',
        )
    name = obj.get("name", Path(file).stem if file != "<spec>" else "spec")
    if not isinstance(name, str) or not name:
        raise at.error("name", "expected a non-empty string", fix='write name = "my-policy"')
    order = _order(obj["order"], at) if "order" in obj else ("position",)
    stop = obj.get("stop", "fits")
    if stop not in STOPS:
        raise at.error(
            "stop", f'expected "fits" or "all", not {stop!r}', fix='write stop = "fits" or "all"'
        )
    stub_tokens = obj.get("stub_tokens", DEFAULT_STUB_TOKENS)
    if isinstance(stub_tokens, bool) or not isinstance(stub_tokens, int) or stub_tokens < 0:
        raise at.error(
            "stub_tokens",
            f"expected an integer >= 0, not {stub_tokens!r}",
            fix="write a whole number of tokens, or drop the key",
        )
    demote_orphans = obj.get("demote_orphans", False)
    if not isinstance(demote_orphans, bool):
        raise at.error(
            "demote_orphans",
            f"expected true or false, not {demote_orphans!r}",
            fix="write demote_orphans = true or false",
        )
    raw_rules = obj.get("rule", [])
    if not isinstance(raw_rules, list):
        raise at.error("rule", "expected an array of tables", fix="write each rule as [[rule]]")
    rules = tuple(_rule(r, f"rule[{i}]", at) for i, r in enumerate(raw_rules))
    return Spec(name, rules, order, stop, stub_tokens, demote_orphans, file)


SPEC_DEPTH = 64
"""How deep the arrays and inline tables of a spec may nest, as the error names it (the
TOML reader gives up somewhat deeper)."""


def _too_deep(text: str) -> int | None:
    """The line where the text's arrays and inline tables first nest deeper than
    :data:`SPEC_DEPTH` (brackets in strings and comments aside), for the error."""
    depth, line, quote, k = 0, 1, "", 0
    while k < len(text):
        c = text[k]
        if c == "\n":
            line += 1
            if quote in ('"', "'"):
                quote = ""  # a one-line string ends at its line (an error of its own)
        elif quote:
            if c == "\\" and quote[0] == '"':
                k += 1
            elif text.startswith(quote, k):
                k += len(quote) - 1
                quote = ""
        elif c == "#":
            end = text.find("\n", k)
            k = len(text) if end < 0 else end
            continue
        elif c in "\"'":
            quote = c * 3 if text.startswith(c * 3, k) else c
            k += len(quote) - 1
        elif c in "[{":
            depth += 1
            if depth > SPEC_DEPTH:
                return line
        elif c in "]}":
            depth = max(0, depth - 1)
        k += 1
    return None


def parse_spec(text: str, file: str = "<spec>") -> Spec:
    """Parse and validate the text of a spec."""
    try:
        obj = tomllib.loads(text)
    except RecursionError:
        raise InputError(
            f"the TOML nests deeper than {SPEC_DEPTH} levels of arrays and tables",
            file=file,
            line=_too_deep(text),
            fix="a spec's values nest a few levels at most: flatten this value",
        ) from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = re.search(r"\(at line (\d+), column \d+\)", message)
        if m is not None:
            line: int | None = int(m.group(1))
        elif "end of document" in message:
            line = len(text.rstrip("\n").split("\n"))
        else:
            line = None
        raise InputError(
            f"not valid TOML: {message}", file=file, line=line, fix="fix the TOML syntax"
        ) from None
    return spec_from_obj(obj, file, text)


def load_spec(path: str | Path) -> Spec:
    """Read and validate a spec file.

    A Python policy (``file.py``, ``file.py:function``, ``module:function``) is no
    spec: the error says to fuzz it instead.
    """
    python = _python_policy(str(path))
    if python is not None:
        raise InputError(
            "this is a Python policy, not a spec: `prove` reads ctxproof-policy/1 specs"
            " (TOML, docs/spec-language.md)",
            file=str(path),
            fix=f"play it against the simulated agent with `ctxproof fuzz {python}`",
        )
    data = read_input(path)
    try:
        try:
            text = data.decode("utf-8-sig")  # a byte-order mark, as traces may start with
        except UnicodeDecodeError as exc:
            column = exc.start - data.rfind(b"\n", 0, exc.start)
            raise InputError(
                bad_utf8_message(data[exc.start : exc.end], column, exc.start),
                file=str(path),
                line=data[: exc.start].count(b"\n") + 1,
                fix="save the spec as UTF-8",
            ) from None
        return parse_spec(text, str(path))
    except InputError:
        other = _OTHER_KINDS.get(sniff_kind(data) or "")
        if other is None:
            raise
        what, hint = other
        raise InputError(
            f"this is {what}, not a policy spec (ctxproof-policy/1, TOML, docs/spec-language.md)",
            file=str(path),
            fix=hint,
        ) from None


_OTHER_KINDS = {
    "window": (
        "a window file (ctxproof-window/1)",
        "check a rewrite of it with `ctxproof check BEFORE AFTER`",
    ),
    "trace": ("a trace (ctxproof-trace/1)", "audit it with `ctxproof audit TRACE`"),
    "store": ("a SQLite store", "give it to a command as `--store FILE`"),
}
"""Files of the kinds :func:`verifier.io.sniff_kind` tells that a spec is not, as a
spec's error names them: what the file is, and the command that reads it."""


def _python_policy(arg: str) -> str | None:
    """How ``ctxproof fuzz`` names the Python policy ``arg`` names, or None when ``arg``
    is not one (a spec, or a file of another kind)."""
    target, sep, function = arg.rpartition(":")
    if sep and target.endswith(".py") and function:
        return arg  # file.py:function
    if arg.endswith(".py"):
        return f"{arg}:FUNCTION"
    if (
        sep
        and function
        and not Path(arg).exists()
        and re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", target)
        and re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", function)
    ):
        return arg  # package.module:function
    return None


# -- writing -----------------------------------------------------------------------------


def _toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, and DEL is escaped too."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return repr(float(value))  # finite: 2.0, 1e+300, 1.5e-05 are all TOML floats


def _comment(text: str) -> str:
    """One comment line: control characters, which TOML refuses in a comment, as spaces."""
    shown = "".join(" " if ord(ch) < 0x20 or ord(ch) == 0x7F else ch for ch in text)
    return ("# " + shown).rstrip()


def _when_toml(w: When) -> str:
    parts: list[str] = []
    for key in _LIST_CONDITIONS:
        values = getattr(w, key)
        if values is not None:
            parts.append(f"{key} = [{', '.join(_toml_string(v) for v in values)}]")
    for key in _BOOL_CONDITIONS:
        value = getattr(w, key)
        if value is not None:
            parts.append(f"{key} = {'true' if value else 'false'}")
    for key in _NUMBER_CONDITIONS:
        cmps = getattr(w, key)
        if cmps is not None:
            inner = ", ".join(f"{c.op} = {_toml_number(c.value)}" for c in cmps)
            parts.append(f"{key} = {{ {inner} }}")
    return "{ " + ", ".join(parts) + " }" if parts else ""


def spec_to_toml(
    spec: Spec,
    *,
    comments: Sequence[str] = (),
    rule_comments: Mapping[int, Sequence[str]] | None = None,
) -> str:
    """The text of a spec file for ``spec``: :func:`parse_spec` reads it back as ``spec``
    (``source`` aside). Every top-level key is written, defaults included.

    ``comments`` go first, one ``#`` line each; ``rule_comments[i]`` go on the lines
    above rule ``i`` (counted from 0).

    >>> spec = parse_spec('format = "ctxproof-policy/1"\\n[[rule]]\\ndo = "spill"')
    >>> text = spec_to_toml(spec, rule_comments={0: ["was evict"]})
    >>> print(text.split("[[rule]]")[0].splitlines()[-1])
    # was evict
    >>> parse_spec(text) == spec
    True
    """
    lines = [_comment(c) for c in comments]
    lines += [
        f"format = {_toml_string(SPEC_FORMAT)}",
        f"name = {_toml_string(spec.name)}",
        f"order = [{', '.join(_toml_string(k) for k in spec.order)}]",
        f"stop = {_toml_string(spec.stop)}",
        f"stub_tokens = {spec.stub_tokens}",
        f"demote_orphans = {'true' if spec.demote_orphans else 'false'}",
    ]
    for i, rule in enumerate(spec.rules):
        lines.append("")
        lines += [_comment(c) for c in (rule_comments or {}).get(i, ())]
        lines.append("[[rule]]")
        when = _when_toml(rule.when)
        if when:
            lines.append(f"when = {when}")
        lines.append(f"do = {_toml_string(rule.do)}")
    return "\n".join(lines) + "\n"


# -- the interpreter ---------------------------------------------------------------------


def summary_id(pass_no: int) -> str:
    """The id of the prose item a spec's ``summarize`` leaves at pass ``pass_no``."""
    return f"summary@{pass_no}"


def _resolve(stub: Item, store: Mapping[str, Mapping[str, Any]] | None) -> Item | None:
    """The item a stub stands for, where the store resolves it: an entry under the stub's
    ``ref`` that hashes to it and has the stub's id (else None). An entry that is itself
    a stub (a stub of a stub) stands for what that one stands for, as the checks follow
    stubs through the store."""
    seen: set[str] = set()
    item = stub
    while item.kind == "stub":
        ref = item.stub_ref
        if store is None or ref is None or ref in seen:
            return None
        seen.add(ref)
        obj = store.get(ref)
        if not isinstance(obj, Mapping):
            return None
        try:
            item = item_from_json(dict(obj))
        except (InputError, ValueError, TypeError, RecursionError):
            return None  # not an item: nothing it could stand for
        if item.id != stub.id or item.ref != ref:
            return None
    return item


def _cited_ids(items: Sequence[Item]) -> set[str]:
    """Ids some other item cites as rationale, witness, derived_from or call (each item
    here is the one the window shows, or what its stub stands for)."""
    out: set[str] = set()
    for it in items:
        refs = [*it.rationale, *it.witnesses, *it.derived_from]
        if it.call is not None:
            refs.append(it.call)
        out.update(r for r in refs if r != it.id)
    return out


def _answers_a_call(it: Item | None) -> bool:
    """A result: an observation, or a prose placeholder, with ``call``."""
    return it is not None and it.kind in ("observation", "prose") and it.call is not None


def _negative(it: Item, by_id: Mapping[str, Item]) -> bool:
    if it.modality == "failed" or it.type == "rejection":
        return True
    for wid in it.witnesses:
        w = by_id.get(wid)
        if w is not None and w.kind == "observation" and w.modality == "failed":
            return True
    return False


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the conditions read of one item, as the pass starts."""

    item: Item
    position: int
    tokens: int
    age: int
    score: int
    negative: bool
    cited: bool
    result: bool


@dataclass(frozen=True, slots=True)
class Reading:
    """What a spec reads of one item as a pass starts, and the rule that acts on it."""

    id: str
    rule: int | None
    """The index (from 0) of the first rule whose ``when`` holds; None: no rule does (kept)."""
    action: str
    cited: bool
    result: bool
    negative: bool
    load_bearing: bool
    stub: bool


def _matches(w: When, f: _Facts, pressure: float) -> bool:
    it = f.item
    modal = it.kind in _MODAL_KINDS
    checks: list[tuple[object, bool]] = [
        (w.kind, w.kind is not None and it.kind in w.kind),
        (w.type, w.type is not None and it.type in w.type),
        (w.modality, w.modality is not None and modal and it.modality in w.modality),
        (w.load_bearing, it.load_bearing == w.load_bearing),
        (w.negative, f.negative == w.negative),
        (w.cited, f.cited == w.cited),
        (w.result, f.result == w.result),
        (w.stub, (it.kind == "stub") == w.stub),
    ]
    if any(given is not None and not ok for given, ok in checks):
        return False
    numbers = (
        (w.age, f.age),
        (w.score, f.score),
        (w.tokens, f.tokens),
        (w.pressure, pressure),
    )
    return all(cmp is None or all(c.holds(x) for c in cmp) for cmp, x in numbers)


def _read(
    originals: Sequence[dict[str, Any]],
    ages: Mapping[str, int],
    store: Mapping[str, Mapping[str, Any]] | None,
) -> list[_Facts]:
    """What the conditions read of each item, as the pass starts.

    For ``cited`` and ``result`` a stub is the item it stands for where the store
    resolves it, and an item that neither cites nor answers anything where it does
    not; for every other condition a stub is itself.
    """
    items = [item_from_json(obj) for obj in originals]
    by_id: dict[str, Item] = {}
    for it in items:
        if it.id in by_id:
            raise ValueError(f"the window holds id {it.id!r} twice; ids are unique in a window")
        by_id[it.id] = it
    shown: list[Item | None] = [
        _resolve(it, store) if it.kind == "stub" else it for it in items
    ]
    cited = _cited_ids([it for it in shown if it is not None])
    return [
        _Facts(
            it,
            i,
            it.estimated_tokens(),
            ages.get(it.id, 0),
            it.score if it.score is not None else 0,
            _negative(it, by_id),
            it.id in cited,
            _answers_a_call(shown[i]),
        )
        for i, it in enumerate(items)
    ]


def _summary(pass_no: int, ids: Sequence[str], tokens: int) -> dict[str, Any]:
    """The prose item that stands for the items summarized in one pass."""
    return {
        "id": summary_id(pass_no),
        "kind": "prose",
        "text": "summary of: " + ", ".join(ids),
        "tokens": math.ceil(tokens / 4),
    }


def _demote_orphans(state: _Pass, result: list[dict[str, Any]]) -> None:
    """Claims whose cited witnesses all left the window become ``unwitnessed``, whatever
    they said (a ``failed`` one included: the spec then launders it, WR004)."""
    present = {obj["id"] for obj in result}
    positions = {f.item.id: f.position for f in state.facts}
    for obj in result:
        if obj["kind"] != "claim" or obj.get("modality") == "unwitnessed":
            continue
        witnesses = obj.get("witnesses", [])
        if witnesses and not any(w in present for w in witnesses):
            obj["modality"] = "unwitnessed"
            obj.setdefault("tokens", state.facts[positions[obj["id"]]].tokens)


def _pressure(total: int, budget: int) -> float:
    if budget > 0:
        return total / budget
    return math.inf if total > 0 else 0.0


@dataclass
class _Pass:
    """The state of one pass of a spec over a window."""

    originals: list[dict[str, Any]]
    facts: list[_Facts]
    out: list[dict[str, Any] | None]
    total: int
    spilled: list[bool]
    summarized: list[int]
    summary_tokens: int = 0  # the sum of the summarized items' tokens


class SpecPolicy:
    """A :class:`Spec` run as a policy: ``SpecPolicy(spec)(window, budget)``.

    Takes the window as plain item dicts and returns ``{"window", "spill",
    "claimed_preserved"}``; ``claimed_preserved`` lists exactly the ids whose
    item the spec left unchanged. ``store`` (refs -> stored item dicts) is what
    ``cited`` and ``result`` read a stub through; without it no stub resolves.
    The semantics, including every point the language leaves to the
    interpreter, are in docs/spec-language.md.
    """

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.__name__ = spec.name

    def __repr__(self) -> str:
        return f"SpecPolicy({self.spec.name!r})"

    def __call__(
        self,
        window: Sequence[Mapping[str, Any]],
        budget: int,
        *,
        pass_no: int = 1,
        ages: Mapping[str, int] | None = None,
        store: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> dict[str, list[Any]]:
        originals = [copy.deepcopy(dict(obj)) for obj in window]
        facts = _read(originals, ages or {}, store)
        total = sum(f.tokens for f in facts)
        pressure = _pressure(total, budget)
        n = len(facts)
        out: list[dict[str, Any] | None] = copy.deepcopy(list(originals))
        state = _Pass(originals, facts, out, total, [False] * n, [])
        for i in sorted(range(n), key=lambda k: self._order_key(facts[k])):
            if self.spec.stop == "fits" and state.total <= budget:
                break
            self._act(state, i, self._action(facts[i], pressure))
        result = self._assemble(state, pass_no)
        if self.spec.demote_orphans:
            _demote_orphans(state, result)
        ids = [f.item.id for f in facts]
        return {
            "window": result,
            "spill": [ids[i] for i in range(n) if state.spilled[i]],
            "claimed_preserved": [ids[i] for i in range(n) if state.out[i] == originals[i]],
        }

    def readings(
        self,
        window: Sequence[Mapping[str, Any]],
        budget: int,
        *,
        ages: Mapping[str, int] | None = None,
        store: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> list[Reading]:
        """What the conditions read of each item of ``window`` as a pass starts, and the
        rule that gives its action (whether the pass visits it or not), in window order."""
        originals = [copy.deepcopy(dict(obj)) for obj in window]
        facts = _read(originals, ages or {}, store)
        pressure = _pressure(sum(f.tokens for f in facts), budget)
        out = []
        for f in facts:
            rule = self._rule(f, pressure)
            out.append(
                Reading(
                    f.item.id,
                    rule,
                    "keep" if rule is None else self.spec.rules[rule].do,
                    f.cited,
                    f.result,
                    f.negative,
                    f.item.load_bearing,
                    f.item.kind == "stub",
                )
            )
        return out

    def _rule(self, facts: _Facts, pressure: float) -> int | None:
        """The index of the first rule whose condition holds; None when none does."""
        for i, rule in enumerate(self.spec.rules):
            if _matches(rule.when, facts, pressure):
                return i
        return None

    def _action(self, facts: _Facts, pressure: float) -> str:
        """The action of the first rule whose condition holds; ``keep`` when none does."""
        rule = self._rule(facts, pressure)
        return "keep" if rule is None else self.spec.rules[rule].do

    def _act(self, state: _Pass, i: int, action: str) -> None:
        """Apply one action to item i, updating the running total at once."""
        f = state.facts[i]
        it = f.item
        obj = state.out[i]
        assert obj is not None  # each item is visited once
        if action == "evict":
            state.out[i] = None
            state.total -= f.tokens
        elif action == "spill" and it.kind != "stub":
            state.out[i] = {**stub_for(state.originals[i]), "tokens": self.spec.stub_tokens}
            state.spilled[i] = True
            state.total += self.spec.stub_tokens - f.tokens
        elif action == "summarize":
            old = math.ceil(state.summary_tokens / 4) if state.summarized else 0
            state.summary_tokens += f.tokens
            state.total += math.ceil(state.summary_tokens / 4) - old - f.tokens
            state.summarized.append(i)
            state.out[i] = None
        elif action == "soften" and it.kind in _MODAL_KINDS:
            halved = math.ceil(f.tokens / 2)
            if it.modality == "failed":
                obj["modality"] = "unverified"
            obj["tokens"] = halved
            state.total += halved - f.tokens
        elif action == "demote" and it.kind in _MODAL_KINDS and it.modality != "unwitnessed":
            obj["modality"] = "unwitnessed"
            obj["tokens"] = f.tokens  # the count is unchanged, whatever the new text's length
        # keep, and an action that changes nothing on this item, leave it as it is

    def _assemble(self, state: _Pass, pass_no: int) -> list[dict[str, Any]]:
        """The new window: the items in their places, the summary at the first summarized."""
        first = min(state.summarized) if state.summarized else -1
        result: list[dict[str, Any]] = []
        for i, obj in enumerate(state.out):
            if i == first:
                folded = [state.facts[k].item.id for k in sorted(state.summarized)]
                result.append(_summary(pass_no, folded, state.summary_tokens))
            if obj is not None:
                result.append(obj)
        sid = summary_id(pass_no)
        if state.summarized and sum(1 for obj in result if obj["id"] == sid) > 1:
            raise ValueError(
                f"spec {self.spec.name!r}: the window already holds an item {sid!r}, the id"
                " of this pass's summary; rename that item"
            )
        return result

    def _order_key(self, f: _Facts) -> tuple[float, ...]:
        key: list[float] = []
        for name in self.spec.order:
            descending = name.startswith("-")
            value = {
                "position": f.position,
                "age": f.age,
                "score": f.score,
                "tokens": f.tokens,
            }[name.lstrip("-")]
            key.append(-value if descending else value)
        key.append(f.position)
        return tuple(key)
