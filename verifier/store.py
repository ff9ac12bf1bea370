"""The durable store (docs/formats.md, "The store"): append-only, content-addressed spilled items.

Entries are keyed by ``ref`` = sha256 of the item's canonical JSON. Every read
hashes the stored bytes again; an entry whose bytes do not hash to its key is
reported as corrupt and never returned as an item.

Three stores share one interface:

* :class:`SqliteStore` — the embedded durable store: WAL journal,
  ``synchronous=FULL``, one transaction per spill, triggers that refuse UPDATE
  and DELETE. :meth:`Store.spill` returns only after the commit.
* :class:`MemoryStore` — for spills carried inline in a trace.
* :class:`LayeredStore` — a memory layer over a read-only base, so auditing a
  trace never writes to the user's store.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sqlite3
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifier.errors import InputError, StoreError, want_bool, want_path, wrong_type
from verifier.window import Item, content_ref

__all__ = [
    "LayeredStore",
    "Lookup",
    "MemoryStore",
    "SqliteStore",
    "Store",
    "open_store",
    "store_argument",
]


@dataclass(frozen=True, slots=True)
class Lookup:
    """What a read of one ref found: the item, or why there is none."""

    ref: str
    item: Item | None
    problem: str | None = None  # "missing" | "corrupt" | "unreadable"


def _item_from_bytes(ref: str, body: bytes) -> Lookup:
    if content_ref(body) != ref:
        return Lookup(ref, None, "corrupt")
    from verifier.io import item_from_json

    try:
        obj = json.loads(body.decode("utf-8"))
        item = item_from_json(obj)
    except (ValueError, InputError, RecursionError, TypeError):
        return Lookup(ref, None, "unreadable")
    if item.raw.encode("utf-8") != body:  # hashes, but is not the item's canonical JSON
        return Lookup(ref, None, "unreadable")
    return Lookup(ref, item)


def _spilled(items: Sequence[Item | Mapping[str, Any]], func: str) -> Sequence[Item]:
    """Items given to :meth:`Store.spill`, plain dicts validated as items."""
    if isinstance(items, list | tuple) and all(type(it) is Item for it in items):
        return items
    from verifier.io import items_argument

    return items_argument(items, func=func, arg="items", unique=False)


def store_argument(value: object, *, func: str, optional: bool = True) -> Store | None:
    """The ``store`` given to the API function ``func``: a :class:`Store` (or None when
    ``optional``).

    Raises:
        TypeError: anything else, with the way to make a store of it.
    """
    if isinstance(value, Store) or (value is None and optional):
        return value
    if isinstance(value, Mapping | list | tuple | set):
        fix = "put the items in a store: store = MemoryStore(); store.spill(items)"
    elif isinstance(value, str | os.PathLike):
        fix = "open the file with SqliteStore(path)"
    else:
        fix = ""
    expected = "a Store (MemoryStore() or SqliteStore(path))" + (" or None" if optional else "")
    raise wrong_type(func, "store", value, expected, fix)


STUB_DEPTH = 64
"""Stubs of stubs followed at most when a stub is resolved (:meth:`Store.resolve`)."""


class Store(ABC):
    """Append-only, content-addressed record of spilled items."""

    @abstractmethod
    def _body(self, ref: str) -> bytes | None: ...

    def _name(self, method: str) -> str:
        """How an argument error names the method: ``MemoryStore.spill``."""
        return f"{type(self).__name__}.{method}"

    @abstractmethod
    def _refs_for_id(self, item_id: str) -> list[str]: ...

    @abstractmethod
    def _all_refs(self) -> list[str]: ...

    @abstractmethod
    def _insert(self, rows: Sequence[tuple[str, str, bytes]]) -> None: ...

    def spill(self, items: Sequence[Item | Mapping[str, Any]]) -> list[str]:
        """Write items (Items or plain item dicts) in one transaction; return their refs
        once committed.

        Raises:
            TypeError: ``items`` is not a list of item dicts or Items.
            InputError: an item dict is not a valid item.
            StoreError: the store cannot be written.
        """
        items = _spilled(items, self._name("spill"))
        rows = [(it.ref, it.id, it.raw.encode("utf-8")) for it in items]
        self._insert(rows)
        return [r for r, _, _ in rows]

    def lookup(self, ref: str) -> Lookup:
        if not isinstance(ref, str):
            raise wrong_type(self._name("lookup"), "ref", ref, "a string")
        body = self._body(ref)
        if body is None:
            return Lookup(ref, None, "missing")
        return _item_from_bytes(ref, body)

    def get(self, ref: str) -> Item | None:
        """The item stored under ref, verified; None if missing or corrupt."""
        if not isinstance(ref, str):
            raise wrong_type(self._name("get"), "ref", ref, "a string")
        return self.lookup(ref).item

    def resolve(self, ref: str, item_id: str | None = None) -> Item | None:
        """What a stub with this ref (and id) stands for: the item stored under ref, or,
        when that is itself a stub (a stub spilled, then stubbed again), what that one
        stands for, and so on; None when a link is missing, corrupt or of another id."""
        for _ in range(STUB_DEPTH):
            item = self.get(ref)
            if item is None or (item_id is not None and item.id != item_id):
                return None
            if item.kind != "stub" or item.stub_ref is None:
                return item
            ref, item_id = item.stub_ref, item.id
        return None

    def versions(self, item_id: str) -> list[Item]:
        """Every verified stored version of the item with this id, oldest first (a stored
        stub is no version: it stands for one)."""
        if not isinstance(item_id, str):
            raise wrong_type(self._name("versions"), "item_id", item_id, "a string")
        out: list[Item] = []
        for ref in self._refs_for_id(item_id):
            item = self.get(ref)
            if item is not None and item.id == item_id and item.kind != "stub":
                out.append(item)
        return out

    def has_id(self, item_id: str) -> bool:
        """Whether the store holds a verified record of an item with this id: an entry with
        that id (CF001's and WR008's "store record"), a stored stub of it included, though
        a stored stub is no version (:meth:`versions`)."""
        if not isinstance(item_id, str):
            raise wrong_type(self._name("has_id"), "item_id", item_id, "a string")
        for ref in self._refs_for_id(item_id):
            item = self.get(ref)
            if item is not None and item.id == item_id:
                return True
        return False

    def latest(self, item_id: str) -> Item | None:
        """The latest verified stored version of the item with this id, or None."""
        if not isinstance(item_id, str):
            raise wrong_type(self._name("latest"), "item_id", item_id, "a string")
        found = self.versions(item_id)
        return found[-1] if found else None

    def items(self) -> Iterator[Item]:
        """Every verified stored item, in spill order."""
        for ref in self._all_refs():
            item = self.get(ref)
            if item is not None:
                yield item

    def entries_since(self, count: int) -> list[Item]:
        """The verified items after the first ``count`` of :meth:`items` (spill order).

        Entries are only ever added, so a reader that remembers how many it has
        seen gets exactly the new ones.
        """
        return list(itertools.islice(self.items(), count, None))

    def __contains__(self, ref: object) -> bool:
        return isinstance(ref, str) and self.get(ref) is not None

    def __len__(self) -> int:
        return len(self._all_refs())

    def close(self) -> None:  # noqa: B027 - a no-op unless the store holds a resource
        """Release resources (nothing to do for memory stores)."""


class MemoryStore(Store):
    """A store held in memory, for spills carried inline in a trace."""

    def __init__(self) -> None:
        self._bodies: dict[str, bytes] = {}
        self._ids: dict[str, list[str]] = {}
        self._verified: dict[str, Lookup] = {}

    def lookup(self, ref: str) -> Lookup:
        # bytes held in this process cannot change under us: verify each entry once
        hit = self._verified.get(ref)
        if hit is None:
            hit = super().lookup(ref)
            if hit.problem != "missing":
                self._verified[ref] = hit
        return hit

    def _body(self, ref: str) -> bytes | None:
        return self._bodies.get(ref)

    def _refs_for_id(self, item_id: str) -> list[str]:
        return list(self._ids.get(item_id, ()))

    def _all_refs(self) -> list[str]:
        return list(self._bodies)

    def _insert(self, rows: Sequence[tuple[str, str, bytes]]) -> None:
        for ref, iid, body in rows:
            if ref not in self._bodies:
                self._bodies[ref] = body
                self._ids.setdefault(iid, []).append(ref)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq  INTEGER PRIMARY KEY AUTOINCREMENT,
    ref  TEXT NOT NULL UNIQUE,
    id   TEXT NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_id ON entries(id);
CREATE TRIGGER IF NOT EXISTS entries_no_update BEFORE UPDATE ON entries
BEGIN SELECT RAISE(ABORT, 'the ctxproof store is append-only'); END;
CREATE TRIGGER IF NOT EXISTS entries_no_delete BEFORE DELETE ON entries
BEGIN SELECT RAISE(ABORT, 'the ctxproof store is append-only'); END;
CREATE TRIGGER IF NOT EXISTS entries_no_replace BEFORE INSERT ON entries
WHEN EXISTS (SELECT 1 FROM entries WHERE ref = NEW.ref OR seq = NEW.seq)
BEGIN SELECT RAISE(IGNORE); END;
"""


_SQLITE_MAGIC = b"SQLite format 3\x00"
_COLUMNS = {"seq", "ref", "id", "body"}
# What a read of the file can raise besides sqlite3.Error: text columns are decoded
# as UTF-8 by the driver, and a damaged page can hold any bytes.
_READ_ERRORS = (sqlite3.Error, UnicodeDecodeError)


def _file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _what_is_wrong(exc: BaseException, *, writing: bool = False) -> str:
    """What a SQLite error says about the store file, in words, with the remedy."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    # SQLite quotes damaged schema text in its messages: show it escaped, and short
    msg = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(exc)[:200])
    if isinstance(exc, UnicodeDecodeError) or "Could not decode" in msg:
        return "is corrupt: it holds text that is not valid UTF-8; restore it from a backup"
    if name.startswith("SQLITE_NOTADB") or "file is not a database" in msg:
        return (
            "is not a SQLite database, or its header is damaged (wrong file type?);"
            " give the path of a ctxproof store"
        )
    if name.startswith("SQLITE_CORRUPT") or "malformed" in msg:
        return f"is corrupt ({msg}); restore it from a backup"
    if name.startswith("SQLITE_FULL"):
        return f"cannot be written ({msg}); free some space"
    if name.startswith("SQLITE_CANTOPEN") and writing:
        return (
            f"cannot be opened for writing ({msg}); check that its folder exists and can be written"
        )
    if name.startswith("SQLITE_CANTOPEN"):
        return f"cannot be opened ({msg}); check that it and its folder can be read"
    if name.startswith("SQLITE_IOERR"):
        return f"cannot be read ({msg}); check the disk"
    if name.startswith("SQLITE_READONLY") and writing:
        return f"cannot be written ({msg}); check that it and its folder can be written"
    if name.startswith("SQLITE_READONLY"):
        return f"cannot be read here ({msg}); copy it to a writable folder"
    return f"cannot be used ({msg})"


class SqliteStore(Store):
    """The embedded durable store: one SQLite file, WAL, ``synchronous=FULL``.

    Opened ``readonly``, the file is never written and no ``-wal``/``-shm`` file
    is left beside it: a store at rest (no write-ahead log beside it) or in a
    folder that cannot be written is opened ``immutable``, any other read-only
    (``mode=ro``). Reading commands expect no other process to write the store
    while they run. Every SQLite error, at open or at any later read, becomes a
    :class:`StoreError` that names the file once and says what is wrong.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        want_path(path, func="SqliteStore", arg="path")
        want_bool(readonly, func="SqliteStore", arg="readonly")
        self.path = Path(path)
        self.readonly = readonly
        existed = self._check_file()
        db: sqlite3.Connection | None = None
        try:
            if readonly:
                db = self._connect_readonly()
            else:
                db = sqlite3.connect(str(self.path), isolation_level=None)
                if existed:
                    self._check_schema(db, allow_empty=True)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=FULL")
                db.executescript(_SCHEMA)
            self._check_schema(db, allow_empty=False)
            db.execute("SELECT count(*) FROM entries").fetchone()
        except BaseException as exc:
            if db is not None:
                db.close()
            if not existed and not readonly:  # a store this call created: leave nothing
                for suffix in ("", "-wal", "-shm", "-journal"):
                    with contextlib.suppress(OSError):
                        Path(f"{self.path}{suffix}").unlink()
            if isinstance(exc, _READ_ERRORS):
                raise self._error(exc, writing=not readonly) from exc
            raise
        self._db = db
        self._verified: dict[str, Lookup] = {}
        """Read-only: each entry verified once (nothing in this process writes the file,
        and reading commands expect no other process to write it while they run)."""

    def _error(self, exc: BaseException, *, writing: bool = False) -> StoreError:
        return StoreError(f"{self.path}: {_what_is_wrong(exc, writing=writing)}")

    def _check_file(self) -> bool:
        """Refuse what is not a regular SQLite file before SQLite opens it.

        A FIFO would block the open forever. Returns whether the file exists.
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self.readonly:
                raise StoreError(f"{self.path}: store does not exist") from None
            return False
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise StoreError(f"{self.path}: cannot be read ({reason}); check the path") from None
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(
                f"{self.path}: is {_file_type(st.st_mode)}, not a store file;"
                " give the path of a ctxproof store (a SQLite file)"
            )
        if st.st_size > 0:
            try:
                with open(self.path, "rb") as fh:
                    head = fh.read(len(_SQLITE_MAGIC))
            except OSError as exc:
                raise StoreError(
                    f"{self.path}: cannot be read ({exc.strerror or exc}); check its permissions"
                ) from None
            if head != _SQLITE_MAGIC:
                raise StoreError(
                    f"{self.path}: is not a SQLite file (wrong file type);"
                    " give the path of a ctxproof store"
                )
        return True

    def _connect_readonly(self) -> sqlite3.Connection:
        # as_uri() percent-encodes the path: a raw "#", "?" or "%" would
        # otherwise cut the URI and open (or create) some other file.
        uri = self.path.resolve().as_uri()
        wal = Path(f"{self.path}-wal")
        at_rest = not wal.exists() and not Path(f"{self.path}-journal").exists()
        writable_folder = os.access(self.path.parent, os.W_OK)
        if at_rest or not writable_folder:
            # Nothing to read beside the main file, or no place for SQLite's shared
            # memory: immutable reads only the file and creates nothing. A log that
            # holds commits is read through mode=ro when its index (-shm) is there.
            if at_rest or not wal.exists() or wal.stat().st_size == 0:
                return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None)
            db = None
            try:
                db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return db
            except sqlite3.Error:
                if db is not None:
                    db.close()
                raise StoreError(
                    f"{self.path}: has commits in its write-ahead log ({wal.name}) that cannot be"
                    " read from a read-only folder; open it once where it can be written"
                    " (any ctxproof command that writes it), or copy the folder"
                ) from None
        return sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)

    def _check_schema(self, db: sqlite3.Connection, *, allow_empty: bool) -> None:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if allow_empty and not tables:
            return
        columns = {r[1] for r in db.execute("PRAGMA table_info(entries)")}
        if not columns >= _COLUMNS:
            raise StoreError(
                f"{self.path}: is a SQLite database but not a ctxproof store (it has no"
                " table 'entries' of seq, ref, id and body); give the path of a ctxproof store"
            )

    def _rows(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        try:
            return list(self._db.execute(sql, params).fetchall())
        except UnicodeEncodeError:
            return []  # a key that is not UTF-8 text (a lone surrogate) is never stored
        except _READ_ERRORS as exc:
            raise self._error(exc) from exc

    def lookup(self, ref: str) -> Lookup:
        if not self.readonly:
            return super().lookup(ref)
        hit = self._verified.get(ref)
        if hit is None:
            hit = super().lookup(ref)
            if hit.problem != "missing":
                self._verified[ref] = hit
        return hit

    def _body(self, ref: str) -> bytes | None:
        rows = self._rows("SELECT body FROM entries WHERE ref = ?", (ref,))
        if not rows:
            return None
        body = rows[0][0]
        if isinstance(body, str):  # a row written as TEXT by another program
            return body.encode("utf-8", "surrogatepass")
        return bytes(body) if isinstance(body, bytes | memoryview) else str(body).encode()

    def _refs_for_id(self, item_id: str) -> list[str]:
        rows = self._rows("SELECT ref FROM entries WHERE id = ? ORDER BY seq", (item_id,))
        return [r[0] for r in rows if isinstance(r[0], str)]

    def _all_refs(self) -> list[str]:
        rows = self._rows("SELECT ref FROM entries ORDER BY seq")
        return [r[0] for r in rows if isinstance(r[0], str)]

    def _insert(self, rows: Sequence[tuple[str, str, bytes]]) -> None:
        if self.readonly:
            raise StoreError(f"{self.path}: store is open read-only")
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                done = self._db.executemany(
                    "INSERT OR IGNORE INTO entries(ref, id, body) VALUES (?, ?, ?)", rows
                )
                if done.rowcount != len(rows):
                    self._check_present(rows)  # a ref stored before: the same bytes?
                self._db.execute("COMMIT")
            except BaseException:
                # SQLite may already have rolled back (RAISE(ROLLBACK), SQLITE_FULL,
                # I/O errors); a second ROLLBACK would fail and hide the real cause.
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: spill not written: {exc}") from exc

    def _check_present(self, rows: Sequence[tuple[str, str, bytes]]) -> None:
        """Refuse a spill whose ref the store holds with other bytes (a row corrupted on
        disk, or written by another program): the insert left that row as it was, so the
        item would not be there to read back."""
        for ref, item_id, body in rows:
            stored = self._body(ref)
            if stored is not None and stored != body:
                raise StoreError(
                    f"{self.path}: spill not written: entry {ref} (item {item_id!r}) holds"
                    " other bytes than the item, which do not hash to its ref; the store is"
                    " corrupt: spill to another store, or restore this one from a copy"
                )

    def integrity_check(self) -> str:
        rows = self._rows("PRAGMA integrity_check")
        return str(rows[0][0]) if rows else "no answer"

    def close(self) -> None:
        self._db.close()


class LayeredStore(Store):
    """A memory layer over a base store that is only read.

    The base does not change while the layer is in use, so its verified items
    are read once; the layer's own items are added as they are spilled.
    """

    def __init__(self, base: Store | None = None) -> None:
        self.base = base
        self.top = MemoryStore()
        self._items: list[Item] | None = None

    def items(self) -> Iterator[Item]:
        return iter(self._loaded())

    def _loaded(self) -> list[Item]:
        if self._items is None:
            self._items = list(super().items())
        return self._items

    def entries_since(self, count: int) -> list[Item]:
        return self._loaded()[count:]

    def spill(self, items: Sequence[Item | Mapping[str, Any]]) -> list[str]:
        items = _spilled(items, self._name("spill"))
        fresh = [it for it in items if self._body(it.ref) is None]
        refs = super().spill(items)
        if self._items is not None:
            seen: set[str] = set()
            for it in fresh:
                if it.ref not in seen:
                    seen.add(it.ref)
                    self._items.append(it)
        return refs

    def lookup(self, ref: str) -> Lookup:
        if ref in self.top._bodies:
            return self.top.lookup(ref)
        if self.base is not None and isinstance(ref, str):
            return self.base.lookup(ref)  # what the base verified once, it answers from there
        return super().lookup(ref)

    def _body(self, ref: str) -> bytes | None:
        body = self.top._body(ref)
        if body is None and self.base is not None:
            body = self.base._body(ref)
        return body

    def _refs_for_id(self, item_id: str) -> list[str]:
        base = self.base._refs_for_id(item_id) if self.base is not None else []
        return base + [r for r in self.top._refs_for_id(item_id) if r not in base]

    def _all_refs(self) -> list[str]:
        base = self.base._all_refs() if self.base is not None else []
        seen = set(base)
        return base + [r for r in self.top._all_refs() if r not in seen]

    def _insert(self, rows: Sequence[tuple[str, str, bytes]]) -> None:
        self.top._insert(rows)


def open_store(path: str | Path | None, *, readonly: bool = True) -> Store:
    """Open the SQLite store at path (read-only by default), or an empty memory store."""
    if path is None:
        return MemoryStore()
    return SqliteStore(path, readonly=readonly)
