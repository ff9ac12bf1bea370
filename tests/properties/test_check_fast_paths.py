"""``ctxproof check``'s fast paths print what the slow ones print, byte for byte.

A whole check of one rewrite takes these shortcuts: a read-only SQLite store verifies
each entry once, the references of an item of the window after that is the very item of
the window before are not checked twice (nor those of an item that cites nothing),
CF001-CF003 pass over an entry the window after kept as it is, CF004 over a commitment
kept as it is whose rationales are all still in the window, and WR007 compares a changed
observation with the version of its id the window before holds (not with the key of
every observation there); the window after takes runs of items written as before at once
(the window before, with no window read ahead of it, skips that search), an item read
from a window file writes its canonical JSON only when it is first asked for (and two
such items that differ in a field the rules read are told apart without it, and two
read from objects with the same keys whose read fields are equal are told alike
without it), the witness support of an item is kept by its id and version rather than
by its store key, and an item's key is cut out of its canonical JSON. The slow path
reads every entry anew, reads both windows item by item in one loop writing each item's
canonical JSON as it reads it, parses every key and writes it anew, keeps each support
answer by store key, checks every citation of both windows (every citation of every item
is compared with a plain loop over them in a property of its own), and gives the rules
the window after as fresh copies of its items (no item of it
is one of the window before). Both run the command on the same generated rewrites, with
the spills of each in a SQLite store, and must print the same output with the same exit
code.
"""

from __future__ import annotations

import dataclasses
import io
import json
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

import verifier.cli.check as cli_check
import verifier.io as reader
import verifier.rules.commitments as commitments
import verifier.rules.witnesses as witnesses
import verifier.window as window_module
from verifier.check import check_rewrite
from verifier.cli import main
from verifier.errors import InputError
from verifier.formula import Formula
from verifier.io import check_references, forget_reads, item_from_json, parse_window_text
from verifier.rules.context import RewriteContext, WindowView
from verifier.solver import Result, Session
from verifier.store import SqliteStore, Store
from verifier.strategies import item_dicts, rewrite_of, windows
from verifier.window import Item, Unwritten, Window

Obj = dict[str, Any]


def _all_references(
    items: Iterable[Item],
    defined: Mapping[str, object] | set[str],
    known: Callable[[str], bool],
    file: str,
    checked: Mapping[str, Item] | None = None,
) -> None:
    """The reference: every citation of every item, whatever was checked before."""
    for it in items:
        for rel, ref in it.citations:
            if ref not in defined and not known(ref):
                raise InputError(
                    f"cites {rel} {ref!r}, which neither window defines"
                    " and the store does not hold",
                    file=file,
                    line=1,
                    item=it.id,
                )


def _appended_in_full(ctx: Any, observation: Item) -> bool:
    """WR007's question the long way: the key among those of every observation the
    window before holds, and those appended earlier."""
    return observation.key in witnesses._legit_observations(ctx)


def _entails_anew(
    self: Session, premises: Iterable[Formula], goal: Formula, labels: Iterable[str] | None = None
) -> Result:
    return self.premises(premises, labels).entails(goal)


def _checkable_by_ref(
    self: RewriteContext, item: Item, view: WindowView, side: str
) -> bool | None:
    """The support question the long way: answered once per side and store key (ref)."""
    cache: dict[tuple[str, str], bool | None] = self.__dict__.setdefault("_by_ref", {})
    key = (side, item.ref)
    if key not in cache:
        if not item.witnesses:
            cache[key] = False
        else:
            spilled = view.is_stub(item.id)
            found = view.surviving_witnesses(item, spilled=spilled, excluded=self.excluded)
            cache[key] = self.supports(found, item, f"support of {item.id!r}")
    return cache[key]


@contextmanager
def slow_paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every store entry read anew, every citation checked, no item shared by the windows."""
    fast_check = check_rewrite
    fast_references = check_references

    def every_reference(
        items: Iterable[Item],
        defined: Mapping[str, object] | set[str],
        known: Callable[[str], bool],
        file: str,
        checked: Mapping[str, Item] | None = None,
    ) -> None:
        fast_references(items, defined, known, file)  # no item skipped as checked

    def fresh_after(before: Window, after: Window, **kw: Any) -> Any:
        copies = Window(tuple(dataclasses.replace(it) for it in after.items), after.background)
        assert all(a is not b for a, b in zip(copies.items, after.items, strict=True))
        return fast_check(before, copies, **kw)

    with monkeypatch.context() as m:
        m.setattr(SqliteStore, "lookup", Store.lookup)
        m.setattr(cli_check, "check_references", every_reference)
        m.setattr(cli_check, "check_rewrite", fresh_after)
        # the window after read item by item, and every key parsed and written anew
        m.setattr(reader._SameText, "run", lambda self, text, i, spans: -1)
        m.setattr(reader._SameText, "idle", property(lambda self: False))  # one loop for all
        m.setattr(reader, "_unwritten", lambda text, start: None)  # canonical JSON at once
        m.setattr(commitments, "_cites_kept", lambda item, window: False)  # CF004 reads all
        m.setattr(window_module, "_unwritten_and_differ", lambda a, b: False)  # keys compared
        m.setattr(window_module, "_unwritten_and_alike", lambda a, b: False)
        m.setattr(RewriteContext, "checkable", _checkable_by_ref)
        m.setattr(Session, "entails", _entails_anew)  # every entailment asked anew
        m.setattr(witnesses, "_appended_version", _appended_in_full)
        m.setattr(window_module, "_key_unparsed", lambda raw: None)
        window_module._key_of_raw.cache_clear()
        try:
            yield
        finally:
            window_module._key_of_raw.cache_clear()


def _run(folder: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = [
        "check", str(folder / "before.json"), str(folder / "after.json"),
        "--store", str(folder / "store.sqlite"), "--format", "json",
    ]  # fmt: skip
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _window_text(items: list[Obj]) -> str:
    return json.dumps({"format": "ctxproof-window/1", "items": items}, indent=1)


SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@SETTINGS
@given(windows(max_size=10), st.data())
def test_check_prints_what_the_slow_paths_print(
    monkeypatch: pytest.MonkeyPatch, before: list[Obj], data: st.DataObject
) -> None:
    spill, after = data.draw(rewrite_of(before))
    note(json.dumps({"before": before, "spill": spill, "after": after}))
    with tempfile.TemporaryDirectory() as where:
        folder = Path(where)
        (folder / "before.json").write_text(_window_text(before), "utf-8")
        (folder / "after.json").write_text(_window_text(after), "utf-8")
        store = SqliteStore(folder / "store.sqlite")
        store.spill(spill)
        store.close()
        fast = _run(folder)
        with slow_paths(monkeypatch):
            slow = _run(folder)
    assert fast == slow


def test_the_shortcuts_are_taken_and_a_shared_item_is_checked_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A case the property must not pass vacuously: the windows share their kept items,
    the store answers a repeated read from what it verified, and the output is a
    refusal with the same findings both ways."""
    before: list[Obj] = [
        {"id": "o1", "kind": "observation", "shows": "t.ok", "modality": "verified"},
        {"id": "c1", "kind": "commitment", "type": "decision", "formula": "a"},
        {"id": "k1", "kind": "claim", "formula": "t.ok", "witnesses": ["o1"],
         "modality": "verified", "load_bearing": True},
        {"id": "c2", "kind": "commitment", "type": "invariant", "formula": "b",
         "rationale": ["k1"]},
    ]  # fmt: skip
    stub = {"id": "c1", "kind": "stub", "ref": _ref(before[1])}
    after = [before[0], stub, before[2], dict(before[3], formula="b & z")]
    (tmp_path / "before.json").write_text(_window_text(before), "utf-8")
    (tmp_path / "after.json").write_text(_window_text(after), "utf-8")
    store = SqliteStore(tmp_path / "store.sqlite")
    store.spill([before[1]])
    store.close()

    seen: list[list[str]] = []

    def spy(items: Iterable[Item], *args: Any, **kw: Any) -> None:
        items = list(items)
        seen.append([it.id for it in items if kw.get("checked", {}).get(it.id) is not it])
        check_references(items, *args, **kw)

    reads: list[str] = []
    body = SqliteStore._body

    def counted(self: SqliteStore, ref: str) -> bytes | None:
        reads.append(ref)
        return body(self, ref)

    with monkeypatch.context() as m:
        m.setattr(cli_check, "check_references", spy)
        m.setattr(SqliteStore, "_body", counted)
        fast = _run(tmp_path)
    # the window after is checked for its new and changed items only
    assert seen == [["o1", "c1", "k1", "c2"], ["c1", "c2"]]
    assert len(reads) == len(set(reads)) >= 1  # each entry read once
    with slow_paths(monkeypatch):
        slow = _run(tmp_path)
    assert fast == slow
    assert fast[0] == 1
    codes = [f["code"] for f in json.loads(fast[1])["findings"]]
    assert "CF002" in codes


def _ref(obj: Obj) -> str:
    return item_from_json(obj).ref


@settings(max_examples=200, deadline=None)
@given(windows(max_size=8), st.data())
def test_check_references_agrees_with_every_citation_checked(
    window: list[Obj], data: st.DataObject
) -> None:
    """Skipping items that cite nothing, and items checked already, changes no answer."""
    items = [item_from_json(obj) for obj in window]
    extra = data.draw(item_dicts("late", window))
    items.append(item_from_json(extra))
    ids = [it.id for it in items]
    defined = set(data.draw(st.lists(st.sampled_from(ids), unique=True))) if ids else set()
    stored = set(data.draw(st.lists(st.sampled_from(ids), unique=True))) if ids else set()
    checked_ids = data.draw(st.lists(st.sampled_from(ids), unique=True)) if ids else []
    by_id = {it.id: it for it in items}
    # an item checked already: the very item, under the same defined and known
    checked = {i: by_id[i] for i in checked_ids}

    def outcome(run: Callable[[], None]) -> str | None:
        try:
            run()
        except InputError as exc:
            assert exc.line is not None  # located in the file, as the command shows it
            return exc.item
        return None

    def known(i: str) -> bool:
        return i in stored

    with tempfile.TemporaryDirectory() as where:
        path = str(Path(where) / "w.json")
        Path(path).write_text(_window_text([*window, extra]), "utf-8")
        ref = outcome(lambda: _all_references(items, defined, known, path))
        fast = outcome(lambda: check_references(items, defined, known, path))
        assert fast == ref
        rest = [it for it in items if it.id not in checked]
        ref_rest = outcome(lambda: _all_references(rest, defined, known, path))
        skipped = outcome(lambda: check_references(items, defined, known, path, checked=checked))
        assert skipped == ref_rest


def _read_alone(obj: Obj) -> Item:
    """The item of a window file holding obj alone, read cold (its JSON unwritten)."""
    forget_reads()
    text = json.dumps({"format": "ctxproof-window/1", "items": [obj]}, ensure_ascii=False)
    (item,) = parse_window_text(text, "w.json").items
    return item


AT_VALUES = [0, 1, 0.0, -0.0, 1.0, 1.5, "t", None]
FIELD_EDITS = st.sampled_from(
    [("text", "x"), ("text", None), ("score", 5), ("tokens", 3), ("source", None),
     ("source", "make"), ("exit_code", 0), ("load_bearing", True), ("modality", "failed"),
     ("digest", None), ("content", "out")]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    item_dicts("i1", []),
    st.lists(st.one_of(st.tuples(st.just("at"), st.sampled_from(AT_VALUES)), FIELD_EDITS)),
    st.sets(st.sampled_from(["text", "score", "tokens", "source", "at", "exit_code"])),
)
def test_items_told_alike_unwritten_have_the_same_key(
    obj: Obj, edits: list[tuple[str, Any]], dropped: set[str]
) -> None:
    """Two versions of an item, each read cold, that the reader's shortcut tells alike
    (or apart) without writing their canonical JSON have the same key (or not)."""
    other = dict(obj)
    for key, value in edits:
        other[key] = value
    for key in dropped:
        other.pop(key, None)
    try:
        a = _read_alone(obj)
        b = _read_alone(other)
    except InputError:
        return  # an edit this kind refuses
    raw_of = window_module._RAW_SLOT.__get__
    # a text with a \u escape is read whole, its items' JSON written at once
    assume(type(raw_of(a)) is Unwritten and type(raw_of(b)) is Unwritten)
    alike = window_module._unwritten_and_alike(a, b)
    differ = window_module._unwritten_and_differ(a, b)
    assert not (alike and differ)
    # the same version: the same key (writes both), or written otherwise, alike as parsed
    assert a.same_version(b) is (a.key == b.key or window_module._parsed_alike(a, b))
    if alike:
        assert a.key == b.key
    if differ:
        assert a.key != b.key


def test_alike_items_are_told_alike() -> None:
    """Not vacuous: a text edit is told alike unwritten; a zero of another sign, an int
    for a float, or a null for a missing member is not."""
    base: Obj = {"id": "o1", "kind": "observation", "shows": "t.ok", "at": 0.0, "text": "x"}
    a = _read_alone(base)
    assert window_module._unwritten_and_alike(a, _read_alone(dict(base, text="y")))
    for other in (dict(base, at=-0.0), dict(base, at=0), dict(base, source=None)):
        b = _read_alone(other)
        assert not window_module._unwritten_and_alike(a, b)
        assert a.key != b.key
