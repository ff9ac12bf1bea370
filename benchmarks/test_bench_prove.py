"""``ctxproof prove`` on every spec of ``models/specs/``, encoding against encoding.

For each spec and each problem (bounded model checking from the empty window
with N items appended in all and K passes; induction over one pass from any
state of N items), the proof as ``prove`` runs it (numbers as bounded
integers, counterexamples shrunk by asking for 1, 2, 3, ... items) is the
floor, measured beside the two other encodings it can use: numbers as
bit-vectors, and counterexamples shrunk by z3's Optimize. A round is one whole
proof: encoding, every z3 check, each counterexample shrunk, replayed through
the spec's interpreter and audited. The problems are BMC N = 8, K = 2 and
induction N = 16. Every encoding must give the same answer (a test, not a
timing).

With ``--bench-prove-large`` (``make bench-prove BENCH_ARGS=--bench-prove-large``)
also the targets for the bundled safe specs (``spill_first`` and the proved
suggestions of ``models/specs/suggested/``), each to be proved in under a
minute: BMC N = 24, K = 8 (up to N items appended before each pass) and
induction N = 128, one round each, in the encoding ``prove`` uses.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

import pytest

from verifier.policies.spec import Spec, load_spec
from verifier.prove import ProofResult, prove

SPECS = Path(__file__).resolve().parent.parent / "models" / "specs"
LIMIT = 120.0
"""Seconds before prove gives up on a property (its answer is then ``undecided``)."""

SMALL = [("bmc", 8, 2), ("induction", 16, 1)]
LARGE = [("bmc", 24, 8), ("induction", 128, 1)]
SAFE = ["spill_first", *(f"suggested/{p.stem}" for p in sorted(SPECS.glob("suggested/*.toml")))]
"""The bundled specs that are proved: the large problems are theirs."""
ENCODINGS = {"int-iterate": ("int", "iterate"), "bv-iterate": ("bv", "iterate"),
             "int-optimize": ("int", "optimize")}
ROUNDS = 2
"""Rounds of each proof (one for the large problems)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "problem" in metafunc.fixturenames:
        cases = [
            (problem, name, encoding)
            for problem in SMALL
            for name in sorted(p.stem for p in SPECS.glob("*.toml"))
            for encoding in ENCODINGS
        ]
        if metafunc.config.getoption("--bench-prove-large"):
            cases += [(problem, name, "int-iterate") for problem in LARGE for name in SAFE]
        metafunc.parametrize(
            "problem,spec_name,encoding",
            cases,
            ids=[
                f"{m}-N{n}-K{k}-{name.replace('/', '-')}-{encoding}"
                for (m, n, k), name, encoding in cases
            ],
        )


@functools.cache
def _spec(name: str) -> Spec:
    return load_spec(SPECS / f"{name}.toml")


def _prove(name: str, problem: tuple[str, int, int], encoding: str) -> ProofResult:
    mode, n, k = problem
    arith, minimize = ENCODINGS[encoding]
    with tempfile.TemporaryDirectory(prefix="ctxproof-bench-prove-") as out:
        return prove(
            _spec(name),
            items=n,
            passes=k,
            appends=n,
            induction=mode == "induction",
            timeout=LIMIT,
            out_dir=out,
            arith=arith,
            minimize=minimize,
        )


ANSWERS: dict[tuple[str, tuple[str, int, int]], tuple[str, tuple[str, ...]]] = {}


def test_prove(
    benchmark: Any, spec_name: str, problem: tuple[str, int, int], encoding: str
) -> None:
    mode, n, k = problem
    bound = f", K = {k}" if mode == "bmc" else ""
    benchmark.group = f"prove {spec_name}, {mode} N = {n}{bound}"
    benchmark.extra_info.update(
        role="floor" if encoding == "int-iterate" else encoding, encoding=encoding
    )
    rounds = 1 if problem in LARGE else ROUNDS
    res: ProofResult = benchmark.pedantic(
        _prove, args=(spec_name, problem, encoding), rounds=rounds, iterations=1
    )
    codes = tuple(c.code for c in res.counterexamples)
    z3_stats = res.stats.get("z3", {})
    benchmark.extra_info.update(
        result=res.result,
        codes=list(codes),
        reason=res.reason,
        z3_checks=z3_stats.get("checks"),
        z3_conflicts=z3_stats.get("conflicts"),
    )
    assert res.result in ("proved", "counterexample"), res.reason
    answer = ANSWERS.setdefault((spec_name, problem), (res.result, codes))
    assert answer == (res.result, codes), f"{encoding} answers {res.result} {codes}"
