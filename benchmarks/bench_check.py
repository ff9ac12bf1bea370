#!/usr/bin/env python
"""Benchmark ``check_rewrite`` against a pure-Python identity floor, and a trace audit.

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_check.py [--sizes 1000,10000,100000] [--quick] [--write]

For every size N it builds, deterministically, a realistic ``before`` window
(commitments with default atom formulas, claims over 2-3 atoms, observations
with ``shows``, claims citing witnesses, prose) and an ``after`` window in
which 10% of the items changed in ways that keep the rewrite acceptable. The
originals of weakened commitments and of items replaced by stubs go into a
:class:`~verifier.store.MemoryStore` before the check.

Every measurement runs in a fresh subprocess, so the peak RSS it reports
(``ru_maxrss`` of that process) belongs to that measurement alone:

* ``floor`` -- ``json.loads`` of both windows and an id + content-hash diff
  (dict of id -> sha256 of canonical JSON); no verifier code;
* ``check`` -- ``parse_window_text`` of both windows and ``check_rewrite``;
* ``audit`` -- ``parse_trace_text`` and ``audit_trace`` of a 200-pass trace
  over a window of about 1k items.

The parent process stays small (window generation also runs in a child),
because Linux carries the parent's resident size into a spawned child's
``ru_maxrss``.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import itertools
import json
import os
import platform
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

Obj = dict[str, Any]

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
SEED = 20240611
BACKGROUND = [
    "db.postgres -> !db.mysql",
    "deploy.k8s -> !deploy.bare_metal",
    "ci.green -> build.ok",
]
CHANGE_FRACTION = 0.10
TARGET_RATIO = 3.0
TARGET_RSS_MIB = 1024.0

_WORD_TEXT = (
    "the migration schema keeps orders refunds users table column index query cache "
    "worker queue retry timeout deploy build test suite fixture parser config token "
    "budget summary agreed decided rejected because reporting export nightly latency "
    "endpoint handler request response payload client server lock advisory json "
    "metadata snake_case field type check lint release branch review patch "
)
_WORDS = tuple(_WORD_TEXT.split())


# ---------------------------------------------------------------------------------------
# Workload generation (deterministic)
# ---------------------------------------------------------------------------------------


def canonical(obj: Obj) -> str:
    """Canonical JSON as SPEC §2 defines it (sorted keys, no spaces, UTF-8 as is)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def ref_of(obj: Obj) -> str:
    return "sha256:" + hashlib.sha256(canonical(obj).encode("utf-8")).hexdigest()


def stub_of(obj: Obj) -> Obj:
    return {"id": obj["id"], "kind": "stub", "ref": ref_of(obj)}


def _equivalents(template: str, a: str, b: str, c: str) -> list[str]:
    """Logically equivalent renderings of one claim formula over atoms a, b, c."""
    forms = {
        "and2": [f"{a} & {b}", f"{b} & {a}", f"!(!{a} | !{b})"],
        "or2": [f"{a} | {b}", f"{b} | {a}", f"!{a} -> {b}"],
        "imp2": [f"{a} -> {b}", f"!{b} -> !{a}", f"!{a} | {b}"],
        "imp3": [f"({a} & {b}) -> {c}", f"{a} -> ({b} -> {c})", f"!{a} | !{b} | {c}"],
        "dist3": [f"{a} & ({b} | {c})", f"({a} & {b}) | ({a} & {c})", f"({b} | {c}) & {a}"],
        "or3": [f"{a} | {b} | {c}", f"{c} | ({b} | {a})", f"!{a} -> ({b} | {c})"],
    }
    return forms[template]


_TEMPLATES = ("and2", "or2", "imp2", "imp3", "dist3", "or3")


class ItemFactory:
    """Produces realistic items; remembers enough to rewrite them acceptably later."""

    def __init__(self, rng: random.Random, *, locality: int = 40) -> None:
        self.rng = rng
        self.locality = locality
        self.serial = 0
        self.atoms: list[str] = []  # ids of commitments whose formula is their default atom
        self.claims: list[str] = []  # ids of claims with a formula
        self.observations: list[Obj] = []  # recent observations (objects)
        self.witnessed: list[str] = []  # ids of verified claims citing witnesses
        self.equivalents: dict[str, list[str]] = {}  # claim id -> equivalent formulas

    def _id(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial:06d}"

    def text(self, lo: int = 8, hi: int = 28) -> str:
        n = self.rng.randint(lo, hi)
        return " ".join(self.rng.choice(_WORDS) for _ in range(n))

    def _recent(self, pool: Sequence[str], k: int) -> list[str]:
        window = list(pool[-self.locality :])
        return self.rng.sample(window, min(k, len(window)))

    def commitment(self) -> Obj:
        iid = self._id("c")
        ctype = self.rng.choices(
            ["decision", "obligation", "invariant", "rejection"], weights=[60, 20, 15, 5]
        )[0]
        obj: Obj = {"id": iid, "kind": "commitment", "type": ctype}
        obj["text"] = f"turn {self.serial}: {ctype}: {self.text()}"
        if ctype == "rejection":
            obj["formula"] = f"!alt.{iid}"
        elif ctype == "invariant" and self.observations and self.rng.random() < 0.4:
            obs = self.rng.choice(self.observations[-self.locality :])
            if obs.get("modality") == "verified":
                obj["formula"] = obs["shows"]
                obj["witnesses"] = [obs["id"]]
                obj["modality"] = "verified"
        if self.claims and self.rng.random() < 0.3:
            obj["rationale"] = self._recent(self.claims, 1)
        if "formula" not in obj and ctype in ("decision", "obligation"):
            self.atoms.append(iid)
        return obj

    def claim(self) -> Obj:
        if len(self.atoms) < 3:
            return self.commitment()
        iid = self._id("k")
        template = self.rng.choice(_TEMPLATES)
        a, b, c = self._recent(self.atoms, 3)
        forms = _equivalents(template, a, b, c)
        used = [a, b] if template.endswith("2") else [a, b, c]
        self.equivalents[iid] = forms
        self.claims.append(iid)
        return {
            "id": iid,
            "kind": "claim",
            "formula": forms[0],
            "derived_from": used,
            "text": f"digest: {self.text()}",
        }

    def observation(self) -> Obj:
        iid = self._id("o")
        failed = self.rng.random() < 0.1
        content = f"$ pytest tests/test_{iid}.py\n{self.text(20, 60)}\n"
        obj: Obj = {
            "id": iid,
            "kind": "observation",
            "source": f"pytest tests/test_{iid}.py",
            "content": content,
            "at": self.serial,
        }
        if failed:
            obj.update(shows=f"!build.{iid}.ok", modality="failed", exit_code=1)
        else:
            obj.update(shows=f"test.{iid}.pass", modality="verified", exit_code=0)
        self.observations.append(obj)
        return obj

    def witnessed_claim(self) -> Obj:
        if not self.observations:
            return self.observation()
        iid = self._id("w")
        recent = self.observations[-self.locality :]
        k = 2 if len(recent) >= 2 and self.rng.random() < 0.4 else 1
        cited = self.rng.sample(recent, k)
        shows = [o["shows"] for o in cited]
        failed = any(o["modality"] == "failed" for o in cited)
        obj: Obj = {
            "id": iid,
            "kind": "claim",
            "formula": " & ".join(shows),
            "witnesses": [o["id"] for o in cited],
            "modality": "failed" if failed else "verified",
            "text": f"result: {self.text()}",
        }
        if k == 2:
            self.equivalents[iid] = [" & ".join(shows), f"{shows[1]} & {shows[0]}"]
        if not failed:
            self.witnessed.append(iid)
        return obj

    def prose(self) -> Obj:
        return {"id": self._id("p"), "kind": "prose", "text": self.text(20, 70)}

    def any_item(self) -> Obj:
        kind = self.rng.choices(
            ["commitment", "claim", "observation", "witnessed", "prose"],
            weights=[50, 15, 10, 10, 15],
        )[0]
        make: dict[str, Callable[[], Obj]] = {
            "commitment": self.commitment,
            "claim": self.claim,
            "observation": self.observation,
            "witnessed": self.witnessed_claim,
            "prose": self.prose,
        }
        return make[kind]()


@dataclass
class Change:
    """What one acceptable change does to the window."""

    kind: str
    put: Obj | None  # the new version (None: the item is removed)
    spill: list[Obj] = field(default_factory=list)


def acceptable_change(f: ItemFactory, obj: Obj, tag: str) -> Change | None:
    """An acceptable change of one item, or None when this item is left alone."""
    rng = f.rng
    kind = obj["kind"]
    iid = obj["id"]
    if kind == "prose":
        if rng.random() < 0.3:
            return Change("prose-removed", None)
        new = dict(obj, text=f"{obj['text']} [{tag}: condensed]")
        return Change("prose-edited", new)
    if kind == "commitment":
        plain = "formula" not in obj and obj["type"] in ("decision", "obligation")
        roll = rng.random()
        if plain and roll < 0.5 and len(f.atoms) > 1:
            other = rng.choice(f.atoms)
            while other == iid:
                other = rng.choice(f.atoms)
            new = dict(obj, formula=f"{iid} | {other}", text=f"{obj['text']} (relaxed)")
            return Change("commitment-weakened", new, [obj])
        if roll < 0.8:
            return Change("commitment-text-edited", dict(obj, text=f"{obj['text']} [{tag}]"))
        return Change("commitment-stubbed", stub_of(obj), [obj])
    if kind == "claim":
        forms = f.equivalents.get(iid)
        if forms and rng.random() < 0.7:
            current = obj.get("formula")
            choices = [x for x in forms if x != current]
            return Change("claim-equivalent", dict(obj, formula=rng.choice(choices)))
        return Change("claim-text-edited", dict(obj, text=f"{obj['text']} [{tag}]"))
    if kind == "observation":
        return Change("observation-stubbed", stub_of(obj), [obj])
    return None


def build_windows(n: int, seed: int) -> tuple[Obj, Obj, list[Obj], dict[str, int]]:
    """The before window, the after window, the spilled originals, and a change census."""
    rng = random.Random(seed * 1_000_003 + n)
    f = ItemFactory(rng)
    items = [f.any_item() for _ in range(n)]
    n_changes = round(n * CHANGE_FRACTION)
    chosen = set(rng.sample(range(n), n_changes))
    after: list[Obj] = []
    spill: list[Obj] = []
    census: dict[str, int] = {}
    removed = 0
    for i, obj in enumerate(items):
        if i not in chosen:
            after.append(obj)
            continue
        ch = acceptable_change(f, obj, "rewrite")
        if ch is None:
            after.append(obj)
            continue
        census[ch.kind] = census.get(ch.kind, 0) + 1
        spill.extend(ch.spill)
        if ch.put is not None:
            after.append(ch.put)
        else:
            removed += 1
            if removed % 5 == 0:  # a summary stands in for every few pruned prose items
                after.append({"id": f"s{i:06d}", "kind": "prose", "text": f.text(30, 80)})
                census["summary-added"] = census.get("summary-added", 0) + 1
    before_w = {"format": "ctxproof-window/1", "background": BACKGROUND, "items": items}
    after_w = {"format": "ctxproof-window/1", "background": BACKGROUND, "items": after}
    return before_w, after_w, spill, census


def window_text(window: Obj) -> str:
    """A window file as people write them: one item per line."""
    lines = ",\n".join("  " + json.dumps(it, ensure_ascii=False) for it in window["items"])
    head = json.dumps({"format": window["format"], "background": window["background"]})
    return head[:-1] + ', "items": [\n' + lines + "\n]}\n"


def opening_events(f: ItemFactory, n_items: int) -> tuple[list[Obj], dict[str, Obj]]:
    """The header and the appends (100 items each) that fill the first window."""
    lines: list[Obj] = [
        {"event": "header", "format": "ctxproof-trace/1", "background": BACKGROUND, "budget": 0}
    ]
    current: dict[str, Obj] = {}  # in window order, oldest first
    chunk: list[Obj] = []
    for _ in range(n_items):
        obj = f.any_item()
        chunk.append(obj)
        current[obj["id"]] = obj
        if len(chunk) == 100:
            lines.append({"event": "append", "items": chunk})
            chunk = []
    if chunk:
        lines.append({"event": "append", "items": chunk})
    return lines, current


def append_event(f: ItemFactory, rng: random.Random, current: dict[str, Obj]) -> Obj:
    """The append after a pass: prose, an observation, a claim it witnesses, a commitment."""
    new = [f.prose(), f.observation()]
    new.append(f.witnessed_claim())
    c = f.commitment()
    if f.witnessed and rng.random() < 0.5:
        c["rationale"] = [f.witnessed[-1]]
    new.append(c)
    for obj in new:
        current[obj["id"]] = obj
    return {"event": "append", "items": new}


def build_trace(n_items: int, passes: int, seed: int) -> str:
    """A JSONL trace: appends build a ~n_items window, then ``passes`` diff rewrites.

    Every pass spills what it is about to weaken or stub, rewrites a few items
    with a diff, and is followed by an append of new items.
    """
    rng = random.Random(seed)
    f = ItemFactory(rng)
    lines, current = opening_events(f, n_items)
    for p in range(1, passes + 1):
        ids = [i for i, o in current.items() if o["kind"] != "stub"]
        put: list[Obj] = []
        remove: list[str] = []
        spill: list[Obj] = []
        for iid in rng.sample(ids, 5):
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
        if spill:
            lines.append({"event": "spill", "items": spill})
        lines.append(
            {
                "event": "rewrite",
                "policy": "bench-compact",
                "diff": {"remove": remove, "put": put},
                "pressure": 0.9,
            }
        )
        lines.append(append_event(f, rng, current))
    return "".join(json.dumps(ev, ensure_ascii=False) + "\n" for ev in lines)


# ---------------------------------------------------------------------------------------
# Children: each measurement runs in a process of its own
# ---------------------------------------------------------------------------------------


def _maxrss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def _emit(result: Obj) -> None:
    result["maxrss_kib"] = _maxrss_kib()
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


def loaded_fingerprint() -> str:
    """sha256 prefix of the verifier modules this process imported (names and contents)."""
    h = hashlib.sha256()
    for name in sorted(sys.modules):
        if name != "verifier" and not name.startswith("verifier."):
            continue
        path = getattr(sys.modules[name], "__file__", None)
        if path:
            h.update(name.encode() + b"\0" + Path(path).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def child_gen(data: Path, n: int, passes: int) -> None:
    data.mkdir(parents=True, exist_ok=True)
    before, after, spill, census = build_windows(n, SEED)
    (data / "before.json").write_text(window_text(before), encoding="utf-8")
    (data / "after.json").write_text(window_text(after), encoding="utf-8")
    (data / "spill.json").write_text(json.dumps(spill, ensure_ascii=False), encoding="utf-8")
    trace_bytes = 0
    if passes:
        trace = build_trace(1000, passes, SEED)
        (data / "trace.jsonl").write_text(trace, encoding="utf-8")
        trace_bytes = len(trace.encode("utf-8"))
    _emit(
        {
            "before_items": len(before["items"]),
            "after_items": len(after["items"]),
            "spilled": len(spill),
            "census": census,
            "before_bytes": (data / "before.json").stat().st_size,
            "after_bytes": (data / "after.json").stat().st_size,
            "trace_bytes": trace_bytes,
        }
    )


def child_floor(data: Path) -> None:
    before_text = (data / "before.json").read_text(encoding="utf-8")
    after_text = (data / "after.json").read_text(encoding="utf-8")
    t0 = time.perf_counter()
    hashes: list[dict[str, str]] = []
    for text in (before_text, after_text):
        window = json.loads(text)
        hashes.append(
            {
                it["id"]: hashlib.sha256(canonical(it).encode("utf-8")).hexdigest()
                for it in window["items"]
            }
        )
    old, new = hashes
    removed = [i for i in old if i not in new]
    added = [i for i in new if i not in old]
    changed = [i for i in new if i in old and old[i] != new[i]]
    wall = time.perf_counter() - t0
    _emit({"wall": wall, "removed": len(removed), "added": len(added), "changed": len(changed)})


def _watchdog(deadline: float, phase: list[str], started: list[float], extra: Obj) -> None:
    """Past the deadline, report how far the measurement got and its peak RSS so far."""
    if deadline <= 0:
        return

    def expire(_signum: int, _frame: Any) -> None:
        elapsed = time.perf_counter() - started[0] if started else 0.0
        _emit({"timeout": deadline, "phase": phase[0], "elapsed": elapsed, **extra})
        os._exit(0)

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, deadline)


def child_check(data: Path, profile: Path | None, deadline: float) -> None:
    from verifier.check import check_rewrite
    from verifier.io import item_from_json, parse_window_text
    from verifier.store import MemoryStore

    before_text = (data / "before.json").read_text(encoding="utf-8")
    after_text = (data / "after.json").read_text(encoding="utf-8")
    store = MemoryStore()
    store.spill([item_from_json(o) for o in json.loads((data / "spill.json").read_text("utf-8"))])
    rss_setup = _maxrss_kib()
    fingerprint = loaded_fingerprint()
    phase = ["setup"]
    started: list[float] = []

    def work() -> tuple[Any, float, float]:
        t0 = time.perf_counter()
        phase[0] = "parse_window_text"
        before = parse_window_text(before_text, "before.json")
        after = parse_window_text(after_text, "after.json")
        t1 = time.perf_counter()
        phase[0] = "check_rewrite"
        res = check_rewrite(before, after, store=store, with_repair=False)
        return res, t1 - t0, time.perf_counter() - t1

    _watchdog(deadline, phase, started, {"sources": fingerprint})
    started.append(time.perf_counter())
    if profile is not None:
        import cProfile

        prof = cProfile.Profile()
        result, t_parse, t_check = prof.runcall(work)
        wall = time.perf_counter() - started[0]
        prof.dump_stats(str(profile))
    else:
        result, t_parse, t_check = work()
        wall = time.perf_counter() - started[0]
    signal.setitimer(signal.ITIMER_REAL, 0)
    _emit(
        {
            "wall": wall,
            "parse": t_parse,
            "check": t_check,
            "rss_setup_kib": rss_setup,
            "verdict": result.verdict,
            "findings": [f.to_json() for f in result.findings],
            "undecided": list(result.undecided),
            "sources": fingerprint,
        }
    )


def child_audit(data: Path) -> None:
    import verifier.audit as audit_mod
    from verifier.audit import audit_trace
    from verifier.check import RewriteResult
    from verifier.check import check_rewrite as inner
    from verifier.io import parse_trace_text

    text = (data / "trace.jsonl").read_text(encoding="utf-8")
    fingerprint = loaded_fingerprint()
    stamps: list[float] = []
    sizes: list[int] = []

    def stamped(before: Any, *args: Any, **kwargs: Any) -> RewriteResult:
        stamps.append(time.perf_counter())  # the start of a pass
        sizes.append(len(before))
        return inner(before, *args, **kwargs)

    # audit_trace looks check_rewrite up in its module at every rewrite: time stamp each pass
    assert audit_mod.__dict__["check_rewrite"] is inner
    audit_mod.__dict__["check_rewrite"] = stamped
    t0 = time.perf_counter()
    trace = parse_trace_text(text, "bench.jsonl")
    t1 = time.perf_counter()
    report = audit_trace(trace)
    t2 = time.perf_counter()
    bounds = [*stamps, t2]
    per_pass = [b - a for a, b in itertools.pairwise(bounds)]
    verdicts: dict[str, int] = {}
    for r in report.rewrites:
        verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
    _emit(
        {
            "parse": t1 - t0,
            "audit": t2 - t1,
            "setup": (stamps[0] if stamps else t2) - t1,
            "per_pass": per_pass,
            "verdicts": verdicts,
            "findings": [f.to_json() for f in report.findings[:20]],
            "n_findings": len(report.findings),
            "events": len(trace.events),
            "window_first": sizes[0] if sizes else 0,
            "window_last": len(report.final_window),
            "sources": fingerprint,
        }
    )


# ---------------------------------------------------------------------------------------
# The parent: run children, collect, print, write
# ---------------------------------------------------------------------------------------


class ChildFailed(Exception):
    pass


class SourcesChanged(Exception):
    """The verifier modules changed between two measurements of one run."""


def run_child(args: list[str], timeout: float) -> Obj:
    """Run this script as a child process and return the JSON line it prints last."""
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    env = dict(os.environ, PYTHONHASHSEED="0")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise ChildFailed(f"killed after {timeout:.0f} s") from None
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise ChildFailed(lines[-1] if lines else f"exit status {proc.returncode}")
    out: Obj = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


@dataclass
class SizeResult:
    n: int
    gen: Obj
    floor_walls: list[float] = field(default_factory=list)
    floor_rss: list[int] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    parses: list[float] = field(default_factory=list)
    checks: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    findings: list[Obj] = field(default_factory=list)
    timeout: Obj | None = None
    error: str | None = None
    sources: str = ""

    @property
    def floor(self) -> float:
        return statistics.median(self.floor_walls)

    @property
    def wall(self) -> float | None:
        return statistics.median(self.walls) if self.walls else None

    @property
    def changed(self) -> int:
        census: dict[str, int] = self.gen["census"]
        return sum(v for k, v in census.items() if k != "summary-added")


def mib(kib: int) -> float:
    return kib / 1024.0


def measure_size(
    n: int, runs: int, data: Path, deadline: float, log: Callable[[str], None]
) -> SizeResult:
    hard = deadline + 120.0
    gen = run_child(["--child", "gen", "--data", str(data), "--size", str(n)], hard)
    res = SizeResult(n, gen)
    for _ in range(runs):
        fl = run_child(["--child", "floor", "--data", str(data)], hard)
        res.floor_walls.append(fl["wall"])
        res.floor_rss.append(fl["maxrss_kib"])
    log(f"  floor {fmt_s(res.floor)}, {mib(max(res.floor_rss)):.0f} MiB")
    for _ in range(runs):
        try:
            ch = run_child(
                ["--child", "check", "--data", str(data), "--deadline", str(deadline)], hard
            )
        except ChildFailed as exc:
            res.error = str(exc)
            log(f"  check failed: {exc}")
            break
        if res.sources and ch["sources"] != res.sources:
            raise SourcesChanged(f"N={n:,}: {res.sources} before, {ch['sources']} now")
        res.sources = ch["sources"]
        if "timeout" in ch:
            res.timeout = ch
            log(f"  check stopped at the {deadline:.0f} s deadline, in {ch['phase']}")
            break
        res.walls.append(ch["wall"])
        res.parses.append(ch["parse"])
        res.checks.append(ch["check"])
        res.rss.append(ch["maxrss_kib"])
        res.verdicts.append(ch["verdict"])
        if ch["findings"] and not res.findings:
            res.findings = ch["findings"]
        log(
            f"  check {fmt_s(ch['wall'])} (parse {fmt_s(ch['parse'])}), "
            f"{mib(ch['maxrss_kib']):.0f} MiB, {ch['verdict']}, {len(ch['findings'])} findings"
        )
    return res


def measure_audit(passes: int, data: Path, timeout: float) -> Obj:
    gen = ["--child", "gen", "--data", str(data), "--size", "10", "--passes", str(passes)]
    run_child(gen, timeout)
    return run_child(["--child", "audit", "--data", str(data)], timeout)


def fmt_s(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def size_table(results: list[SizeResult], runs_for: Callable[[int], int]) -> str:
    rows = [
        "| items | changed | runs | floor | floor peak RSS | parse + check "
        "| of which parse | of which check_rewrite | peak RSS | (parse + check) / floor "
        "| verdict |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        floor = f"| {r.n:,} | {r.changed:,} | {runs_for(r.n)} | {fmt_s(r.floor)} "
        floor += f"| {mib(max(r.floor_rss)):.0f} MiB "
        if r.wall is not None:
            parse = statistics.median(r.parses)
            check = statistics.median(r.checks)
            verdict = ", ".join(sorted(set(r.verdicts)))
            rows.append(
                floor + f"| {fmt_s(r.wall)} | {fmt_s(parse)} | {fmt_s(check)} "
                f"| {mib(max(r.rss)):.0f} MiB | {r.wall / r.floor:.0f}× | {verdict} |"
            )
        elif r.timeout is not None:
            t = r.timeout
            rows.append(
                floor + f"| > {t['timeout']:.0f} s | unfinished ({t['phase']}) | — "
                f"| ≥ {mib(t['maxrss_kib']):.0f} MiB so far | > {int(t['timeout'] / r.floor)}× "
                "| none: deadline |"
            )
        else:
            rows.append(floor + f"| — | — | — | — | — | error: {r.error} |")
    return "\n".join(rows)


def audit_table(a: Obj) -> str:
    per = a["per_pass"]
    k = max(1, len(per) // 10)
    first = statistics.mean(per[:k]) * 1000
    last = statistics.mean(per[-k:]) * 1000
    mean = statistics.mean(per) * 1000
    verdicts = ", ".join(f"{v}: {c}" for v, c in sorted(a["verdicts"].items()))
    return "\n".join(
        [
            "| passes | window | parse | initial appends | audit | ms/pass (mean) "
            "| ms/pass, first 10% | ms/pass, last 10% | peak RSS | verdicts | findings |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
            f"| {len(per)} | {a['window_first']:,} → {a['window_last']:,} items "
            f"| {fmt_s(a['parse'])} | {fmt_s(a['setup'])} | {fmt_s(a['audit'])} "
            f"| {mean:.1f} | {first:.1f} | {last:.1f} | {mib(a['maxrss_kib']):.0f} MiB "
            f"| {verdicts} | {a['n_findings']} |",
        ]
    )


RESULTS_TITLE = "# Benchmark results"


def write_section(path: Path, name: str, body: str) -> None:
    """Put body between ``<!-- name -->`` and ``<!-- /name -->`` in path, the rest kept.

    Each benchmark script owns one such section of RESULTS.md: an existing
    section is replaced in place, a new one is appended at the end. A file
    without any section (written whole by this script before sections existed)
    becomes the ``bench_check`` section first.
    """
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    block = f"{start}\n{body.strip()}\n{end}"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if text.strip() and "<!-- /" not in text:
        legacy = text.strip()
        if legacy.startswith(RESULTS_TITLE):
            legacy = legacy[len(RESULTS_TITLE) :].strip()
        text = f"{RESULTS_TITLE}\n\n<!-- bench_check -->\n{legacy}\n<!-- /bench_check -->\n"
    i = text.find(start)
    j = text.find(end, i + len(start)) if i >= 0 else -1
    if i >= 0 and j >= 0:
        text = text[:i] + block + text[j + len(end) :]
    elif text.strip():
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    else:
        text = f"{RESULTS_TITLE}\n\n{block}\n"
    path.write_text(text, encoding="utf-8")


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
        f"- z3-solver: {ver('z3-solver')}; networkx: {ver('networkx')}; lark: {ver('lark')}",
        f"- verifier modules measured (sha256 prefix of the names and contents of the"
        f" `verifier` modules each measuring process imported): {fingerprint}",
    ]


def targets(results: list[SizeResult]) -> list[str]:
    out: list[str] = []
    for r in results:
        if r.n == 10_000:
            if r.wall is not None:
                ratio = r.wall / r.floor
                met = "met" if ratio < TARGET_RATIO else "missed"
                out.append(
                    f"- 10k items, 10% changed, checked in under {TARGET_RATIO:.0f}× the floor:"
                    f" **{met}** — {ratio:.0f}× ({fmt_s(r.wall)} against {fmt_s(r.floor)})"
                )
            else:
                out.append(
                    f"- 10k items under {TARGET_RATIO:.0f}× the floor: **missed** (no result)"
                )
        if r.n == 100_000:
            if r.rss:
                peak = mib(max(r.rss))
                met = "met" if peak < TARGET_RSS_MIB else "missed"
                out.append(f"- 100k items under 1 GiB peak memory: **{met}** — {peak:.0f} MiB")
            elif r.timeout is not None:
                t = r.timeout
                out.append(
                    "- 100k items under 1 GiB peak memory: **not established** — the check"
                    f" did not finish within {t['timeout']:.0f} s (it was still in"
                    f" `{t['phase']}`; peak RSS {mib(t['maxrss_kib']):.0f} MiB by then)"
                )
            else:
                out.append(f"- 100k items under 1 GiB peak memory: not measured ({r.error})")
    return out


def non_accepts(results: list[SizeResult]) -> list[str]:
    out: list[str] = []
    for r in results:
        if any(v != "accept" for v in r.verdicts) or r.findings:
            out.append(f"- N={r.n:,}: verdict {', '.join(sorted(set(r.verdicts)))}; findings:")
            for f in r.findings[:10]:
                out.append(f"  - {f['code']} {f['name']} {f['items']}: {f['message']}")
    return out


DESCRIPTION = """\
**What is measured.** For each size N a seeded generator builds a `before` window
of N items (about 50% commitments, most with the default atom formula; 15% claims
whose formulas join 2-3 nearby commitment atoms; 10% observations with `shows`,
a tenth of them failed; 10% claims citing one or two observations as witnesses;
15% prose) and an `after` window in which 10% of the items changed acceptably:
prose edited or pruned (an occasional summary in its place), commitments
re-worded, weakened to `c | other` (the original spilled first) or spilled and
left as stubs, claims rewritten into equivalent formulas or re-worded,
observations spilled and left as stubs. The spilled originals are put in a
`MemoryStore` before the clock starts. Window files have one item per line.

Each measurement runs in a fresh process: input files are read and modules
imported (z3, the lark grammar) before the clock starts.

- **floor** (the baseline): `json.loads` of both window texts and a pure-Python
  identity diff — a dict of id → sha256 of each item's canonical JSON, then the
  removed, added and changed ids. No verifier code: the cost of answering "what
  changed?" and nothing more.
- **parse + check**: `parse_window_text` of both texts (validation, formula
  parsing) and `check_rewrite(before, after, store=store, with_repair=False)`.

Wall times are medians of 3 processes for 1k and 10k, one process for 100k (the
parse and check_rewrite parts are medians of their own);
peak RSS is `ru_maxrss` of the measuring process (the largest of its runs),
interpreter, imports and both input texts included. A measurement that passes
its deadline reports how far it got and its peak RSS until then.

The audit replays one JSONL trace: 10 appends build a window of 1,000 items,
then every pass spills what it is about to weaken or stub, rewrites 5 items with
a `diff`, and appends 4 new items (prose, an observation, a claim it witnesses,
a commitment). A pass is timed from the start of its rewrite check to the start
of the next one, so it includes its spill and its append."""


def render(results: list[SizeResult], audit: Obj | None, runs_for: Callable[[int], int]) -> str:
    parts = ["## Rewrite check against the identity floor", "", size_table(results, runs_for)]
    if audit is not None:
        parts += ["", "## Trace audit", "", audit_table(audit)]
    tgt = targets(results)
    if tgt:
        parts += ["", "## Targets", "", *tgt]
    bad = non_accepts(results)
    if bad:
        parts += ["", "## Verdicts other than accept", "", *bad]
    if audit is not None and audit["n_findings"]:
        parts += ["", "## Audit findings (first 10)", ""]
        parts += [
            f"- {f['code']} {f['name']} {f['items']}: {f['message']}"
            for f in audit["findings"][:10]
        ]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark ctxproof check and audit.")
    ap.add_argument("--sizes", default=None, help="comma-separated window sizes")
    ap.add_argument("--quick", action="store_true", help="1k and 10k, one run, 50-pass audit")
    ap.add_argument("--write", action="store_true", help=f"write benchmarks/{RESULTS.name}")
    ap.add_argument("--passes", type=int, default=None, help="passes of the audited trace")
    ap.add_argument(
        "--deadline", type=float, default=240.0, help="seconds before a check measurement stops"
    )
    ap.add_argument("--profile", metavar="OUT.prof", help="cProfile one 10k check into OUT")
    ap.add_argument("--child", choices=["gen", "floor", "check", "audit"], help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        data = Path(args.data)
        if args.child == "gen":
            child_gen(data, args.size, args.passes or 0)
        elif args.child == "floor":
            child_floor(data)
        elif args.child == "check":
            prof = Path(args.profile) if args.profile else None
            child_check(data, prof, 0.0 if prof else args.deadline)
        else:
            child_audit(data)
        return 0

    default_sizes = "1000,10000" if args.quick else "1000,10000,100000"
    sizes = [int(s) for s in (args.sizes or default_sizes).split(",") if s.strip()]
    passes = args.passes if args.passes is not None else (50 if args.quick else 200)

    def runs_for(n: int) -> int:
        return 1 if args.quick or n >= 100_000 else 3

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ctxproof-bench-") as tmp:
        if args.profile:
            data = Path(tmp) / "profile"
            run_child(["--child", "gen", "--data", str(data), "--size", "10000"], 600.0)
            out = run_child(
                ["--child", "check", "--data", str(data), "--profile", args.profile], 3600.0
            )
            log(
                f"profiled a 10k check ({out['wall']:.2f} s under cProfile, verifier modules"
                f" {out['sources']}, verdict {out['verdict']}) into {args.profile}"
            )
            return 0
        results: list[SizeResult] = []
        load_start = os.getloadavg()[0]
        try:
            for n in sizes:
                log(f"N={n:,}")
                res = measure_size(n, runs_for(n), Path(tmp) / f"n{n}", args.deadline, log)
                if results and results[0].sources and res.sources != results[0].sources:
                    raise SourcesChanged(f"{results[0].sources} at first, {res.sources} at N={n:,}")
                results.append(res)
        except SourcesChanged as exc:
            log(f"the verifier modules changed during the run ({exc}): nothing written; run again")
            return 1
        audit: Obj | None = None
        if passes > 0:
            log(f"audit: {passes} passes")
            try:
                audit = measure_audit(passes, Path(tmp) / "audit", args.deadline + 120.0)
            except ChildFailed as exc:
                log(f"  audit failed: {exc}")
    body = render(results, audit, runs_for)
    print(body)
    log(f"total benchmark time {time.perf_counter() - started:.0f} s")
    load_end = os.getloadavg()[0]
    sources = {r.sources for r in results if r.sources}
    fingerprint = "check " + (sources.pop() if sources else "—")
    fingerprint += ", audit " + (audit["sources"] if audit is not None else "—")
    if args.write:
        doc = [
            *machine_info(fingerprint),
            f"- 1-minute load average: {load_start:.2f} at the start, {load_end:.2f} at the end",
            "",
            DESCRIPTION,
            "",
            "Reproduce: `.venv/bin/python benchmarks/bench_check.py --write` (`--quick` for a"
            " smoke run, `--profile OUT.prof` to profile one 10k check).",
            "",
            body,
            "",
        ]
        write_section(RESULTS, "bench_check", "\n".join(doc).rstrip("\n"))
        log(f"wrote the bench_check section of {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
