"""Bad-input fuzzing of the command line: broken input is exit 2, never a crash.

Hypothesis mutates the corpus traces (``tests/corpus/*.jsonl``), window files
built from them, and a store file: byte flips, truncation, inserted bytes
(invalid UTF-8, NUL, a byte order mark), JSON values swapped for values of
another type, deep nesting, huge strings and lists, Unicode edge cases (lone
surrogates, NUL, non-characters, combining marks, bidi controls), references
to ids that nothing defines, keys nobody asked for, lines duplicated, dropped
or swapped; and the real-shaped agent histories of ``tests/fixtures/histories``
the same way for ``import``. ``check``, ``audit``, ``why``, ``graph`` and
``import`` run in-process through
:func:`verifier.cli.main`, each in a fresh folder, and every run must:

* exit 0, 1, 2 or 3 (4 is an internal error), with no traceback and no
  "internal error" on stderr, and print nothing on stdout when it exits 2;
* stay under a memory cap (Python allocations, measured with tracemalloc);
* write no file but the output it was asked for, change no input, and leave
  no ``-wal``/``-shm`` file beside a store it only read.

The default run is about five hundred cases; the ``slow`` tests (``make
test-slow``) run the same properties on 17,500.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import resource
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifier.cli import main
from verifier.io import item_from_json
from verifier.store import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
TRACES: dict[str, bytes] = {p.name: p.read_bytes() for p in sorted(CORPUS.glob("*.jsonl"))}

# Python allocations one command may make beyond what it held before it ran. The
# largest input a case builds is a few megabytes; a command holds a few copies of it.
MEMORY_CAP = 256 * 1024 * 1024
# Growth of the process's peak resident size in one command (z3 and SQLite
# allocate outside Python, where tracemalloc does not see).
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


def _run(
    folder: Path, argv: list[str], outputs: set[str], *, store_may_change: bool = False
) -> None:
    before = _snapshot(folder)
    out, err = io.StringIO(), io.StringIO()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code = main(argv, stdout=out, stderr=err)
    peak = tracemalloc.get_traced_memory()[1] - base
    rss_grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss
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
    assert changed <= allowed, (argv, changed - allowed)
    assert not [p for p in after if p.endswith(("-wal", "-shm", "-journal", ".tmp"))], (argv, after)


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


FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
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
