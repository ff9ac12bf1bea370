"""An audit's cost per pass early in a long trace and late in it.

A seeded trace (:func:`benchmarks.workloads.build_steady_trace`): appends
build a window of 1,000 items, then every pass spills what it is about to
weaken or stub, rewrites 5 items with a ``diff``, evicts the oldest items
(spilling them) to make room, and appends 4 new items. The window stays near
1,000 items while the store and the justification graph grow with every pass.

The trace is parsed once, then fed event by event to one
:class:`~verifier.audit.Auditor` (what ``audit_trace`` runs) with its
justification graph. The audit is brought to pass 100 outside the clock, and
each timed round is the next 5 passes (a pass: its spill, its rewrite and the
append after it); then the same audit is brought to the late pass
(``--bench-late-pass``, 3,000 by default) and timed the same way. The early
passes are the floor: the ratio says how much a pass costs more late in the
session than early.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from benchmarks.workloads import SEED, build_steady_trace
from verifier.audit import Auditor
from verifier.io import parse_trace_text
from verifier.window import Append, Event, Rewrite

WINDOW = 1_000
EARLY = 100
ROUNDS = 20
PASSES_PER_ROUND = 5


class Replay:
    """One audit of the trace, fed as far as asked."""

    def __init__(self, passes: int) -> None:
        trace = parse_trace_text(build_steady_trace(WINDOW, passes, SEED), "steady.jsonl")
        self.auditor = Auditor(trace.header.background, name=trace.name, repair=True)
        self.groups: list[list[Event]] = [[]]
        """groups[0]: the opening appends; groups[p]: pass p, ending with its append."""
        seen_rewrite = False
        for ev in trace.events:
            self.groups[-1].append(ev)
            if isinstance(ev, Rewrite):
                seen_rewrite = True
            elif isinstance(ev, Append) and seen_rewrite:
                self.groups.append([])
                seen_rewrite = False
        self.done = 0  # passes fed so far
        for ev in self.groups[0]:
            self.auditor.feed(ev)

    def feed(self, passes: int) -> None:
        for p in range(self.done + 1, self.done + passes + 1):
            for ev in self.groups[p]:
                self.auditor.feed(ev)
        self.done += passes


@functools.cache
def _replay(passes: int) -> Replay:
    return Replay(passes)


def _bench(benchmark: Any, late: int, at: int, role: str) -> None:
    replay = _replay(late + ROUNDS * PASSES_PER_ROUND)
    if replay.done > at:
        pytest.skip(f"the audit is past pass {at:,} already")
    replay.feed(at - replay.done)
    benchmark.group = f"audit, {PASSES_PER_ROUND} passes from pass {EARLY:,} vs pass {late:,}"
    store = replay.auditor.store
    benchmark.extra_info.update(
        role=role,
        from_pass=at,
        passes_per_round=PASSES_PER_ROUND,
        window=len(replay.auditor.window),
        graph_nodes=len(replay.auditor.graph.g),
        store_entries=sum(1 for _ in store.items()),
    )
    benchmark.pedantic(replay.feed, args=(PASSES_PER_ROUND,), rounds=ROUNDS, iterations=1)
    verdicts = {r.verdict for r in replay.auditor.rewrites}
    benchmark.extra_info["verdicts"] = sorted(verdicts)
    benchmark.extra_info["findings"] = len(replay.auditor.findings)
    assert verdicts == {"accept"}
    assert not replay.auditor.findings


def test_audit_early_passes(benchmark: Any, request: pytest.FixtureRequest) -> None:
    late: int = request.config.getoption("--bench-late-pass")
    _bench(benchmark, late, EARLY, "floor")


def test_audit_late_passes(benchmark: Any, request: pytest.FixtureRequest) -> None:
    late: int = request.config.getoption("--bench-late-pass")
    _bench(benchmark, late, late, "late")
