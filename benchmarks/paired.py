"""Pairs in time: a benchmark that runs its group's floor beside each of its rounds.

The host of this machine lends its CPU to other machines, and its speed changes
by a factor of two or more over an hour; two benchmarks of a group measured a
minute apart can differ by more than the ratio a goal bounds. A benchmark set up
with :class:`FloorEachRound` runs one round of its floor beside each of its
own, and ``benchmarks/report.py`` gives the median of the per-round ratios
beside the ratio of the medians.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

Setup = Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]


class FloorEachRound:
    """``setup`` and ``teardown`` for ``benchmark.pedantic`` that run one round of the
    group's floor beside each round of a benchmark: before it in the even rounds, after
    it in the odd ones, so neither side always finds the caches the other one left.

    ``floor_round`` does the floor's work once and returns the seconds its timed part
    took. Those times go to ``extra_info["floor_rounds"]``, in round order, beside the
    benchmark's own rounds, so ``benchmarks/report.py`` can give the median of the
    per-round ratios. Each ratio compares two measurements a moment apart, so the
    host's changes of speed over a run (other machines on its host) cancel out.
    ``setup`` (if given) makes each round's arguments, as pedantic's own would. With
    no ``floor_round`` (a floor itself, or a benchmark measured alone) the rounds are
    the benchmark's only, and nothing is recorded.
    """

    def __init__(
        self,
        benchmark: Any,
        floor_round: Callable[[], float] | None,
        setup: Setup | None = None,
    ) -> None:
        self.times: list[float] = []
        if floor_round is not None:
            benchmark.extra_info["floor_rounds"] = self.times
        self._floor_round = floor_round
        self._setup = setup
        self._round = 0

    def _beside(self, parity: int) -> None:
        if self._floor_round is not None and self._round % 2 == parity:
            self.times.append(self._floor_round())

    def setup(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        self._beside(0)
        return self._setup() if self._setup is not None else ((), {})

    def teardown(self, *args: Any, **kwargs: Any) -> None:
        self._beside(1)
        self._round += 1


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes (a floor round of :class:`FloorEachRound`)."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started
