"""--cross-check cvc5: every query asked of a second solver; a disagreement is loud."""

from __future__ import annotations

import builtins
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from verifier import crosscheck
from verifier.audit import audit_trace
from verifier.cli import main
from verifier.io import load_trace, parse_trace_text
from verifier.solver import Session
from verifier.strategies import traces

pytest.importorskip("cvc5", reason="the cvc5 extra is not installed")

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
EXPECTED: dict[str, Any] = json.loads((CORPUS / "EXPECTED.json").read_text("utf-8"))
CASES = sorted(c for c, spec in EXPECTED.items() if spec["exit"] != 2)


def _path(case: str) -> Path:
    return ROOT / case if case.startswith("models/") else CORPUS / case


def _summary(case: str) -> list[tuple[str, int, tuple[str, ...], str]]:
    mode = EXPECTED[case].get("witness_mode", "support")
    report = audit_trace(load_trace(_path(case)), mode=mode)
    return [(f.code, f.pass_, f.items, f.message) for f in report.findings] + [
        ("verdict", r.pass_, (), r.verdict) for r in report.rewrites
    ]


def test_the_corpus_gives_the_same_results_with_both_solvers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = {case: _summary(case) for case in CASES}
    monkeypatch.setenv(crosscheck.ENV, "cvc5")
    asked = [0]
    real = crosscheck.answer

    def counting(formulas: Any) -> str:
        asked[0] += 1
        return real(formulas)

    monkeypatch.setattr(crosscheck, "answer", counting)
    checked = {case: _summary(case) for case in CASES}
    assert checked == plain
    assert asked[0] > 100  # the queries really went to cvc5


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(max_events=6))
def test_generated_traces_agree(text: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(crosscheck.ENV, "cvc5")
        audit_trace(parse_trace_text(text, "t"))  # an InternalError would fail the test


def test_a_disagreement_is_an_internal_error_naming_the_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(crosscheck.ENV, "cvc5")
    real = crosscheck.answer
    monkeypatch.setattr(
        crosscheck, "answer", lambda fs: {"sat": "unsat", "unsat": "sat"}[real(fs)]
    )
    out, err = io.StringIO(), io.StringIO()
    case = CORPUS / "cf005_fires.jsonl"
    code = main(["audit", str(case)], stdout=out, stderr=err)
    assert code == 4
    assert "the solvers disagree on query" in err.getvalue()
    assert "ctxproof-disagreement-" in err.getvalue()


def test_without_the_extra_the_cross_check_is_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_cvc5(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "cvc5":
            raise ImportError("no cvc5")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cvc5)
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["audit", str(CORPUS / "cf005_fires.jsonl"), "--cross-check", "cvc5"],
        stdout=out,
        stderr=err,
    )
    assert code == 2
    assert "pip install 'ctxproof[cvc5]'" in err.getvalue()


def test_an_unknown_second_solver_is_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(crosscheck.ENV, "yices")
    with pytest.raises(ValueError, match="only second solver is 'cvc5'"):
        Session()
