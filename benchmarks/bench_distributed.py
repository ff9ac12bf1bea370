#!/usr/bin/env python
"""Benchmark ``--ray`` against ``--jobs``: traces audited and fuzz sessions played per second.

Usage (from the repository root; needs the ``ray`` extra)::

    .venv/bin/python benchmarks/bench_distributed.py [--write] [--quick]

1. **Audit.** 1,000 small seeded traces (the generator of ``bench_audit.py``:
   20 items, 5 passes each) in a temporary folder, audited by the ``ctxproof``
   command with ``--format json`` and ``--jobs 1``, ``--jobs 2``, ``--ray``
   (no address: the command starts a local cluster of its own, on all cores,
   and stops it at its end) and ``--ray=ADDRESS`` (a 2-CPU cluster this script
   started beforehand: the command connects, and Ray starts worker processes
   for it). Wall time of each command, start-up included; all outputs must be
   byte-identical. Then the same traces through
   :func:`verifier.distributed.ray_audit` in this process, on that cluster,
   after a first call has started the workers (warm: what a pipeline that
   audits batch after batch pays).
2. **Fuzz.** ``ctxproof fuzz`` on a policy model, ``--sessions 200 --passes 10``,
   with ``--jobs 1``, ``--jobs 2`` and ``--ray=ADDRESS``: sessions per second,
   shrinking of what is found included; the outputs (but for ``seconds``) must
   be equal.

The overhead of Ray per trace is (Ray's wall time − ``--jobs 2``'s) / traces,
both on two worker processes. With ``--write`` the results go to
``benchmarks/results/distributed.md``, which ``benchmarks/report.py`` puts in
``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from benchmarks.workloads import SEED, build_steady_trace  # noqa: E402

PAGE = ROOT / "benchmarks" / "results" / "distributed.md"
"""This benchmark's page; ``benchmarks/report.py`` puts it in RESULTS.md."""


def fmt_s(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def ctxproof_cmd() -> list[str]:
    script = Path(sys.executable).parent / "ctxproof"
    return [str(script)] if script.exists() else [sys.executable, "-m", "verifier"]


def busy_seconds() -> float | None:
    """CPU seconds all processes of this machine have used (from /proc/stat), steal included."""
    try:
        head = Path("/proc/stat").read_text(encoding="ascii").split("\n", 1)[0].split()
    except OSError:
        return None
    if not head or head[0] != "cpu" or len(head) < 9:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in head[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def source_fingerprint(root: Path) -> str:
    """sha256 prefix of every file of a verifier/ folder (relative names and contents)."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def machine_info(fingerprint: str) -> list[str]:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def ver(pkg: str) -> str:
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return "not installed"

    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return [
        f"- date: {now}",
        f"- machine: {platform.system()} {platform.release()} {platform.machine()}, {cpu}",
        f"- nproc: {os.cpu_count()}",
        f"- Python: {platform.python_version()} ({platform.python_implementation()})",
        f"- z3-solver: {ver('z3-solver')}; networkx: {ver('networkx')}",
        f"- verifier measured (sha256 prefix of its files): {fingerprint}",
    ]
ITEMS = 20
PASSES = 5
POLICY = "spill_first"
FUZZ_PASSES = 10
FUZZ_SEED = 5


@dataclass
class Run:
    label: str
    wall: float
    busy: float | None  # cores of this machine busy meanwhile (ours and others')
    rc: int
    out: bytes
    err: str


def command(label: str, args: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> Run:
    b0, t0 = busy_seconds(), time.perf_counter()
    proc = subprocess.run(
        [*ctxproof_cmd(), *args], cwd=cwd, capture_output=True, timeout=1800, env=env
    )
    wall = time.perf_counter() - t0
    b1 = busy_seconds()
    busy = None if b0 is None or b1 is None else (b1 - b0) / wall
    err = proc.stderr.decode("utf-8", "replace")
    print(
        f"  {label}: {wall:.2f} s, exit {proc.returncode}, {busy or 0:.2f} cores busy", flush=True
    )
    return Run(label, wall, busy, proc.returncode, proc.stdout, err)


def signed_ms(x: float) -> str:
    return f"{x * 1000:+.1f} ms"


def median_run(runs: Sequence[Run]) -> Run:
    """The run of median wall time (the lower one of an even count)."""
    ordered = sorted(runs, key=lambda r: r.wall)
    return ordered[(len(ordered) - 1) // 2]


def fuzz_result(run: Run) -> Any:
    """The JSON fuzz output without its timing and with counterexamples by content."""
    obj = json.loads(run.out)
    obj.pop("seconds", None)
    for cex in obj.get("counterexamples", []):
        cex["trace"] = Path(cex.pop("path")).read_text("utf-8")
    return obj


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--write", action="store_true", help=f"write {PAGE.relative_to(ROOT)}")
    ap.add_argument("--quick", action="store_true", help="100 traces, 50 sessions (a smoke run)")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each, medians shown")
    args = ap.parse_args()
    try:
        import ray
    except ImportError:
        print("needs the ray extra: pip install 'ctxproof[ray]'", file=sys.stderr)
        return 2
    from verifier.distributed import ray_audit

    n_traces = 100 if args.quick else 1000
    sessions = 50 if args.quick else 200
    started = time.perf_counter()
    load = [os.getloadavg()[0]]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    with tempfile.TemporaryDirectory(prefix="ctxproof-bench-ray-") as tmp:
        folder = Path(tmp)
        names = []
        size = 0
        for i in range(n_traces):
            text = build_steady_trace(ITEMS, PASSES, SEED + i)
            name = f"t{i:04d}.jsonl"
            (folder / name).write_text(text, "utf-8")
            size += len(text.encode("utf-8"))
            names.append(name)
        print(f"auditing {n_traces} traces ({size / n_traces / 1024:.0f} KiB each)", flush=True)
        audit = ["audit", *names, "--format", "json"]
        all_runs: list[Run] = []
        for _ in range(args.rounds):  # before this process starts a cluster of its own
            all_runs.append(command("--jobs 1", [*audit, "--jobs", "1"], folder, env))
            all_runs.append(command("--jobs 2", [*audit, "--jobs", "2"], folder, env))
            all_runs.append(command("--ray (a new local cluster)", [*audit, "--ray"], folder, env))
        ray.init(
            address="local",
            num_cpus=2,
            include_dashboard=False,
            object_store_memory=200 * 1024 * 1024,
            logging_level=logging.ERROR,
            log_to_driver=False,
        )
        try:
            address = ray.get_runtime_context().gcs_address
            # a cluster started here asks for its token (Ray's default for local clusters)
            env_joined = {**env, "RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE", "token")}
            joined = "--ray=ADDRESS (a running 2-CPU cluster)"
            work = [(n, (folder / n).read_bytes(), None, "support") for n in names]
            warm_walls = []
            warm_outs = set()
            for _ in range(args.rounds):
                all_runs.append(command(joined, [*audit, f"--ray={address}"], folder, env_joined))
                cwd = os.getcwd()
                os.chdir(folder)
                try:
                    ray_audit(work[:40])  # starts the workers, which import the checker
                    t0 = time.perf_counter()
                    warm = ray_audit(work)
                    warm_walls.append(time.perf_counter() - t0)
                finally:
                    os.chdir(cwd)
                print(f"  ray_audit, warm workers: {warm_walls[-1]:.2f} s", flush=True)
                warm_outs.add(
                    "".join(
                        json.dumps(r, ensure_ascii=False) + "\n"
                        for r in warm
                        if isinstance(r, dict)
                    ).encode("utf-8")
                )
            warm_wall = sorted(warm_walls)[(len(warm_walls) - 1) // 2]  # as median_run
            load.append(os.getloadavg()[0])

            print(f"fuzzing {POLICY}: {sessions} sessions of {FUZZ_PASSES} passes", flush=True)
            policy = f"{ROOT / 'models' / 'policies' / POLICY}.py:{POLICY}"
            all_fuzz: list[Run] = []
            for _ in range(args.rounds):
                for label, extra, run_env in (
                    ("--jobs 1", ["--jobs", "1"], env),
                    ("--jobs 2", ["--jobs", "2"], env),
                    (joined, [f"--ray={address}"], env_joined),
                ):
                    out = folder / f"fuzz{len(all_fuzz)}"
                    fuzz_args = [
                        "fuzz", policy, "--sessions", str(sessions), "--passes", str(FUZZ_PASSES),
                        "--seed", str(FUZZ_SEED), "--out", str(out), "--format", "json", *extra,
                    ]  # fmt: skip
                    all_fuzz.append(command(label, fuzz_args, folder, run_env))
            fuzz_same = all(r.rc in (0, 1) for r in all_fuzz) and all(
                fuzz_result(r) == fuzz_result(all_fuzz[0]) for r in all_fuzz
            )
            found = len(json.loads(all_fuzz[0].out).get("counterexamples", []))
        finally:
            ray.shutdown()
    load.append(os.getloadavg()[0])
    labels = list(dict.fromkeys(r.label for r in all_runs))
    runs = [median_run([r for r in all_runs if r.label == lb]) for lb in labels]
    fuzz_labels = list(dict.fromkeys(r.label for r in all_fuzz))
    fuzz_runs = [median_run([r for r in all_fuzz if r.label == lb]) for lb in fuzz_labels]
    outs = {r.out for r in all_runs} | warm_outs
    identical = len(outs) == 1 and all(r.rc == 0 for r in all_runs)
    j2 = runs[1].wall
    elapsed = time.perf_counter() - started

    rows = [
        "| how | wall | traces/s | per trace | Ray's overhead per trace over `--jobs 2`"
        " | machine busy, cores |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    timed: list[tuple[str, float, float | None]] = [(r.label, r.wall, r.busy) for r in runs]
    for label, wall, busy in [*timed, ("ray_audit, warm workers", warm_wall, None)]:
        over = "—" if "ray" not in label else signed_ms((wall - j2) / n_traces)
        rows.append(
            f"| {label} | {fmt_s(wall)} | {n_traces / wall:.0f} | {fmt_s(wall / n_traces)}"
            f" | {over} | {'—' if busy is None else f'{busy:.2f}'} |"
        )
    frows = [
        "| how | wall | sessions/s | machine busy, cores |",
        "|---|---:|---:|---:|",
        *(
            f"| {r.label} | {fmt_s(r.wall)} | {sessions / r.wall:.1f}"
            f" | {'—' if r.busy is None else f'{r.busy:.2f}'} |"
            for r in fuzz_runs
        ),
    ]
    lines = [
        "## Ray against --jobs",
        "",
        f"Measured by `benchmarks/bench_distributed.py`"
        f"{' (`--quick`)' if args.quick else ''} in {elapsed:.0f} s:",
        "",
        *machine_info(
            f"every file under `verifier/`: {source_fingerprint(ROOT / 'verifier')};"
            f" ray {ray.__version__}"
        ),
        f"- 1-minute load average: start {load[0]:.2f}, after the audits {load[1]:.2f},"
        f" end {load[2]:.2f} (other jobs share this machine)",
        "",
        "Reproduce: `.venv/bin/python benchmarks/bench_distributed.py --write` (`--quick` for"
        " a smoke run).",
        "",
        f"{n_traces:,} seeded traces (the generator of `workloads.py`: {ITEMS} items,"
        f" {PASSES} passes, {size / n_traces / 1024:.0f} KiB each) audited by `ctxproof audit"
        f" --format json`, {args.rounds} run(s) each (the median shown; of an even number of"
        " runs, the faster of the middle two), wall time of the"
        ' command, start-up included; "machine busy" counts the cores of this machine busy'
        " meanwhile, ours and other jobs' (2.00: none left idle)."
        " `--ray` with no address starts a local cluster for the command (all cores of this"
        " machine); `--ray=ADDRESS` joins a 2-CPU cluster started beforehand (Ray starts"
        " worker processes for the command, each importing the checker). `ray_audit, warm"
        " workers` is the same audit from Python on that cluster once its workers are up."
        f" Outputs byte-identical to `--jobs 1`: **{'yes' if identical else 'no'}**.",
        "",
        "On a machine other jobs keep busy (a busy column at 2.00), a wall time also measures"
        " the share of the cores a command wins from them, and Ray runs more processes than"
        " `--jobs` (its raylet and GCS besides the workers): compare the fixed cost of a start"
        " (a new cluster, new workers) against the warm rows, and the rows against each other"
        " only when the machine was otherwise idle.",
        "",
        *rows,
        "",
        f"`ctxproof fuzz` on `models/policies/{POLICY}.py`, {sessions} sessions of"
        f" {FUZZ_PASSES} passes, seed {FUZZ_SEED} (chunks of 25 sessions; {found} rule(s)"
        " found and shrunk, included). Outputs equal but for `seconds`:"
        f" **{'yes' if fuzz_same else 'no'}**.",
        "",
        *frows,
    ]
    if not identical:
        bad = [r.label for r in runs if r.out != runs[0].out or r.rc != 0]
        lines += ["", f"Differing or failing: {', '.join(bad) or 'ray_audit'}"]
        for r in runs:
            if r.rc:
                lines.append(f"- {r.label}: {r.err.strip().splitlines()[-1:]}")
    text = "\n".join(lines)
    print(text)
    if args.write:
        PAGE.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {PAGE.relative_to(ROOT)} (make bench-distributed puts it in RESULTS.md)")
    return 0 if identical and fuzz_same else 1


if __name__ == "__main__":
    raise SystemExit(main())
