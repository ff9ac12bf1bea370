"""Opening a store that is damaged, of the wrong type, or in a folder that cannot be written.

Every SQLite error, at open or at a later read, is a StoreError that names the
file once and says what is wrong; the CLI turns it into exit 2. Reading
commands never write the store and leave no ``-wal``/``-shm`` file beside it.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from verifier.cli import main
from verifier.errors import StoreError
from verifier.io import item_from_json
from verifier.store import SqliteStore
from verifier.window import Item

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "models" / "scenarios" / "postgres_spilled_first.jsonl"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def prose(iid: str, text: str) -> Item:
    return item_from_json({"id": iid, "kind": "prose", "text": text})


def make_store(path: Path, n: int = 40, size: int = 3000) -> list[Item]:
    items = [prose(f"p{i}", f"entry {i:04d} " + "x" * size) for i in range(n)]
    s = SqliteStore(path)
    try:
        for it in items:
            s.spill([it])
    finally:
        s.close()
    return items


def listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def assert_store_error_once(err: str, path: Path, words: str) -> None:
    assert "Traceback" not in err and "internal error" not in err
    assert words in err, err
    assert err.count(str(path)) == 1, err  # the path is named once


# ------------------------------------------------------------ damaged stores


def test_a_truncated_store_is_a_store_error_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    make_store(db)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2 + 100])
    with pytest.raises(StoreError, match="is corrupt"):
        s = SqliteStore(db, readonly=True)
        list(s.items())
    code, out, err = run("audit", str(TRACE), "--store", str(db))
    assert (code, out) == (2, "")
    assert_store_error_once(err, db, "is corrupt")


def test_a_damaged_schema_is_a_store_error(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    make_store(db, n=2)
    data = bytearray(db.read_bytes())
    at = data.index(b"CREATE TABLE entries")
    data[at + 7 : at + 12] = b"\x17\x00\xff(("
    db.write_bytes(bytes(data))
    for readonly in (True, False):
        with pytest.raises(StoreError, match="is corrupt") as caught:
            SqliteStore(db, readonly=readonly)
        assert "\x17" not in str(caught.value)  # damaged text is shown escaped
    assert db.read_bytes() == bytes(data)  # a writer refused it without touching it


def test_a_damaged_page_read_late_is_a_store_error(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    make_store(db)
    data = bytearray(db.read_bytes())
    page = 4096
    at = data.index(b"entry 0020 ") // page * page
    data[at : at + 8] = b"\xff" * 8  # the b-tree page header of a page holding bodies
    db.write_bytes(bytes(data))
    code, out, err = run("audit", str(TRACE), "--store", str(db))
    assert (code, out) == (2, "")
    assert_store_error_once(err, db, "is corrupt")


def test_text_that_is_not_utf8_fails_at_the_read_not_as_an_internal_error(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    make_store(db, n=2)
    raw = sqlite3.connect(db, isolation_level=None)
    try:
        raw.execute("INSERT INTO entries(ref, id, body) VALUES (CAST(X'C3FF' AS TEXT), 'x', X'00')")
    finally:
        raw.close()
    s = SqliteStore(db, readonly=True)  # the open itself reads no ref
    try:
        with pytest.raises(StoreError, match="not valid UTF-8"):
            list(s.items())
    finally:
        s.close()
    code, out, err = run("audit", str(TRACE), "--store", str(db))
    assert (code, out) == (2, "")
    assert_store_error_once(err, db, "not valid UTF-8")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_damaged_store_fails_the_same_with_jobs(tmp_path: Path, jobs: str) -> None:
    db = tmp_path / "s.db"
    make_store(db, n=2)
    raw = sqlite3.connect(db, isolation_level=None)
    try:
        raw.execute("INSERT INTO entries(ref, id, body) VALUES (CAST(X'C3FF' AS TEXT), 'x', X'00')")
    finally:
        raw.close()
    code, out, err = run("audit", str(TRACE), str(TRACE), "--store", str(db), "--jobs", jobs)
    assert (code, out) == (2, "")
    assert_store_error_once(err, db, "not valid UTF-8")


def test_a_file_of_another_type_is_named_as_such(tmp_path: Path) -> None:
    junk = tmp_path / "notes.db"
    junk.write_bytes(b"PK\x03\x04 a zip file, not a store" * 10)
    code, out, err = run("audit", str(TRACE), "--store", str(junk))
    assert (code, out) == (2, "")
    assert_store_error_once(err, junk, "not a SQLite file (wrong file type)")


def test_a_sqlite_database_of_another_program_is_not_a_store(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE notes(x TEXT)")
    db.commit()
    db.close()
    before = other.read_bytes()
    for readonly in (True, False):
        with pytest.raises(StoreError, match="not a ctxproof store"):
            SqliteStore(other, readonly=readonly)
    assert other.read_bytes() == before  # no table was added to it
    code, _, err = run("audit", str(TRACE), "--store", str(other))
    assert code == 2
    assert_store_error_once(err, other, "not a ctxproof store")


# ------------------------------------------------------------ file types


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_a_store_path_that_is_no_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        path = tmp_path / "pipe.db"
        os.mkfifo(path)
        words = "FIFO"
    elif kind == "directory":
        path = tmp_path / "dir.db"
        path.mkdir()
        words = "directory"
    else:
        path = Path("/dev/null")
        words = "character device"
    # each in a child process with a timeout: a FIFO opened by SQLite would block for ever
    probe = (
        "import sys\n"
        "from verifier.errors import StoreError\n"
        "from verifier.store import SqliteStore\n"
        "try:\n"
        "    SqliteStore(sys.argv[1], readonly=True)\n"
        "except StoreError as exc:\n"
        "    print(exc, file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    trace = tmp_path / "named.jsonl"
    header = {"event": "header", "format": "ctxproof-trace/1", "store": str(path)}
    trace.write_text(json.dumps(header) + "\n", "utf-8")
    for argv in (
        ["-c", probe, str(path)],
        ["-m", "verifier", "audit", str(TRACE), "--store", str(path)],
        ["-m", "verifier", "why", str(trace), "x"],
    ):
        proc = subprocess.run(
            [sys.executable, *argv], capture_output=True, text=True, timeout=60, check=False
        )
        assert proc.returncode == 2, proc.stderr
        assert words in proc.stderr and "Traceback" not in proc.stderr


# ------------------------------------------------------------ read-only


def test_reading_commands_leave_no_wal_or_shm_beside_the_store(tmp_path: Path) -> None:
    folder = tmp_path / "st"
    folder.mkdir()
    db = folder / "s.db"
    make_store(db, n=3)
    before = listing(folder)
    assert set(before) == {"s.db"}
    trace = str(TRACE)
    assert run("audit", trace, "--store", str(db))[0] in (0, 1)
    assert run("why", trace, "d1", "--store", str(db))[0] in (0, 1)
    assert run("graph", trace, "--out", str(tmp_path / "g.json"), "--store", str(db))[0] == 0
    assert listing(folder) == before  # nothing created, nothing changed


def test_a_store_in_a_read_only_folder_can_be_read(
    tmp_path: Path, make_readonly: Callable[[Path], None]
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "s.db"
    items = make_store(db, n=3)
    make_readonly(folder)
    s = SqliteStore(db, readonly=True)
    try:
        assert [s.get(it.ref) for it in items] == items
    finally:
        s.close()
    code, _, err = run("audit", str(TRACE), "--store", str(db))
    assert code in (0, 1), err
    assert "readonly" not in err and err.count(str(db)) <= 1
    assert sorted(p.name for p in folder.iterdir()) == ["s.db"]


def _store_with_commits_in_its_log(folder: Path, target: Path) -> tuple[Item, Item]:
    """Copy a store whose second spill is still only in its write-ahead log into target."""
    first, second = prose("a", "checkpointed"), prose("b", "only in the log")
    writer = SqliteStore(folder / "s.db")
    try:
        writer.spill([first])
        writer._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        writer._db.execute("PRAGMA wal_autocheckpoint=0")
        writer.spill([second])
        target.mkdir()
        for p in folder.iterdir():
            shutil.copy(p, target / p.name)
    finally:
        writer.close()
    assert (target / "s.db-wal").stat().st_size > 0
    return first, second


def test_a_log_in_a_read_only_folder_is_read_when_its_index_is_there(
    tmp_path: Path, make_readonly: Callable[[Path], None]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    target = tmp_path / "ro"
    first, second = _store_with_commits_in_its_log(src, target)
    before = listing(target)
    make_readonly(target)
    s = SqliteStore(target / "s.db", readonly=True)
    try:
        assert s.get(first.ref) == first
        assert s.get(second.ref) == second  # read from the log, not ignored
    finally:
        s.close()
    assert listing(target) == before


def test_a_log_that_cannot_be_read_is_a_clear_store_error(
    tmp_path: Path, make_readonly: Callable[[Path], None]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    target = tmp_path / "ro"
    _store_with_commits_in_its_log(src, target)
    (target / "s.db-shm").unlink()
    make_readonly(target)
    # immutable=1 would silently ignore the log's commits: refused instead
    with pytest.raises(StoreError, match="write-ahead log"):
        SqliteStore(target / "s.db", readonly=True)
    code, out, err = run("audit", str(TRACE), "--store", str(target / "s.db"))
    assert (code, out) == (2, "")
    assert_store_error_once(err, target / "s.db", "write-ahead log")


def test_a_store_cannot_be_created_in_a_read_only_folder(
    tmp_path: Path, make_readonly: Callable[[Path], None]
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    make_readonly(folder)
    with pytest.raises(StoreError, match="cannot be opened for writing"):
        SqliteStore(folder / "new.db")
    assert list(folder.iterdir()) == []


def test_an_unencodable_id_is_simply_not_in_the_store(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    make_store(db, n=1)
    s = SqliteStore(db, readonly=True)
    try:
        assert not s.has_id("\udcff")  # a command-line argument that was not UTF-8
        assert s.get("sha256:\ud800") is None
    finally:
        s.close()


def test_a_claimed_id_that_is_not_utf8_is_bad_input_not_a_crash(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    make_store(db, n=1)
    window = tmp_path / "w.json"
    window.write_text('{"format": "ctxproof-window/1", "items": []}', "utf-8")
    # "\udcff" is what Python makes of a command-line byte that is not UTF-8
    code, out, err = run(
        "check", str(window), str(window), "--store", str(db), "--claimed", "\udcff"
    )
    assert (code, out) == (2, ""), err
    assert "internal error" not in err and "--claimed names" in err
