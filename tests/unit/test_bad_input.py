"""Odd input is bad input (exit 2), never an internal error (exit 4).

JSON values of the wrong type where a name, an id or a list is expected, input
nested past the bound on any line (the header included), huge values quoted in
messages, and the line lookup for window files, which must stay linear and lean
however long an id is.
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from verifier.cli import main
from verifier.errors import InputError
from verifier.io import MAX_ID_LENGTH, _id_lines, parse_window_text

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
HEADER = '{"event":"header","format":"ctxproof-trace/1"}\n'

# values of every JSON type, and the shapes that broke hashing and comparisons
ODD_VALUES: list[Any] = [[], {}, [[]], [{}], {"a": []}, 0, -1, 1.5, True, None, "", "x" * 300]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def assert_bad_input(code: int, out: str, err: str, where: str = "") -> None:
    assert "Traceback" not in err and "internal error" not in err, err
    assert code == 2, err
    assert out == ""
    assert where in err


def argv_for(command: str, trace: str, tmp_path: Path) -> list[str]:
    if command == "why":
        return ["why", trace, "c1"]
    if command == "graph":
        return ["graph", trace, "--out", str(tmp_path / "g.json")]
    if command == "audit-jobs":
        return ["audit", trace, trace, "--jobs", "2"]
    return ["audit", trace]


COMMANDS = ["audit", "why", "graph", "audit-jobs"]


# ------------------------------------------------------------ unhashable names


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("event", ["[]", "{}", '["append"]', '{"append": 1}'])
def test_an_event_name_that_is_a_list_or_object_is_bad_input(
    tmp_path: Path, command: str, event: str
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(HEADER + '{"event":' + event + "}\n", "utf-8")
    code, out, err = run(*argv_for(command, str(trace), tmp_path))
    assert_bad_input(code, out, err, f"{trace}:2: unknown event")
    assert not (tmp_path / "g.json").exists()


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("first", ["[" * 1000, '{"a":' * 1000, "[" * 100_000])
def test_a_first_line_nested_too_deep_is_bad_input(
    tmp_path: Path, command: str, first: str
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(first + "\n", "utf-8")
    code, out, err = run(*argv_for(command, str(trace), tmp_path))
    assert_bad_input(code, out, err, f"{trace}:1: JSON nests deeper than")


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside obj (object keys and list indexes)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


def _replaced(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    copy = json.loads(json.dumps(obj))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return copy


# traces that between them hold every event and every field of every kind
RICH = [
    "cf001_diff_fires.jsonl",
    "cf004_fires.jsonl",
    "cf007_fires.jsonl",
    "cp001_fires.jsonl",
    "cp003_store_fires.jsonl",
    "wr001_fires.jsonl",
    "wr006_fires.jsonl",
]


def _swaps(name: str) -> Iterator[tuple[int, tuple[Any, ...]]]:
    lines = (CORPUS / name).read_text("utf-8").splitlines()
    for n, line in enumerate(lines):
        for path in _paths(json.loads(line)):
            yield n, path


@pytest.mark.parametrize("name", [n for n in RICH if (CORPUS / n).exists()])
def test_every_value_swapped_for_every_json_type_is_never_an_internal_error(
    tmp_path: Path, name: str
) -> None:
    lines = (CORPUS / name).read_text("utf-8").splitlines()
    trace = tmp_path / "t.jsonl"
    seen = 0
    for n, path in _swaps(name):
        for value in ODD_VALUES:
            changed = list(lines)
            changed[n] = json.dumps(_replaced(json.loads(lines[n]), path, value))
            trace.write_text("\n".join(changed) + "\n", "utf-8")
            code, _, err = run("audit", str(trace))
            assert code in (0, 1, 2, 3), (path, value, err)
            assert "internal error" not in err and "Traceback" not in err, (n, path, value, err)
            seen += 1
    assert seen > 100


def _window(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": "ctxproof-window/1", "background": ["a -> b"], "items": items}


WINDOW = _window(
    [
        {"id": "o1", "kind": "observation", "shows": "a", "modality": "verified", "source": "t"},
        {"id": "c1", "kind": "claim", "formula": "a", "witnesses": ["o1"], "derived_from": ["o1"]},
        {"id": "d1", "kind": "commitment", "type": "decision", "rationale": ["c1"], "covers": []},
        {"id": "p1", "kind": "prose", "call": "o1", "text": "x", "tokens": 3, "score": 5},
        {"id": "s1", "kind": "stub", "ref": "sha256:" + "0" * 64},
    ]
)


def test_every_value_of_a_window_file_swapped_is_never_an_internal_error(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(WINDOW), "utf-8")
    bad = tmp_path / "bad.json"
    for path in _paths(WINDOW):
        for value in ODD_VALUES:
            bad.write_text(json.dumps(_replaced(WINDOW, path, value)), "utf-8")
            for argv in (["check", str(good), str(bad)], ["check", str(bad), str(good)]):
                code, _, err = run(*argv, "--claimed", "o1")
                assert code in (0, 1, 2, 3), (path, value, err)
                assert "internal error" not in err, (path, value, err)


# ------------------------------------------------------------ huge values in messages


@pytest.mark.parametrize("field", ["kind", "modality", "type", "event", "format"])
def test_a_huge_value_is_quoted_short(tmp_path: Path, field: str) -> None:
    huge = "k" * 1_000_000
    if field in ("event", "format"):
        header = {"event": "header", "format": "ctxproof-trace/1", field: huge}
        text = json.dumps(header) + "\n"
    else:
        item = {"id": "c1", "kind": "commitment", "type": "decision", field: huge}
        text = HEADER + json.dumps({"event": "append", "items": [item]}) + "\n"
    trace = tmp_path / "t.jsonl"
    trace.write_text(text, "utf-8")
    code, out, err = run("audit", str(trace))
    assert_bad_input(code, out, err)
    assert len(err) < 1000


def test_a_reference_to_a_huge_unknown_id_is_quoted_short(tmp_path: Path) -> None:
    item = {"id": "c1", "kind": "claim", "derived_from": ["r" * 1_000_000]}
    trace = tmp_path / "t.jsonl"
    trace.write_text(HEADER + json.dumps({"event": "append", "items": [item]}) + "\n", "utf-8")
    code, out, err = run("audit", str(trace))
    assert_bad_input(code, out, err, "which no event defines")
    assert len(err) < 1000


# ------------------------------------------------------------ header store paths


@pytest.mark.parametrize("store", ["a\u0000b", "x" * 5000, "", ".", "/"])
def test_a_header_store_that_is_no_usable_path_is_bad_input(tmp_path: Path, store: str) -> None:
    trace = tmp_path / "t.jsonl"
    header = {"event": "header", "format": "ctxproof-trace/1", "store": store}
    trace.write_text(json.dumps(header) + "\n", "utf-8")
    code, out, err = run("audit", str(trace))
    assert "internal error" not in err and code == 2 and out == "", err
    assert len(err) < 1000


# ------------------------------------------------------------ files that are not files


def _cli_in_child(*argv: str, memory: int = 768 << 20) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process with a memory cap and a time limit: what hangs or reads
    without end fails the test instead of stopping it."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run(
        [sys.executable, "-m", "verifier", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=cap,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "{fifo}"],
        ["audit", "/dev/zero"],
        ["check", "/dev/zero", "{fifo}"],
        ["why", "{fifo}", "x"],
        ["graph", "/dev/zero", "--out", "{tmp}/g.json"],
        ["prove", "{fifo}"],
        ["fuzz", "{fifo}.toml"],
        ["import", "claude-code", "/dev/zero"],
    ],
)
def test_a_pipe_or_a_device_is_refused_before_anything_is_read(
    tmp_path: Path, argv: list[str]
) -> None:
    """Issue 23, item 8: audit /dev/zero read 2.1 GB before exit 2; a FIFO with no
    writer blocked for ever."""
    fifo = tmp_path / "input"
    os.mkfifo(fifo)
    os.mkfifo(f"{fifo}.toml")
    args = [a.format(fifo=fifo, tmp=tmp_path) for a in argv]
    started = time.perf_counter()
    proc = _cli_in_child(*args)
    assert proc.returncode == 2, proc.stderr
    assert time.perf_counter() - started < 60
    assert "not a regular file" in proc.stderr, proc.stderr
    assert "FIFO" in proc.stderr or "character device" in proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_a_folder_given_as_a_spec_is_refused_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "spec.toml"
    folder.mkdir()
    code, out, err = run("fuzz", str(folder))
    assert code == 2 and out == ""
    assert "is a folder, not a regular file" in err


def test_a_regular_file_reached_through_a_link_is_read(tmp_path: Path) -> None:
    link = tmp_path / "trace.jsonl"
    link.symlink_to(CORPUS / "cf001_fires.jsonl")
    code, out, err = run("audit", str(link), "--format", "json")
    assert code == 1, err
    assert json.loads(out)["findings"][0]["code"] == "CF001"


# ------------------------------------------------------------ window line lookup


def test_id_lines_finds_the_first_line_of_each_id() -> None:
    text = (
        '{"items": [\n'
        ' {"id": "a", "kind": "prose"},\n'
        ' {"id" :\n  "b\\"q\\\\", "text": "the \\"id\\": \\"z\\""},\n'
        ' {"id": "a"},\n'
        ' {"id": "\\u00e9t\\u00e9"}, {"id": 5}, {"id": "' + "L" * (MAX_ID_LENGTH * 20) + '"}\n'
        "]}"
    )
    assert _id_lines(text) == {"a": 2, 'b"q\\': 3, "été": 6}


def test_id_lines_handles_an_unterminated_string() -> None:
    assert _id_lines('{"id": "a"}\n{"id": "b\\"') == {"a": 1}


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    yield
    tracemalloc.stop()


def test_a_ten_megabyte_id_costs_little_memory_and_time(traced: None) -> None:
    long_id = "i" * 10_000_000
    text = json.dumps(_window([{"id": "ok", "kind": "prose"}, {"id": long_id, "kind": "prose"}]))
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    lines = _id_lines(text)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] - base
    assert lines == {"ok": 1}  # the overlong id is not kept
    assert peak < 1_000_000, peak  # the old regex scan took ~140 bytes a character
    assert elapsed < 5
    tracemalloc.reset_peak()
    with pytest.raises(InputError, match="is 10000000 characters long, over 256"):
        parse_window_text(text, "w.json")
    peak = tracemalloc.get_traced_memory()[1] - base
    assert peak < 120_000_000, peak  # the text, its parse, and little more


def test_a_valid_window_never_looks_up_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    import verifier.io as vio

    def boom(_text: str) -> dict[str, int]:
        raise AssertionError("line lookup on the success path")

    monkeypatch.setattr(vio, "_id_lines", boom)
    window = parse_window_text(json.dumps(WINDOW), "w.json")
    assert [it.id for it in window.items] == ["o1", "c1", "d1", "p1", "s1"]


def test_a_bad_item_of_a_window_is_reported_on_its_line() -> None:
    text = (
        '{"format": "ctxproof-window/1", "items": [\n'
        '{"id": "a", "kind": "prose"},\n{"id": "b", "kind": "nope"}\n]}'
    )
    with pytest.raises(InputError) as caught:
        parse_window_text(text, "w.json")
    assert (caught.value.line, caught.value.item) == (3, "b")
    dup = text.replace('"b", "kind": "nope"', '"a", "kind": "prose"')
    with pytest.raises(InputError, match="twice") as caught:
        parse_window_text(dup, "w.json")
    assert caught.value.line == 2


def test_the_first_key_written_twice_is_the_one_named() -> None:
    """Keys repeat in the order they are read: the first repeat is named, whichever
    key was written first."""
    from verifier.io import _Ctx, _loads

    with pytest.raises(InputError, match="duplicate key 'b' in one JSON object"):
        _loads('{"a": 1, "b": 2, "b": 3, "a": 4}', _Ctx("w.json", 1))
    assert _loads('{"a": 1, "b": {"a": 2}}', _Ctx("w.json", 1)) == {"a": 1, "b": {"a": 2}}
    # an item's object: the message names the item by its id (its first, when "id" is the
    # key written twice)
    with pytest.raises(InputError) as caught:
        _loads('{"id": "c1", "kind": "prose", "kind": "claim"}', _Ctx("t.jsonl", 2))
    assert caught.value.item == "c1" and "duplicate key 'kind'" in caught.value.render()
    with pytest.raises(InputError) as caught:
        _loads('{"id": "c1", "id": "c2"}', _Ctx("t.jsonl", 2))
    assert caught.value.item == "c1"


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (['{"items": []}'], 'the line has no "event"'),
        (['{"event": null}'], "unknown event null"),
        (['{"event": "append", "items": [{"id": "x", "kind": null}]}'], "unknown kind null"),
        (['{"event": "append", "items": [{"id": "x"}]}'], 'the item has no "kind"'),
        (['{"event": "append", "items": [], "x": 1}'], "in an append event"),
        (
            ['{"event": "append", "items": [{"id": "o", "kind": "observation", "x": 1}]}'],
            "for an observation",
        ),
        (['{"event": "append", "items": [{"kind": "prose"}]}'], 'an item has no "id"'),
        (['{"event": "append", "items": [{"id": "", "kind": "prose"}]}'], "id is empty"),
        (
            ['{"event": "append", "items": [{"id": 7, "kind": "prose"}]}'],
            "item id 7 is not a string",
        ),
        (
            [json.dumps({"event": "append", "items": [{"id": "i" * 300, "kind": "prose"}]})],
            "is 300 characters long, over 256",
        ),
    ],
)
def test_a_message_says_what_is_missing_or_wrong_in_words(
    tmp_path: Path, lines: list[str], said: str
) -> None:
    """A missing key is said to be missing, a JSON null is written null (never Python's
    None), and an id's problem is named (missing, not a string, empty, too long)."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(HEADER + "\n".join(lines) + "\n", "utf-8")
    code, out, err = run("audit", str(trace))
    assert_bad_input(code, out, err, said)
    assert "None" not in err and f"{trace}:2:" in err


def test_a_window_or_header_without_format_says_so(tmp_path: Path) -> None:
    window = tmp_path / "w.json"
    window.write_text('{"items": []}', "utf-8")
    assert_bad_input(*run("check", str(window), str(window)), 'the window file has no "format"')
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"event": "header", "format": null}\n', "utf-8")
    assert_bad_input(*run("audit", str(trace)), "the header format is null")


def test_a_header_store_that_is_no_store_is_named_at_the_header(tmp_path: Path) -> None:
    (tmp_path / "garbage.sqlite").write_bytes(b"not a database" * 100)
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"event":"header","format":"ctxproof-trace/1","store":"garbage.sqlite"}\n')
    code, out, err = run("audit", str(trace))
    assert_bad_input(code, out, err, f"{trace}:1: header names store 'garbage.sqlite'")
    assert "not a SQLite file" in err


@pytest.mark.parametrize(
    "option",
    [("audit", "--store", ".sqlite"), ("audit", "--report", ""), ("import", "--extract", ".py:f")],
)
def test_a_path_the_system_refuses_is_bad_input_naming_it(
    tmp_path: Path, option: tuple[str, str, str]
) -> None:
    """A name too long for the file system is the path's fault: exit 2 naming it."""
    command, flag, suffix = option
    long_name = str(tmp_path / ("x" * 300 + suffix))
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"event": "header", "format": "ctxproof-trace/1"}\n'
        '{"event": "append", "items": [{"id": "p", "kind": "prose", "text": "hi"}]}\n'
    )
    session = tmp_path / "s.json"
    session.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    first = ["audit", str(trace)] if command == "audit" else ["import", "openai", str(session)]
    code, _, err = run(*first, flag, long_name)
    assert code == 2 and "internal error" not in err and "Traceback" not in err, err
    assert "x" * 300 in err and "too long" in err


def test_a_policy_path_the_system_refuses_is_bad_input(tmp_path: Path) -> None:
    policy = str(tmp_path / ("x" * 300 + ".py")) + ":f"
    code, _, err = run("fuzz", policy, "--sessions", "1", "--out", str(tmp_path / "o"))
    assert code == 2 and "Traceback" not in err and "cannot be read: File name too long" in err


def test_a_file_named_with_a_newline_is_one_line_of_error(tmp_path: Path) -> None:
    path = tmp_path / "bad\nctxproof: fake.jsonl:1: ok.jsonl"
    path.write_text(
        '{"event": "header", "format": "ctxproof-trace/1"}\n'
        '{"event": "append", "items": [{"id": "x", "kind": "note"}]}\n'
    )
    code, out, err = run("audit", str(path))
    assert_bad_input(code, out, err)
    assert err.count("\n") == 1 and "bad\\nctxproof: fake.jsonl:1: ok.jsonl:2: item 'x'" in err
