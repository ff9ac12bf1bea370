#!/usr/bin/env python
"""Where ``--ray`` and ``--jobs`` start to pay: whole commands timed against a plain run.

Usage (from the repository root; ``--ray`` rows need the ``ray`` extra)::

    .venv/bin/python benchmarks/crossover.py [--rounds R] [--no-ray]

1. **Audit.** Batches of 8 to 800 seeded traces (the generator of
   ``workloads.py``: 20 items, 5 passes, about 26 KiB each), audited by
   ``ctxproof audit --format json`` with ``--jobs 1``, ``--jobs 2`` and
   ``--ray`` (no address and no cluster running: the command starts a local
   one, as a first-time user's does).
2. **Fuzz.** ``ctxproof fuzz`` on ``models/policies/spill_first.py`` (a cheap
   policy: what a plain run costs is the agent and the audit) for 50 to 800
   sessions of 10 passes, with ``--jobs 1``, ``--jobs 2`` and ``--ray``.

Each command's wall time, start-up included, the median of ``--rounds``. A
line through the plain runs and one through each other column give the fixed
cost and the cost per KiB (per session), and the crossover is where they
meet: the batch size below which the hint of ``ctxproof audit``/``fuzz`` says
a plain run is likely faster (``verifier/cli/common.py``; docs/distributed.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.workloads import SEED, build_steady_trace  # noqa: E402

BATCHES = (8, 46, 200, 800)
SESSIONS = (50, 100, 200, 400, 800)


def ctxproof_cmd() -> list[str]:
    script = Path(sys.executable).parent / "ctxproof"
    return [str(script)] if script.exists() else [sys.executable, "-m", "verifier"]


def timed(args: Sequence[str], cwd: Path, rounds: int) -> float:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    walls = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [*ctxproof_cmd(), *args], cwd=cwd, capture_output=True, timeout=3600, env=env
        )
        walls.append(time.perf_counter() - t0)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{args}: exit {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return sorted(walls)[(len(walls) - 1) // 2]


def fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least squares: (fixed, per unit)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    return my - slope * mx, slope


def crossover(plain: tuple[float, float], other: tuple[float, float]) -> float | None:
    """Where the other line meets the plain one (None: it never catches up)."""
    (a0, a1), (b0, b1) = plain, other
    if b1 >= a1:
        return None
    return (b0 - a0) / (a1 - b1)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--part", choices=["audit", "fuzz", "both"], default="both")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    columns = ["--jobs 1", "--jobs 2"] + ([] if args.no_ray else ["--ray"])
    audit: dict[str, list[float]] = {c: [] for c in columns}
    kib: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ctxproof-crossover-") as tmp:
        folder = Path(tmp)
        names = []
        for i in range(max(BATCHES)):
            name = f"t{i:04d}.jsonl"
            (folder / name).write_text(build_steady_trace(20, 5, SEED + i), "utf-8")
            names.append(name)
        for n in BATCHES if args.part != "fuzz" else ():
            batch = names[:n]
            kib.append(sum((folder / b).stat().st_size for b in batch) / 1024)
            for column in columns:
                extra = column.split()
                wall = timed(["audit", *batch, "--format", "json", *extra], folder, args.rounds)
                audit[column].append(wall)
                print(f"audit {n:4d} traces ({kib[-1]:8.0f} KiB) {column:9s} {wall:7.2f} s",
                      flush=True)
        policy = f"{ROOT / 'models' / 'policies' / 'spill_first.py'}:spill_first"
        fuzz: dict[str, list[float]] = {c: [] for c in columns}
        for s in SESSIONS if args.part != "audit" else ():
            for column in fuzz:
                out = folder / f"fuzz-{s}-{column.replace(' ', '')}"
                wall = timed(
                    ["fuzz", policy, "--sessions", str(s), "--passes", "10", "--out", str(out),
                     "--format", "json", *column.split()],
                    folder,
                    args.rounds,
                )
                fuzz[column].append(wall)
                print(f"fuzz {s:4d} sessions {column:9s} {wall:7.2f} s", flush=True)
    print(f"load average at end: {os.getloadavg()}")
    for what, unit, xs, table in (
        ("audit", "KiB", kib, audit),
        ("fuzz", "session", [float(n) for n in SESSIONS], fuzz),
    ):
        if not table["--jobs 1"]:
            continue
        plain = fit(xs, table["--jobs 1"])
        print(f"{what} --jobs 1: {plain[0]:.2f} s + {plain[1] * 1000:.2f} ms/{unit}")
        for column in columns[1:]:
            line = fit(xs, table[column])
            at = crossover(plain, line)
            where = "never" if at is None else f"{at:.0f} {unit}"
            print(f"{what} {column}: {line[0]:.2f} s + {line[1] * 1000:.2f} ms/{unit};"
                  f" crossover {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
