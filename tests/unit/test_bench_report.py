"""benchmarks/report.py: RESULTS.md from pytest-benchmark's JSON, each group against its floor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.report import render


def _bench(name: str, median: float, role: str, **extra: Any) -> dict[str, Any]:
    return {
        "group": "append of 4 items, store of 1,000 vs 50,000 entries",
        "name": name,
        "fullname": f"benchmarks/test_bench_append.py::{name}",
        "extra_info": {"role": role, "store_entries": 1, "window": 104, "findings": 0, **extra},
        "stats": {"median": median, "iqr": 0.001, "min": median / 2, "rounds": 30},
    }


def _run(*benches: dict[str, Any]) -> dict[str, Any]:
    return {
        "datetime": "2026-12-01T00:00:00+00:00",
        "commit_info": {"id": "0123456789abcdef", "dirty": False},
        "machine_info": {
            "system": "Linux",
            "release": "6",
            "machine": "x86_64",
            "cpu": {"brand_raw": "some CPU"},
            "nproc": 2,
            "cores_usable": 2,
            "python": "CPython 3.11",
            "z3": "4.13",
            "loadavg_start": [1.0, 1.0, 1.0],
            "loadavg_end": [2.0, 2.0, 2.0],
        },
        "benchmarks": list(benches),
    }


def test_each_benchmark_is_shown_against_the_floor_of_its_group(tmp_path: Path) -> None:
    run = _run(
        _bench("test_append_large_store", 0.006, "large store"),
        _bench("test_append_small_store", 0.003, "floor"),
    )
    (tmp_path / "bench.json").write_text(json.dumps(run), encoding="utf-8")
    page = render(tmp_path)
    assert "## `make bench`" in page
    assert "nproc: 2" in page
    assert "load average (1, 5, 15 min): 1.00, 1.00, 1.00 at the start" in page
    rows = [line for line in page.splitlines() if line.startswith("| `test_append")]
    # the floor first, then the others with their ratio to it
    assert rows[0].startswith("| `test_append_small_store` | floor | 3.0 ms")
    assert "| **2.00×** |" in rows[1]
    assert "`test_append_large_store` 2.00× `test_append_small_store`" in page


def test_a_benchmark_paired_with_its_floor_gives_the_median_of_its_round_ratios(
    tmp_path: Path,
) -> None:
    # the host slowed down threefold between the floor's rounds and the other's: the ratio
    # of the medians says 3.00x, each round beside its own floor run says 1.2x
    large = _bench("test_append_large_store", 0.009, "large store")
    large["stats"]["data"] = [0.0036, 0.009, 0.0108, 0.012]
    large["extra_info"]["floor_rounds"] = [0.003, 0.0075, 0.009, 0.01]
    floor = _bench("test_append_small_store", 0.003, "floor")
    (tmp_path / "bench.json").write_text(json.dumps(_run(large, floor)), encoding="utf-8")
    page = render(tmp_path)
    row = next(line for line in page.splitlines() if line.startswith("| `test_append_large"))
    assert "| **1.20×** paired; 3.00× of the medians |" in row
    assert "`test_append_large_store` 1.20× paired (3.00× medians)" in page
    # rounds that do not line up (a run that kept no data) fall back to the medians
    del large["stats"]["data"]
    (tmp_path / "bench.json").write_text(json.dumps(_run(large, floor)), encoding="utf-8")
    assert "| **3.00×** |" in render(tmp_path)
