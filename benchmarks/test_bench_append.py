"""An append's cost with 1k and with 50k entries in the durable store.

One seeded session: its store holds the first N items it produced
(commitments, claims, observations and witnessed claims; the 1k store is the
first 1k of the 50k), and its window the 100 items that came next, so the
window's claims and the appends' items use atoms of the store's latest
entries. An :class:`~verifier.audit.Auditor` over that store takes the window
as one append, then, to warm the store index it keeps, one append and one
rewrite that gives a claim an equivalent formula. Each timed round is one
append of four new items (prose, an observation, a claim it witnesses, a
commitment), the kind a pass adds; the items are built before the clock
starts. The 1k store is the floor.
"""

from __future__ import annotations

import functools
import random
from typing import Any

from benchmarks.workloads import (
    BACKGROUND,
    SEED,
    ItemFactory,
    Obj,
    acceptable_change,
    append_event,
    store_entries,
)
from verifier.audit import Auditor
from verifier.io import item_from_json
from verifier.store import MemoryStore
from verifier.window import Item

SMALL, LARGE = 1_000, 50_000
WINDOW = 100
ROUNDS = 30


@functools.cache
def _all_entries() -> tuple[Obj, ...]:
    return tuple(store_entries(LARGE, SEED))


def _session(n: int) -> tuple[Auditor, ItemFactory, random.Random, dict[str, Obj]]:
    """An auditor over a store of the session's first n entries, its window appended,
    and the store index warmed by one append and one rewrite."""
    entries = _all_entries()[:n]
    store = MemoryStore()
    store.spill([item_from_json(o) for o in entries])
    rng = random.Random(SEED + 1)
    f = ItemFactory(rng)
    f.serial = 10 * LARGE  # ids after the store's
    # the factory picks atoms among the latest commitments: the store's
    for o in entries:
        if o["kind"] == "commitment" and "formula" not in o and o["type"] != "rejection":
            f.atoms.append(o["id"])
    f.atoms = f.atoms[-f.locality :]
    current: dict[str, Obj] = {}
    for _ in range(WINDOW):
        obj = f.any_item()
        current[obj["id"]] = obj
    auditor = Auditor(BACKGROUND, store=store)
    _take(auditor.append(_items(current.values())))
    _take(auditor.append(_items(append_event(f, rng, current)["items"])))
    claim = next(
        o for o in current.values() if o["kind"] == "claim" and o["id"] in f.equivalents
    )
    change = acceptable_change(f, claim, "warm")
    while change is None or change.kind != "claim-equivalent":
        change = acceptable_change(f, claim, "warm")
    assert change.put is not None
    current[claim["id"]] = change.put
    result = auditor.rewrite(_items(current.values()))
    assert result.verdict == "accept", [x.to_json() for x in result.findings]
    return auditor, f, rng, current


def _items(objs: Any) -> list[Item]:
    return [item_from_json(o) for o in objs]


def _take(findings: list[Any]) -> None:
    assert not findings, [x.to_json() for x in findings]


def _bench(benchmark: Any, n: int, role: str) -> None:
    auditor, f, rng, current = _session(n)
    benchmark.group = f"append of 4 items, store of {SMALL:,} vs {LARGE:,} entries"
    benchmark.extra_info.update(role=role, store_entries=n, window=len(auditor.window))
    findings: list[Any] = []

    def setup() -> tuple[tuple[list[Item]], dict[str, Any]]:
        return (_items(append_event(f, rng, current)["items"]),), {}

    def append(items: list[Item]) -> None:
        findings.extend(auditor.append(items))

    benchmark.pedantic(append, setup=setup, rounds=ROUNDS, iterations=1)
    benchmark.extra_info["findings"] = len(findings)
    _take(findings)


def test_append_small_store(benchmark: Any) -> None:
    _bench(benchmark, SMALL, "floor")


def test_append_large_store(benchmark: Any) -> None:
    _bench(benchmark, LARGE, "large store")
