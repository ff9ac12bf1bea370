"""The Python API on plain data (issue points 1, 2, 10 and 13): dicts in, refs and stubs
out, items that cannot hash to a ref the store never got, a command that prints a ref,
and a clear message for a file of the wrong kind."""

from __future__ import annotations

import io
import json
from importlib.metadata import version
from pathlib import Path

import pytest

import verifier
from verifier import (
    InputError,
    Item,
    MemoryStore,
    check_rewrite,
    guard,
    item_from_json,
    ref_of,
    stub_for,
    trace_from_dicts,
    window_from_dicts,
)
from verifier.cli import main
from verifier.store import SqliteStore

ROOT = Path(__file__).resolve().parents[2]

REJ = {"id": "r1", "kind": "commitment", "type": "rejection", "formula": "!db.mysql",
       "text": "MySQL rejected: no advisory locks"}
DEC = {"id": "d1", "kind": "commitment", "type": "decision", "formula": "db.postgres"}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_version_is_the_installed_one() -> None:
    assert verifier.__version__ == version("ctxproof")
    assert "__version__" in verifier.__all__


def test_window_from_dicts_validates_and_checks() -> None:
    before = window_from_dicts([DEC, REJ], ["db.postgres -> !db.mysql"])
    assert before.background == ("db.postgres -> !db.mysql",)
    assert [it.id for it in before] == ["d1", "r1"]
    result = check_rewrite(before, window_from_dicts([DEC]))
    assert result.verdict == "refuse"
    assert [f.code for f in result.findings] == ["CF001"]
    with pytest.raises(InputError, match="id appears twice"):
        window_from_dicts([DEC, DEC])
    with pytest.raises(InputError, match="unknown kind"):
        window_from_dicts([{"id": "x", "kind": "thought"}])
    with pytest.raises(TypeError, match="background must be a list of formula strings"):
        window_from_dicts([DEC], "db.postgres")


def test_trace_from_dicts_is_a_trace() -> None:
    trace = trace_from_dicts([
        {"event": "header", "format": "ctxproof-trace/1"},
        {"event": "append", "items": [DEC, REJ]},
        {"event": "rewrite", "policy": "p", "window": [DEC]},
    ])
    report = verifier.audit_trace(trace)
    assert [f.code for f in report.findings] == ["CF001"]
    assert report.findings[0].line == 3
    with pytest.raises(InputError, match="not plain JSON"):
        trace_from_dicts([{"event": "header", "format": "ctxproof-trace/1", "budget": {1}}])


def test_an_item_cannot_be_built_with_a_wrong_raw() -> None:
    with pytest.raises(ValueError, match="item_from_json"):
        Item("c1", "commitment", raw="", type="decision")
    with pytest.raises(ValueError, match="another id or kind"):
        Item("c1", "commitment", raw='{"id":"c2","kind":"commitment"}')
    with pytest.raises(ValueError, match="canonical"):
        Item("c1", "prose", raw='{"kind": "prose", "id": "c1"}')
    good = item_from_json({"id": "c1", "kind": "prose"})
    assert Item("c1", "prose", raw=good.raw).ref == ref_of({"id": "c1", "kind": "prose"})


def test_guard_says_what_it_returned_and_spills_what_it_says() -> None:
    store = MemoryStore()
    g = guard([DEC, REJ], [DEC], store)
    assert g.verdict == "repaired"
    assert g.result.verdict == "refuse"  # the rewrite as given
    assert g.spilled == ("r1",)  # ids, as the CLI lists them
    assert g.spilled_refs == (ref_of(REJ),)
    assert all(ref in store for ref in g.spilled_refs)
    assert [it.as_json() for it in g.window] == [DEC, stub_for(REJ)]
    # the returned window, checked again against the store, is accepted
    assert check_rewrite([DEC, REJ], g.window, store=store).verdict == "accept"
    kept = guard([DEC], [DEC], MemoryStore())
    assert (kept.verdict, kept.spilled, kept.repaired) == ("accept", (), False)


def test_a_stub_with_a_hand_made_ref_is_caught_and_ref_of_is_right() -> None:
    """Issue point 2: json.dumps(sort_keys=True) is not canonical JSON (it puts spaces)."""
    store = MemoryStore()
    store.spill([item_from_json(REJ)])
    wrong = "sha256:" + __import__("hashlib").sha256(
        json.dumps(REJ, sort_keys=True).encode()).hexdigest()
    assert wrong != ref_of(REJ)
    bad = check_rewrite([DEC, REJ], [DEC, {"id": "r1", "kind": "stub", "ref": wrong}],
                        store=store)
    assert [f.code for f in bad.findings] == ["WR006"]
    good = check_rewrite([DEC, REJ], [DEC, stub_for(REJ)], store=store)
    assert good.verdict == "accept"


def test_ref_command_prints_the_ref_of_a_window_item_and_a_trace_item(tmp_path: Path) -> None:
    window = tmp_path / "w.json"
    window.write_text(json.dumps({"format": "ctxproof-window/1", "items": [DEC, REJ]}))
    code, out, _ = run("ref", str(window), "r1")
    assert (code, out) == (0, ref_of(REJ) + "\n")
    trace = tmp_path / "t.jsonl"
    changed = {**REJ, "text": "reworded"}
    trace.write_text("\n".join(json.dumps(e) for e in [
        {"event": "header", "format": "ctxproof-trace/1"},
        {"event": "append", "items": [DEC, REJ]},
        {"event": "rewrite", "window": [DEC, changed]},
    ]) + "\n")
    code, out, _ = run("ref", str(trace), "r1", "--format", "json")
    got = json.loads(out)
    assert code == 0
    assert got["ref"] == ref_of(changed) and got["line"] == 3
    assert got["stub"] == stub_for(changed)
    # a stub stands for its item: its ref is the stub's own 'ref'
    spilled = ROOT / "models" / "scenarios" / "postgres_spilled_first.jsonl"
    code, out, _ = run("ref", str(spilled), "why1")
    assert out.strip() == "sha256:de7c06deb1782d14e45a7094d67e0adf8acd2e39ccff39bebb3077d04c4226fe"
    code, _, err = run("ref", str(window), "nope")
    assert code == 2 and "no item 'nope'" in err


def test_a_window_given_to_audit_says_so(tmp_path: Path) -> None:
    window = tmp_path / "w.json"
    window.write_text(json.dumps({"format": "ctxproof-window/1", "items": [DEC]}, indent=2))
    code, out, err = run("audit", str(window))
    assert code == 2 and out == ""
    assert "this is a window file" in err and "`audit` reads traces" in err
    assert "did you mean `check`?" in err
    code, _, err = run("why", str(window), "d1")
    assert code == 2 and "`why` reads traces" in err


def test_a_large_window_given_to_audit_says_so(tmp_path: Path) -> None:
    # longer than what is read to tell a file's kind, written with a line per item: it
    # parses neither whole nor by its first line, but its first members say what it is
    from verifier.io import SNIFF_BYTES, sniff_kind

    items = [{**DEC, "id": f"d{i}", "text": "x" * 200} for i in range(SNIFF_BYTES // 200)]
    head = '{"format": "ctxproof-window/1", "background": [], "items": [\n'
    text = head + ",\n".join(json.dumps(it) for it in items) + "\n]}\n"
    assert len(text) > SNIFF_BYTES
    window = tmp_path / "w.json"
    window.write_text(text, "utf-8")
    assert sniff_kind(window.read_bytes()) == "window"
    code, out, err = run("audit", str(window))
    assert code == 2 and out == ""
    assert "this is a window file" in err and "did you mean `check`?" in err
    assert "malformed JSON" not in err
    # the items first, cut short before the format: the open 'items' says so still
    assert sniff_kind('{"items": [{"id": "d1", "kind": "comm') == "window"
    # a JSON object that is neither: nothing is claimed of it
    assert sniff_kind('{"messages": [{"role": "user", "content": "hi') is None


def test_a_trace_given_to_check_says_so(tmp_path: Path) -> None:
    trace = ROOT / "tests" / "corpus" / "cf001_fires.jsonl"
    window = tmp_path / "w.json"
    window.write_text(json.dumps({"format": "ctxproof-window/1", "items": [DEC]}))
    code, out, err = run("check", str(trace), str(window))
    assert code == 2 and out == ""
    assert "this is a trace" in err and "did you mean `audit`?" in err
    assert "unknown field" not in err


def test_a_store_given_as_a_trace_says_so(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    SqliteStore(db).close()
    code, _, err = run("audit", str(db))
    assert code == 2 and "this is a SQLite store" in err and "--store" in err


def test_a_malformed_trace_keeps_its_own_message(tmp_path: Path) -> None:
    bad = ROOT / "tests" / "corpus" / "bad_unknown_field.jsonl"
    code, _, err = run("audit", str(bad))
    assert code == 2 and "unknown field" in err and "did you mean" not in err
