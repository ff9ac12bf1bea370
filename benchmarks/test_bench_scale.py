"""An audit's cost against the items it reads and the findings it makes.

Seeded traces from :mod:`benchmarks.workloads`, each parsed before the clock
starts (every function cache of the verifier emptied first, as in the check
benchmark); a round is one ``audit_trace`` of the parsed trace, as ``ctxproof
audit`` runs it. Each group compares a larger or a findings-laden trace with
its floor, measured in the same run:

- findings: an append of N items with findings on two thirds of them (claims
  their witnesses contradict: WR005 and CP004; commitments that contradict an
  earlier claim: CP004), after an append of the claims: 8k items against 2k
  (linear is 4×);
- long trace: 50k items in appends of 100, a rewrite stubbing five items after
  every tenth append, with 10% of the items carrying a finding (CP003, CP004,
  WR005) against the same trace clean;
- contradicting commitments: one append of N commitments ``!x & a.I``, each
  contradicting an earlier claim ``x`` and none another, then spilled and
  stubbed: 20k against 10k (linear is 2×);
- clean commitments: the same with ``a.I -> b.I`` and no claim.

The larger trace of each group also audits its floor's trace beside each of its
rounds (:mod:`benchmarks.paired`), for the median of the per-round ratios.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from benchmarks.paired import FloorEachRound, timed
from benchmarks.test_bench_check import cold_caches
from benchmarks.workloads import (
    SEED,
    commitments_append_trace,
    findings_append_trace,
    long_trace,
)
from verifier.audit import TraceReport, audit_trace
from verifier.io import parse_trace_text
from verifier.window import Trace

ROUNDS = 3


@functools.cache
def _text(kind: str, n: int) -> str:
    make: dict[str, Callable[[int], str]] = {
        "findings": findings_append_trace,
        "long-clean": lambda k: long_trace(k, SEED),
        "long-findings": lambda k: long_trace(k, SEED, finding_fraction=0.1),
        "contradicting": lambda k: commitments_append_trace(k, contradicting=True),
        "clean": lambda k: commitments_append_trace(k, contradicting=False),
    }
    return make[kind](n)


def _parsed(kind: str, n: int) -> Trace:
    """The trace parsed anew, every function cache of the verifier emptied first."""
    cold_caches()
    return parse_trace_text(_text(kind, n), f"{kind}-{n}.jsonl")


def _bench(
    benchmark: Any,
    group: str,
    kind: str,
    n: int,
    role: str,
    floor: tuple[str, int] | None = None,
) -> TraceReport:
    """Audit the trace ``kind`` of ``n`` items a round; with ``floor`` (the group's floor
    trace), an audit of that runs, timed, beside each round."""
    text = _text(kind, n)
    benchmark.group = group
    benchmark.extra_info.update(role=role, items=n, kind=kind, trace_bytes=len(text))

    def own() -> tuple[tuple[Trace], dict[str, Any]]:
        return (_parsed(kind, n),), {}

    beside: Callable[[], float] | None = None
    if floor is not None:
        floor_trace = floor

        def floor_round() -> float:
            trace = _parsed(*floor_trace)
            return timed(lambda: audit_trace(trace))

        beside = floor_round
    pair = FloorEachRound(benchmark, beside, own)
    report: TraceReport = benchmark.pedantic(
        audit_trace, setup=pair.setup, teardown=pair.teardown, rounds=ROUNDS, iterations=1
    )
    codes: dict[str, int] = {}
    for f in report.findings:
        codes[f.code] = codes.get(f.code, 0) + 1
    benchmark.extra_info.update(
        findings=len(report.findings), codes=codes, rewrites=len(report.rewrites)
    )
    return report


FINDINGS = "append of N items, findings on two thirds: 2,000 vs 8,000 items"


def test_findings_2k(benchmark: Any) -> None:
    report = _bench(benchmark, FINDINGS, "findings", 2_000, "floor")
    assert len(report.findings) >= 2 * 2_000 // 3


def test_findings_8k(benchmark: Any) -> None:
    report = _bench(benchmark, FINDINGS, "findings", 8_000, "8k items", ("findings", 2_000))
    assert len(report.findings) >= 2 * 8_000 // 3


LONG = "trace of 50,000 items: clean vs 10% of the items carrying a finding"


def test_long_clean(benchmark: Any) -> None:
    report = _bench(benchmark, LONG, "long-clean", 50_000, "floor")
    assert not report.findings


def test_long_findings(benchmark: Any) -> None:
    report = _bench(
        benchmark, LONG, "long-findings", 50_000, "10% findings", ("long-clean", 50_000)
    )
    assert len(report.findings) >= 50_000 // 20


CONTRADICTING = "one append of N commitments contradicting a claim: 10,000 vs 20,000"


def test_contradicting_10k(benchmark: Any) -> None:
    report = _bench(benchmark, CONTRADICTING, "contradicting", 10_000, "floor")
    assert [f.code for f in report.findings] == ["CP004"]


def test_contradicting_20k(benchmark: Any) -> None:
    report = _bench(
        benchmark, CONTRADICTING, "contradicting", 20_000, "20k items", ("contradicting", 10_000)
    )
    assert [f.code for f in report.findings] == ["CP004"]


CLEAN = "one clean append of N commitments, spilled: 10,000 vs 20,000"


def test_clean_10k(benchmark: Any) -> None:
    report = _bench(benchmark, CLEAN, "clean", 10_000, "floor")
    assert not report.findings and report.rewrites[0].verdict == "accept"


def test_clean_20k(benchmark: Any) -> None:
    report = _bench(benchmark, CLEAN, "clean", 20_000, "20k items", ("clean", 10_000))
    assert not report.findings and report.rewrites[0].verdict == "accept"
