"""``check`` of a rewrite of N items, 10% of them changed, against the identity floor.

For each size N (1k and 10k; 100k and 300k with ``--bench-large``) a seeded
``before`` window and an ``after`` window with 10% of the items changed
acceptably (:func:`benchmarks.workloads.build_windows`), written one item per
line as people write them. The originals of what the rewrite weakened or
stubbed are in a :class:`~verifier.store.MemoryStore`.

- floor: :func:`benchmarks.workloads.identity_diff` of the two texts (``json``
  parse, canonical-JSON sha256 of each item, diff by id), no verifier code;
- check: ``parse_window_text`` of both texts and
  ``check_rewrite(before, after, store=store, with_repair=False)``.

Both run in this process after the imports. Before each round of the check,
every function cache of the verifier is emptied (the parsed formulas, the
item keys): each round checks the texts as a first run of ``ctxproof check``
would, the lark grammar and the imports excepted.

The peak resident memory of one ``ctxproof check`` of the same texts (the
originals in a SQLite store), in a process of its own (:mod:`benchmarks.peak`),
is recorded beside the timings.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.peak import peak_of, store_file
from benchmarks.workloads import SEED, build_windows, identity_diff, window_text
from verifier.check import RewriteResult, check_rewrite
from verifier.io import item_from_json, parse_window_text
from verifier.store import MemoryStore

ROUNDS = {1_000: 10, 10_000: 5, 100_000: 3, 300_000: 1}


@functools.cache
def workload(n: int) -> tuple[str, str, str, int]:
    """The before and after texts, the spilled originals (JSON) and how many changed."""
    before, after, spill, census = build_windows(n, SEED)
    changed = sum(v for k, v in census.items() if k != "summary-added")
    return window_text(before), window_text(after), json.dumps(spill), changed


def cold_caches() -> None:
    """Empty the function caches of the verifier's modules (the grammar's excepted) and
    the reader's caches of items already validated and read."""
    import verifier.io

    verifier.io.forget_reads()
    for name, module in list(sys.modules.items()):
        if not name.startswith("verifier.") or name == "verifier.grammar":
            continue
        for value in list(vars(module).values()):
            clear: Callable[[], None] | None = getattr(value, "cache_clear", None)
            if clear is not None and getattr(value, "__module__", None) == name:
                clear()


def _describe(benchmark: Any, n: int, role: str) -> None:
    before, after, _, changed = workload(n)
    benchmark.group = f"check, {n:,} items, 10% changed"
    benchmark.extra_info.update(
        role=role,
        items=n,
        changed=changed,
        before_bytes=len(before.encode("utf-8")),
        after_bytes=len(after.encode("utf-8")),
    )


def test_floor(benchmark: Any, window_size: int) -> None:
    before, after, _, _ = workload(window_size)
    _describe(benchmark, window_size, "floor")
    removed, added, changed = benchmark.pedantic(
        identity_diff, args=(before, after), rounds=ROUNDS[window_size], iterations=1
    )
    assert removed or changed or added


def test_check(benchmark: Any, window_size: int, tmp_path: Path) -> None:
    before_text, after_text, spill_json, _ = workload(window_size)
    spilled = [item_from_json(o) for o in json.loads(spill_json)]
    _describe(benchmark, window_size, "check")

    def setup() -> tuple[tuple[MemoryStore], dict[str, Any]]:
        cold_caches()
        store = MemoryStore()
        store.spill(spilled)
        return (store,), {}

    def check(store: MemoryStore) -> RewriteResult:
        before = parse_window_text(before_text, "before.json")
        after = parse_window_text(after_text, "after.json")
        return check_rewrite(before, after, store=store, with_repair=False)

    result: RewriteResult = benchmark.pedantic(
        check, setup=setup, rounds=ROUNDS[window_size], iterations=1
    )
    benchmark.extra_info["verdict"] = result.verdict
    benchmark.extra_info["findings"] = len(result.findings)
    assert result.verdict == "accept", [f.to_json() for f in result.findings[:5]]
    (tmp_path / "before.json").write_text(before_text, "utf-8")
    (tmp_path / "after.json").write_text(after_text, "utf-8")
    store = store_file(tmp_path / "store.sqlite", json.loads(spill_json))
    peak = peak_of(tmp_path / "before.json", tmp_path / "after.json", store)
    assert peak["exit_code"] == 0, peak
    benchmark.extra_info.update(peak_mib=peak["peak_mib"], imports_mib=peak["imports_mib"])
