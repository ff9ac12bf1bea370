#!/usr/bin/env python
"""Benchmark a long trace audit pass by pass, and many small audits in parallel.

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_audit.py [--write] [--quick] [--profile]

1. **Audit over many passes.** A seeded trace (the generator of
   ``bench_check.py``, run in a steady state) of 1,000 ``diff`` rewrites over a
   window held at about 1,000 items is audited with
   ``audit_trace(trace, graph=JustificationGraph())``. Every pass is timed from
   outside the verifier: the rewrite check is wrapped, the graph is a subclass
   that times its own updates, and the append check is wrapped, so each pass is
   split into check_rewrite, graph updates, append checks and the rest. The
   result is ms/pass by tenths of the trace, and a text chart of the curve.
2. **Many traces in parallel.** 100 small seeded traces (20 passes over about
   100 items each) in a temporary folder, audited by the ``ctxproof`` command
   with ``--format json --jobs 1`` and ``--jobs 2``: wall time of each, the
   speed-up, and whether both outputs are byte-identical.

With ``--write`` the results replace the ``bench_audit`` section of
``benchmarks/RESULTS.md`` (the ``bench_check`` section is left as it is).
With ``--profile`` (and always when the cost per pass grows by more than a
quarter) the audit is replayed once more with cProfile switched on for its
last tenth of passes, and the ``verifier`` functions with the largest
cumulative time there are listed.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import itertools
import json
import os
import pstats
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from bench_check import (
    RESULTS,
    SEED,
    ItemFactory,
    Obj,
    acceptable_change,
    append_event,
    fmt_s,
    loaded_fingerprint,
    machine_info,
    opening_events,
    write_section,
)

import verifier.audit as audit_mod
from verifier.check import RewriteResult, check_rewrite
from verifier.graph import JustificationGraph
from verifier.io import parse_trace_text
from verifier.rules.composition import check_append
from verifier.rules.context import RewriteContext
from verifier.window import Item, Rewrite, Trace

HERE = Path(__file__).resolve().parent
SOURCES = HERE.parent / "verifier"
MEASURED = Path(audit_mod.__file__ or SOURCES / "audit.py").resolve().parent
"""The verifier package this process imported: a copy of SOURCES taken at the start."""
SNAPSHOT_ENV = "BENCH_AUDIT_SNAPSHOT"
SECTION = "bench_audit"
CHANGES_PER_PASS = 5
GROWTH_FLAG = 1.25
"""Last tenth over first tenth above this is growth, and is profiled: the median CPU
ms/pass, or the mean of a part (check_rewrite, graph, append checks, rest) of 1 ms or more."""
SPARK = "▁▂▃▄▅▆▇█"
PARTS = {
    "check": "check_rewrite",
    "graph": "graph updates",
    "append": "append checks",
    "other": "rest",
}


# ---------------------------------------------------------------------------------------
# A trace in a steady state: the window stays at about n_items
# ---------------------------------------------------------------------------------------


def _cites_as_witness(obj: Obj) -> list[str]:
    w = obj.get("witnesses")
    return list(w) if isinstance(w, list) else []


def _evict(current: dict[str, Obj], k: int, keep: set[str]) -> list[str]:
    """The oldest ids to take out of the window: at least k of them, none from keep.

    An observation (or its stub) leaves together with every item that cites it
    as a witness, so no item in the window loses a witness it relies on.
    """
    citers: dict[str, list[str]] = {}
    for iid, obj in current.items():
        for wid in _cites_as_witness(obj):
            citers.setdefault(wid, []).append(iid)
    out: list[str] = []
    chosen: set[str] = set()
    for iid in current:
        if len(out) >= k:
            break
        if iid in chosen or iid in keep:
            continue
        group = [iid, *citers.get(iid, ())]
        if any(g in keep for g in group):
            continue
        for g in group:
            if g not in chosen:
                chosen.add(g)
                out.append(g)
    return out


def build_steady_trace(
    n_items: int, passes: int, seed: int, *, changes: int = CHANGES_PER_PASS
) -> str:
    """A JSONL trace like ``bench_check.build_trace``, with the window held near n_items.

    Appends build the window; then every pass spills what it is about to weaken
    or stub, rewrites ``changes`` items with ``bench_check.acceptable_change``
    (weakenings, re-wordings, equivalent claims, prose edits and prunes,
    commitments and observations spilled and stubbed), and evicts the oldest
    items to make room for the 4 new items appended after it (prose, an
    observation, a claim it witnesses, a commitment). Evicted prose is dropped,
    evicted stubs are dropped (their originals are in the store), any other
    evicted item is spilled in its current version first.
    """
    rng = random.Random(seed)
    f = ItemFactory(rng)
    lines, current = opening_events(f, n_items)
    for p in range(1, passes + 1):
        ids = [i for i, o in current.items() if o["kind"] != "stub"]
        targets = rng.sample(ids, min(changes, len(ids)))
        evicted = _evict(current, len(current) + 4 - n_items, set(targets))
        put: list[Obj] = []
        remove: list[str] = []
        spill: list[Obj] = []
        for iid in targets:
            ch = acceptable_change(f, current[iid], f"pass {p}")
            if ch is None:
                continue
            spill.extend(ch.spill)
            if ch.put is None:
                remove.append(iid)
                del current[iid]
            else:
                put.append(ch.put)
                current[iid] = ch.put
        for iid in evicted:
            obj = current.pop(iid)
            if obj["kind"] not in ("prose", "stub"):
                spill.append(obj)
            remove.append(iid)
        gone = set(evicted)
        f.observations = [o for o in f.observations if o["id"] not in gone]
        f.witnessed = [w for w in f.witnessed if w not in gone]
        if spill:
            lines.append({"event": "spill", "items": spill})
        lines.append(
            {
                "event": "rewrite",
                "policy": "bench-steady",
                "diff": {"remove": remove, "put": put},
                "pressure": 0.9,
            }
        )
        lines.append(append_event(f, rng, current))
    return "".join(json.dumps(ev, ensure_ascii=False) + "\n" for ev in lines)


# ---------------------------------------------------------------------------------------
# Timing an audit pass by pass, from outside the verifier
# ---------------------------------------------------------------------------------------


def source_fingerprint(root: Path) -> str:
    """sha256 prefix of every file of a verifier/ folder (relative names and contents)."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


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


def others(busy0: float | None, busy1: float | None, ours: float, wall: float) -> float | None:
    """Cores kept busy by other work meanwhile, on average."""
    if busy0 is None or busy1 is None or wall <= 0:
        return None
    return max(0.0, (busy1 - busy0 - ours) / wall)


def fmt_cores(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


@dataclass
class PassClock:
    """Per-pass timings; index 0 is everything before the first rewrite."""

    start: list[float] = field(default_factory=list)
    cpu_start: list[float] = field(default_factory=list)
    check: list[float] = field(default_factory=lambda: [0.0])
    graph: list[float] = field(default_factory=lambda: [0.0])
    append: list[float] = field(default_factory=lambda: [0.0])
    gc: list[float] = field(default_factory=lambda: [0.0])
    window: list[int] = field(default_factory=lambda: [0])
    stubs: list[int] = field(default_factory=lambda: [0])
    store: list[int] = field(default_factory=lambda: [0])
    nodes: list[int] = field(default_factory=lambda: [0])
    on_pass: Callable[[int], None] | None = None
    sample_at: set[int] = field(default_factory=set)
    busy: dict[int, float | None] = field(default_factory=dict)
    """pass -> the machine's busy seconds at its start, for the passes in sample_at."""

    @property
    def index(self) -> int:
        return len(self.start)

    def new_pass(self, window: int, stubs: int, store: int, nodes: int) -> None:
        if self.index + 1 in self.sample_at:
            self.busy[self.index + 1] = busy_seconds()
        self.start.append(time.perf_counter())
        self.cpu_start.append(time.process_time())
        for col in (self.check, self.graph, self.append, self.gc):
            col.append(0.0)
        self.window.append(window)
        self.stubs.append(stubs)
        self.store.append(store)
        self.nodes.append(nodes)
        if self.on_pass is not None:
            self.on_pass(self.index)


@dataclass
class TimedGraph(JustificationGraph):
    """The justification graph, timing its own updates into a PassClock."""

    clock: PassClock = field(default_factory=PassClock)
    stored: int = 0
    """Store entries so far: the store nodes spills added (len() of a store is O(entries))."""

    def append(self, items: Iterable[Item], pass_no: int, line: int | None = None) -> None:
        t0 = time.perf_counter()
        super().append(items, pass_no, line)
        self.clock.graph[self.clock.index] += time.perf_counter() - t0

    def spill(self, items: Iterable[Item], pass_no: int, line: int | None = None) -> None:
        nodes = len(self.g)
        t0 = time.perf_counter()
        super().spill(items, pass_no, line)
        self.clock.graph[self.clock.index] += time.perf_counter() - t0
        self.stored += len(self.g) - nodes

    def rewrite(
        self,
        before: Iterable[Item],
        after: Iterable[Item],
        pass_no: int,
        *,
        policy: str | None = None,
        line: int | None = None,
    ) -> None:
        t0 = time.perf_counter()
        super().rewrite(before, after, pass_no, policy=policy, line=line)
        self.clock.graph[self.clock.index] += time.perf_counter() - t0


@contextmanager
def timed_audit(graph: TimedGraph) -> Iterator[None]:
    """Wrap the check_rewrite and check_append that audit_trace calls, for this block."""
    clock = graph.clock
    # audit_trace looks both names up in its module at every event
    real_check, real_append = check_rewrite, check_append
    assert vars(audit_mod)["check_rewrite"] is real_check
    assert vars(audit_mod)["check_append"] is real_append

    def check(before: Sequence[Item], *args: Any, **kwargs: Any) -> RewriteResult:
        stubs = sum(1 for it in before if it.kind == "stub")
        clock.new_pass(len(before), stubs, graph.stored, len(graph.g))
        t0 = time.perf_counter()
        try:
            result: RewriteResult = real_check(before, *args, **kwargs)
            return result
        finally:
            clock.check[clock.index] += time.perf_counter() - t0

    def append(ctx: RewriteContext, items: tuple[Item, ...]) -> None:
        t0 = time.perf_counter()
        try:
            real_append(ctx, items)
        finally:
            clock.append[clock.index] += time.perf_counter() - t0

    gc_start = [0.0]

    def collecting(phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            gc_start[0] = time.perf_counter()
        else:
            clock.gc[clock.index] += time.perf_counter() - gc_start[0]

    gc.callbacks.append(collecting)
    try:
        with (
            mock.patch.object(audit_mod, "check_rewrite", check),
            mock.patch.object(audit_mod, "check_append", append),
        ):
            yield
    finally:
        gc.callbacks.remove(collecting)


@dataclass
class AuditRun:
    passes: int
    parse: float
    audit: float
    total: list[float]  # per pass, index 0 = before the first rewrite
    cpu: list[float]  # CPU time of this process, per pass
    check: list[float]
    graph: list[float]
    append: list[float]
    gc: list[float]
    window: list[int]
    stubs: list[int]
    store: list[int]
    nodes: list[int]
    busy: dict[int, float | None]
    final_window: int
    final_store: int
    final_nodes: int
    verdicts: dict[str, int]
    findings: list[Obj]
    n_findings: int
    undecided: list[str]
    sources: str


def run_audit(text: str, *, profile_from: int | None = None) -> tuple[AuditRun, Any]:
    """Parse and audit a trace; with profile_from, cProfile passes from there to the end."""
    t0 = time.perf_counter()
    trace: Trace = parse_trace_text(text, "steady.jsonl")
    t1, c1 = time.perf_counter(), time.process_time()
    graph = TimedGraph()
    n = sum(isinstance(ev, Rewrite) for ev in trace.events)
    graph.clock.sample_at = {d * n // 10 + 1 for d in range(10)}
    prof = cProfile.Profile() if profile_from is not None else None
    if prof is not None:

        def maybe_start(index: int) -> None:
            if index == profile_from:
                prof.enable()

        graph.clock.on_pass = maybe_start
    with timed_audit(graph):
        report = audit_mod.audit_trace(trace, graph=graph)
    t2, c2 = time.perf_counter(), time.process_time()
    if prof is not None:
        prof.disable()
    c = graph.clock
    c.busy[len(c.start) + 1] = busy_seconds()
    total = [b - a for a, b in itertools.pairwise([t1, *c.start, t2])]
    cpu = [b - a for a, b in itertools.pairwise([c1, *c.cpu_start, c2])]
    verdicts: dict[str, int] = {}
    for r in report.rewrites:
        verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
    findings = [f.to_json() for f in report.findings[:10]]
    if not findings:  # findings of a single rewrite, if the audit did not collect them
        findings = [f.to_json() for r in report.rewrites for f in r.findings][:10]
    run = AuditRun(
        passes=len(c.start),
        parse=t1 - t0,
        audit=t2 - t1,
        total=total,
        cpu=cpu,
        check=c.check,
        graph=c.graph,
        append=c.append,
        gc=c.gc,
        window=c.window,
        stubs=c.stubs,
        store=c.store,
        nodes=c.nodes,
        busy=c.busy,
        final_window=len(report.final_window),
        final_store=graph.stored,
        final_nodes=len(graph.g),
        verdicts=verdicts,
        findings=findings,
        n_findings=len(report.findings),
        undecided=list(report.undecided),
        sources=loaded_fingerprint(),
    )
    return run, prof


# ---------------------------------------------------------------------------------------
# Tables and charts
# ---------------------------------------------------------------------------------------


@dataclass
class Decile:
    lo: int
    hi: int
    median: float
    mean: float
    p90: float
    cpu: float
    check: float
    graph: float
    append: float
    other: float
    gc: float
    window: tuple[int, int]
    stubs: int
    store: int
    nodes: int
    others: float | None


def deciles(run: AuditRun, parts: int = 10) -> list[Decile]:
    n = run.passes
    out: list[Decile] = []
    for d in range(parts):
        lo, hi = d * n // parts + 1, (d + 1) * n // parts
        if hi < lo:
            continue
        sl = slice(lo, hi + 1)
        tot = run.total[sl]
        q = statistics.quantiles(tot, n=10) if len(tot) > 1 else [tot[0]] * 9
        check, graph, append = run.check[sl], run.graph[sl], run.append[sl]
        other = [t - c - g - a for t, c, g, a in zip(tot, check, graph, append, strict=True)]
        out.append(
            Decile(
                lo,
                hi,
                statistics.median(tot) * 1e3,
                statistics.mean(tot) * 1e3,
                q[8] * 1e3,
                statistics.median(run.cpu[sl]) * 1e3,
                statistics.mean(check) * 1e3,
                statistics.mean(graph) * 1e3,
                statistics.mean(append) * 1e3,
                statistics.mean(other) * 1e3,
                statistics.mean(run.gc[sl]) * 1e3,
                (min(run.window[sl]), max(run.window[sl])),
                round(statistics.mean(run.stubs[sl])),
                run.store[hi],
                run.nodes[hi],
                others(run.busy.get(lo), run.busy.get(hi + 1), sum(run.cpu[sl]), sum(tot)),
            )
        )
    return out


def sparkline(values: Sequence[float]) -> str:
    top = max(values) or 1.0
    return "".join(
        SPARK[min(len(SPARK) - 1, int(v / top * (len(SPARK) - 1) + 0.5))] for v in values
    )


def bar_chart(rows: Sequence[tuple[str, float, str]], width: int = 40) -> list[str]:
    top = max(v for _, v, _ in rows) or 1.0
    label_w = max(len(label) for label, _, _ in rows)
    out = []
    for label, v, note in rows:
        n = v / top * width
        full = int(n)
        bar = "█" * full + ("▌" if n - full >= 0.5 else "")
        out.append(f"{label:>{label_w}} │{bar:<{width + 1}} {v:6.1f}{note}")
    return out


def growth(ds: Sequence[Decile], cpu: bool = False) -> float:
    first, last = (ds[0].cpu, ds[-1].cpu) if cpu else (ds[0].median, ds[-1].median)
    return last / first if first > 0 else float("nan")


def part_growth(ds: Sequence[Decile]) -> dict[str, float]:
    """Last tenth over first tenth of the mean of each part that takes 1 ms or more."""
    out: dict[str, float] = {}
    first, last = ds[0], ds[-1]
    for name, label in PARTS.items():
        a, b = getattr(first, name), getattr(last, name)
        if max(a, b) >= 1.0 and a > 0:
            out[label] = b / a
    return out


def slope_per_100(series: Sequence[float]) -> float:
    """Least-squares slope of ms/pass against the pass number, in ms per 100 passes.

    series[0] (before the first rewrite) is left out.
    """
    xs = list(range(1, len(series)))
    ys = [t * 1e3 for t in series[1:]]
    if len(xs) < 2:
        return 0.0
    return statistics.linear_regression(xs, ys).slope * 100


def decile_table(ds: Sequence[Decile]) -> str:
    rows = [
        "| passes | ms/pass median | mean | p90 | CPU ms/pass median "
        "| of the mean: check_rewrite | graph updates "
        "| append checks | rest | GC, in any part | window items | of which stubs (mean) "
        "| store entries | graph nodes "
        "| other work, cores |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for d in ds:
        win = (
            f"{d.window[0]:,}–{d.window[1]:,}" if d.window[0] != d.window[1] else f"{d.window[0]:,}"
        )
        rows.append(
            f"| {d.lo:,}–{d.hi:,} | {d.median:.1f} | {d.mean:.1f} | {d.p90:.1f} | {d.cpu:.1f} "
            f"| {d.check:.1f} "
            f"| {d.graph:.2f} | {d.append:.1f} | {d.other:.1f} | {d.gc:.1f} | {win} | {d.stubs} "
            f"| {d.store:,} "
            f"| {d.nodes:,} | {fmt_cores(d.others)} |"
        )
    return "\n".join(rows)


def curve(ds: Sequence[Decile]) -> list[str]:
    lines = [
        f"ms/pass, median of each tenth, wall: {sparkline([d.median for d in ds])}",
        f"                                CPU: {sparkline([d.cpu for d in ds])}",
        "",
        "wall ms/pass (median); CPU ms/pass (median) in brackets",
    ]
    lines += bar_chart([(f"{d.lo}–{d.hi}", d.median, f"  ({d.cpu:.1f})") for d in ds])
    return lines


def component_curves(ds: Sequence[Decile], run: AuditRun) -> list[str]:
    rest = [
        t - c - g - a
        for t, c, g, a in zip(run.total, run.check, run.graph, run.append, strict=True)
    ]
    out = []
    for name, vals, series in (
        ("check_rewrite", [d.check for d in ds], run.check),
        ("graph updates", [d.graph for d in ds], run.graph),
        ("append checks", [d.append for d in ds], run.append),
        ("rest         ", [d.other for d in ds], rest),
        ("GC (any part)", [d.gc for d in ds], run.gc),
    ):
        out.append(
            f"{name} {sparkline(vals)}  {vals[0]:5.2f} → {vals[-1]:5.2f} ms"
            f" ({vals[-1] / vals[0] if vals[0] else float('nan'):.1f}×),"
            f" slope {slope_per_100(series):+.3f} ms per 100 passes"
        )
    return out


# ---------------------------------------------------------------------------------------
# Profile of the late passes
# ---------------------------------------------------------------------------------------


@dataclass
class Hotspot:
    where: str
    ncalls: int
    tottime: float
    cumtime: float


def verifier_hotspots(prof: Any, top: int = 15) -> list[Hotspot]:
    """The functions defined under verifier/ with the largest cumulative time."""
    stats: dict[tuple[str, int, str], tuple[int, int, float, float, Any]]
    stats = vars(pstats.Stats(prof))["stats"]
    root = MEASURED.resolve()
    out = []
    for (filename, lineno, func), (_cc, nc, tt, ct, _callers) in stats.items():
        path = Path(filename).resolve()
        if not path.is_relative_to(root):
            continue
        rel = Path("verifier") / path.relative_to(root)
        out.append(Hotspot(f"{rel}:{lineno} {func}", nc, tt, ct))
    out.sort(key=lambda h: -h.cumtime)
    return out[:top]


def hotspot_table(spots: Sequence[Hotspot], passes: int) -> str:
    rows = [
        "| function | calls / pass | own time, ms / pass | cumulative, ms / pass |",
        "|---|---:|---:|---:|",
    ]
    for h in spots:
        rows.append(
            f"| `{h.where}` | {h.ncalls / passes:,.1f} | {h.tottime / passes * 1e3:.2f} "
            f"| {h.cumtime / passes * 1e3:.2f} |"
        )
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------
# Part 2: many small traces, --jobs 1 against --jobs 2
# ---------------------------------------------------------------------------------------


def ctxproof_cmd() -> list[str]:
    script = Path(sys.executable).parent / "ctxproof"
    return [str(script)] if script.exists() else [sys.executable, "-m", "verifier"]


@dataclass
class JobsRun:
    jobs: int
    wall: float
    cpu: float  # user + system time of the command and its workers
    others: float | None  # cores busy with other work meanwhile
    rc: int
    out: bytes
    err: str


def audit_many(folder: Path, names: list[str], jobs: int) -> JobsRun:
    cmd = [*ctxproof_cmd(), "audit", *names, "--format", "json", "--jobs", str(jobs)]
    r0, b0 = resource.getrusage(resource.RUSAGE_CHILDREN), busy_seconds()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, timeout=600)
    wall = time.perf_counter() - t0
    r1, b1 = resource.getrusage(resource.RUSAGE_CHILDREN), busy_seconds()
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    err = proc.stderr.decode("utf-8", "replace")
    return JobsRun(jobs, wall, cpu, others(b0, b1, cpu, wall), proc.returncode, proc.stdout, err)


@dataclass
class ParallelResult:
    traces: int
    passes: int
    items: int
    trace_bytes: int
    runs: list[JobsRun]
    identical: bool
    first_difference: str | None
    verdicts: dict[str, int]
    findings: int


def measure_parallel(
    n_traces: int, passes: int, items: int, rounds: int, log: Callable[[str], None]
) -> ParallelResult:
    with tempfile.TemporaryDirectory(prefix="ctxproof-bench-audit-") as tmp:
        folder = Path(tmp)
        names = []
        size = 0
        for i in range(1, n_traces + 1):
            name = f"t{i:03d}.jsonl"
            text = build_steady_trace(items, passes, SEED + i)
            (folder / name).write_text(text, encoding="utf-8")
            size += len(text.encode("utf-8"))
            names.append(name)
        runs: list[JobsRun] = []
        for r in range(rounds):
            order = (1, 2) if r % 2 == 0 else (2, 1)
            for jobs in order:
                run = audit_many(folder, names, jobs)
                log(
                    f"  --jobs {jobs}: {run.wall:.2f} s wall, {run.cpu:.2f} s CPU, exit {run.rc},"
                    f" other work kept {fmt_cores(run.others)} cores busy"
                )
                runs.append(run)
    outs = {run.out for run in runs}
    identical = len(outs) == 1
    diff = None
    if not identical:
        a = next(r.out for r in runs if r.jobs == 1).splitlines()
        b = next(r.out for r in runs if r.jobs == 2).splitlines()
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                diff = f"line {i + 1}: {x[:200]!r} vs {y[:200]!r}"
                break
        else:
            diff = f"{len(a)} lines vs {len(b)} lines"
    verdicts: dict[str, int] = {}
    findings = 0
    for line in runs[0].out.decode("utf-8").splitlines():
        res = json.loads(line)
        findings += len(res["findings"])
        for rw in res["rewrites"]:
            verdicts[rw["verdict"]] = verdicts.get(rw["verdict"], 0) + 1
    return ParallelResult(n_traces, passes, items, size, runs, identical, diff, verdicts, findings)


def parallel_table(p: ParallelResult) -> str:
    j1 = [r for r in p.runs if r.jobs == 1]
    j2 = [r for r in p.runs if r.jobs == 2]
    m1 = statistics.median(r.wall for r in j1)
    m2 = statistics.median(r.wall for r in j2)
    c1 = statistics.median(r.cpu for r in j1)
    c2 = statistics.median(r.cpu for r in j2)
    rcs = sorted({r.rc for r in p.runs})
    rows = [
        "| traces | runs each | `--jobs 1` wall | `--jobs 2` wall | speed-up "
        "| CPU, jobs 1 / jobs 2 | per trace, jobs 1 | outputs byte-identical | exit status "
        "| verdicts | findings |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|",
        f"| {p.traces} | {len(j1)} | {fmt_s(m1)} | {fmt_s(m2)} | **{m1 / m2:.2f}×** "
        f"| {fmt_s(c1)} / {fmt_s(c2)} | {fmt_s(m1 / p.traces)} "
        f"| {'yes' if p.identical else 'no'} "
        f"| {', '.join(map(str, rcs))} | {fmt_verdicts(p.verdicts)} | {p.findings} |",
    ]
    if len(j1) > 1:
        rows += [
            "",
            "Every run, in the order they ran: "
            + ", ".join(
                f"jobs {r.jobs} {fmt_s(r.wall)} (other work: {fmt_cores(r.others)} cores)"
                for r in p.runs
            )
            + ". CPU is user + system time of the command and its worker processes"
            " (medians); other work is the machine's busy time (`/proc/stat`, steal"
            " included) minus ours, over the wall time, in cores.",
        ]
    return "\n".join(rows)


def fmt_verdicts(v: dict[str, int]) -> str:
    return ", ".join(f"{k}: {c:,}" for k, c in sorted(v.items())) or "none"


# ---------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------


def describe_audit(passes: int, items: int) -> str:
    return f"""\
A seeded trace: 10 appends build a window of {items:,} items (the item mix of
`bench_check.py`), then {passes:,} passes. Every pass spills what it is about to
weaken or stub, rewrites {CHANGES_PER_PASS} random items with a `diff` (commitments
re-worded, weakened to `c | other` with the original spilled first, or spilled
and stubbed; claims rewritten into equivalent formulas or re-worded; prose
edited or pruned; observations spilled and stubbed), and evicts the oldest items
to make room for the 4 new items appended after it (prose, an observation, a
claim it witnesses, a commitment): evicted prose and stubs are dropped, anything
else is spilled first; an observation leaves together with the items that cite
it as a witness. So the window stays near {items:,} items while the store and
the graph grow with every pass. Stubs pile up in the window until the eviction
front reaches the first of them (a few hundred passes in), then level off: costs
that follow the number of stubs rise during that warm-up and then stay flat.

`audit_trace(trace, graph=JustificationGraph())` runs in one process; the
trace is parsed before the clock starts. A pass is timed from the start of its
rewrite check to the start of the next one, so it includes the graph update,
its spill and the append that follows. The parts are timed from outside the
verifier: `check_rewrite` and `check_append` as `audit_trace` calls them are
wrapped, and the graph is a subclass of `JustificationGraph` that times its
`rewrite`, `append` and `spill`; "rest" is what is left (history bookkeeping,
applying the diff, store spills). Garbage collection (timed with `gc.callbacks`)
happens inside any of these parts and is shown apart as well. Medians resist the
noise of a shared machine better than means. CPU is the time of the auditing
process (`time.process_time`); on this virtual machine it swells under
contention too. "Other work" is the machine's busy time (`/proc/stat`, steal
included) minus the audit's, over the wall time: how many cores other jobs kept
busy meanwhile."""


def describe_parallel(p: ParallelResult) -> str:
    return f"""\
{p.traces} seeded traces of the same kind ({p.passes} passes over about {p.items}
items each, {p.trace_bytes / 1e6:.1f} MB in all) in a temporary folder, audited
by `ctxproof audit t001.jsonl … t{p.traces:03d}.jsonl --format json --jobs N` as a
subprocess (wall time includes interpreter start and imports), `--jobs 1` and
`--jobs 2` alternating; the speed-up compares medians."""


def rerun_on_snapshot(argv: Sequence[str]) -> int:
    """Run this script again on a copy of verifier/, so edits made meanwhile do not mix in.

    The copy goes first on PYTHONPATH, ahead of the editable install, for this
    process and the ``ctxproof`` commands it starts.
    """
    with tempfile.TemporaryDirectory(prefix="ctxproof-bench-src-") as tmp:
        shutil.copytree(
            SOURCES, Path(tmp) / "verifier", ignore=shutil.ignore_patterns("__pycache__")
        )
        path = os.pathsep.join(p for p in (tmp, os.environ.get("PYTHONPATH", "")) if p)
        env = dict(os.environ, PYTHONPATH=path)
        env[SNAPSHOT_ENV] = source_fingerprint(Path(tmp) / "verifier")
        cmd = [sys.executable, str(Path(__file__).resolve()), *argv]
        return subprocess.run(cmd, env=env).returncode


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark ctxproof audits over many passes.")
    ap.add_argument("--quick", action="store_true", help="200 passes, 20 traces, one round")
    ap.add_argument("--write", action="store_true", help=f"write benchmarks/{RESULTS.name}")
    ap.add_argument("--passes", type=int, default=None, help="passes of the long trace")
    ap.add_argument("--items", type=int, default=1000, help="window size of the long trace")
    ap.add_argument(
        "--profile", action="store_true", help="profile the last tenth of passes in any case"
    )
    ap.add_argument("--no-profile", action="store_true", help="never profile")
    ap.add_argument("--prof-out", metavar="OUT.prof", help="also dump the profile here")
    args = ap.parse_args(argv)
    if SNAPSHOT_ENV not in os.environ:
        return rerun_on_snapshot(sys.argv[1:] if argv is None else list(argv))
    passes = args.passes if args.passes is not None else (200 if args.quick else 1000)
    n_traces = 20 if args.quick else 100
    rounds = 1 if args.quick else 3

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    started = time.perf_counter()
    load = [os.getloadavg()]
    snapshot = os.environ[SNAPSHOT_ENV]
    if source_fingerprint(MEASURED) != snapshot or SOURCES.resolve() == MEASURED:
        log(f"expected the copy of verifier/ under {SNAPSHOT_ENV}, imported {MEASURED}")
        return 2

    # -- 1. one long audit ---------------------------------------------------------------
    log(f"generating a {passes:,}-pass trace over {args.items:,} items")
    text = build_steady_trace(args.items, passes, SEED)
    log(f"  {len(text.encode('utf-8')) / 1e6:.1f} MB; auditing")
    run, _ = run_audit(text)
    load.append(os.getloadavg())
    ds = deciles(run)
    g = growth(ds)
    slope = slope_per_100(run.total)
    g_cpu = growth(ds, cpu=True)
    grown = [f"{k} {r:.1f}×" for k, r in part_growth(ds).items() if r > GROWTH_FLAG]
    log(
        f"  audit {run.audit:.1f} s, {statistics.mean(run.total[1:]) * 1e3:.1f} ms/pass mean,"
        f" last/first tenth {g:.2f}× (CPU {g_cpu:.2f}×), verdicts {fmt_verdicts(run.verdicts)}"
    )
    parts = [
        "## Audit over many passes",
        "",
        describe_audit(run.passes, args.items),
        "",
        f"- trace: {run.passes:,} passes, parse {fmt_s(run.parse)}, initial appends"
        f" {fmt_s(run.total[0])}, audit {fmt_s(run.audit)} in all",
        f"- verdicts: {fmt_verdicts(run.verdicts)}; findings: {run.n_findings};"
        f" undecided: {len(run.undecided)}",
        f"- window {run.window[1]:,} → {run.final_window:,} items; store"
        f" {run.store[1]:,} → {run.final_store:,} entries; graph {run.nodes[1]:,} →"
        f" {run.final_nodes:,} nodes",
        f"- ms/pass, last tenth over first tenth (medians): **{g:.2f}×** wall,"
        f" **{g_cpu:.2f}×** CPU; least-squares slope {slope:+.2f} ms per 100 passes (wall)",
        f"- parts (of 1 ms/pass or more) whose mean grows by more than {GROWTH_FLAG}× from the"
        f" first tenth to the last: {', '.join(grown) or 'none'}",
        "",
        decile_table(ds),
        "",
        "```text",
        *curve(ds),
        "",
        "mean ms/pass by part, first → last tenth, and the least-squares slope:",
        *component_curves(ds, run),
        "```",
    ]
    bad = run.findings
    if bad or any(v != "accept" for v in run.verdicts):
        parts += ["", "First findings:", ""]
        parts += [f"- {f['code']} {f['name']} {f['items']}: {f['message']}" for f in bad]
    if run.undecided:
        parts += ["", "Undecided:", "", *[f"- {u}" for u in run.undecided[:10]]]

    # -- profile of the late passes -------------------------------------------------------
    grows = g_cpu > GROWTH_FLAG or bool(grown)
    if grown:
        log(f"  parts that grow by more than {GROWTH_FLAG}×: {', '.join(grown)}")
    if (args.profile or (grows and not args.quick)) and not args.no_profile:
        first_late = run.passes - run.passes // 10 + 1
        log(f"profiling passes {first_late:,}–{run.passes:,} (a second audit)")
        _, prof = run_audit(text, profile_from=first_late)
        if args.prof_out:
            prof.dump_stats(args.prof_out)
        late = run.passes - first_late + 1
        spots = verifier_hotspots(prof)
        parts += [
            "",
            f"Profile of passes {first_late:,}–{run.passes:,} (cProfile, a second run of the"
            " same audit; the `verifier` functions with the largest cumulative time, per"
            " pass; cProfile slows calls down, so compare rows, not absolute times; a"
            " generator counts one call per item it yields):",
            "",
            hotspot_table(spots, late),
        ]
        for h in spots[:8]:
            log(f"  {h.cumtime / late * 1e3:8.2f} ms/pass  {h.where}")

    # -- 2. many traces --------------------------------------------------------------------
    log(f"auditing {n_traces} small traces with --jobs 1 and --jobs 2")
    par = measure_parallel(n_traces, 20, 100, rounds, log)
    load.append(os.getloadavg())
    parts += [
        "",
        "## Many traces in parallel",
        "",
        describe_parallel(par),
        "",
        parallel_table(par),
    ]
    if not par.identical:
        parts += ["", f"The outputs differ — first difference: {par.first_difference}"]
    if any(r.rc not in (0,) for r in par.runs):
        errs = {r.err.strip().splitlines()[-1] for r in par.runs if r.rc and r.err.strip()}
        parts += ["", "stderr: " + "; ".join(sorted(errs))]

    elapsed = time.perf_counter() - started
    body = "\n".join(parts)
    print(body)
    log(f"total benchmark time {elapsed:.0f} s")
    if source_fingerprint(SOURCES) != snapshot:
        log(
            "note: verifier/ changed on disk during the run; the copy taken at its start"
            " was measured"
        )
    if args.write:
        info = machine_info(
            f"audit {run.sources}; every file under `verifier/` (a copy taken at the start"
            f" of the run, measured throughout): {snapshot}"
        )
        loads = ", ".join(
            f"{when} {la[0]:.2f}"
            for when, la in zip(("start", "after the long audit", "end"), load, strict=True)
        )
        head = [
            "Measured by `benchmarks/bench_audit.py`"
            + (" (`--quick`)" if args.quick else "")
            + f" in {elapsed:.0f} s:",
            "",
            *info,
            f"- 1-minute load average: {loads} (other jobs share this machine)",
            "",
            "Reproduce: `.venv/bin/python benchmarks/bench_audit.py --write` (`--quick` for a"
            " smoke run, `--profile` to list the hotspots of the last passes in any case).",
        ]
        # the run notes go under the first heading of the section
        section = [parts[0], "", *head, "", *parts[2:]]
        write_section(RESULTS, SECTION, "\n".join(section))
        log(f"wrote the {SECTION} section of {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
