"""``check`` of a rewrite that a quarter of the items break, with its repair, against the
identity floor: the cost of findings grows with the window, no faster.

For each size N (10k and 30k; 100k with ``--bench-large``) the ``before``
window of the check benchmark, and two ``after`` windows
(:func:`benchmarks.workloads.build_faulty_windows`):

- changed: a quarter of the items changed so that the check refuses them
  (commitments and claims asserting a fresh atom: CF002 and CF005 on each);
- dropped: a quarter of the items left out (CF001 on every commitment).

- floor: :func:`benchmarks.workloads.identity_diff` of the two texts;
- check: ``parse_window_text`` of both texts and ``check_rewrite(before, after,
  store=MemoryStore())`` with its repair (which checks the repaired window
  again), every function cache emptied before each round as in the check
  benchmark.

The peak resident memory of one ``ctxproof check`` of the same texts, in a
process of its own (:mod:`benchmarks.peak`), is recorded beside the timings.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from benchmarks.peak import peak_of
from benchmarks.test_bench_check import cold_caches
from benchmarks.workloads import SEED, build_faulty_windows, identity_diff, window_text
from verifier.check import RewriteResult, check_rewrite
from verifier.io import parse_window_text
from verifier.store import MemoryStore

ROUNDS = {10_000: 3, 30_000: 3, 100_000: 1}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    sizes = [10_000, 30_000]
    if metafunc.config.getoption("--bench-large"):
        sizes.append(100_000)
    metafunc.parametrize("size", sizes, ids=[f"{n // 1000}k" for n in sizes])
    metafunc.parametrize("mode", ["changed", "dropped"])


@functools.cache
def workload(n: int, mode: str) -> tuple[str, str, int]:
    before, after, census = build_faulty_windows(n, SEED, mode)
    return window_text(before), window_text(after), sum(census.values())


def _describe(benchmark: Any, n: int, mode: str, role: str) -> None:
    before, _, faults = workload(n, mode)
    benchmark.group = f"check with repair, {n:,} items, 25% {mode}"
    benchmark.extra_info.update(
        role=role, items=n, mode=mode, faults=faults, before_bytes=len(before.encode("utf-8"))
    )


def test_floor(benchmark: Any, size: int, mode: str) -> None:
    before, after, _ = workload(size, mode)
    _describe(benchmark, size, mode, "floor")
    removed, _, changed = benchmark.pedantic(
        identity_diff, args=(before, after), rounds=ROUNDS[size], iterations=1
    )
    assert removed or changed


def test_check(benchmark: Any, size: int, mode: str, tmp_path: Path) -> None:
    before_text, after_text, _ = workload(size, mode)
    _describe(benchmark, size, mode, "check")

    def check() -> RewriteResult:
        before = parse_window_text(before_text, "before.json")
        after = parse_window_text(after_text, "after.json")
        return check_rewrite(before, after, store=MemoryStore())

    result: RewriteResult = benchmark.pedantic(
        check, setup=cold_caches, rounds=ROUNDS[size], iterations=1
    )
    assert result.verdict == "refuse" and result.repair is not None
    benchmark.extra_info.update(
        verdict=result.verdict,
        findings=len(result.findings),
        repair_verdict=result.repair.verdict,
        repair_actions=len(result.repair.actions),
    )
    (tmp_path / "before.json").write_text(before_text, "utf-8")
    (tmp_path / "after.json").write_text(after_text, "utf-8")
    peak = peak_of(tmp_path / "before.json", tmp_path / "after.json")
    assert peak["exit_code"] == 1 and peak["findings"] == len(result.findings), peak
    benchmark.extra_info.update(peak_mib=peak["peak_mib"], imports_mib=peak["imports_mib"])
