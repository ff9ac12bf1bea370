"""Messages that point at the right command and at the likely typo (issue 24, frictions 3
and 4): did-you-mean for fields, kinds, formats, option values, item ids and file names (a
rule code mistyped in ``cex-CF01.jsonl``), and the command a file of another kind wants."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verifier.cli import main
from verifier.errors import InputError, did_you_mean
from verifier.policies import load_policy
from verifier.store import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
POLICY = "def raises(window, budget):\n    raise ValueError('no')\n"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "mypol.py"
    path.write_text(POLICY)
    return path


def test_prove_on_a_python_policy_says_to_fuzz_it(policy: Path) -> None:
    code, out, err = run("prove", "mypol.py")
    assert (code, out) == (2, "")
    assert "this is a Python policy, not a spec" in err
    assert "`ctxproof fuzz mypol.py:FUNCTION`" in err
    assert "TOML" in err and "not valid TOML" not in err
    code, _, err = run("prove", "mypol.py:raises")
    assert code == 2 and "`ctxproof fuzz mypol.py:raises`" in err and "No such file" not in err
    code, _, err = run("prove", "some_package.policies:compact")
    assert code == 2 and "`ctxproof fuzz some_package.policies:compact`" in err


def test_prove_on_a_spec_or_a_missing_toml_is_unchanged(policy: Path) -> None:
    spec = ROOT / "models" / "specs" / "spill_first.toml"
    code, out, _ = run("prove", str(spec), "--items", "2", "--passes", "1", "--format", "json")
    assert code == 0 and json.loads(out)["result"] == "proved"
    code, _, err = run("prove", "missing.toml")
    assert code == 2 and "cannot read" in err and "Python" not in err


def test_prove_on_a_window_a_trace_or_a_store_names_what_it_is(tmp_path: Path) -> None:
    window = tmp_path / "w.json"
    window.write_text(json.dumps({"format": "ctxproof-window/1", "items": []}))
    store = tmp_path / "s.sqlite"
    SqliteStore(store).close()
    for path, what, hint in [
        (window, "a window file (ctxproof-window/1)", "`ctxproof check BEFORE AFTER`"),
        (CORPUS / "cf001_fires.jsonl", "a trace (ctxproof-trace/1)", "`ctxproof audit TRACE`"),
        (store, "a SQLite store", "`--store FILE`"),
    ]:
        code, out, err = run("prove", str(path))
        assert (code, out) == (2, ""), err
        assert f"this is {what}, not a policy spec" in err and hint in err
        assert "not valid TOML" not in err and "invalid UTF-8" not in err
    # a TOML file that is no valid spec keeps its own message
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nformat = 3\n')
    code, _, err = run("prove", str(bad))
    assert code == 2 and "format" in err and "this is" not in err


def test_audit_of_a_python_file_or_a_history_names_the_command(policy: Path) -> None:
    code, _, err = run("audit", "mypol.py")
    assert code == 2
    assert "this is a Python file; `audit` reads traces" in err
    assert "`ctxproof fuzz mypol.py:FUNCTION`" in err
    history = ROOT / "tests" / "fixtures" / "histories" / "claude-code" / "session_compact.jsonl"
    code, _, err = run("audit", str(history))
    assert code == 2 and "an agent's history, a Claude Code session" in err
    assert f"`ctxproof import claude-code {history} -o TRACE.jsonl`" in err
    # a trace that is merely broken keeps its own message
    code, _, err = run("audit", str(CORPUS / "bad_unknown_event.jsonl"))
    assert code == 2 and "unknown event" in err and "import" not in err


def test_fuzz_names_what_its_argument_lacks(policy: Path) -> None:
    code, _, err = run("fuzz", "mypol.py")
    assert code == 2 and "names no function" in err and "mypol.py:FUNCTION" in err
    code, _, err = run("fuzz", "mypol.py:rasies")
    assert code == 2 and "did you mean 'raises'?" in err
    code, _, err = run("fuzz", str(CORPUS / "cf001_fires.jsonl"))
    assert code == 2 and "this is a trace, not a policy" in err and "`ctxproof audit`" in err


def test_what_a_policy_argument_is_is_told_from_its_first_bytes(tmp_path: Path) -> None:
    """Telling a trace from a store reads the head of the file named, not the whole file:
    a 200 MB file (sparse here) is read a few kilobytes, and a FIFO is not waited on."""
    import os
    import tracemalloc

    big = tmp_path / "big.jsonl"
    big.write_bytes(json.dumps({"event": "header", "format": "ctxproof-trace/1"}).encode() + b"\n")
    os.truncate(big, 200 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="this is a trace, not a policy"):
            load_policy(str(big))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 << 20
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, _, err = run("fuzz", str(fifo))
    assert code == 2 and "names no function" in err
    for folder in (tmp_path, Path("/")):  # a folder is no policy either, and no crash
        with pytest.raises(InputError, match="names no function"):
            load_policy(str(folder))


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (("import", "claud-code", "x.jsonl"), "'claude-code'"),
        (("audit", "--format", "jsn", "x.jsonl"), "'json'"),
        (("audit", "--witness-mode", "suport", "x.jsonl"), "'support'"),
    ],
)
def test_an_option_value_typo_is_named(argv: tuple[str, ...], meant: str) -> None:
    code, _, err = run(*argv)
    assert code == 2 and f"Did you mean {meant}?" in err


def test_an_option_value_far_from_every_choice_gets_the_list_only() -> None:
    code, _, err = run("audit", "--format", "xml", "x.jsonl")
    assert code == 2 and "is not one of 'text', 'json'" in err and "Did you mean" not in err


def test_a_mistyped_counterexample_path_names_the_file(tmp_path: Path) -> None:
    shutil.copy(CORPUS / "cf001_fires.jsonl", tmp_path / "cex-CF001.jsonl")
    shutil.copy(CORPUS / "cf004_fires.jsonl", tmp_path / "cex-CF004.jsonl")
    code, _, err = run("audit", str(tmp_path / "cex-CF01.jsonl"))
    assert code == 2 and f"did you mean '{tmp_path / 'cex-CF001.jsonl'}'?" in err
    code, _, err = run("audit", str(tmp_path / "nothing-like-it.jsonl"))
    assert code == 2 and "check the path" in err and "did you mean" not in err


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("nonexist.jsonl", None),  # shares an extension and letters with both: no typo
        ("missing.json", None),  # a part of 'id_missing.jsonl' is no typo of it
        ("lc_nne.json", "lc_none.json"),
        ("f_nonstr.jsnol", "f_nonstr.jsonl"),  # two letters swapped
        ("id_missing.json", "id_missing.jsonl"),
    ],
)
def test_a_missing_file_is_told_of_a_neighbour_only_an_edit_or_two_away(
    tmp_path: Path, given: str, meant: str | None
) -> None:
    for name in ("lc_none.json", "f_nonstr.jsonl", "id_missing.jsonl"):
        shutil.copy(CORPUS / "cf001_fires.jsonl", tmp_path / name)
    code, _, err = run("audit", str(tmp_path / given))
    assert code == 2
    if meant is None:
        assert "did you mean" not in err and "check the path" in err, err
    else:
        assert f"did you mean '{tmp_path / meant}'?" in err, err


def test_a_mistyped_field_and_item_are_named(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    header = {"event": "header", "format": "ctxproof-trace/1"}
    claim = {"id": "claim1", "kind": "claim", "modalty": "verified"}
    trace.write_text(json.dumps(header) + "\n" + json.dumps({"event": "append", "items": [claim]}))
    code, _, err = run("audit", str(trace))
    assert code == 2 and err.strip().endswith("unknown field 'modalty' for a claim; did you mean"
                                              " 'modality'?")
    del claim["modalty"]
    trace.write_text(json.dumps(header) + "\n" + json.dumps({"event": "append", "items": [claim]}))
    code, _, err = run("why", str(trace), "claim2")
    assert code == 2 and "did you mean 'claim1'?" in err
    code, _, err = run("ref", str(trace), "cliam1")
    assert code == 2 and "did you mean 'claim1'?" in err


_words = st.text("abcdefgh-_.", min_size=1, max_size=8)


@given(_words, st.lists(_words, max_size=6))
def test_did_you_mean_names_one_of_the_choices_or_none(word: str, choices: list[str]) -> None:
    meant = did_you_mean(word, choices)
    assert meant is None or (meant in choices and meant != word)
    if meant is not None and meant.casefold() != word.casefold():
        # the one closest choice: no other is as close
        assert did_you_mean(word, [c for c in choices if c != meant]) != meant


@given(_words)
def test_a_choice_in_another_case_is_meant(word: str) -> None:
    assert did_you_mean(word.upper(), [word, "zzzzzzzzzz"]) in (word, None)
    if word.upper() != word:
        assert did_you_mean(word.upper(), [word, "zzzzzzzzzz"]) == word


def test_two_equally_close_choices_mean_neither() -> None:
    assert did_you_mean("d2", ["d1", "o2"]) is None
    assert did_you_mean("d2", ["d1", "c1"]) == "d1"
    assert did_you_mean("modalty", ["modality", "text"]) == "modality"
    assert did_you_mean("zzz", ["commitment", "claim"]) is None
