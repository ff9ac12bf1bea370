"""The durable store (SPEC §2): append-only, content-addressed spilled items.

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

import json
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from verifier.errors import InputError, StoreError
from verifier.window import Item, content_ref

__all__ = ["LayeredStore", "Lookup", "MemoryStore", "SqliteStore", "Store", "open_store"]


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


class Store(ABC):
    """Append-only, content-addressed record of spilled items."""

    @abstractmethod
    def _body(self, ref: str) -> bytes | None: ...

    @abstractmethod
    def _refs_for_id(self, item_id: str) -> list[str]: ...

    @abstractmethod
    def _all_refs(self) -> list[str]: ...

    @abstractmethod
    def _insert(self, rows: Sequence[tuple[str, str, bytes]]) -> None: ...

    def spill(self, items: Sequence[Item]) -> list[str]:
        """Write items in one transaction; return their refs once committed."""
        rows = [(it.ref, it.id, it.raw.encode("utf-8")) for it in items]
        self._insert(rows)
        return [r for r, _, _ in rows]

    def lookup(self, ref: str) -> Lookup:
        body = self._body(ref)
        if body is None:
            return Lookup(ref, None, "missing")
        return _item_from_bytes(ref, body)

    def get(self, ref: str) -> Item | None:
        """The item stored under ref, verified; None if missing or corrupt."""
        return self.lookup(ref).item

    def versions(self, item_id: str) -> list[Item]:
        """Every verified stored version of the item with this id, oldest first."""
        out: list[Item] = []
        for ref in self._refs_for_id(item_id):
            item = self.get(ref)
            if item is not None and item.id == item_id:
                out.append(item)
        return out

    def has_id(self, item_id: str) -> bool:
        """Whether the store holds a verified record of an item with this id."""
        return bool(self.versions(item_id))

    def latest(self, item_id: str) -> Item | None:
        found = self.versions(item_id)
        return found[-1] if found else None

    def items(self) -> Iterator[Item]:
        """Every verified stored item, in spill order."""
        for ref in self._all_refs():
            item = self.get(ref)
            if item is not None:
                yield item

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


class SqliteStore(Store):
    """The embedded durable store: one SQLite file, WAL, ``synchronous=FULL``."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        try:
            if readonly:
                if not self.path.exists():
                    raise StoreError(f"{self.path}: store does not exist")
                # as_uri() percent-encodes the path: a raw "#", "?" or "%" would
                # otherwise cut the URI and open (or create) some other file.
                uri = f"{self.path.resolve().as_uri()}?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, isolation_level=None)
            else:
                self._db = sqlite3.connect(str(self.path), isolation_level=None)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
                self._db.executescript(_SCHEMA)
            self._db.execute("SELECT count(*) FROM entries").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open the store: {exc}") from exc

    def _body(self, ref: str) -> bytes | None:
        row = self._db.execute("SELECT body FROM entries WHERE ref = ?", (ref,)).fetchone()
        if row is None:
            return None
        body = row[0]
        if isinstance(body, str):  # a row written as TEXT by another program
            return body.encode("utf-8", "surrogatepass")
        return bytes(body) if isinstance(body, bytes | memoryview) else str(body).encode()

    def _refs_for_id(self, item_id: str) -> list[str]:
        rows = self._db.execute("SELECT ref FROM entries WHERE id = ? ORDER BY seq", (item_id,))
        return [r[0] for r in rows]

    def _all_refs(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT ref FROM entries ORDER BY seq")]

    def _insert(self, rows: Sequence[tuple[str, str, bytes]]) -> None:
        if self.readonly:
            raise StoreError(f"{self.path}: store is open read-only")
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR IGNORE INTO entries(ref, id, body) VALUES (?, ?, ?)", rows
                )
                self._db.execute("COMMIT")
            except BaseException:
                # SQLite may already have rolled back (RAISE(ROLLBACK), SQLITE_FULL,
                # I/O errors); a second ROLLBACK would fail and hide the real cause.
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: spill not written: {exc}") from exc

    def integrity_check(self) -> str:
        row = self._db.execute("PRAGMA integrity_check").fetchone()
        return str(row[0])

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
        if self._items is None:
            self._items = list(super().items())
        return iter(self._items)

    def spill(self, items: Sequence[Item]) -> list[str]:
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
