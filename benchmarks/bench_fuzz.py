#!/usr/bin/env python
"""Benchmark fuzz throughput: rewrites checked per second, per policy model and pressure.

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_fuzz.py [--write] [--quick]

For every model in ``models/policies/`` and two pressures (about 1.2 and
about 2.5: every turn of the agent fills the window to that many budgets),
the simulated agent plays seeded sessions of 10 passes over windows of about
a hundred items (budgets of 700 to 1,000 tokens). Measured:

* **one process**: rewrites checked per second, all included (drawing the
  session, the agent, the policy run twice for PL002, the audit of appends
  and rewrites);
* **``--jobs 2``**: the same sessions in two worker processes (two chunks);
* **the floor**, in the same run: rewrites per second if only the policy ran
  (its two calls per rewrite, timed inside the run), so the share of the
  audit is seen beside it; and the mean window size when the policy ran.

No shrinking is timed (it depends on what is found, not on throughput). With
``--write`` the table replaces the ``bench_fuzz`` section of
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_check import RESULTS, machine_info, write_section  # noqa: E402

from verifier.fuzz import explore_chunk, session_plans  # noqa: E402
from verifier.policies import Policy, load_policy  # noqa: E402

SECTION = "bench_fuzz"
MODELS = sorted(p.stem for p in (ROOT / "models" / "policies").glob("*.py"))
PRESSURES = {"1.2": (1.15, 1.25), "2.5": (2.4, 2.6)}
PASSES = 10
SEED = 3


@dataclass
class Timed:
    """A policy whose calls are counted and timed (the floor)."""

    policy: Policy
    calls: int = 0
    seconds: float = 0.0
    items: int = 0

    def wrapped(self) -> Policy:
        inner = self.policy

        def run(window: list[dict[str, Any]], budget: int, **kw: Any) -> Any:
            started = time.perf_counter()
            try:
                return inner.function(window, budget, **kw)
            finally:
                self.seconds += time.perf_counter() - started
                self.calls += 1
                self.items += len(window)

        return Policy(inner.name, run, inner.takes_pass_no, inner.takes_ages, inner.spec)


def _plans(pressure: str) -> Any:
    lo, hi = PRESSURES[pressure]
    # fills in twelve pieces: windows of about a hundred items
    return session_plans(
        PASSES, (lo, hi), max_budget=1000, min_budget=700, always_fill=True, fill_pieces=12
    )


def _chunk(args: tuple[str, str, int, int]) -> tuple[int, float]:
    """Worker: one chunk of sessions; (rewrites, seconds)."""
    name, pressure, index, sessions = args
    policy = load_policy(f"{ROOT / 'models' / 'policies' / name}.py:{name}")
    started = time.perf_counter()
    chunk = explore_chunk(policy, index, sessions, SEED, PASSES, "support", _plans(pressure))
    return chunk.rewrites, time.perf_counter() - started


def measure(name: str, pressure: str, sessions: int) -> dict[str, Any]:
    timed = Timed(load_policy(f"{ROOT / 'models' / 'policies' / name}.py:{name}"))
    started = time.perf_counter()
    chunk = explore_chunk(timed.wrapped(), 0, sessions, SEED, PASSES, "support", _plans(pressure))
    one = time.perf_counter() - started
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=2) as pool:
        parts = list(pool.map(_chunk, [(name, pressure, i, sessions) for i in range(2)]))
    two = time.perf_counter() - started
    rewrites = chunk.rewrites
    return {
        "model": name,
        "pressure": pressure,
        "rewrites": rewrites,
        "one": rewrites / one if one else 0.0,
        "two": sum(r for r, _ in parts) / two if two else 0.0,
        "floor": (timed.calls / 2) / timed.seconds if timed.seconds else 0.0,
        "items": timed.items / timed.calls if timed.calls else 0.0,
        "findings": sum(chunk.counts.values()),
        "pressure_seen": statistics.mean(p for p, _ in chunk.pressures) if chunk.pressures else 0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help=f"write benchmarks/{RESULTS.name}")
    ap.add_argument("--quick", action="store_true", help="fewer sessions (a smoke run)")
    args = ap.parse_args()
    sessions = 6 if args.quick else 25
    rows = []
    for name in MODELS:
        for pressure in PRESSURES:
            row = measure(name, pressure, sessions)
            rows.append(row)
            print(
                f"{name:22} p~{pressure}: {row['one']:7.1f} rewrites/s (jobs 2: {row['two']:7.1f}),"
                f" policy alone {row['floor']:9.1f}/s, {row['items']:.0f} items",
                flush=True,
            )
    lines = [
        "## Fuzz throughput",
        "",
        *machine_info(f"{len(MODELS)} models x {len(PRESSURES)} pressures,"
                      f" {sessions} sessions of {PASSES} passes, seed {SEED}"),
        "",
        "Rewrites checked per second by `ctxproof fuzz` (exploration: drawing the session,"
        " the agent, the policy run twice for PL002, the audit of every append and rewrite;"
        " no shrinking), in one process and in two worker processes, beside the policy"
        " alone (the floor, timed in the same run).",
        "",
        "| model | pressure | rewrites | window items | rewrites/s (1 process) |"
        " rewrites/s (`--jobs 2`) | policy alone, rewrites/s | findings |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | ~{r['pressure']} (mean {r['pressure_seen']:.2f}) | {r['rewrites']}"
            f" | {r['items']:.0f} | {r['one']:.0f} | {r['two']:.0f} | {r['floor']:.0f}"
            f" | {r['findings']} |"
        )
    ones = [r["one"] for r in rows]
    lines += [
        "",
        f"Target: at least 200 rewrites/s on a 100-item window in one process."
        f" Median over the table: {statistics.median(ones):.0f}/s;"
        f" lowest {min(ones):.0f}/s ({min(rows, key=lambda r: r['one'])['model']}).",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section(RESULTS, SECTION, text)
        print(f"wrote the {SECTION} section of {RESULTS}")


if __name__ == "__main__":
    main()
