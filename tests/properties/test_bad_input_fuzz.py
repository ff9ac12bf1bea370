"""Bad-input fuzzing of the command line: broken input is exit 2, never a crash.

Hypothesis mutates the corpus traces (``tests/corpus/*.jsonl``), window files
built from them, and a store file: byte flips, truncation, inserted bytes
(invalid UTF-8, NUL, a byte order mark), JSON values swapped for values of
another type, deep nesting, huge strings and lists, Unicode edge cases (lone
surrogates, NUL, non-characters, combining marks, bidi controls), references
to ids that nothing defines, keys nobody asked for, lines duplicated, dropped
or swapped; and the real-shaped agent histories of ``tests/fixtures/histories``
the same way for ``import``. Then the surfaces where the input is code or a
container: hostile policies for ``fuzz`` (loops, sleeps, exits and signals,
exceptions of every kind and ones whose ``str()`` raises or loops, huge
numbers, NaN, sets, circular and deep structures, lone surrogates, mutation of
their input and of the harness's modules, prints to stdout and to its file
descriptor, closed descriptors, randomness, state and the clock, some at
import), mutated specs for ``prove`` and ``fuzz`` (TOML values of every type
and edge, unknown keys, thousands of rules), ``.eval`` archives for ``import
inspect`` (zstd and deflate members, sizes their headers lie about, members
that unpack past the bound, damaged bytes), and special files (FIFOs,
``/dev/zero``, ``/dev/null``, sockets, folders, dangling and looping links)
wherever a command reads a file or writes one. Every command runs in-process
through :func:`verifier.cli.main`, each in a fresh folder, and every run must:

* exit 0, 1, 2 or 3 (4 is an internal error), with no traceback and no
  "internal error" on stderr, and print nothing on stdout when it exits 2;
* end within its case's time limit (a hang fails the case);
* stay under a memory cap (Python allocations, measured with tracemalloc);
* write no file but the output it was asked for, change no input, and leave
  no ``-wal``/``-shm`` file beside a store it only read, nor any temporary file.

The default run is about five hundred cases; the ``slow`` tests (``make
test-slow``) run the same properties on 17,500.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import io
import json
import os
import re
import resource
import socket
import struct
import tempfile
import textwrap
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifier.alarm import time_limit
from verifier.cli import main
from verifier.io import item_from_json
from verifier.store import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
TRACES: dict[str, bytes] = {p.name: p.read_bytes() for p in sorted(CORPUS.glob("*.jsonl"))}

# Python allocations one command may make beyond what it held before it ran. The
# largest input a case builds is a few megabytes; a command holds a few copies of it.
MEMORY_CAP = 256 * 1024 * 1024
# Growth of the process's resident size in one command, from its size before the command
# to its peak during it (z3 and SQLite allocate outside Python, where tracemalloc does not
# see).
RSS_GROWTH_CAP_KB = 512 * 1024

PLACEHOLDER = "\u0001ctxproof-fuzz-value\u0001"
GHOST = "ghost-item-nothing-defines"
STORE_NAMES = ["store.sqlite", "corrupt.sqlite", "missing.sqlite", "fifo", ".", "/", ""]
REF_KEYS = ["rationale", "witnesses", "derived_from", "covers", "claimed_preserved", "remove"]
KEYS = [
    *REF_KEYS,
    "id",
    "kind",
    "type",
    "modality",
    "formula",
    "shows",
    "text",
    "tokens",
    "score",
    "load_bearing",
    "digest",
    "content",
    "source",
    "exit_code",
    "at",
    "call",
    "ref",
    "event",
    "format",
    "background",
    "budget",
    "store",
    "items",
    "window",
    "diff",
    "put",
    "policy",
    "pressure",
    "bogus",
]

# raw JSON texts: every type, the shapes that broke hashing, numbers at the edges,
# Unicode edge cases, and references to nothing
ODD_JSON = [
    "[]",
    "{}",
    "[[]]",
    "[{}]",
    '{"a": []}',
    "0",
    "-1",
    "1.5",
    "-0.0",
    "1e308",
    "1e999",
    "-1e999",
    "1" + "0" * 400,
    "9" * 5000,
    "true",
    "false",
    "null",
    "NaN",
    "Infinity",
    '""',
    '"x"',
    '"\\ud800"',
    '"\\udc00x"',
    '"\\ud83d\\ude00"',
    '"\\u0000"',
    '"a\\u0000b"',
    '"\\ufeff"',
    '"\\ufffe\\uffff"',
    '"\\u202eevil"',
    '"e\\u0301"',
    '"\U0001f600"',
    '"\u00e9t\u00e9"',
    '"\\n\\r\\t"',
    '"sha256:' + "0" * 64 + '"',
    '"sha256:' + "A" * 64 + '"',
    json.dumps(GHOST),
    json.dumps([GHOST]),
    json.dumps([GHOST, GHOST]),
    json.dumps(["c1", "c1"]),
    *(json.dumps(name) for name in STORE_NAMES),
    *(json.dumps(k) for k in ("commitment", "claim", "observation", "prose", "stub")),
    *(json.dumps(m) for m in ("verified", "failed", "unverified", "unwitnessed")),
    *(json.dumps(t) for t in ("decision", "rejection", "invariant", "obligation")),
    *(json.dumps(e) for e in ("header", "append", "spill", "rewrite")),
    '"ctxproof-trace/1"',
    '"ctxproof-window/1"',
    '"a & b"',
    '"!("',
    '"a -> !a"',
    '["a", "!a"]',
    '["false"]',
]

INSERTED_BYTES = [
    b"\x00",
    b"\xed\xa0\x80",  # a surrogate encoded as UTF-8: invalid
    b"\xc0\x80",  # an overlong NUL
    b"\xef\xbb\xbf",  # a byte order mark
    b"\xff",
    b"\xf4\x90\x80\x80",  # past U+10FFFF
    b"\r",
    b"\n",
    b"\r\n",
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b"\\",
    b"\\u",
    b",",
    b":",
    b" ",
]


def odd_json() -> st.SearchStrategy[str]:
    """A raw JSON text (or near-JSON) to put where a value was."""
    deep = st.integers(min_value=1, max_value=3000)
    return st.one_of(
        st.sampled_from(ODD_JSON),
        deep.map(lambda n: "[" * n + "]" * n),
        deep.map(lambda n: '{"a":' * n + "1" + "}" * n),
        st.sampled_from([257, 4096, 100_000, 2_000_000]).map(lambda n: '"' + "i" * n + '"'),
        st.integers(min_value=0, max_value=50_000).map(
            lambda n: "[" + ",".join([json.dumps(GHOST)] * n) + "]"
        ),
        st.text(max_size=30).map(lambda s: json.dumps(s, ensure_ascii=False)),
        st.text(max_size=30).map(json.dumps),
    )


# ------------------------------------------------------------ mutations


Draw = Callable[[st.SearchStrategy[Any]], Any]
Op = Callable[[Draw, bytes], bytes]


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


def _containers(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths to every object (dict) inside obj, the root included."""
    if isinstance(obj, dict):
        yield prefix
        for k, v in obj.items():
            yield from _containers(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _containers(v, (*prefix, i))


def _at(obj: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def _with_raw(obj: Any, raw: str, indent: int | None) -> str:
    """obj as JSON, with the placeholder string replaced by a raw JSON text."""
    text = json.dumps(obj, ensure_ascii=False, indent=indent)
    return text.replace(json.dumps(PLACEHOLDER, ensure_ascii=False), raw, 1)


def _json_edit(draw: Draw, text: str, indent: int | None = None) -> str | None:
    """Swap a value, or add a key, in one JSON document; None if it does not parse."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    raw = draw(odd_json())
    if draw(st.booleans()):
        paths = list(_paths(obj))
        if not paths:
            return None
        path = draw(st.sampled_from(paths))
        _at(obj, path[:-1])[path[-1]] = PLACEHOLDER
        return _with_raw(obj, raw, indent)
    holders = list(_containers(obj))
    if not holders:
        return None
    holder = _at(obj, draw(st.sampled_from(holders)))
    key = draw(st.sampled_from(KEYS))
    if key in REF_KEYS and draw(st.booleans()):
        raw = json.dumps([GHOST])
    holder[key] = PLACEHOLDER
    return _with_raw(obj, raw, indent)


def _edit_lines(draw: Draw, data: bytes) -> bytes:
    lines = data.split(b"\n")
    i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
    try:
        line = lines[i].decode("utf-8")
    except UnicodeDecodeError:
        return data
    edited = _json_edit(draw, line)
    if edited is None:
        return data
    lines[i] = edited.encode("utf-8", "surrogatepass")
    return b"\n".join(lines)


def _edit_document(draw: Draw, data: bytes) -> bytes:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    # pretty-printed, so items sit on lines of their own (line lookups matter)
    edited = _json_edit(draw, text, indent=1)
    if edited is None:
        return data
    return edited.encode("utf-8", "surrogatepass")


def _flip(draw: Draw, data: bytes) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(draw(st.integers(min_value=1, max_value=8))):
        pos = draw(st.integers(min_value=0, max_value=len(out) - 1))
        out[pos] = draw(st.integers(min_value=0, max_value=255))
    return bytes(out)


def _truncate(draw: Draw, data: bytes) -> bytes:
    return data[: draw(st.integers(min_value=0, max_value=len(data)))]


def _insert(draw: Draw, data: bytes) -> bytes:
    pos = draw(st.integers(min_value=0, max_value=len(data)))
    chunk: bytes = draw(st.sampled_from(INSERTED_BYTES))
    return data[:pos] + chunk + data[pos:]


def _shuffle_lines(draw: Draw, data: bytes) -> bytes:
    lines = data.split(b"\n")
    i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
    j = draw(st.integers(min_value=0, max_value=len(lines) - 1))
    op = draw(st.sampled_from(["dup", "drop", "swap", "crlf", "blank"]))
    if op == "dup":
        lines.insert(j, lines[i])
    elif op == "drop":
        del lines[i]
    elif op == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    elif op == "crlf":
        return data.replace(b"\n", b"\r\n")
    else:
        lines.insert(j, b"   \t")
    return b"\n".join(lines)


TRACE_OPS: list[Op] = [
    _edit_lines,
    _edit_lines,
    _edit_lines,
    _flip,
    _truncate,
    _insert,
    _shuffle_lines,
]
DOC_OPS: list[Op] = [_edit_document, _edit_document, _edit_document, _flip, _truncate, _insert]
STORE_OPS: list[Op] = [_flip, _truncate]


def _mutate(draw: Draw, data: bytes, ops: list[Op]) -> bytes:
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        data = draw(st.sampled_from(ops))(draw, data)
    return data


# ------------------------------------------------------------ seeds


def _events(data: bytes) -> list[dict[str, Any]]:
    out = []
    for line in data.decode("utf-8", "replace").splitlines():
        with contextlib.suppress(ValueError, RecursionError):
            ev = json.loads(line)
            if isinstance(ev, dict):
                out.append(ev)
    return out


def _window_pairs() -> list[tuple[bytes, bytes]]:
    """(before, after) window files: the window before and after each trace's first rewrite."""
    pairs = []
    for data in TRACES.values():
        events = _events(data)
        header = next((e for e in events if e.get("event") == "header"), {})
        window: list[dict[str, Any]] = []
        for ev in events:
            if ev.get("event") == "append" and isinstance(ev.get("items"), list):
                window = window + ev["items"]
            elif ev.get("event") == "rewrite":
                if isinstance(ev.get("window"), list):
                    after = ev["window"]
                else:
                    diff: dict[str, Any] = ev["diff"] if isinstance(ev.get("diff"), dict) else {}
                    removed = set(map(str, diff.get("remove", [])))
                    after = [it for it in window if it.get("id") not in removed]
                    after += [it for it in diff.get("put", []) if isinstance(it, dict)]
                background = header.get("background", [])

                def doc(items: list[dict[str, Any]], background: Any = background) -> bytes:
                    obj = {"format": "ctxproof-window/1", "background": background, "items": items}
                    return json.dumps(obj, ensure_ascii=False, indent=1).encode("utf-8")

                pairs.append((doc(window), doc(after)))
                break
    return pairs


WINDOWS = _window_pairs()
_ID_RE = re.compile(rb'"id"\s*:\s*"([^"\\]{1,40})"')
IDS = sorted({m.decode() for data in TRACES.values() for m in _ID_RE.findall(data)})


def _store_bytes() -> bytes:
    """A valid store holding every item the corpus spills, as one file."""
    items = {}
    for data in TRACES.values():
        for ev in _events(data):
            if ev.get("event") == "spill" and isinstance(ev.get("items"), list):
                for raw in ev["items"]:
                    with contextlib.suppress(ValueError, TypeError):
                        it = item_from_json(raw)
                        items[it.ref] = it
    with tempfile.TemporaryDirectory() as d:
        s = SqliteStore(Path(d) / "s.sqlite")
        try:
            s.spill(list(items.values()))
        finally:
            s.close()
        return (Path(d) / "s.sqlite").read_bytes()


STORE = _store_bytes()


# ------------------------------------------------------------ running a case


def _snapshot(folder: Path) -> dict[str, str]:
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            out[rel] = "special"
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@contextlib.contextmanager
def _case_folder() -> Iterator[Path]:
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="ctxproof-fuzz-") as d:
        folder = Path(d)
        os.chdir(folder)
        try:
            yield folder
        finally:
            os.chdir(here)


def _put_stores(draw: Draw, folder: Path) -> None:
    """The stores a case may name: a good one, a damaged one, and a FIFO."""
    (folder / "store.sqlite").write_bytes(STORE)
    (folder / "corrupt.sqlite").write_bytes(_mutate(draw, STORE, STORE_OPS))
    os.mkfifo(folder / "fifo")


class _Hang(BaseException):
    """A command ran past its case's time limit (a BaseException: the CLI does not catch it)."""


def _time_limit(seconds: float) -> contextlib.AbstractContextManager[None]:
    return time_limit(seconds, lambda: _Hang(f"still running after {seconds} s"))


def _status_kb(key: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(key):
                return int(line.split()[1])
    raise LookupError(key)


def _resident_reset() -> int:
    """The process's resident size now (KB), its peak reset to it where the system lets a
    process do that (Linux: ``/proc/self/clear_refs``), so the next :func:`_resident_peak`
    is this command's own peak. Elsewhere the peak is the process's lifetime peak, which
    an earlier command's may hide."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
        return _status_kb("VmRSS:")
    except (OSError, LookupError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _resident_peak() -> int:
    try:
        return _status_kb("VmHWM:")
    except (OSError, LookupError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _run(
    folder: Path,
    argv: list[str],
    outputs: set[str],
    *,
    store_may_change: bool = False,
    patterns: tuple[str, ...] = (),
    limit: float = 120.0,
) -> tuple[int, str]:
    """Run the command; return its exit code and stdout. ``patterns`` (fnmatch) name more
    files it may write; past ``limit`` seconds the case fails as a hang."""
    before = _snapshot(folder)
    out, err = io.StringIO(), io.StringIO()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    rss = _resident_reset()
    try:
        with _time_limit(limit):
            code = main(argv, stdout=out, stderr=err)
    except _Hang as hang:
        raise AssertionError((argv, "hangs", str(hang))) from None
    peak = tracemalloc.get_traced_memory()[1] - base
    rss_grown = _resident_peak() - rss
    errors = err.getvalue()
    assert "Traceback" not in errors and "internal error" not in errors, (argv, errors)
    assert code in (0, 1, 2, 3), (argv, code, errors)
    if code == 2:
        assert out.getvalue() == "", (argv, "output on a run that exits 2")
    assert peak < MEMORY_CAP, (argv, peak)
    assert rss_grown < RSS_GROWTH_CAP_KB, (argv, f"peak resident size grew by {rss_grown} KB")
    after = _snapshot(folder)
    assert set(before) <= set(after), (argv, "an input was removed")
    allowed = set(outputs)
    if store_may_change:
        allowed |= {"store.sqlite", "corrupt.sqlite", "missing.sqlite"}
    changed = {p for p in after if before.get(p) != after[p]}
    stray = {p for p in changed - allowed if not any(fnmatch.fnmatch(p, x) for x in patterns)}
    assert not stray, (argv, stray)
    assert not [p for p in after if p.endswith(("-wal", "-shm", "-journal", ".tmp"))], (argv, after)
    return code, out.getvalue()


@pytest.fixture(scope="module", autouse=True)
def _traced() -> Iterator[None]:
    tracemalloc.start()
    yield
    tracemalloc.stop()


# ------------------------------------------------------------ the properties


def _audit_case(data: st.DataObject) -> None:
    draw: Draw = data.draw
    trace = _mutate(draw, TRACES[draw(st.sampled_from(sorted(TRACES)))], TRACE_OPS)
    with _case_folder() as folder:
        _put_stores(draw, folder)
        (folder / "t.jsonl").write_bytes(trace)
        argv = ["audit", "t.jsonl"]
        outputs: set[str] = set()
        store = draw(st.sampled_from([None, None, *STORE_NAMES[:4]]))
        if store is not None:
            argv += ["--store", store]
        if draw(st.integers(min_value=0, max_value=4)) == 0:
            argv += ["--report", "rep"]
            # the index, the JSON, and the one trace's own page
            outputs = {
                "rep",
                "rep/index.html",
                "rep/report.json",
                "rep/traces",
                "rep/traces/0001-t.html",
            }
        argv += ["--witness-mode", draw(st.sampled_from(["support", "count"]))]
        argv += ["--format", draw(st.sampled_from(["text", "json"]))]
        _run(folder, argv, outputs)


def _why_case(data: st.DataObject) -> None:
    draw: Draw = data.draw
    trace = _mutate(draw, TRACES[draw(st.sampled_from(sorted(TRACES)))], TRACE_OPS)
    with _case_folder() as folder:
        _put_stores(draw, folder)
        (folder / "t.jsonl").write_bytes(trace)
        item = draw(st.sampled_from([*IDS, GHOST, "", "\udcff"]))
        argv = ["why", "t.jsonl", item, "--format", draw(st.sampled_from(["text", "json"]))]
        if draw(st.booleans()):
            argv += ["--pass", str(draw(st.integers(min_value=0, max_value=4)))]
        if draw(st.booleans()):
            argv += ["--store", draw(st.sampled_from(STORE_NAMES[:4]))]
        _run(folder, argv, set())


def _graph_case(data: st.DataObject) -> None:
    draw: Draw = data.draw
    trace = _mutate(draw, TRACES[draw(st.sampled_from(sorted(TRACES)))], TRACE_OPS)
    with _case_folder() as folder:
        _put_stores(draw, folder)
        (folder / "t.jsonl").write_bytes(trace)
        out = "g." + draw(st.sampled_from(["graphml", "json", "dot"]))
        argv = ["graph", "t.jsonl", "--out", out]
        if draw(st.booleans()):
            argv += ["--store", draw(st.sampled_from(STORE_NAMES[:4]))]
        _run(folder, argv, {out})


def _check_case(data: st.DataObject) -> None:
    draw: Draw = data.draw
    before, after = draw(st.sampled_from(WINDOWS))
    which = draw(st.sampled_from(["before", "after", "both"]))
    if which in ("before", "both"):
        before = _mutate(draw, before, DOC_OPS)
    if which in ("after", "both"):
        after = _mutate(draw, after, DOC_OPS)
    with _case_folder() as folder:
        _put_stores(draw, folder)
        (folder / "b.json").write_bytes(before)
        (folder / "a.json").write_bytes(after)
        argv = ["check", "b.json", "a.json", "--format", draw(st.sampled_from(["text", "json"]))]
        outputs: set[str] = set()
        store = draw(st.sampled_from([None, *STORE_NAMES[:4]]))
        repair = store is not None and draw(st.booleans())
        if store is not None:
            argv += ["--store", store]
        if repair:
            argv += ["--repair", "fixed.json"]
            outputs = {"fixed.json"}
        if draw(st.booleans()):
            argv += ["--claimed", draw(st.sampled_from([*IDS, GHOST, "\udcff"]))]
        _run(folder, argv, outputs, store_may_change=repair)


HISTORIES = ROOT / "tests" / "fixtures" / "histories"
HISTORY_FILES: list[tuple[str, str, bytes]] = [
    (fmt.name, p.name, p.read_bytes())
    for fmt in sorted(HISTORIES.iterdir())
    if fmt.is_dir()
    for p in sorted(fmt.iterdir())
    if p.suffix in (".json", ".jsonl")
]


def _import_case(data: st.DataObject) -> None:
    draw: Draw = data.draw
    fmt, name, raw = draw(st.sampled_from(HISTORY_FILES))
    ops = TRACE_OPS if name.endswith(".jsonl") else DOC_OPS
    history = _mutate(draw, raw, ops)
    with _case_folder() as folder:
        (folder / name).write_bytes(history)
        # the history may be read as any format: a file of the wrong kind is bad input too
        as_format = fmt if draw(st.integers(0, 3)) else draw(
            st.sampled_from(sorted(p.name for p in HISTORIES.iterdir() if p.is_dir()))
        )
        argv = ["import", as_format, name, "--format", draw(st.sampled_from(["text", "json"]))]
        outputs: set[str] = set()
        if draw(st.booleans()):
            argv += ["-o", "trace.jsonl"]
            outputs = {"trace.jsonl"}
        _run(folder, argv, outputs)


# ------------------------------------------------------------ hostile policies

# What a policy may do when it is called (each a body; `n` counts the calls in its process,
# `window` and `budget` are its arguments). A policy is code: these are the ways code goes
# wrong or turns on its caller, short of writing files or forking.
BEHAVIOURS: dict[str, str] = {
    "keep": "return window",
    "drop_all": "return []",
    "loop": "while True:\n    pass",
    "sleep": "time.sleep(30)",
    "exit_0": "os._exit(0)",
    "exit_7": "os._exit(7)",
    "sigkill": "os.kill(os.getpid(), signal.SIGKILL)",
    "sigsegv": "os.kill(os.getpid(), signal.SIGSEGV)",
    "sigterm": "os.kill(os.getpid(), signal.SIGTERM)",
    "sigabrt": "os.abort()",
    "exit_thread": "threading.Thread(target=lambda: (time.sleep(0.05), os._exit(3))).start()\n"
    "return window",
    "system_exit": "raise SystemExit(5)",
    "keyboard_interrupt": "raise KeyboardInterrupt",
    "generator_exit": "raise GeneratorExit",
    "raise": "raise ValueError('x' * 100)",
    "raise_huge": "raise ValueError('y' * 3_000_000)",
    "bad_str": "raise BadStr()",
    "str_not_str": "raise NotStr()",
    "str_loops": "raise LoopingStr()",
    "recursion": "def down(k):\n    return down(k + 1)\nreturn down(0)",
    "memory": "blob = bytearray(200_000_000)\nreturn window",
    "tokens_400_digits": "out = [dict(it) for it in window]\nfor it in out:\n"
    "    it['tokens'] = 10 ** 400\nreturn out",
    "tokens_5000_digits": "out = [dict(it) for it in window]\nfor it in out:\n"
    "    it['tokens'] = 10 ** 5000\nreturn out",
    "tokens_nan": "out = [dict(it) for it in window]\nfor it in out:\n"
    "    it['tokens'] = float('nan')\nreturn out",
    "score_inf": "out = [dict(it) for it in window]\nfor it in out:\n"
    "    it['score'] = float('inf')\nreturn out",
    "a_set": "return {'window': set(), 'spill': []}",
    "circular": "loop = []\nloop.append(loop)\nreturn loop",
    "circular_item": "it = dict(window[0]) if window else {'id': 'z', 'kind': 'prose'}\n"
    "it['text'] = [it]\nreturn [it]",
    "duplicate_ids": "return window + window[:1]",
    "ghost_citation": "return window + [{'id': 'k-new', 'kind': 'claim', 'formula': 'a',"
    " 'witnesses': ['ghost-nothing-defines']}]",
    "spill_ghost": "return {'window': window, 'spill': ['ghost-nothing-defines']}",
    "claim_ghost": "return {'window': [], 'claimed_preserved': ['ghost-nothing-defines']}",
    "extra_key": "return {'window': window, 'bogus': 1}",
    "no_window": "return {'spill': []}",
    "none": "return None",
    "a_string": "return 'window'",
    "a_generator": "return (it for it in window)",
    "a_tuple": "return tuple(window)",
    "bad_item": "return [{'id': 7, 'kind': 'prose'}]",
    "unknown_kind": "return [{'id': 'x', 'kind': 'memo'}]",
    "bad_formula": "return [{'id': 'x', 'kind': 'claim', 'formula': '!('}]",
    "deep": "deep = 'x'\nfor _ in range(5000):\n    deep = [deep]\n"
    "return [{'id': 'x', 'kind': 'prose', 'text': deep}]",
    "long_id": "return [{'id': 'i' * 300, 'kind': 'prose'}]",
    "surrogate_id": "return [{'id': '\\udc80', 'kind': 'prose'}]",
    "huge_list": "return [{'id': f'x{i}', 'kind': 'prose', 'tokens': 1} for i in range(20000)]",
    "weird_dict": "class D(dict):\n    def __eq__(self, other):\n        raise RuntimeError('no')\n"
    "    def keys(self):\n        raise RuntimeError('no keys')\n"
    "return [D(it) for it in window]",
    "weird_list": "class L(list):\n    def __iter__(self):\n        raise RuntimeError('no')\n"
    "return L(window)",
    "mutate_input": "for it in window:\n    it.clear()\nwindow.append(window)\nreturn []",
    "meddle": "import verifier.fuzz, verifier.audit, json as j\n"
    "verifier.fuzz.TURNS_PER_PASS = 0\nverifier.audit.Auditor = None\nj.dumps = None\n"
    "return window",
    "print": "print('noise ' * 1000)\nsys.stdout.write('more noise\\n')\nreturn window",
    "write_fd_1": "os.write(1, b'{\"not\": \"the harness output\"}\\n' * 100)\nreturn window",
    "close_fds": "os.closerange(3, 256)\nreturn window",
    "random": "return random.sample(window, len(window) // 2)",
    "stateful": "return window if n % 2 else window[:-1]",
    "clock": "return window if int(time.time() * 1000) % 2 else []",
    "slow_then_fine": "time.sleep(0.05)\nreturn window",
}

AT_IMPORT: dict[str, str] = {
    "": "",
    "raise": "raise RuntimeError('at import')",
    "exit": "os._exit(9)",
    "loop": "while True:\n    pass",
    "print": "print('importing ' * 100)",
    "syntax": "def (",
}

POLICY_HEADER = textwrap.dedent(
    """
    import os
    import random
    import signal
    import sys
    import threading
    import time

    CALLS = [0]


    class BadStr(Exception):
        def __str__(self):
            raise RuntimeError("no message")


    class NotStr(Exception):
        def __str__(self):
            return 42


    class LoopingStr(Exception):
        def __str__(self):
            while True:
                pass
    """
)


def _hostile_policy(draw: Draw) -> str:
    """A policy module: one or two behaviours, each on some calls only (its n-th, or on a
    window of more than k items), else it keeps the window; maybe something at import."""
    at_import = ""
    if draw(st.integers(min_value=0, max_value=5)) == 5:  # mostly a module that loads
        at_import = AT_IMPORT[draw(st.sampled_from(sorted(AT_IMPORT)))]
    parts = [POLICY_HEADER, at_import, ""]
    body = ["CALLS[0] += 1", "n = CALLS[0]"]
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        name = draw(st.sampled_from(sorted(BEHAVIOURS)))
        when = draw(st.sampled_from(["True", "n % 3 == 0", "n > 4", "len(window) > 8"]))
        body.append(f"if {when}:")
        body.append(textwrap.indent(BEHAVIOURS[name], "    "))
    body.append("return window")
    parts.append("def policy(window, budget):")
    parts.append(textwrap.indent("\n".join(body), "    "))
    return "\n".join(parts) + "\n"


FUZZ_OUTPUTS = ("out", "out/scorecard.json", "out/pressure.png")
FUZZ_PATTERNS = ("out/cex-*.jsonl", "__pycache__", "__pycache__/hostile.*.pyc")
"""What a fuzz run may write: its output set, and the bytecode the interpreter caches when
the policy's process imports the policy (unless PYTHONDONTWRITEBYTECODE is set)."""


def _policy_case(data: st.DataObject) -> None:
    draw: Draw = data.draw
    with _case_folder() as folder, _short_loads():
        (folder / "hostile.py").write_text(_hostile_policy(draw), "utf-8", errors="surrogatepass")
        argv = [
            "fuzz",
            "hostile.py:policy",
            "--sessions",
            str(draw(st.integers(min_value=1, max_value=4))),
            "--passes",
            str(draw(st.integers(min_value=1, max_value=3))),
            "--policy-timeout",
            "0.5",
            "--out",
            "out",
            "--format",
            draw(st.sampled_from(["text", "json"])),
        ]
        if draw(st.integers(min_value=0, max_value=5)) == 0:
            argv += ["--jobs", "2"]
        code, out = _run(folder, argv, set(FUZZ_OUTPUTS), patterns=FUZZ_PATTERNS)
        if code in (0, 1):
            # the run's output is whole: its set is written, its JSON parses
            card = json.loads((folder / "out" / "scorecard.json").read_text("utf-8"))
            if "--format" in argv and argv[argv.index("--format") + 1] == "json":
                assert json.loads(out)["sessions"] == card["sessions"], out


@contextlib.contextmanager
def _short_loads() -> Iterator[None]:
    """A policy module that loops at import is given 3 s, not the minute a real one gets."""
    from verifier.policies import isolated

    saved = isolated.LOAD_TIMEOUT
    isolated.LOAD_TIMEOUT = 3.0
    try:
        yield
    finally:
        isolated.LOAD_TIMEOUT = saved


# ------------------------------------------------------------ hostile specs

SPECS_DIR = ROOT / "models" / "specs"
SPECS: dict[str, bytes] = {p.name: p.read_bytes() for p in sorted(SPECS_DIR.glob("*.toml"))}

# TOML values of every type, the edges of numbers, and what TOML has that JSON has not
ODD_TOML = [
    "nan",
    "inf",
    "-inf",
    "1e999",
    "-0.0",
    "0",
    "-1",
    "101",
    "9223372036854775807",
    "-9223372036854775808",
    "1" + "0" * 30,
    "0x7fffffff",
    "true",
    '""',
    '"prose"',
    '"-score"',
    '"x"',
    '"' + "s" * 100_000 + '"',
    "'''multi\nline'''",
    '"\\u0000"',
    '"\\ud800"',
    "[]",
    "[[]]",
    '["prose", 1]',
    '["kind", "kind", "kind"]',
    "{}",
    "{ lt = 1, gt = 2 }",
    "{ ge = nan }",
    "{ eq = 1e999 }",
    "{ kind = { kind = 1 } }",
    "1979-05-27T07:32:00Z",
    "07:32:00",
    "[" * 200 + "]" * 200,
]

# values a spec may well hold: an edit with one of these gives a spec that runs
PLAUSIBLE_TOML = [
    '["prose"]',
    '["claim", "observation"]',
    '["commitment"]',
    '["stub"]',
    '["failed"]',
    '["decision", "rejection"]',
    '"spill"',
    '"evict"',
    '"summarize"',
    '"soften"',
    '"demote"',
    '"keep"',
    '"fits"',
    '"all"',
    '["-score", "position"]',
    '["age", "-tokens"]',
    "{ ge = 2 }",
    "{ lt = 50 }",
    "{ gt = 1.5 }",
    "true",
    "false",
    "8",
    "0",
]

TOML_KEYS = [
    "format",
    "name",
    "order",
    "stop",
    "stub_tokens",
    "demote_orphans",
    "when",
    "do",
    "kind",
    "type",
    "modality",
    "load_bearing",
    "negative",
    "cited",
    "result",
    "stub",
    "age",
    "score",
    "tokens",
    "pressure",
    "bogus",
]


def _toml_edit(draw: Draw, data: bytes) -> bytes:
    """Replace a value, add a key, duplicate a rule many times, or drop a line."""
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return data
    op = draw(st.sampled_from(["value", "value", "value", "key", "rules", "drop", "inline"]))
    i = draw(st.integers(min_value=0, max_value=max(0, len(lines) - 1)))
    odd = draw(st.integers(min_value=0, max_value=2)) == 2
    value = draw(st.sampled_from(ODD_TOML if odd else PLAUSIBLE_TOML))
    if op == "value":
        touch_format = draw(st.integers(min_value=0, max_value=7)) == 7
        assigned = [
            k
            for k, line in enumerate(lines)
            if "=" in line and not line.startswith("#")
            and (touch_format or not line.startswith("format"))
        ]
        if assigned:
            k = draw(st.sampled_from(assigned))
            key = lines[k].split("=", 1)[0]
            lines[k] = f"{key}= {value}"
    elif op == "key":
        # a key at the top (before the first table) or inside a rule
        key = draw(st.sampled_from(TOML_KEYS))
        lines.insert(i, f"{key} = {value}")
    elif op == "inline":
        key = draw(st.sampled_from(TOML_KEYS))
        rule = ["[[rule]]", f"when = {{ {key} = {value} }}", 'do = "evict"']
        lines += rule
    elif op == "rules":
        rule = ["[[rule]]", 'when = { kind = ["prose"], score = { ge = 3 } }', 'do = "spill"']
        lines += rule * draw(st.sampled_from([2, 50, 300]))
    elif lines:
        del lines[i]
    return "\n".join(lines).encode("utf-8", "surrogatepass")


SPEC_OPS: list[Op] = [*[_toml_edit] * 6, _flip, _truncate, _insert]


def _spec_case(data: st.DataObject) -> None:
    draw: Draw = data.draw
    spec = SPECS[draw(st.sampled_from(sorted(SPECS)))]
    for _ in range(draw(st.sampled_from([1, 1, 1, 2]))):  # one edit, mostly: a spec that runs
        spec = draw(st.sampled_from(SPEC_OPS))(draw, spec)
    with _case_folder() as folder:
        (folder / "spec.toml").write_bytes(spec)
        fmt = ["--format", draw(st.sampled_from(["text", "json"]))]
        if draw(st.booleans()):
            argv = [
                "prove",
                "spec.toml",
                "--items",
                str(draw(st.integers(min_value=1, max_value=4))),
                "--passes",
                str(draw(st.integers(min_value=1, max_value=2))),
                "--timeout",
                "5",
                "--out",
                "out",
                *fmt,
            ]
            if draw(st.booleans()):
                argv.append("--induction")
            _run(folder, argv, {"out"}, patterns=FUZZ_PATTERNS)
        else:
            argv = ["fuzz", "spec.toml", "--sessions", "2", "--passes", "2", "--out", "out", *fmt]
            _run(folder, argv, set(FUZZ_OUTPUTS), patterns=FUZZ_PATTERNS)


# ------------------------------------------------------------ archives

INSPECT_LOG = json.loads((HISTORIES / "inspect" / "repo_fix.json").read_text("utf-8"))


def _zip_entry(name: bytes, data: bytes, method: int, declared: int | None) -> tuple[bytes, bytes]:
    """A member's local header and data, and its central directory entry (offset 0)."""
    if method == 8:
        packer = zlib.compressobj(6, zlib.DEFLATED, -15)
        packed = packer.compress(data) + packer.flush()
    elif method == 93:
        import zstandard

        packed = zstandard.ZstdCompressor().compress(data)
    else:
        packed = data
    size = len(data) if declared is None else declared
    crc = zlib.crc32(data)
    local = struct.pack(
        "<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0, crc, len(packed), size, len(name), 0
    )
    central = struct.pack(
        "<IHHHHHHIIIHHHHHII",
        0x02014B50, 20, 20, 0, method, 0, 0, crc, len(packed), size, len(name),
        0, 0, 0, 0, 0, 0,
    )
    return local + name + packed, central + name


def _archive(draw: Draw) -> bytes:
    """An .eval archive built from the inspect fixture: its members' JSON mutated, their
    compression, sizes and names drawn, and the archive's own bytes maybe damaged."""
    header = {k: v for k, v in INSPECT_LOG.items() if k != "samples"}
    members: list[tuple[bytes, bytes]] = [(b"header.json", json.dumps(header).encode())]
    for sample in INSPECT_LOG["samples"]:
        text = json.dumps(sample, indent=1).encode()
        if draw(st.integers(min_value=0, max_value=3)) == 3:
            text = _mutate(draw, text, DOC_OPS)
        members.append((f"samples/{sample['id']}_epoch_1.json".encode(), text))
    extra = draw(st.sampled_from(["", "", "bulky", "many", "odd_names", "duplicate"]))
    if extra == "bulky":  # small on disk, past the (lowered) bound unpacked
        members.append((b"samples/bulk_epoch_1.json", b"[" + b" " * 3_000_000 + b"]"))
    elif extra == "many":
        members += [(f"samples/s{i}_epoch_1.json".encode(), b"{}") for i in range(200)]
    elif extra == "odd_names":
        members += [(b"samples/\xff\xfe.json", b"{}"), (b"../../samples/x.json", b"{}")]
    elif extra == "duplicate":
        members.append(members[-1])
    body, directory = b"", b""
    for name, data in members:
        method = draw(st.sampled_from([0, 8, 8, 93]))
        declared = None
        if draw(st.integers(min_value=0, max_value=11)) == 11:
            declared = draw(st.sampled_from([0, 1, len(data) - 1, len(data) + 1, 2**32 - 1]))
            declared = max(0, declared)
        local, central = _zip_entry(name, data, method, declared)
        central = central[:42] + struct.pack("<I", len(body)) + central[46:]
        body += local
        directory += central
    end = struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(directory), len(body), 0
    )
    archive = body + directory + end
    damage = draw(st.sampled_from(["", "", "", "", "", "", "flip", "truncate", "insert"]))
    if damage == "flip":
        archive = _flip(draw, archive)
    elif damage == "truncate":
        archive = _truncate(draw, archive)
    elif damage == "insert":
        archive = _insert(draw, archive)
    return archive


def _archive_case(data: st.DataObject) -> None:
    draw: Draw = data.draw
    from verifier.importers import inspect as inspect_importer

    archive = _archive(draw)
    with _case_folder() as folder:
        (folder / "log.eval").write_bytes(archive)
        fmt = draw(st.sampled_from(["text", "json"]))
        argv = ["import", "inspect", "log.eval", "--format", fmt]
        sample = draw(st.sampled_from(["fix-1", "fix-2", "fix-1:1", "fix-2", "nope", ""]))
        if sample:  # without one, a log of two samples is refused: that is tried too
            argv += ["--sample", sample]
        outputs: set[str] = set()
        if draw(st.booleans()):
            argv += ["-o", "trace.jsonl"]
            outputs = {"trace.jsonl"}
        saved = inspect_importer.MAX_UNPACKED_BYTES
        inspect_importer.MAX_UNPACKED_BYTES = 2_000_000  # a bulky member crosses it
        try:
            _run(folder, argv, outputs)
        finally:
            inspect_importer.MAX_UNPACKED_BYTES = saved


# ------------------------------------------------------------ special files

SPECIAL = ["fifo", "dev_zero", "dev_null", "folder", "socket", "dangling", "loop", "missing",
           "link_to_fifo", "link_to_file", "empty"]


def _special(folder: Path, kind: str, name: str, held: list[socket.socket]) -> str:
    """Put a thing of this kind at folder/name; return the path to give (relative)."""
    path = folder / name
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        return "/dev/zero"
    elif kind == "dev_null":
        return "/dev/null"
    elif kind == "folder":
        path.mkdir()
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        held.append(sock)
    elif kind == "dangling":
        path.symlink_to(folder / "nothing-here")
    elif kind == "loop":
        path.symlink_to(folder / f"{name}.other")
        (folder / f"{name}.other").symlink_to(path)
    elif kind == "link_to_fifo":
        os.mkfifo(folder / f"{name}.fifo")
        path.symlink_to(folder / f"{name}.fifo")
    elif kind == "link_to_file":
        path.symlink_to(CORPUS / "cf001_fires.jsonl")
    elif kind == "empty":
        path.write_bytes(b"")
    return name


def _special_case(data: st.DataObject) -> None:
    """Every command given a FIFO, a device, a folder, a socket or a link where it reads
    a file, and (as an output) where it writes one: exit 2 at once, or it works on a file
    a link names; nothing hangs, nothing is replaced but the outputs asked for."""
    draw: Draw = data.draw
    kind = draw(st.sampled_from(SPECIAL))
    held: list[socket.socket] = []
    with _case_folder() as folder:
        try:
            _put_stores(draw, folder)
            (folder / "t.jsonl").write_bytes(TRACES["cf001_fires.jsonl"])
            (folder / "spec.toml").write_bytes(SPECS["spill_first.toml"])
            before, after = WINDOWS[0]
            (folder / "b.json").write_bytes(before)
            (folder / "a.json").write_bytes(after)
            x = _special(folder, kind, "x", held)
            as_output = x.startswith("/dev/") is False and draw(st.booleans())
            outputs: set[str] = set()
            patterns: tuple[str, ...] = ()
            if as_output:
                argv = draw(
                    st.sampled_from(
                        [
                            ["graph", "t.jsonl", "--out", f"{x}.json"],
                            ["import", "claude-code", str(HISTORIES / "claude-code" /
                             "session_compact.jsonl"), "-o", x],
                            ["audit", "t.jsonl", "--report", x],
                            ["fuzz", "spec.toml", "--sessions", "2", "--passes", "2", "--out", x],
                            ["prove", "spec.toml", "--items", "2", "--out", x],
                            ["check", "b.json", "a.json", "--store", "store.sqlite",
                             "--repair", x],
                        ]
                    )
                )
                if argv[0] == "graph":
                    # the output name itself is the special thing
                    (folder / f"{x}.json").unlink(missing_ok=True)
                    if kind != "missing":
                        _special(folder, kind, f"{x}.json", held)
                outputs = {x, f"{x}.json"}
                patterns = (f"{x}/*", f"{x}/*/*")
                store_may_change = argv[0] == "check"
            else:
                argv = draw(
                    st.sampled_from(
                        [
                            ["audit", x],
                            ["check", x, "a.json"],
                            ["check", "b.json", x],
                            ["why", x, "c1"],
                            ["graph", x, "--out", "g.json"],
                            ["prove", x],
                            ["fuzz", x if x.endswith(".toml") else f"{x}:f"],
                            ["import", "claude-code", x],
                            ["import", "inspect", x],
                            ["import", "claude-code", str(HISTORIES / "claude-code" /
                             "session_compact.jsonl"), "--annotations", x],
                            ["audit", "t.jsonl", "--store", x],
                        ]
                    )
                )
                outputs = {"g.json"}
                store_may_change = False
            _run(folder, argv, outputs, patterns=patterns, store_may_change=store_may_change,
                 limit=60.0)
        finally:
            for sock in held:
                sock.close()


FUZZ = settings(
    deadline=None,
    # nested_given: `fuzz` draws its sessions with hypothesis, inside these cases
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.nested_given,
    ],
)


def _examples(n: int) -> settings:
    return settings(FUZZ, max_examples=n)


# about five hundred cases in all in the fast tier, each kind of mutation and command among
# them; audit and check take the most (two inputs, stores, repairs). The long tier below runs
# the same properties on 17,500 cases.


@_examples(150)
@given(st.data())
def test_audit_survives_bad_input(data: st.DataObject) -> None:
    _audit_case(data)


@_examples(150)
@given(st.data())
def test_check_survives_bad_input(data: st.DataObject) -> None:
    _check_case(data)


@_examples(100)
@given(st.data())
def test_why_survives_bad_input(data: st.DataObject) -> None:
    _why_case(data)


@_examples(100)
@given(st.data())
def test_graph_survives_bad_input(data: st.DataObject) -> None:
    _graph_case(data)


@_examples(100)
@given(st.data())
def test_import_survives_bad_input(data: st.DataObject) -> None:
    _import_case(data)


@pytest.mark.slow
@_examples(2500)
@given(st.data())
def test_import_survives_bad_input_long(data: st.DataObject) -> None:
    _import_case(data)


@pytest.mark.slow
@_examples(5000)
@given(st.data())
def test_audit_survives_bad_input_long(data: st.DataObject) -> None:
    _audit_case(data)


@pytest.mark.slow
@_examples(5000)
@given(st.data())
def test_check_survives_bad_input_long(data: st.DataObject) -> None:
    _check_case(data)


@pytest.mark.slow
@_examples(2500)
@given(st.data())
def test_why_survives_bad_input_long(data: st.DataObject) -> None:
    _why_case(data)


@pytest.mark.slow
@_examples(2500)
@given(st.data())
def test_graph_survives_bad_input_long(data: st.DataObject) -> None:
    _graph_case(data)


# -- the surfaces of issue 23: hostile policies and specs, archives, special files


@_examples(4)  # about 3 s a case (time limits run out): the long tier runs 400
@given(st.data())
def test_fuzz_survives_hostile_policies(data: st.DataObject) -> None:
    _policy_case(data)


@_examples(12)
@given(st.data())
def test_prove_and_fuzz_survive_hostile_specs(data: st.DataObject) -> None:
    _spec_case(data)


@_examples(20)
@given(st.data())
def test_import_survives_hostile_archives(data: st.DataObject) -> None:
    _archive_case(data)


@_examples(40)
@given(st.data())
def test_every_command_refuses_special_files(data: st.DataObject) -> None:
    _special_case(data)


@pytest.mark.slow
@_examples(400)
@given(st.data())
def test_fuzz_survives_hostile_policies_long(data: st.DataObject) -> None:
    _policy_case(data)


@pytest.mark.slow
@_examples(400)
@given(st.data())
def test_prove_and_fuzz_survive_hostile_specs_long(data: st.DataObject) -> None:
    _spec_case(data)


@pytest.mark.slow
@_examples(2000)
@given(st.data())
def test_import_survives_hostile_archives_long(data: st.DataObject) -> None:
    _archive_case(data)


@pytest.mark.slow
@_examples(600)
@given(st.data())
def test_every_command_refuses_special_files_long(data: st.DataObject) -> None:
    _special_case(data)
