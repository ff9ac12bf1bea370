"""Unit tests of the durable store (SPEC §2 "Durable store", §7)."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.errors import StoreError
from verifier.io import item_from_json
from verifier.store import LayeredStore, MemoryStore, SqliteStore, Store, open_store
from verifier.window import Item, canonical_json, content_ref


def make(obj: dict[str, Any]) -> Item:
    return item_from_json(obj)


def prose(iid: str, text: str) -> Item:
    return make({"id": iid, "kind": "prose", "text": text})


def decision(iid: str, formula: str) -> Item:
    return make({"id": iid, "kind": "commitment", "type": "decision", "formula": formula})


def row_count(path: Path) -> int:
    """Rows in the entries table, read through a connection of its own."""
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT count(*) FROM entries").fetchone()[0])
    finally:
        db.close()


def copy_db(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite file, WAL contents included."""
    a = sqlite3.connect(src)
    b = sqlite3.connect(dst)
    try:
        a.backup(b)
    finally:
        a.close()
        b.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(db_path)
    yield s
    s.close()


# ---------------------------------------------------------------- round trips


def test_spill_returns_refs_and_get_returns_the_same_items(store: SqliteStore) -> None:
    items = [prose("p1", "alpha"), decision("d1", "db.postgres"), prose("p2", "ünïcødé ✓")]
    refs = store.spill(items)
    assert refs == [it.ref for it in items]
    assert all(
        r == content_ref(canonical_json(it.as_json())) for r, it in zip(refs, items, strict=True)
    )
    for ref, it in zip(refs, items, strict=True):
        found = store.lookup(ref)
        assert found.problem is None
        assert found.item == it
        assert store.get(ref) == it
        assert ref in store
    assert len(store) == 3
    assert list(store.items()) == items


def test_items_survive_close_and_reopen(db_path: Path) -> None:
    items = [prose("p1", "alpha"), decision("d1", "x & y")]
    s = SqliteStore(db_path)
    refs = s.spill(items)
    s.close()
    for reopened in (SqliteStore(db_path), SqliteStore(db_path, readonly=True)):
        try:
            assert [reopened.get(r) for r in refs] == items
            assert reopened.has_id("d1")
        finally:
            reopened.close()


def test_missing_ref_is_reported_as_missing(store: SqliteStore) -> None:
    store.spill([prose("p1", "alpha")])
    ref = prose("p1", "beta").ref
    assert store.lookup(ref).problem == "missing"
    assert store.get(ref) is None
    assert ref not in store
    assert 42 not in store


def test_versions_are_oldest_first_and_latest_is_newest(store: SqliteStore) -> None:
    v1, v2, v3 = decision("d", "a"), decision("d", "a & b"), decision("d", "a & b & c")
    store.spill([v1])
    store.spill([prose("other", "x"), v2])
    store.spill([v3, prose("other", "y")])
    assert store.versions("d") == [v1, v2, v3]
    assert store.latest("d") == v3
    assert store.has_id("d")
    assert [it.text for it in store.versions("other")] == ["x", "y"]
    assert store.versions("nope") == []
    assert store.latest("nope") is None
    assert not store.has_id("nope")


def test_spilling_the_same_item_twice_stores_it_once(store: SqliteStore, db_path: Path) -> None:
    it = prose("p", "same")
    assert store.spill([it]) == [it.ref]
    assert store.spill([it, it]) == [it.ref, it.ref]
    assert len(store) == 1
    assert row_count(db_path) == 1
    assert store.versions("p") == [it]


def test_spill_of_nothing_writes_nothing(store: SqliteStore, db_path: Path) -> None:
    assert store.spill([]) == []
    assert row_count(db_path) == 0


# ------------------------------------------------------------ durability knobs


def test_store_connection_uses_wal_and_synchronous_full(store: SqliteStore, db_path: Path) -> None:
    db = store._db
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    # WAL is a property of the file: another connection sees it too.
    other = sqlite3.connect(db_path)
    try:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        other.close()


def test_spill_commits_before_it_returns(store: SqliteStore, db_path: Path) -> None:
    it = prose("p", "committed")
    store.spill([it])
    assert not store._db.in_transaction
    # Another connection sees the row, so it is committed, not merely buffered.
    assert row_count(db_path) == 1


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE entries SET body = X'00'",
        "UPDATE entries SET id = 'other'",
        "UPDATE entries SET ref = 'sha256:' || ref",
        "DELETE FROM entries",
        "DELETE FROM entries WHERE id = 'p1'",
    ],
)
def test_update_and_delete_are_refused_by_triggers(
    store: SqliteStore, db_path: Path, statement: str
) -> None:
    items = [prose("p1", "alpha"), prose("p2", "beta")]
    refs = store.spill(items)
    db = sqlite3.connect(db_path, isolation_level=None)
    try:
        before = db.execute("SELECT seq, ref, id, body FROM entries ORDER BY seq").fetchall()
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute(statement)
        after = db.execute("SELECT seq, ref, id, body FROM entries ORDER BY seq").fetchall()
    finally:
        db.close()
    assert after == before
    assert [store.get(r) for r in refs] == items


def test_triggers_are_in_the_file(store: SqliteStore, db_path: Path) -> None:
    db = sqlite3.connect(db_path)
    try:
        names = {
            r[0]
            for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'entries'"
            )
        }
    finally:
        db.close()
    assert {"entries_no_update", "entries_no_delete"} <= names


# ---------------------------------------------------------------- atomicity


def test_a_spill_that_fails_midway_writes_none_of_its_items(
    store: SqliteStore, db_path: Path
) -> None:
    store.spill([prose("kept", "before")])
    seen: list[str] = []

    def probe(iid: str) -> int:
        seen.append(iid)
        if iid == "boom":
            raise RuntimeError("injected failure")
        return 0

    # A TEMP trigger lives only on the store's own connection: the file is not
    # changed, and the failure happens inside the store's transaction.
    store._db.create_function("probe", 1, probe)
    store._db.execute(
        "CREATE TEMP TRIGGER fail_midway BEFORE INSERT ON main.entries "
        "BEGIN SELECT probe(NEW.id); END"
    )
    batch = [prose("a", "1"), prose("b", "2"), prose("boom", "3"), prose("c", "4")]
    with pytest.raises(StoreError, match="spill not written"):
        store.spill(batch)
    # The rows before the failure were really inserted, then rolled back.
    assert seen == ["a", "b", "boom"]
    assert not store._db.in_transaction
    assert row_count(db_path) == 1
    assert all(store.get(it.ref) is None for it in batch)
    assert not store.has_id("a") and not store.has_id("b")
    # The store is still usable: no transaction was left open.
    store._db.execute("DROP TRIGGER temp.fail_midway")
    assert store.spill(batch) == [it.ref for it in batch]
    assert row_count(db_path) == 5


@pytest.mark.parametrize("action", ["ABORT", "FAIL", "ROLLBACK"])
def test_a_trigger_failure_midway_leaves_nothing_and_names_the_cause(
    store: SqliteStore, db_path: Path, action: str
) -> None:
    store.spill([prose("kept", "before")])
    store._db.execute(
        "CREATE TEMP TRIGGER fail_midway BEFORE INSERT ON main.entries "
        f"WHEN NEW.id = 'boom' BEGIN SELECT RAISE({action}, 'injected failure'); END"
    )
    batch = [prose("a", "1"), prose("b", "2"), prose("boom", "3"), prose("c", "4")]
    with pytest.raises(StoreError, match="injected failure"):
        store.spill(batch)
    assert not store._db.in_transaction
    assert row_count(db_path) == 1
    assert [store.get(it.ref) for it in batch] == [None] * 4


# ---------------------------------------------------------------- tampering


def _tampered_copy(src: Path, dst: Path, *sql: tuple[str, Any]) -> None:
    copy_db(src, dst)
    db = sqlite3.connect(dst, isolation_level=None)
    try:
        db.execute("DROP TRIGGER entries_no_update")
        for statement, params in sql:
            db.execute(statement, params)
    finally:
        db.close()


def test_tampered_body_is_corrupt_and_never_returned(
    store: SqliteStore, db_path: Path, tmp_path: Path
) -> None:
    only = decision("only", "a")
    old, new = decision("twice", "a"), decision("twice", "a & b")
    refs = store.spill([only, old, new])
    bad = tmp_path / "tampered.db"
    flipped = only.raw.replace('"a"', '"b"').encode()
    assert flipped != only.raw.encode()
    _tampered_copy(
        db_path,
        bad,
        ("UPDATE entries SET body = ? WHERE ref = ?", (flipped, only.ref)),
        (
            "UPDATE entries SET body = ? WHERE ref = ?",
            (decision("twice", "z").raw.encode(), new.ref),
        ),
    )
    for readonly in (True, False):
        t = SqliteStore(bad, readonly=readonly)
        try:
            for ref in (only.ref, new.ref):
                assert t.lookup(ref).problem == "corrupt"
                assert t.lookup(ref).item is None
                assert t.get(ref) is None
                assert ref not in t
            assert not t.has_id("only")
            assert t.latest("only") is None
            assert t.versions("twice") == [old]
            assert t.latest("twice") == old
            assert list(t.items()) == [old]
        finally:
            t.close()
    # The original file is untouched.
    assert [store.get(r) for r in refs] == [only, old, new]


def test_a_spill_onto_a_tampered_row_is_refused_not_acknowledged(
    store: SqliteStore, db_path: Path, tmp_path: Path
) -> None:
    """The row of a ref already stored keeps its bytes (the store is append-only): where
    they are not the item's, the spill is refused, and nothing of it is written."""
    only, other = decision("only", "a"), prose("p", "new")
    store.spill([only])
    bad = tmp_path / "tampered.db"
    flipped = only.raw.replace('"a"', '"b"').encode()
    _tampered_copy(db_path, bad, ("UPDATE entries SET body = ? WHERE ref = ?", (flipped, only.ref)))
    t = SqliteStore(bad)
    try:
        with pytest.raises(StoreError, match=only.ref):
            t.spill([other, only])
        assert other.ref not in t and row_count(bad) == 1
        assert t.spill([other]) == [other.ref]  # a spill of refs not stored is written
    finally:
        t.close()


def test_row_with_a_wrong_ref_is_corrupt(store: SqliteStore, db_path: Path) -> None:
    real = prose("p", "real")
    store.spill([real])
    forged_ref = prose("p", "claimed").ref
    db = sqlite3.connect(db_path, isolation_level=None)
    try:
        db.execute(
            "INSERT INTO entries(ref, id, body) VALUES (?, ?, ?)",
            (forged_ref, "forged", real.raw.encode()),
        )
    finally:
        db.close()
    assert store.lookup(forged_ref).problem == "corrupt"
    assert store.get(forged_ref) is None
    assert not store.has_id("forged")
    assert store.versions("p") == [real]


def test_row_filed_under_another_id_does_not_count_for_that_id(
    store: SqliteStore, db_path: Path
) -> None:
    other = prose("other", "text")
    db = sqlite3.connect(db_path, isolation_level=None)
    try:
        db.execute(
            "INSERT INTO entries(ref, id, body) VALUES (?, ?, ?)",
            (other.ref, "victim", other.raw.encode()),
        )
    finally:
        db.close()
    # The bytes match the ref, so the item itself is fine ...
    assert store.get(other.ref) == other
    # ... but it is not a record of "victim".
    assert not store.has_id("victim")
    assert store.versions("victim") == []


@pytest.mark.parametrize("body", [b"not json", b'{"id": "x"}', b"\xff\xfe", b"[1, 2]"])
def test_bytes_that_hash_right_but_are_no_item_are_unreadable(
    store: SqliteStore, db_path: Path, body: bytes
) -> None:
    ref = content_ref(body)
    db = sqlite3.connect(db_path, isolation_level=None)
    try:
        db.execute("INSERT INTO entries(ref, id, body) VALUES (?, 'x', ?)", (ref, body))
    finally:
        db.close()
    assert store.lookup(ref).problem == "unreadable"
    assert store.get(ref) is None
    assert not store.has_id("x")


# ---------------------------------------------------------------- read-only


def test_readonly_store_refuses_spills(store: SqliteStore, db_path: Path) -> None:
    store.spill([prose("p", "alpha")])
    ro = SqliteStore(db_path, readonly=True)
    try:
        with pytest.raises(StoreError, match="read-only"):
            ro.spill([prose("q", "beta")])
        # Even below the store's own check, the connection cannot write.
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            ro._db.execute("INSERT INTO entries(ref, id, body) VALUES ('r', 'q', X'00')")
        assert ro.has_id("p")
        assert not ro.has_id("q")
    finally:
        ro.close()
    assert row_count(db_path) == 1


def test_readonly_open_of_a_missing_store_fails_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    with pytest.raises(StoreError, match="does not exist"):
        SqliteStore(path, readonly=True)
    assert list(tmp_path.iterdir()) == []


def test_open_of_a_file_that_is_not_a_store_fails(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a SQLite database" * 100)
    for readonly in (True, False):
        with pytest.raises(StoreError, match="not a SQLite file"):
            SqliteStore(junk, readonly=readonly)
    assert junk.read_bytes() == b"this is not a SQLite database" * 100


@pytest.mark.parametrize("dirname", ["with#hash", "with?query", "with%41percent", "with space"])
def test_readonly_open_works_for_paths_with_uri_characters(tmp_path: Path, dirname: str) -> None:
    d = tmp_path / dirname
    d.mkdir()
    it = prose("p", "alpha")
    s = SqliteStore(d / "store.db")
    s.spill([it])
    s.close()
    before = set(tmp_path.rglob("*"))
    ro = SqliteStore(d / "store.db", readonly=True)
    try:
        assert ro.get(it.ref) == it
        assert ro.readonly
    finally:
        ro.close()
    # Opening read-only created no stray file: at most the WAL's own sidecars.
    created = set(tmp_path.rglob("*")) - before
    assert created <= {d / "store.db-wal", d / "store.db-shm"}


def test_open_store_defaults(tmp_path: Path) -> None:
    assert isinstance(open_store(None), MemoryStore)
    path = tmp_path / "s.db"
    SqliteStore(path).close()
    s = open_store(path)
    try:
        assert isinstance(s, SqliteStore)
        assert s.readonly
        with pytest.raises(StoreError):
            s.spill([prose("p", "x")])
    finally:
        s.close()


# ---------------------------------------------------------------- layering


class RefusingStore(MemoryStore):
    """A base that fails the test if anything is ever written to it."""

    def __init__(self, items: list[Item]) -> None:
        super().__init__()
        super()._insert([(it.ref, it.id, it.raw.encode()) for it in items])

    def _insert(self, rows: Any) -> None:
        raise AssertionError("LayeredStore wrote to its base")


def test_layered_store_never_writes_to_its_base() -> None:
    old, mid = decision("d", "a"), decision("d", "a & b")
    base = RefusingStore([old, prose("p", "base")])
    layered = LayeredStore(base)
    new = decision("d", "a & b & c")
    refs = layered.spill([mid, new, old, prose("q", "top")])
    assert refs == [mid.ref, new.ref, old.ref, prose("q", "top").ref]
    assert layered.versions("d") == [old, mid, new]
    assert layered.latest("d") == new
    assert layered.has_id("p") and layered.has_id("q")
    assert len(layered) == 5
    assert base.versions("d") == [old]
    assert not base.has_id("q")
    assert len(base) == 2


def test_layered_store_over_a_sqlite_file_leaves_the_file_alone(
    store: SqliteStore, db_path: Path
) -> None:
    base_item = prose("p", "base")
    store.spill([base_item])
    layered = LayeredStore(store)
    top = prose("q", "top")
    layered.spill([top, prose("p", "newer")])
    assert layered.get(top.ref) == top
    assert layered.get(base_item.ref) == base_item
    assert [it.text for it in layered.versions("p")] == ["base", "newer"]
    assert store.get(top.ref) is None
    assert row_count(db_path) == 1


def test_layered_store_over_a_readonly_base_accepts_spills(
    store: SqliteStore, db_path: Path
) -> None:
    store.spill([prose("p", "base")])
    ro = SqliteStore(db_path, readonly=True)
    try:
        layered = LayeredStore(ro)
        top = prose("q", "top")
        assert layered.spill([top]) == [top.ref]
        assert layered.get(top.ref) == top
        assert layered.has_id("p")
    finally:
        ro.close()
    assert row_count(db_path) == 1


def test_layered_store_without_a_base() -> None:
    layered = LayeredStore(None)
    it = prose("p", "x")
    layered.spill([it])
    assert layered.get(it.ref) == it
    assert layered.versions("p") == [it]
    assert len(layered) == 1


# ---------------------------------------------------------------- memory vs sqlite

_IDS = ["a", "b", "c"]
_item_strategy = st.builds(
    lambda iid, text, commit: decision(iid, text) if commit else prose(iid, text),
    st.sampled_from(_IDS),
    st.sampled_from(["x", "y", "x & y", "!x", "z"]),
    st.booleans(),
)


def _observe(store: Store, refs: list[str]) -> tuple[object, ...]:
    return (
        len(store),
        list(store.items()),
        [store.lookup(r) for r in refs],
        {i: store.versions(i) for i in _IDS},
        {i: store.latest(i) for i in _IDS},
        {i: store.has_id(i) for i in _IDS},
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(_item_strategy, min_size=0, max_size=4), min_size=0, max_size=5))
def test_memory_store_behaves_like_sqlite_store(spills: list[list[Item]]) -> None:
    mem = MemoryStore()
    with tempfile.TemporaryDirectory() as d:
        sql = SqliteStore(Path(d) / "store.db")
        try:
            refs: list[str] = []
            for batch in spills:
                got = mem.spill(batch)
                assert sql.spill(batch) == got
                refs.extend(got)
                assert _observe(mem, refs) == _observe(sql, refs)
            # Once more after a reopen: the file holds what memory holds.
            sql.close()
            sql = SqliteStore(Path(d) / "store.db", readonly=True)
            assert _observe(mem, refs) == _observe(sql, refs)
            assert len(mem) == len({r for batch in spills for r in (it.ref for it in batch)})
        finally:
            sql.close()


# -- stubs of stubs ----------------------------------------------------------------------------


def test_a_stub_of_a_stub_resolves_to_the_item_and_is_no_version_of_it() -> None:
    from verifier import stub_for

    failed = {"id": "o1", "kind": "observation", "shows": "!t", "modality": "failed"}
    first = stub_for(failed)
    second = stub_for(first)
    store = MemoryStore()
    store.spill([failed, first])
    resolved = store.resolve(second["ref"], "o1")
    assert resolved is not None and resolved.as_json() == failed
    assert store.resolve(second["ref"], "other") is None  # a stub of another id
    assert [v.kind for v in store.versions("o1")] == ["observation"]  # the stub is no version
    assert store.resolve(stub_for(stub_for(second))["ref"], "o1") is None  # a link missing


@pytest.mark.parametrize(
    ("dropped", "code"),
    [
        ({"id": "c1", "kind": "commitment", "type": "decision"}, "CF001"),
        ({"id": "c1", "kind": "observation", "shows": "!t", "modality": "failed"}, "WR008"),
        ({"id": "c1", "kind": "prose"}, "CF004"),
    ],
)
def test_a_stored_stub_is_a_store_record_of_its_id(dropped: dict[str, Any], code: str) -> None:
    """CF001's (and WR008's, CF004's) record is a store entry with that id: a stored stub
    of it is one, even when what it stands for is not stored (it is still no version)."""
    import json

    from verifier import audit_trace, parse_trace_text

    keeper = {"id": "k", "kind": "commitment", "type": "decision", "rationale": ["c1"]}
    stub = {"id": "c1", "kind": "stub", "ref": "sha256:" + "0" * 64}

    def found(spilled: list[dict[str, Any]]) -> list[str]:
        events = [
            {"event": "header", "format": "ctxproof-trace/1"},
            {"event": "append", "items": [dropped, keeper]},
            {"event": "spill", "items": spilled},
            {"event": "rewrite", "window": [keeper]},
        ]
        text = "".join(json.dumps(e) + "\n" for e in events)
        return [f.code for f in audit_trace(parse_trace_text(text, "t")).findings]

    assert code in found([keeper])  # no record of c1: the rule fires
    assert found([stub]) == []
    store = MemoryStore()
    store.spill([stub])
    assert store.has_id("c1") and store.versions("c1") == []


def test_a_trace_that_stubs_a_stub_reads_the_item_behind_both(tmp_path: Path) -> None:
    """A failed run spilled and stubbed, then its stub spilled and stubbed again: the
    window still holds the failed run (no WR004, no WR008), and its re-run is no CP003."""
    import json

    from verifier import audit_trace, load_trace, stub_for

    failed = {"id": "o1", "kind": "observation", "shows": "!t", "modality": "failed",
              "source": "make test", "exit_code": 1}  # fmt: skip
    prose = {"id": "p1", "kind": "prose"}
    first = stub_for(failed)
    events = [
        {"event": "header", "format": "ctxproof-trace/1"},
        {"event": "append", "items": [failed, prose]},
        {"event": "spill", "items": [failed]},
        {"event": "rewrite", "window": [first, prose]},
        {"event": "spill", "items": [first]},
        {"event": "rewrite", "window": [stub_for(first), prose]},
        {"event": "append", "items": [
            {"id": "o2", "kind": "observation", "shows": "t", "modality": "verified",
             "source": "make test"}]},
    ]  # fmt: skip
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), "utf-8")
    report = audit_trace(load_trace(path))
    assert [f.code for f in report.findings] == []
    assert [r.verdict for r in report.rewrites] == ["accept", "accept"]


def test_a_policy_that_spills_a_stub_has_it_written() -> None:
    from verifier import run_policy, stub_for

    failed = {"id": "o1", "kind": "observation", "shows": "!t", "modality": "failed"}
    window = [stub_for(failed), {"id": "p1", "kind": "prose"}]

    def spill_all(w: list[dict[str, Any]], budget: int) -> dict[str, Any]:
        return {"window": [stub_for(it) for it in w], "spill": [it["id"] for it in w]}

    res = run_policy(spill_all, window, 10)
    assert [it.id for it in res.spilled] == ["o1", "p1"]  # the stub is written too
