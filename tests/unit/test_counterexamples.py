"""Counterexamples a person can read (issue point 7): restricted to the atoms of the
question, the same for every rule about one item, and each one really falsifies the
entailment it refutes (evaluated here in plain Python, from the printed output)."""

from __future__ import annotations

import io
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from verifier.cli import main
from verifier.findings import cause_item
from verifier.formula import atoms, evaluate
from verifier.parser import parse_formula

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
EXPECTED = json.loads((CORPUS / "EXPECTED.json").read_text("utf-8"))
CASES = sorted(
    [str(p.relative_to(ROOT)) for p in CORPUS.glob("*.jsonl") if not p.name.startswith("bad_")]
    + [str(p.relative_to(ROOT)) for p in (ROOT / "models" / "scenarios").glob("*.jsonl")]
)

LAUNDERED = [
    {"event": "header", "format": "ctxproof-trace/1",
     "background": ["pip.fail -> !pip.ok", "db.postgres -> !db.mysql"]},
    {"event": "append", "items": [{"id": "o1", "kind": "observation", "source": "pip install x",
                                   "exit_code": 1, "modality": "failed", "shows": "pip.fail"}]},
    {"event": "append", "items": [{"id": "k1", "kind": "claim", "formula": "pip.fail",
                                   "modality": "failed", "witnesses": ["o1"],
                                   "load_bearing": True}]},
    {"event": "append", "items": [{"id": "d1", "kind": "commitment", "type": "decision",
                                   "formula": "db.postgres"}]},
    {"event": "rewrite", "policy": "summarize-v1", "window": [
        {"id": "d1", "kind": "commitment", "type": "decision", "formula": "db.postgres"},
        {"id": "k1", "kind": "claim", "formula": "pip.ok", "modality": "verified",
         "witnesses": ["o1"], "load_bearing": True}], "claimed_preserved": ["k1"]},
]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        code = main(list(argv), stdout=out, stderr=err)
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


def _question_atoms(refutes: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for text in [*refutes["background"], *refutes["premises"], refutes["goal"]]:
        names |= atoms(parse_formula(text))
    return names


def _check_trace(path: str) -> int:
    """Every counterexample of the trace's audit falsifies what it refutes; returns how
    many were checked."""
    mode = EXPECTED.get(Path(path).name, {}).get("witness_mode", "support")
    _, out, _ = run("audit", path, "--format", "json", "--witness-mode", mode)
    result = json.loads(out)
    header = json.loads(Path(ROOT / path).read_text("utf-8").splitlines()[0])
    background = [parse_formula(b) for b in header.get("background", [])]
    groups: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for f in result["findings"]:
        if "refutes" in f:
            key = (f["pass"], f["line"], cause_item(f["code"], f["items"]))
            groups[key] |= _question_atoms(f["refutes"])
    checked = 0
    for f in result["findings"]:
        cex = f.get("counterexample")
        if cex is None:
            continue
        refutes = f["refutes"]
        # a total assignment of the question's atoms
        assert _question_atoms(refutes) <= set(cex), f
        # no atom beyond the questions asked of this item at this event
        key = (f["pass"], f["line"], cause_item(f["code"], f["items"]))
        assert set(cex) <= groups[key], f
        # the background it names is every background formula that touches those atoms
        touching = [b for b in background if atoms(b) & set(cex)]
        assert sorted(map(str, touching)) == sorted(
            str(parse_formula(b)) for b in refutes["background"]
        )
        for text in refutes["background"] + refutes["premises"]:
            assert evaluate(parse_formula(text), cex), (f, text)
        assert not evaluate(parse_formula(refutes["goal"]), cex), f
        checked += 1
    return checked


@pytest.mark.parametrize("case", CASES)
def test_every_printed_counterexample_falsifies_what_it_refutes(case: str) -> None:
    _check_trace(case)


def test_the_corpus_has_counterexamples_to_check() -> None:
    assert sum(_check_trace(c) for c in CASES) >= 10


def test_text_and_json_print_the_same_counterexamples() -> None:
    for case in CASES:
        _, text, _ = run("audit", case)
        _, out, _ = run("audit", case, "--format", "json")
        for f in json.loads(out)["findings"]:
            if "counterexample" in f and "related_to" not in f:
                pairs = sorted(f["counterexample"].items())
                shown = ", ".join(f"{k}={'true' if v else 'false'}" for k, v in pairs)
                assert f"(counterexample: {shown})" in text


def test_a_laundered_claim_gets_one_counterexample_over_its_own_atoms(tmp_path: Path) -> None:
    trace = tmp_path / "laundered.jsonl"
    trace.write_text("\n".join(json.dumps(e) for e in LAUNDERED) + "\n")
    assert _check_trace(str(trace)) == 3
    _, out, _ = run("audit", str(trace), "--format", "json")
    on_k1 = {f["code"]: f.get("counterexample") for f in json.loads(out)["findings"]
             if f["items"][0] == "k1" and "counterexample" in f}
    assert set(on_k1) == {"CF002", "CF005", "WR005"}
    assert all(c == {"pip.fail": True, "pip.ok": False} for c in on_k1.values()), on_k1
