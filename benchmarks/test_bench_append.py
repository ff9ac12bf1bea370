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

A second group keeps the window's size in view: a session that appended N
commitments (``a.I -> b.I``), spilled them and left stubs (the window holds N
stubs), then appends one claim over fresh atoms a round: N = 10k against the
floor N = 1k.

Three more groups keep a rewrite's cost in view: the same window of N stubs and
one claim, each round a rewrite that gives the claim a new, equivalent formula:
a ``diff`` that puts it; the whole window as a parsed trace gives it (an item
whose text is the same as in the window before is that very object, and only
the claim is new); and the whole window with every item a new object, as a
caller that builds each window from JSON gives it (each item is then compared
with the one it may replace, byte by byte). Goal: a rewrite's cost is what it
changed, not what the window holds: N = 10k within 2x of the floor N = 1k
(docs/rules.md, "Composition over a trace"). The last group reads 10k items it
is given anew against 1k: it shows what that reading costs.

In these groups the large window's benchmark also keeps a window of the floor's
size and feeds it the same event beside each of its rounds
(:mod:`benchmarks.paired`), for the median of the per-round ratios.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.paired import FloorEachRound, timed
from benchmarks.workloads import (
    BACKGROUND,
    SEED,
    ItemFactory,
    Obj,
    acceptable_change,
    append_event,
    store_entries,
    stub_window_trace,
)
from verifier.audit import Auditor
from verifier.io import item_from_json, parse_trace_text
from verifier.store import MemoryStore
from verifier.window import Item, Rewrite

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


# -- an append into a window of stubs: its cost is the append's, not the window's ------------

STUBS_SMALL, STUBS_LARGE = 1_000, 10_000
STUB_ROUNDS = 50


@functools.cache
def _stub_events(n: int) -> tuple[Any, ...]:
    trace = parse_trace_text(stub_window_trace(n, 0), f"stubs-{n}.jsonl")
    return (trace.header.background, trace.events)


def _stub_auditor(n: int) -> Auditor:
    """A window of n stubs: n commitments appended, spilled and stubbed."""
    background, events = _stub_events(n)
    auditor = Auditor(background)
    for ev in events:
        auditor.feed(ev)
    assert all(it.kind == "stub" for it in auditor.window)
    return auditor


def _new_claim(serial: Iterator[int]) -> list[Item]:
    j = next(serial)
    return [item_from_json({"id": f"q{j}", "kind": "claim", "formula": f"f.{j} | g.{j}"})]


def _bench_stubs(benchmark: Any, n: int, role: str, floor: int | None = None) -> None:
    """A window of n stubs; each round appends one claim over fresh atoms (built before
    the clock starts). With ``floor`` (the floor's n), the same append into a window of
    that many stubs runs, timed, beside each round."""
    auditor = _stub_auditor(n)
    benchmark.group = (
        f"append of 1 claim, window of {STUBS_SMALL:,} vs {STUBS_LARGE:,} stubs"
    )
    benchmark.extra_info.update(role=role, store_entries=n, window=len(auditor.window))
    findings: list[Any] = []
    serial = iter(range(10**9))

    def own() -> tuple[tuple[list[Item]], dict[str, Any]]:
        return (_new_claim(serial),), {}

    beside: Callable[[], float] | None = None
    if floor is not None:
        small = _stub_auditor(floor)
        floor_serial = iter(range(10**9))

        def floor_round() -> float:
            items = _new_claim(floor_serial)
            return timed(lambda: findings.extend(small.append(items)))

        beside = floor_round
    pair = FloorEachRound(benchmark, beside, own)

    def append(items: list[Item]) -> None:
        findings.extend(auditor.append(items))

    benchmark.pedantic(
        append, setup=pair.setup, teardown=pair.teardown, rounds=STUB_ROUNDS, iterations=1
    )
    benchmark.extra_info["findings"] = len(findings)
    _take(findings)


def test_append_stub_window_small(benchmark: Any) -> None:
    _bench_stubs(benchmark, STUBS_SMALL, "floor")


def test_append_stub_window_large(benchmark: Any) -> None:
    _bench_stubs(benchmark, STUBS_LARGE, "large window", floor=STUBS_SMALL)


# -- a rewrite of one item in a window of stubs: its cost is the change's, not the window's --

REWRITE_ROUNDS = 40


def _rewrite_auditor(n: int) -> Auditor:
    """A window of n stubs (as :func:`_bench_stubs`) and the claim ``q`` the rounds change."""
    auditor = _stub_auditor(n)
    _take(auditor.append([item_from_json(_claim(-1))]))
    return auditor


def _claim(j: int) -> Obj:
    """The claim ``q`` in its j-th rendering (j = -1: the first): each one new, all
    equivalent."""
    if j < 0:
        return {"id": "q", "kind": "claim", "formula": "f | g"}
    return {"id": "q", "kind": "claim", "formula": f"(f | g) & (h.{j} | !h.{j})"}


FORMS = {
    "diff": "diff",
    "whole": "whole window, as a parsed trace gives it",
    "new": "whole window, every item a new object",
}
"""How a rewrite event is given: :func:`_restatement`."""


def _restatement(auditor: Auditor, j: int, form: str) -> Rewrite:
    """The rewrite that gives the claim its j-th rendering: a diff that puts it, or the
    whole window (see the module's docstring and :data:`FORMS`)."""
    claim = item_from_json(_claim(j))
    if form == "diff":
        return Rewrite(1, "restate", None, put=(claim,))
    if form == "whole":
        window = tuple(claim if it.id == "q" else it for it in auditor.window)
    else:
        window = tuple(
            claim if it.id == "q" else item_from_json(it.as_json()) for it in auditor.window
        )
    return Rewrite(1, "restate", window)


def _bench_rewrite(
    benchmark: Any, n: int, role: str, form: str, floor: int | None = None
) -> None:
    """Each round feeds one rewrite event that changes the claim (built before the clock
    starts). With ``floor`` (the floor's n), the same rewrite in a window of that many
    stubs runs, timed, beside each round."""
    auditor = _rewrite_auditor(n)
    benchmark.group = (
        f"rewrite of 1 item ({FORMS[form]}), window of {STUBS_SMALL:,} vs {STUBS_LARGE:,}"
        " stubs"
    )
    benchmark.extra_info.update(role=role, store_entries=n, window=len(auditor.window))
    serial = iter(range(10**9))
    verdicts: list[str] = []

    def own() -> tuple[tuple[Rewrite], dict[str, Any]]:
        return (_restatement(auditor, next(serial), form),), {}

    beside: Callable[[], float] | None = None
    if floor is not None:
        small = _rewrite_auditor(floor)
        floor_serial = iter(range(10**9))

        def floor_round() -> float:
            ev = _restatement(small, next(floor_serial), form)
            seconds = timed(lambda: small.feed(ev))
            verdicts.append(small.rewrites[-1].verdict)
            return seconds

        beside = floor_round
    pair = FloorEachRound(benchmark, beside, own)

    def rewrite(ev: Rewrite) -> None:
        auditor.feed(ev)
        verdicts.append(auditor.rewrites[-1].verdict)

    benchmark.pedantic(
        rewrite, setup=pair.setup, teardown=pair.teardown, rounds=REWRITE_ROUNDS, iterations=1
    )
    benchmark.extra_info["findings"] = len(auditor.findings)
    assert set(verdicts) == {"accept"}, verdicts
    _take(auditor.findings)


def test_rewrite_diff_stub_window_small(benchmark: Any) -> None:
    _bench_rewrite(benchmark, STUBS_SMALL, "floor", "diff")


def test_rewrite_diff_stub_window_large(benchmark: Any) -> None:
    _bench_rewrite(benchmark, STUBS_LARGE, "large window", "diff", floor=STUBS_SMALL)


def test_rewrite_whole_stub_window_small(benchmark: Any) -> None:
    _bench_rewrite(benchmark, STUBS_SMALL, "floor", "whole")


def test_rewrite_whole_stub_window_large(benchmark: Any) -> None:
    _bench_rewrite(benchmark, STUBS_LARGE, "large window", "whole", floor=STUBS_SMALL)


def test_rewrite_new_objects_stub_window_small(benchmark: Any) -> None:
    _bench_rewrite(benchmark, STUBS_SMALL, "floor", "new")


def test_rewrite_new_objects_stub_window_large(benchmark: Any) -> None:
    _bench_rewrite(benchmark, STUBS_LARGE, "large window", "new", floor=STUBS_SMALL)
