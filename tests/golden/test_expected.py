"""Each rule has a trace that fires it and one that must not (tests/corpus/EXPECTED.json)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from verifier.audit import audit_trace
from verifier.errors import InputError
from verifier.findings import POLICY_RULES, RULES
from verifier.io import load_trace

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
EXPECTED: dict[str, dict[str, Any]] = json.loads((CORPUS / "EXPECTED.json").read_text("utf-8"))


def _path(case: str) -> Path:
    return ROOT / case if case.startswith("models/") else CORPUS / case


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_corpus_verdicts(case: str) -> None:
    spec = EXPECTED[case]
    if spec["exit"] == 2:
        with pytest.raises(InputError):
            load_trace(_path(case))
        return
    report = audit_trace(load_trace(_path(case)), mode=spec.get("witness_mode", "support"))
    codes = {f.code for f in report.findings}
    # must_fire lists every finding expected of its codes, as a multiset: a
    # finding reported twice, or one more of an expected code, is a failure
    expected_codes = {code for code, *_ in spec.get("must_fire", [])}
    found = Counter(
        (f.code, f.pass_, f.line, tuple(f.items))
        for f in report.findings
        if f.code in expected_codes
    )
    wanted = Counter(
        (code, pass_no, line, tuple(items))
        for code, pass_no, line, items in spec.get("must_fire", [])
    )
    assert found == wanted, (sorted(wanted.elements()), sorted(found.elements()))
    for code in spec.get("must_not_fire", []):
        assert code not in codes, [f for f in report.findings if f.code == code]
    if "verdicts" in spec:
        assert [r.verdict for r in report.rewrites] == spec["verdicts"]
    # the appends whose questions could not be settled, by line; every other append is
    # decided (a vacuous question is never silent)
    lines = sorted({int(u.split(":")[0].removeprefix("line ")) for u in report.undecided})
    assert lines == spec["undecided_appends"]
    if "repairs" in spec:
        # every refused or undecided rewrite's repair: its verdict and what it did
        repairs = [
            [r.pass_, r.repair.verdict, list(r.repair.actions)]
            for r in report.rewrites
            if r.repair is not None
        ]
        assert repairs == spec["repairs"]
    assert report.exit_code == spec["exit"]


def test_every_rule_has_a_firing_and_a_quiet_trace() -> None:
    fired: set[str] = set()
    quiet: set[str] = set()
    for spec in EXPECTED.values():
        fired |= {f[0] for f in spec.get("must_fire", [])}
        quiet |= set(spec.get("must_not_fire", []))
    # PL001/PL002 are about a policy's code, found when it runs: no trace can fire them
    trace_rules = set(RULES) - POLICY_RULES
    assert trace_rules <= fired
    assert trace_rules <= quiet
